"""Concat: float and integer copies, int8/uint8 requantization, against onnxruntime; the C kernel
bit-exact with the numpy reference, also on strided views; tensor expression and errors."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.compile import lower

from .kernel_harness import Place, needs_gcc, run_kernel
from .onnx_helpers import checked_model, host_outputs, ort_outputs, reference_outputs

ELEM = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
        "int32": TensorProto.INT32, "int64": TensorProto.INT64}


def concat_model(shapes, axis, dtype="float32"):
    names = [f"x{i}" for i in range(len(shapes))]
    ax = axis % len(shapes[0])
    out = list(shapes[0])
    out[ax] = sum(s[ax] for s in shapes)
    node = helper.make_node("Concat", names, ["y"], axis=axis)
    return checked_model([node], [helper.make_tensor_value_info(n, ELEM[dtype], s) for n, s in zip(names, shapes)],
                         [helper.make_tensor_value_info("y", ELEM[dtype], out)])


def feeds_for(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    lo, hi = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-10**6, 10**6), "int64": (-10**12, 10**12)}[dtype]
    return {f"x{i}": rng.integers(lo, hi, size=s).astype(dtype) for i, s in enumerate(shapes)}


CASES = [
    ([(2, 3), (2, 5)], 1),
    ([(2, 3), (4, 3), (1, 3)], 0),
    ([(1, 4, 3, 3), (1, 2, 3, 3)], 1),
    ([(1, 4, 3, 3), (1, 4, 3, 2), (1, 4, 3, 1)], -1),
    ([(1, 2, 5, 3), (1, 2, 1, 3)], 2),
    ([(2, 1, 2, 1, 2, 3)] * 8, 4),
    ([(3,)] * 5, 0),
]


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("shapes,axis", CASES)
def test_concat_copy(shapes, axis, dtype):
    m = concat_model(shapes, axis, dtype)
    feeds = feeds_for(shapes, dtype, 0)
    want = ort_outputs(m, feeds)[0]
    _, (got,) = reference_outputs(m, feeds)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(host_outputs(m, [feeds])[0][0], want)


def qdq_concat(shapes, axis, in_q, out_q, qtype=TensorProto.INT8):
    """x_i -Q(s_i,z_i)-> DQ -> Concat -> Q(s_o,z_o) -> DQ -> y."""
    npt = np.int8 if qtype == TensorProto.INT8 else np.uint8
    inits, nodes, dq = [], [], []
    for i, (s, z) in enumerate(in_q):
        inits += [numpy_helper.from_array(np.array(s, np.float32), f"s{i}"),
                  numpy_helper.from_array(np.array(z, npt), f"z{i}")]
        nodes += [helper.make_node("QuantizeLinear", [f"x{i}", f"s{i}", f"z{i}"], [f"q{i}"]),
                  helper.make_node("DequantizeLinear", [f"q{i}", f"s{i}", f"z{i}"], [f"d{i}"])]
        dq.append(f"d{i}")
    inits += [numpy_helper.from_array(np.array(out_q[0], np.float32), "so"),
              numpy_helper.from_array(np.array(out_q[1], npt), "zo")]
    nodes += [helper.make_node("Concat", dq, ["c"], axis=axis),
              helper.make_node("QuantizeLinear", ["c", "so", "zo"], ["cq"]),
              helper.make_node("DequantizeLinear", ["cq", "so", "zo"], ["y"])]
    ax = axis % len(shapes[0])
    out = list(shapes[0])
    out[ax] = sum(s[ax] for s in shapes)
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s) for i, s in enumerate(shapes)]
    return checked_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)


def check_int8(m, feeds, scale, max_steps):
    graph, (got,) = reference_outputs(m, feeds)
    concat = [n for n in graph.nodes if n.op == "Concat"]
    assert len(concat) == 1 and graph[concat[0].outputs[0]].dtype in ("int8", "uint8"), "Concat was not lowered"
    want = ort_outputs(m, feeds)[0]
    steps = np.abs(got.astype(np.float64) - want) / scale
    assert steps.max() <= max_steps + 1e-3, steps.max()
    np.testing.assert_array_equal(host_outputs(m, [feeds])[0][0], got)
    return steps


def test_int8_same_quant_is_exact_copy():
    shapes = [(1, 3, 4, 4), (1, 5, 4, 4)]
    m = qdq_concat(shapes, 1, [(0.02, -3)] * 2, (0.02, -3))
    feeds = {k: v * 2 for k, v in feeds_for(shapes, "float32", 1).items()}
    graph = lower(import_onnx(m))
    node = next(n for n in graph.nodes if n.op == "Concat")
    assert registry.get("Concat").kernel(graph, node).params.fields == (("axis", 1), ("count", 2))
    assert check_int8(m, feeds, 0.02, 0).max() == 0


@pytest.mark.parametrize("qtype", [TensorProto.INT8, TensorProto.UINT8])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_int8_requantized_inputs(axis, qtype):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    base = 0 if qtype == TensorProto.INT8 else 128
    in_q = [(0.031, base + 5), (0.0123, base - 20), (0.07, base)]
    out_q = (0.045, base + 2)
    m = qdq_concat(shapes, axis, in_q, out_q, qtype)
    rng = np.random.default_rng(2)
    feeds = {f"x{i}": (rng.standard_normal(s) * 2.5).astype(np.float32) for i, s in enumerate(shapes)}
    check_int8(m, feeds, out_q[0], 1)


def test_int8_mixed_copy_and_requant_and_saturation():
    """One input shares the output's quantization (copied), the others are requantized and clipped."""
    shapes = [(1, 2, 3, 3), (1, 1, 3, 3), (1, 3, 3, 3)]
    in_q = [(0.05, 0), (0.2, 10), (0.01, -100)]
    out_q = (0.05, 0)
    m = qdq_concat(shapes, 1, in_q, out_q)
    rng = np.random.default_rng(3)
    feeds = {f"x{i}": (rng.standard_normal(s) * 10).astype(np.float32) for i, s in enumerate(shapes)}
    graph = lower(import_onnx(m))
    node = next(n for n in graph.nodes if n.op == "Concat")
    fields = dict(registry.get("Concat").kernel(graph, node).params.fields)
    assert fields["shift"].values[0] == 0 and min(fields["shift"].values[1:]) > 0
    check_int8(m, feeds, out_q[0], 1)


