"""BatchNormalization: the numpy reference against onnxruntime, the fold into a preceding float
Conv (the folded graph computes what the unfolded one does), the cases that must not fold, the
C kernel (whole models on the host and on strided views), and the unsupported forms."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Tensor, constant, verify
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.passes.batchnorm import fold_batchnorm
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .kernel_harness import needs_gcc, run_unary_kernel
from .onnx_helpers import host_outputs, ort_outputs

OPSET, IR_VERSION = 13, 8


def _model(nodes, x_shape, outputs, inits, opset=OPSET) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "bn_test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def _bn_params(rng, channels: int, prefix: str = "bn") -> tuple[list, list[str]]:
    values = {"scale": rng.standard_normal(channels) * 1.5, "B": rng.standard_normal(channels),
              "mean": rng.standard_normal(channels) * 0.5, "var": rng.uniform(0.05, 3.0, channels)}
    names = [f"{prefix}_{k}" for k in values]
    return [numpy_helper.from_array(v.astype(np.float32), n) for n, v in zip(names, values.values())], names


def bn_model(x_shape, seed=0, epsilon=None, relu=False) -> onnx.ModelProto:
    inits, names = _bn_params(np.random.default_rng(seed), x_shape[1])
    attrs = {} if epsilon is None else {"epsilon": epsilon}
    nodes = [helper.make_node("BatchNormalization", ["x"] + names, ["b" if relu else "y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["b"], ["y"]))
    return _model(nodes, x_shape, ["y"], inits)


def _x(seed, shape) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 2).astype(np.float32)


BN_CASES = [("nchw", (2, 4, 5, 6), None), ("nc", (3, 7), 1e-3), ("ncl", (1, 5, 9), 0.1),
            ("ncdhw", (1, 3, 2, 3, 4), None)]


@pytest.mark.parametrize("shape,epsilon", [c[1:] for c in BN_CASES], ids=[c[0] for c in BN_CASES])
def test_float_reference_matches_onnxruntime(shape, epsilon):
    model = bn_model(shape, seed=1, epsilon=epsilon)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["BatchNormalization"]
    x = _x(2, shape)
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_fused_relu_matches_onnxruntime():
    model = bn_model((1, 6, 4, 4), seed=3, relu=True)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["BatchNormalization"], "the Relu should fuse into the BN"
    x = _x(4, (1, 6, 4, 4))
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- folding into Conv


def _need_conv():
    if "Conv" not in registry.names():
        pytest.skip("the Conv operator is not registered yet")


def conv_bn_model(x_shape, cout, kernel, attrs, bias=True, seed=0, extra_reader=False) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    group = attrs.get("group", 1)
    w = (rng.standard_normal((cout, x_shape[1] // group, *kernel)) * 0.3).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    conv_inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), "b"))
        conv_inputs.append("b")
    bn_inits, names = _bn_params(rng, cout)
    nodes = [helper.make_node("Conv", conv_inputs, ["c"], **attrs),
             helper.make_node("BatchNormalization", ["c"] + names, ["y"], epsilon=1e-3)]
    outputs = ["y"]
    if extra_reader:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        outputs.append("r")
    return _model(nodes, x_shape, outputs, inits + bn_inits)


FOLD_CASES = [
    ("3x3_bias", (1, 3, 8, 8), 5, (3, 3), {"pads": [1, 1, 1, 1]}, True),
    ("1x1_no_bias", (1, 8, 5, 5), 4, (1, 1), {}, False),
    ("depthwise", (1, 6, 7, 7), 6, (3, 3), {"group": 6, "pads": [1, 1, 1, 1], "strides": [2, 2]}, False),
    ("grouped", (1, 8, 6, 6), 4, (3, 3), {"group": 2}, True),
    ("conv1d", (1, 4, 20), 6, (5,), {"pads": [2, 2]}, True),
]
FOLD_IDS = [c[0] for c in FOLD_CASES]


@pytest.mark.parametrize("case", FOLD_CASES, ids=FOLD_IDS)
def test_fold_into_conv_computes_the_same(case):
    _need_conv()
    _, x_shape, cout, kernel, attrs, bias = case
    model = conv_bn_model(x_shape, cout, kernel, attrs, bias, seed=5)
    unfolded = import_onnx(model)
    folded = verify(fold_batchnorm(unfolded))
    assert [n.op for n in unfolded.nodes] == ["Conv", "BatchNormalization"], "the pass must not edit its input"
    assert [n.op for n in folded.nodes] == ["Conv"]
    assert folded.nodes[0].outputs == ("y",) and len(folded.nodes[0].inputs) == 3
    assert "c" not in folded.tensors and not any(k.startswith("bn_") for k in folded.tensors)
    x = _x(6, x_shape)
    expected = run_reference(unfolded, [x])[0]
    np.testing.assert_allclose(run_reference(folded, [x])[0], expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_reference(lower(unfolded), [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-4,
                               atol=1e-4)


def test_fold_arithmetic_by_hand():
    """Golden: 1x1 Conv with w = [[2]], bias 1, then BN scale 3, B 0.5, mean 1, var 3, eps 1:
    a = 3 / sqrt(4) = 1.5, b = 0.5 - 1 * 1.5 = -1; folded w = 3, bias = 1 * 1.5 - 1 = 0.5."""
    _need_conv()
    f = np.float32
    tensors = [Tensor("x", (1, 1, 1, 1), "float32", "input"), Tensor("c", (1, 1, 1, 1), "float32"),
               Tensor("y", (1, 1, 1, 1), "float32", "output"), constant("w", np.full((1, 1, 1, 1), 2, f)),
               constant("b", np.array([1], f))]
    tensors += [constant(n, np.array([v], f)) for n, v in (("s", 3), ("B", 0.5), ("m", 1), ("v", 3))]
    nodes = (Node("conv", "Conv", ("x", "w", "b"), ("c",), {"group": 1}),
             Node("bn", "BatchNormalization", ("c", "s", "B", "m", "v"), ("y",), {"epsilon": 1.0}))
    graph = Graph("g", {t.name: t for t in tensors}, nodes, ("x",), ("y",))
    folded = fold_batchnorm(graph)
    conv = folded.nodes[0]
    assert folded[conv.inputs[1]].data.ravel().tolist() == [3.0]
    assert folded[conv.inputs[2]].data.tolist() == [0.5]


def test_no_fold_when_conv_output_has_another_reader():
    _need_conv()
    model = conv_bn_model((1, 3, 6, 6), 4, (3, 3), {}, seed=7, extra_reader=True)
    graph = lower(import_onnx(model), check=True)
    assert sorted(n.op for n in graph.nodes) == ["BatchNormalization", "Conv", "Relu"]
    x = _x(8, (1, 3, 6, 6))
    for got, expected in zip(run_reference(graph, [x]), ort_outputs(model, {"x": x})):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_no_fold_without_conv_and_after_fused_activation():
    graph = import_onnx(bn_model((1, 3, 4, 4)))
    assert fold_batchnorm(graph) is graph
    _need_conv()
    graph = import_onnx(conv_bn_model((1, 3, 6, 6), 4, (3, 3), {}, seed=9))
    conv = graph.nodes[0]
    relu6 = conv.with_(attrs={**conv.attrs, "clip_min": 0.0, "clip_max": 6.0})
    graph = graph.replace(nodes=(relu6,) + graph.nodes[1:])
    assert [n.op for n in fold_batchnorm(graph).nodes] == ["Conv", "BatchNormalization"]


# --------------------------------------------------------------------------- C on the host


@pytest.mark.parametrize("shape,epsilon", [c[1:] for c in BN_CASES], ids=[c[0] for c in BN_CASES])
def test_float_c_matches_reference(shape, epsilon):
    model = bn_model(shape, seed=10, epsilon=epsilon, relu=shape == (2, 4, 5, 6))
    x = _x(11, shape)
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_allclose(got, run_reference(lower(import_onnx(model)), [x])[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", FOLD_CASES[:3], ids=FOLD_IDS[:3])
def test_folded_conv_c_matches_reference(case):
    _need_conv()
    _, x_shape, cout, kernel, attrs, bias = case
    model = conv_bn_model(x_shape, cout, kernel, attrs, bias, seed=12)
    x = _x(13, x_shape)
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_allclose(got, run_reference(lower(import_onnx(model)), [x])[0], rtol=1e-5, atol=1e-5)


def test_bn_between_qdq_stays_float():
    """DequantizeLinear -> BatchNormalization -> QuantizeLinear: no int8 BN, the float path is
    kept between the quantize kernels and agrees with onnxruntime within one step."""
    inits, names = _bn_params(np.random.default_rng(14), 4)
    inits += [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
              numpy_helper.from_array(np.array(0, np.int8), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node("BatchNormalization", ["xf"] + names, ["yf"]),
             helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "bn_qdq", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 4, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    lowered = lower(import_onnx(model), check=True)
    bn = [n for n in lowered.nodes if n.op == "BatchNormalization"]
    assert len(bn) == 1 and lowered[bn[0].inputs[0]].dtype == "float32"
    x = np.random.default_rng(15).integers(-128, 128, (1, 4, 3, 3)).astype(np.int8)
    got = run_reference(lowered, [x])[0]
    diff = np.abs(got.astype(np.int32) - ort_outputs(model, {"x": x})[0].astype(np.int32))
    assert diff.max() <= 1
    np.testing.assert_array_equal(host_outputs(model, [{"x": x}])[0][0], got)


# --------------------------------------------------------------------------- kernel and declaration


def _graph(shape) -> tuple[Graph, Node]:
    rng = np.random.default_rng(16)
    c = shape[1]
    tensors = [Tensor("x", shape, "float32", "input"), Tensor("y", shape, "float32", "output"),
               constant("s", rng.standard_normal(c).astype(np.float32)),
               constant("B", rng.standard_normal(c).astype(np.float32)),
               constant("m", rng.standard_normal(c).astype(np.float32)),
               constant("v", rng.uniform(0.1, 2, c).astype(np.float32))]
    node = Node("bn", "BatchNormalization", ("x", "s", "B", "m", "v"), ("y",), {"epsilon": 1e-5})
    return Graph("g", {t.name: t for t in tensors}, (node,), ("x",), ("y",)), node


@needs_gcc
@pytest.mark.parametrize("inplace", [False, True], ids=["strided", "inplace"])
def test_kernel_on_strided_views(tmp_path, inplace):
    graph, node = _graph((2, 3, 4, 2))
    x = _x(17, (2, 3, 4, 2))
    call = registry.get("BatchNormalization").kernel(graph, node)
    got = run_unary_kernel(tmp_path, call, graph, x, pad=0 if inplace else 1, inplace=inplace)
    np.testing.assert_allclose(got, run_reference(graph, [x])[0], rtol=1e-6, atol=1e-6)


def test_expr_and_inplace():
    graph, node = _graph((1, 3, 4))
    op = registry.get("BatchNormalization")
    e = op.expr(graph, node)
    assert [a.name for a in e.axes] == ["d0", "d1", "d2"]
    assert e.inputs[0] == (Dim.identity("d0"), Dim.identity("d1"), Dim.identity("d2"))
    assert e.inputs[1:] == ((Dim.identity("d1"),),) * 4
    assert op.inplace(graph, node) == 0 and not op.accepts_int8(graph, node)


def test_training_and_non_constant_statistics_are_rejected():
    inits, names = _bn_params(np.random.default_rng(18), 3)
    model = _model([helper.make_node("BatchNormalization", ["x"] + names, ["y"], training_mode=1)],
                   (1, 3, 4, 4), ["y"], inits, opset=15)
    with pytest.raises(UnsupportedError, match="training"):
        import_onnx(model)
    graph = helper.make_graph([helper.make_node("BatchNormalization", ["x"] + names, ["y"])], "bn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4]),
                               helper.make_tensor_value_info(names[2], TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [i for i in inits if i.name != names[2]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    with pytest.raises(UnsupportedError, match="constant"):
        import_onnx(model)
