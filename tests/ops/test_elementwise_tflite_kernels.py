"""The C kernels of TFLite's element-wise operators of two or more inputs (binary.c's int8 and int16 ADD/SUB, DIV, SQUARED_DIFFERENCE,
FLOOR_DIV and FLOOR_MOD; compare.c, logical.c, prelu.c) on views inside bigger buffers, broadcasting, against
their numpy references bit for bit; their declarations (loop axes, in place)."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.reference import run_reference

from .kernel_harness import Place, needs_gcc, run_kernel

SHAPES = [(2, 3, 1, 5), (3, 4, 1)]  # broadcast to (2, 3, 4, 5)
PLACES = {"x0": Place(pad=1, step=2), "x1": 2, "x2": Place(pad=1, order=(2, 0, 1)), "y": Place(pad=1, step=3)}


def _graph(op, dtypes, shapes, quants=None, out_quant=None) -> tuple[Graph, Node]:
    names = [f"x{i}" for i in range(len(shapes))]
    quants = quants or [None] * len(shapes)
    tensors = {n: Tensor(n, s, d, "input", None if q is None else Quant((q[0],), (q[1],)))
               for n, d, s, q in zip(names, dtypes, shapes, quants)}
    node = Node("n", op, tuple(names), ("y",))
    shape, dtype = registry.get(op).infer(Graph("g", tensors, (), tuple(names), (), arithmetic="tflite"), node)[0]
    q = None if out_quant is None else Quant((out_quant[0],), (out_quant[1],))
    tensors["y"] = Tensor("y", shape, dtype, "output", q)
    return Graph("g", tensors, (node,), tuple(names), ("y",), arithmetic="tflite"), node


def _values(rng, dtype, shape, low=-3.0, high=3.0):
    if dtype == "float32":
        return rng.uniform(low, high, shape).astype(np.float32)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype in ("int32", "int64"):  # plain integers: small ones, so that some are equal
        return rng.integers(-4, 5, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _run(tmp_path, graph, node, xs, places=PLACES):
    expected = run_reference(graph, xs)[0]
    call = registry.get(node.op).kernel(graph, node)
    got = run_kernel(tmp_path, call, graph, dict(zip(graph.inputs, xs)), places)[0]
    np.testing.assert_array_equal(got, expected)
    return expected


Q8 = [(0.0235, 3), (0.0157, -100)]
QY8 = (0.05, -7)
Q16 = [(0.0009, 0), (0.0012, 0)]
QY16 = (0.002, 0)
CASES = [  # (id, op, input dtypes, quantizations of the inputs, of the output)
    ("add-int16", "Add", ("int16", "int16"), Q16, QY16),
    ("add-int8", "Add", ("int8", "int8"), Q8, QY8),  # the larger input scale: multiplier 2^30, shift 31
    ("sub-int8", "Sub", ("int8", "int8"), Q8[::-1], QY8),
    ("sub-int16", "Sub", ("int16", "int16"), Q16, QY16),
    ("mul-int16", "Mul", ("int16", "int16"), Q16, QY16),
    ("div-int8", "Div", ("int8", "int8"), Q8, QY8),
    ("squared_difference-int8", "SquaredDifference", ("int8", "int8"), Q8, (0.2, -128)),
    ("squared_difference-int16", "SquaredDifference", ("int16", "int16"), Q16, (0.0004, 0)),
    ("squared_difference-f32", "SquaredDifference", ("float32", "float32"), None, None),
    ("squared_difference-int32", "SquaredDifference", ("int32", "int32"), None, None),
    ("floor_div-f32", "FloorDiv", ("float32", "float32"), None, None),
    ("floor_mod-f32", "FloorMod", ("float32", "float32"), None, None),
    ("maximum-f32", "Maximum", ("float32", "float32"), None, None),
    ("minimum-int8", "Minimum", ("int8", "int8"), Q8, QY8),
    ("maximum-int16", "Maximum", ("int16", "int16"), Q16, QY16),
    ("minimum-int32", "Minimum", ("int32", "int32"), None, None),
    ("maximum-int64", "Maximum", ("int64", "int64"), None, None),
    ("greater-f32", "Greater", ("float32", "float32"), None, None),
    ("less_equal-int32", "LessOrEqual", ("int32", "int32"), None, None),
    ("not_equal-int64", "NotEqual", ("int64", "int64"), None, None),
    ("equal-bool", "Equal", ("bool", "bool"), None, None),
    ("greater_equal-int8", "GreaterOrEqual", ("int8", "int8"), Q8, None),
    ("less-int8", "Less", ("int8", "int8"), Q8, None),
    ("and", "And", ("bool", "bool"), None, None),
    ("or", "Or", ("bool", "bool"), None, None),
    ("prelu-f32", "PRelu", ("float32", "float32"), None, None),
    ("prelu-int8", "PRelu", ("int8", "int8"), [(0.0235, 3), (0.0034, -20)], (0.0138, -91)),
    ("prelu-int16", "PRelu", ("int16", "int8"), [(0.0009, 0), (0.0034, 5)], (0.0007, 0)),
]


@needs_gcc
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernel_on_strided_views_equals_the_reference(tmp_path, case):
    _, op, dtypes, quants, out_quant = case
    graph, node = _graph(op, dtypes, SHAPES, quants, out_quant)
    if dtypes[0] != "float32" and quants is not None:
        assert registry.get(op).accepts_int8(graph, node)
    rng = np.random.default_rng(len(case[0]))
    xs = [_values(rng, d, s) for d, s in zip(dtypes, SHAPES)]
    if op in ("FloorDiv", "FloorMod"):
        xs[1] = np.where(np.abs(xs[1]) < 0.25, np.float32(0.5), xs[1]).astype(np.float32)
    y = _run(tmp_path, graph, node, xs)
    assert y.shape == (2, 3, 4, 5) and len(np.unique(y)) > 1


@needs_gcc
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "int32", "bool"])
def test_where_on_strided_views(tmp_path, dtype):
    graph, node = _graph("Where", ("bool", dtype, dtype), [(3, 1, 5), (2, 3, 4, 1), (4, 5)])
    rng = np.random.default_rng(5)
    xs = [_values(rng, "bool", (3, 1, 5))] + [_values(rng, dtype, s) for s in ((2, 3, 4, 1), (4, 5))]
    _run(tmp_path, graph, node, xs, {**PLACES, "x2": Place(pad=1, order=(1, 0))})


@needs_gcc
def test_not_on_strided_views(tmp_path):
    graph, node = _graph("Not", ("bool",), [(2, 3, 4)])
    xs = [_values(np.random.default_rng(6), "bool", (2, 3, 4))]
    np.testing.assert_array_equal(_run(tmp_path, graph, node, xs), ~xs[0])


def test_the_loop_axes_follow_the_output_and_broadcast_dimensions_are_marked():
    graph, node = _graph("Where", ("bool", "float32", "float32"), [(3, 1, 5), (2, 3, 4, 1), (4, 5)])
    e = registry.get("Where").expr(graph, node)
    assert [a.extent for a in e.axes] == [2, 3, 4, 5]
    assert e.inputs[0] == (Dim.identity("d1"), Dim.broadcast(), Dim.identity("d3"))
    assert e.inputs[1] == (Dim.identity("d0"), Dim.identity("d1"), Dim.identity("d2"), Dim.broadcast())
    graph, node = _graph("Greater", ("float32", "float32"), SHAPES)
    assert registry.get("Greater").expr(graph, node).inputs[1] == (Dim.identity("d1"), Dim.identity("d2"),
                                                                   Dim.broadcast())


def test_in_place_only_over_an_input_of_the_output_shape_and_type():
    graph, node = _graph("Where", ("bool", "int8", "int8"), [(2, 4), (2, 4), (4,)])
    assert registry.get("Where").inplace(graph, node) == 1
    graph, node = _graph("Greater", ("float32", "float32"), [(2, 4), (2, 4)])
    assert registry.get("Greater").inplace(graph, node) is None  # bool out of float in
    graph, node = _graph("And", ("bool", "bool"), [(4,), (2, 4)])
    assert registry.get("And").inplace(graph, node) == 1