def test_int8_rounding_matches_ort_off_ties():
    """Away from exact .5 ties the integer requantization equals onnxruntime's float path."""
    shapes = [(64,), (64,)]
    in_q, out_q = [(0.013, 3), (0.029, -7)], (0.017, 1)
    m = qdq_concat(shapes, 0, in_q, out_q)
    x = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    steps = check_int8(m, {"x0": x, "x1": x[::-1].copy()}, out_q[0], 1)
    assert (steps > 0.5).sum() <= 2


# --------------------------------------------------------------------------- expression and errors


def test_concat_expr_axis_is_full():
    m = concat_model([(1, 4, 3, 3), (1, 2, 3, 3)], 1)
    graph = import_onnx(m)
    e = registry.get("Concat").expr(graph, graph.nodes[0])
    assert [a.extent for a in e.axes] == [1, 6, 3, 3]
    dims = (Dim.identity("d0"), Dim.full(), Dim.identity("d2"), Dim.identity("d3"))
    assert e.inputs == (dims, dims) and e.outputs == (dims,)


def test_concat_too_many_inputs():
    with pytest.raises(UnsupportedError, match="at most 8"):
        import_onnx(concat_model([(2,)] * 9, 0))


def test_concat_shape_mismatch():
    node = helper.make_node("Concat", ["x0", "x1"], ["y"], axis=1)
    m = helper.make_model(helper.make_graph(
        [node], "t", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, (2, 3)),
                      helper.make_tensor_value_info("x1", TensorProto.FLOAT, (3, 3))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError, match="Concat of shapes"):
        import_onnx(m)


# --------------------------------------------------------------------------- C kernel on strided views


def _concat_graph(shapes, dtype, quants=None, out_quant=None, axis=1):
    names = tuple(f"x{i}" for i in range(len(shapes)))
    quants = quants or [None] * len(shapes)
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    tensors = [Tensor(n, s, dtype, "input", q) for n, s, q in zip(names, shapes, quants)]
    tensors.append(Tensor("y", tuple(out), dtype, "output", out_quant))
    node = Node("c", "Concat", names, ("y",), {"axis": axis})
    return Graph("g", {t.name: t for t in tensors}, (node,), names, ("y",)), node


@needs_gcc
def test_concat_kernel_on_slices_matches_reference(tmp_path):
    """Requantized int8 inputs read from and written to slices of bigger buffers, compared with
    the numpy reference of the same node."""
    rng = np.random.default_rng(4)
    xs = [rng.integers(-128, 128, size=s).astype(np.int8) for s in ((2, 4, 4), (2, 2, 4), (2, 3, 4))]  # axis 1
    quants = [Quant((0.03,), (4,)), Quant((0.05,), (-2,)), Quant((0.011,), (-60,))]
    graph, node = _concat_graph([x.shape for x in xs], "int8", quants, Quant((0.05,), (-2,)))
    op = registry.get("Concat")
    assert op.accepts_int8(graph, node)
    want = op.reference(graph, node, xs)[0]
    got = run_kernel(tmp_path, op.kernel(graph, node), graph, dict(zip(graph.inputs, xs)),
                     {"x0": Place(1, step=2), "x1": 1, "x2": 2, "y": 1})[0]
    np.testing.assert_array_equal(got, want)


@needs_gcc
def test_concat_float_kernel_on_slices(tmp_path):
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (2, 4))]
    graph, node = _concat_graph([x.shape for x in xs], "float32")
    got = run_kernel(tmp_path, registry.get("Concat").kernel(graph, node), graph, dict(zip(graph.inputs, xs)),
                     {"x0": Place(1, step=2), "x1": 1, "y": 1})[0]
    np.testing.assert_array_equal(got, np.concatenate(xs, axis=1))


@needs_gcc
@pytest.mark.parametrize("pad", [0, 1], ids=["one_run", "padded"])
def test_concat_of_row_bands_laid_out_band_by_band(tmp_path, pad):
    """A split's gather: rows of NCHW tensors laid out rows outermost (NHCW), concatenated along the
    rows. Unpadded, each input is one run in both buffers (shape.c one_run copies it whole); with
    garbage around the views the runs are strided and the general path copies them. Both give the
    reference's bytes and leave the garbage alone (the harness checks the output's buffer)."""
    rng = np.random.default_rng(6)
    xs = [rng.integers(-128, 128, size=s).astype(np.int8) for s in ((1, 8, 2, 5), (1, 8, 4, 5), (1, 8, 1, 5))]
    graph, node = _concat_graph([x.shape for x in xs], "int8", axis=2)
    band = (0, 2, 1, 3)
    got = run_kernel(tmp_path, registry.get("Concat").kernel(graph, node), graph, dict(zip(graph.inputs, xs)),
                     {name: Place(pad, order=band) for name in (*graph.inputs, "y")})[0]
    np.testing.assert_array_equal(got, np.concatenate(xs, axis=2))
