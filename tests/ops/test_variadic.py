"""Sum, Mean, Max, Min of any number of inputs: the numpy reference against onnxruntime (float with
broadcasting, 1 to 20 inputs; int8 QDQ with a scale per input; plain integers), the C kernel against
the reference (whole models on the host, the bare kernel on strided views), and a split."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.partition import Cut, check_cut, split
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .kernel_harness import Place, needs_gcc, run_kernel
from .onnx_helpers import host_outputs, ort_outputs

OPS = ("Sum", "Mean", "Max", "Min")
# (id, shapes): numpy broadcasting, and arities past the eight slots of a fixed signature
SHAPES = [
    ("one", [(3, 4)]),
    ("bcast3", [(2, 1, 4), (3, 1), (1,)]),
    ("same11", [(1, 4, 5, 6)] * 11),
    ("mixed20", [(1, 4, 5, 6), (4, 1, 1), (1, 1, 6), (5, 6)] * 5),
    ("rows_of_one", [(1, 8, 1, 1), (1, 8, 3, 1), (1, 1, 3, 2)]),
]
IDS = [c[0] for c in SHAPES]


def _names(n):
    return [f"x{i}" for i in range(n)]


def float_model(op, shapes) -> onnx.ModelProto:
    names = _names(len(shapes))
    graph = helper.make_graph([helper.make_node(op, names, ["y"])], "variadic_test",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def qdq_model(op, shapes, seed) -> tuple[onnx.ModelProto, list]:
    """int8 inputs, each with its own scale and zero point -> DequantizeLinear -> op -> QuantizeLinear."""
    rng = np.random.default_rng(seed)
    names = _names(len(shapes))
    nodes, inits = [], []
    for name in names:
        inits += [numpy_helper.from_array(np.array(rng.uniform(0.01, 0.05), np.float32), f"{name}_s"),
                  numpy_helper.from_array(np.array(rng.integers(-20, 20), np.int8), f"{name}_z")]
        nodes.append(helper.make_node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_f"]))
    nodes.append(helper.make_node(op, [f"{n}_f" for n in names], ["f"]))
    span = {"Sum": 0.04 * len(shapes) ** 0.5, "Mean": 0.02}.get(op, 0.04)
    inits += [numpy_helper.from_array(np.array(span, np.float32), "y_s"),
              numpy_helper.from_array(np.array(3, np.int8), "y_z")]
    nodes.append(helper.make_node("QuantizeLinear", ["f", "y_s", "y_z"], ["y"]))
    graph = helper.make_graph(nodes, "variadic_qdq",
                              [helper.make_tensor_value_info(n, TensorProto.INT8, s) for n, s in zip(names, shapes)],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return model, [rng.integers(-128, 128, s).astype(np.int8) for s in shapes]


def _floats(seed, shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("case", SHAPES, ids=IDS)
@pytest.mark.parametrize("op", OPS)
def test_float_reference_matches_onnxruntime(op, case):
    shapes = case[1]
    xs = _floats(1, shapes)
    model = float_model(op, shapes)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == [op]
    want = ort_outputs(model, dict(zip(_names(len(xs)), xs)))[0]
    np.testing.assert_allclose(run_reference(graph, xs)[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", SHAPES, ids=IDS)
@pytest.mark.parametrize("op", OPS)
def test_int8_reference_matches_onnxruntime(op, case):
    model, xs = qdq_model(op, case[1], seed=2)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == [op] and graph[graph.outputs[0]].dtype == "int8"
    want = ort_outputs(model, dict(zip(_names(len(xs)), xs)))[0]
    diff = np.abs(run_reference(graph, xs)[0].astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.9, f"{diff.max()} steps, {np.mean(diff > 0):.0%} differ"


@pytest.mark.parametrize("dtype", ("int8", "uint8", "int16", "int32", "int64"))
def test_plain_integer_max_min(dtype):
    """Against numpy (onnxruntime has no int16 Max)."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    shapes = [(3, 4), (4,), (3, 1)]
    xs = [rng.integers(info.min, info.max, s, dtype=np.int64).astype(dtype) for s in shapes]
    for op in ("Max", "Min"):
        graph = helper.make_graph([helper.make_node(op, _names(3), ["y"])], "t",
                                  [helper.make_tensor_value_info(n, elem, s) for n, s in zip(_names(3), shapes)],
                                  [helper.make_tensor_value_info("y", elem, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        feeds = dict(zip(_names(3), xs))
        want = (np.maximum if op == "Max" else np.minimum).reduce(np.broadcast_arrays(*xs))
        np.testing.assert_array_equal(run_reference(lower(import_onnx(model)), xs)[0], want)
        np.testing.assert_array_equal(host_outputs(model, [feeds])[0][0], want)


@pytest.mark.parametrize("op", OPS)
def test_c_matches_reference_on_host(op):
    for case in (SHAPES[1], SHAPES[3]):
        shapes = case[1]
        for model, xs in ((float_model(op, shapes), _floats(4, shapes)), qdq_model(op, shapes, seed=4)):
            graph = lower(import_onnx(model))
            got = host_outputs(model, [dict(zip(_names(len(xs)), xs))])[0][0]
            want = run_reference(graph, xs)[0]
            if want.dtype == np.float32:
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            else:
                np.testing.assert_array_equal(got, want)


@needs_gcc
@pytest.mark.parametrize("op", OPS)
def test_kernel_on_strided_views(tmp_path, op):
    shapes = [(2, 3, 5), (3, 1), (2, 3, 5), (5,)] * 3
    model, xs = qdq_model(op, shapes, seed=5)
    graph = lower(import_onnx(model))
    (node,) = graph.nodes
    want = run_reference(graph, xs)[0]
    place = {name: Place(pad=1, step=1 + k % 2) for k, name in enumerate(node.inputs)}
    place[node.outputs[0]] = Place(pad=1, order=(2, 0, 1))
    got = run_kernel(tmp_path, registry.get(op).kernel(graph, node), graph, dict(zip(node.inputs, xs)), place)[0]
    np.testing.assert_array_equal(got, want)


def test_split_computes_the_same():
    model, xs = qdq_model("Sum", SHAPES[3][1], seed=6)
    graph = lower(import_onnx(model))
    (node,) = graph.nodes
    cut = Cut(((node.name, "d2"),), 3, "keep")
    assert check_cut(graph, cut) is None
    np.testing.assert_array_equal(run_reference(split(graph, (cut,)), xs)[0], run_reference(graph, xs)[0])
