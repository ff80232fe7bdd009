"""ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceL2: the numpy reference against onnxruntime
(float, axes as attribute and as input, keepdims both ways; int8 QDQ within one step, the nearest
step almost everywhere), the C kernel against the reference (whole models on the host, the bare
kernel on strided views), the tensor expression through a split, and the declaration."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.partition import Cut, check_cut, split
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .kernel_harness import Place, needs_gcc, run_kernel
from .onnx_helpers import host_outputs, ort_outputs

OPS = ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2")
SHAPE = (2, 6, 5, 7)
# (id, axes or None for all, keepdims)
AXES = [("hw", (2, 3), 1), ("hw_flat", (2, 3), 0), ("channel", (1,), 1), ("last", (-1,), 0),
        ("outer_inner", (0, 3), 1), ("all", None, 0)]


def _model(op, shape, axes, keepdims, opset, qdq=None, noop=None) -> onnx.ModelProto:
    """One reduction; opset >= 18 (ReduceSum: 13) gives axes as an input. qdq = (sx, zx, sy, zy)."""
    inits, attrs = [], {"keepdims": keepdims}
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    names = ["xf" if qdq else "x"]
    as_input = opset >= (13 if op == "ReduceSum" else 18)
    if axes is not None and as_input:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        names.append("axes")
    elif axes is not None:
        attrs["axes"] = list(axes)
    nodes = [helper.make_node(op, names, ["yf" if qdq else "y"], **attrs)]
    elem = TensorProto.FLOAT
    if qdq:
        sx, zx, sy, zy = qdq
        inits += [numpy_helper.from_array(np.array(v, t), n) for v, t, n in
                  ((sx, np.float32, "sx"), (zx, np.int8, "zx"), (sy, np.float32, "sy"), (zy, np.int8, "zy"))]
        nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"])] + nodes + \
                [helper.make_node("QuantizeLinear", ["yf", "sy", "zy"], ["y"])]
        elem = TensorProto.INT8
    graph = helper.make_graph(nodes, "reduce_test", [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _x(seed, shape=SHAPE):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _q(seed, shape=SHAPE):
    return np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)


# (sx, zx, sy, zy) per op: an output range that holds the results
QPARAMS = {"ReduceMean": (0.03, 5, 0.01, -3), "ReduceSum": (0.02, -4, 0.4, 2), "ReduceMax": (0.05, 3, 0.04, -60),
           "ReduceMin": (0.05, 3, 0.05, 3), "ReduceL2": (0.02, 0, 0.08, -128)}


@pytest.mark.parametrize("opset", (13, 18))
@pytest.mark.parametrize("case", AXES, ids=[c[0] for c in AXES])
@pytest.mark.parametrize("op", OPS)
def test_float_reference_matches_onnxruntime(op, case, opset):
    _, axes, keepdims = case
    model = _model(op, SHAPE, axes, keepdims, opset)
    x = _x(1)
    got = run_reference(lower(import_onnx(model), check=True), [x])[0]
    np.testing.assert_allclose(got, ort_outputs(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", OPS)
def test_noop_with_empty_axes_reduces_nothing(op):
    model = _model(op, (3, 4), None, 1, 18, noop=1)
    x = _x(2, (3, 4))
    np.testing.assert_allclose(run_reference(lower(import_onnx(model)), [x])[0], ort_outputs(model, {"x": x})[0],
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", AXES, ids=[c[0] for c in AXES])
@pytest.mark.parametrize("op", OPS)
def test_int8_reference_matches_onnxruntime(op, case):
    _, axes, keepdims = case
    model = _model(op, SHAPE, axes, keepdims, 18, qdq=QPARAMS[op])
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == [op] and graph[graph.nodes[0].outputs[0]].dtype == "int8"
    for seed in (3, 4):
        x = _q(seed)
        got, want = run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0]
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.max() <= 1 and np.mean(diff == 0) >= 0.9, f"{diff.max()} steps, {np.mean(diff > 0):.0%} differ"


@pytest.mark.parametrize("op", OPS)
def test_c_matches_reference_on_host(op):
    """float and int8, a contiguous run (H, W), a strided one (C) and an odometer walk (N, W)."""
    for qdq, sample in ((None, _x(5)), (QPARAMS[op], _q(5))):
        for axes, keepdims in (((2, 3), 1), ((1,), 0), ((0, 3), 1)):
            model = _model(op, SHAPE, axes, keepdims, 18, qdq=qdq)
            want = run_reference(lower(import_onnx(model)), [sample])[0]
            got = host_outputs(model, [{"x": sample}])[0][0]
            if qdq:
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@needs_gcc
@pytest.mark.parametrize("op", OPS)
def test_kernel_on_strided_views(tmp_path, op):
    for qdq, sample in ((None, _x(6, (3, 4, 9))), (QPARAMS[op], _q(6, (3, 4, 9)))):
        graph = lower(import_onnx(_model(op, (3, 4, 9), (0, 2), 1, 18, qdq=qdq)))
        (node,) = graph.nodes
        want = run_reference(graph, [sample])[0]
        got = run_kernel(tmp_path, registry.get(op).kernel(graph, node), graph, {node.inputs[0]: sample},
                         {node.inputs[0]: Place(pad=1, step=2), node.outputs[0]: Place(pad=1, order=(2, 1, 0))})[0]
        np.testing.assert_array_equal(got, want)


def test_split_along_a_kept_axis_computes_the_same():
    """The tensor expression: a cut of the kept channel axis gives pieces on views that compute the
    same; the reduced axes cannot be cut."""
    model = _model("ReduceMean", SHAPE, (2, 3), 0, 18, qdq=QPARAMS["ReduceMean"])
    graph = lower(import_onnx(model))
    (node,) = graph.nodes
    e = registry.get("ReduceMean").expr(graph, node)
    assert [(a.name, a.kind) for a in e.axes] == [("d0", "spatial"), ("d1", "spatial"), ("r2", "reduction"),
                                                  ("r3", "reduction")]
    assert e.outputs[0] == (Dim.identity("d0"), Dim.identity("d1"))
    cut = Cut(((node.name, "d1"),), 3, "keep")
    assert check_cut(graph, cut) is None
    pieces = split(graph, (cut,))
    x = _q(7)
    np.testing.assert_array_equal(run_reference(pieces, [x])[0], run_reference(graph, [x])[0])
    assert check_cut(graph, Cut(((node.name, "r2"),), 2, "keep")) is not None


def test_unsupported_is_explained():
    model = _model("ReduceMean", SHAPE, (1,), 1, 18)
    model.graph.initializer.pop()
    model.graph.input.append(helper.make_tensor_value_info("axes", TensorProto.INT64, (1,)))
    with pytest.raises(UnsupportedError, match="constant axes"):
        import_onnx(model)
