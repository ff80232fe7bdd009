"""Conv: numpy reference against onnxruntime (float and hand-built QDQ int8 models), the C
kernels against the reference (whole models on the host, and the bare kernels on strided views),
and the declaration itself (tensor expression, MACs, unsupported cases)."""
from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .conv_graphs import int8_conv
from .kernel_harness import Place, channels_last, needs_gcc, run_kernel
from .onnx_helpers import host_outputs, ort_outputs

OPSET, IR_VERSION = 13, 8


# --------------------------------------------------------------------------- model builders


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "conv_test", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return model


def _act_nodes(act, src: str, dst: str) -> list:
    """Relu (act == "Relu") or Clip (act == (lo, hi), bounds from _act_inits) from src to dst."""
    if act is None:
        return []
    if act == "Relu":
        return [helper.make_node("Relu", [src], [dst])]
    return [helper.make_node("Clip", [src, "clip_lo", "clip_hi"], [dst])]


def _act_inits(act) -> list:
    if act is None or act == "Relu":
        return []
    lo, hi = act
    return [numpy_helper.from_array(np.array(lo, np.float32), "clip_lo"),
            numpy_helper.from_array(np.array(hi, np.float32), "clip_hi")]


def float_conv_model(x_shape, w, b, attrs, act=None) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if b is not None else [])
    conv_out = "y" if act is None else "c"
    nodes = [helper.make_node("Conv", ["x", "w"] + (["b"] if b is not None else []), [conv_out], **attrs)]
    nodes += _act_nodes(act, "c", "y")
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits + _act_inits(act))


def _weights(rng, cout, cin_per_group, kernel) -> np.ndarray:
    fan_in = cin_per_group * int(np.prod(kernel))
    return (rng.standard_normal((cout, cin_per_group, *kernel)) / math.sqrt(fan_in)).astype(np.float32)


# (id, input shape, output channels, kernel, attributes, bias)
FLOAT_CASES = [
    ("1x1", (1, 8, 5, 6), 4, (1, 1), {}, True),
    ("3x3", (1, 3, 8, 8), 5, (3, 3), {}, True),
    ("3x3_pad1", (1, 3, 8, 8), 5, (3, 3), {"pads": [1, 1, 1, 1]}, True),
    ("3x3_nobias", (2, 3, 6, 7), 4, (3, 3), {"pads": [1, 1, 1, 1]}, False),
    ("5x3_asym_pad", (1, 2, 9, 8), 3, (5, 3), {"pads": [2, 0, 1, 2]}, True),
    ("stride2", (1, 4, 9, 9), 6, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
    ("stride_2x3", (1, 4, 10, 11), 3, (3, 2), {"strides": [2, 3], "pads": [0, 1, 1, 0]}, True),
    ("dilation2", (1, 3, 10, 10), 4, (3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, True),
    ("dilation_stride", (1, 3, 13, 12), 4, (3, 3), {"dilations": [2, 3], "strides": [2, 2], "pads": [1, 2, 0, 3]},
     True),
    ("big_pad", (1, 2, 4, 4), 3, (3, 3), {"pads": [3, 3, 3, 3]}, True),
    ("same_upper", (1, 3, 7, 8), 4, (3, 3), {"auto_pad": "SAME_UPPER"}, True),
    ("same_upper_s2_k4", (1, 3, 7, 8), 4, (4, 4), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, True),
    ("same_lower_s2_k4", (1, 3, 7, 8), 4, (4, 4), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, True),
    ("same_lower_k2", (1, 3, 6, 6), 4, (2, 2), {"auto_pad": "SAME_LOWER"}, True),
    ("same_upper_dil", (1, 2, 9, 9), 3, (2, 3), {"auto_pad": "SAME_UPPER", "dilations": [3, 2]}, True),
    ("same_lower_dil_s2", (1, 2, 9, 10), 3, (2, 3), {"auto_pad": "SAME_LOWER", "dilations": [3, 2], "strides": [2, 2]},
     True),
    ("valid", (1, 3, 8, 7), 4, (3, 3), {"auto_pad": "VALID", "strides": [2, 1]}, True),
    ("kernel_shape_attr", (1, 3, 6, 6), 2, (3, 3), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, True),
    ("depthwise", (1, 6, 8, 8), 6, (3, 3), {"group": 6, "pads": [1, 1, 1, 1]}, True),
    ("depthwise_s2", (1, 8, 9, 9), 8, (3, 3), {"group": 8, "strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
    ("depthwise_mult2", (1, 4, 7, 7), 8, (3, 3), {"group": 4, "pads": [1, 1, 1, 1]}, True),
    ("grouped", (1, 8, 6, 6), 6, (3, 3), {"group": 2, "pads": [0, 1, 1, 0]}, True),
    ("grouped_4", (1, 8, 5, 5), 12, (1, 1), {"group": 4}, False),
    ("conv1d", (1, 4, 16), 5, (3,), {"pads": [1, 1]}, True),
    ("conv1d_s2_dil", (2, 3, 20), 4, (5,), {"strides": [2], "dilations": [2], "pads": [3, 1]}, True),
    ("conv1d_same", (1, 3, 11), 4, (4,), {"auto_pad": "SAME_LOWER", "strides": [3]}, True),
    ("conv1d_depthwise", (1, 6, 12), 6, (3,), {"group": 6, "auto_pad": "SAME_UPPER"}, False),
]


# onnxruntime rejects dilation with SAME_*; it runs these with the explicit pads the ONNX spec
# gives: total = (out - 1) * stride + (k - 1) * dilation + 1 - in with out = ceil(in / stride),
# SAME_UPPER puts the odd one at the end, SAME_LOWER at the beginning.
ORT_EQUIVALENT = {
    # H: out 9, total 8 + 4 - 9 = 3 -> (1, 2); W: out 9, total 8 + 5 - 9 = 4 -> (2, 2)
    "same_upper_dil": {"dilations": [3, 2], "pads": [1, 2, 2, 2]},
    # H: out 5, total 8 + 4 - 9 = 3 -> (2, 1); W: out 5, total 8 + 5 - 10 = 3 -> (2, 1)
    "same_lower_dil_s2": {"dilations": [3, 2], "strides": [2, 2], "pads": [2, 2, 1, 1]},
    # H: out 9, total 8 + 4 - 9 = 3 -> (2, 1); W: out 10, total 9 + 5 - 10 = 4 -> (2, 2)
    "dilated_same_lower": {"dilations": [3, 2], "pads": [2, 2, 1, 2]},
}


def _float_case(case, seed=0):
    _, x_shape, cout, kernel, attrs, has_bias = case
    rng = np.random.default_rng(seed)
    group = attrs.get("group", 1)
    w = _weights(rng, cout, x_shape[1] // group, kernel)
    b = rng.standard_normal(cout).astype(np.float32) if has_bias else None
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    return x, w, b, attrs


# --------------------------------------------------------------------------- float


@pytest.mark.parametrize("case", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_reference_matches_onnxruntime(case):
    x, w, b, attrs = _float_case(case)
    model = float_conv_model(x.shape, w, b, attrs)
    expected = ort_outputs(float_conv_model(x.shape, w, b, ORT_EQUIVALENT.get(case[0], attrs)), {"x": x})[0]
    graph = lower(import_onnx(model), check=True)
    got = run_reference(graph, [x])[0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act", ["Relu", (0.0, 6.0), (-0.5, 0.25)], ids=["relu", "relu6", "clip"])
def test_float_fused_activation_matches_onnxruntime(act):
    x, w, b, attrs = _float_case(FLOAT_CASES[2], seed=1)
    model = float_conv_model(x.shape, w, b, attrs, act)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["Conv"], "the activation should fuse into the Conv"
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- int8 QDQ models


def _q(real, scale, zp, lo=-128, hi=127):
    return np.clip(np.rint(real / scale) + zp, lo, hi)


def qdq_conv_model(rng, x_shape, cout, kernel, attrs, act=None, bias=True, per_channel=True, zx=7, w_zp=0,
                   ort_attrs=None):
    """int8 x -> DQ -> Conv(DQ(w per channel), DQ(b int32)) -> [Relu | Clip] -> Q -> int8 y.

    Returns the model, the same model for onnxruntime (with ``ort_attrs`` on the Conv when given)
    and an input. The output quantization is chosen from the float result's range, so it is well used."""
    group = attrs.get("group", 1)
    w_real = _weights(rng, cout, x_shape[1] // group, kernel)
    s_x = np.float32(0.02)
    if per_channel:
        s_w = (np.abs(w_real).reshape(cout, -1).max(axis=1) / 127).astype(np.float32)
    else:
        s_w = np.full(cout, np.abs(w_real).max() / 127, np.float32)
    w_q = _q(w_real, s_w.reshape(-1, *([1] * (len(kernel) + 1))), w_zp).astype(np.int8)
    s_b = (s_x * s_w).astype(np.float32)
    b_q = np.rint(rng.standard_normal(cout) * 0.3 / s_b).astype(np.int32)
    x_q = rng.integers(-128, 128, x_shape, dtype=np.int64).astype(np.int8)

    def build(s_y=None, z_y=None, attrs=attrs):
        w_scale = s_w if per_channel else s_w[:1].reshape(())
        w_zero = np.full(cout, w_zp, np.int8) if per_channel else np.array(w_zp, np.int8)
        inits = [numpy_helper.from_array(np.array(s_x, np.float32), "s_x"),
                 numpy_helper.from_array(np.array(zx, np.int8), "z_x"),
                 numpy_helper.from_array(w_q, "w_q"),
                 numpy_helper.from_array(np.asarray(w_scale, np.float32), "s_w"),
                 numpy_helper.from_array(w_zero, "z_w")]
        nodes = [helper.make_node("DequantizeLinear", ["x", "s_x", "z_x"], ["x_f"]),
                 helper.make_node("DequantizeLinear", ["w_q", "s_w", "z_w"], ["w_f"], axis=0)]
        conv_inputs = ["x_f", "w_f"]
        if bias:
            inits += [numpy_helper.from_array(b_q, "b_q"), numpy_helper.from_array(s_b, "s_b"),
                      numpy_helper.from_array(np.zeros(cout, np.int32), "z_b")]
            nodes.append(helper.make_node("DequantizeLinear", ["b_q", "s_b", "z_b"], ["b_f"], axis=0))
            conv_inputs.append("b_f")
        nodes.append(helper.make_node("Conv", conv_inputs, ["c"], **attrs))
        last = "c"
        if act is not None:
            nodes += _act_nodes(act, "c", "a")
            inits += _act_inits(act)
            last = "a"
        if s_y is None:
            out = helper.make_tensor_value_info(last, TensorProto.FLOAT, None)
        else:
            inits += [numpy_helper.from_array(np.array(s_y, np.float32), "s_y"),
                      numpy_helper.from_array(np.array(z_y, np.int8), "z_y")]
            nodes.append(helper.make_node("QuantizeLinear", [last, "s_y", "z_y"], ["y"]))
            out = helper.make_tensor_value_info("y", TensorProto.INT8, None)
        return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT8, x_shape)], [out], inits)

    ort_attrs = ort_attrs or attrs
    real = ort_outputs(build(attrs=ort_attrs), {"x": x_q})[0]
    lo, hi = min(float(real.min()), 0.0), max(float(real.max()), 0.0)
    s_y = np.float32(max(hi - lo, 1e-3) / 255)
    z_y = int(np.clip(np.rint(-128 - lo / s_y), -128, 127))
    return build(s_y, z_y), build(s_y, z_y, ort_attrs), x_q


# (id, input shape, output channels, kernel, attributes, activation, bias, per-channel weights)
INT8_CASES = [
    ("3x3_pad", (1, 4, 8, 8), 6, (3, 3), {"pads": [1, 1, 1, 1]}, None, True, True),
    ("3x3_relu", (1, 4, 8, 8), 6, (3, 3), {"pads": [1, 1, 1, 1]}, "Relu", True, True),
    ("3x3_relu6_s2", (1, 4, 9, 9), 6, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, (0.0, 6.0), True, True),
    ("clip_narrow", (1, 3, 7, 7), 4, (3, 3), {"pads": [1, 1, 1, 1]}, (-0.3, 0.4), True, True),
    ("1x1_relu", (1, 16, 5, 5), 8, (1, 1), {}, "Relu", True, True),
    ("per_tensor_w", (1, 4, 6, 6), 5, (3, 3), {"pads": [1, 0, 1, 2]}, None, True, False),
    ("no_bias", (1, 4, 6, 6), 5, (3, 3), {"auto_pad": "SAME_UPPER"}, "Relu", False, True),
    ("dilated_same_lower", (1, 3, 9, 10), 4, (2, 3), {"auto_pad": "SAME_LOWER", "dilations": [3, 2]}, None, True,
     True),
    ("depthwise_relu6", (1, 8, 8, 8), 8, (3, 3), {"group": 8, "pads": [1, 1, 1, 1]}, (0.0, 6.0), True, True),
    ("depthwise_s2", (1, 6, 9, 9), 6, (3, 3), {"group": 6, "strides": [2, 2], "auto_pad": "SAME_UPPER"}, "Relu",
     True, True),
    ("grouped", (1, 8, 6, 6), 4, (3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, None, True, True),
    ("conv1d", (1, 4, 24), 6, (5,), {"pads": [2, 2], "strides": [2]}, "Relu", True, True),
]


def _int8_case(case, seed):
    name, x_shape, cout, kernel, attrs, act, bias, per_channel = case
    return qdq_conv_model(np.random.default_rng(seed), x_shape, cout, kernel, attrs, act, bias, per_channel,
                          ort_attrs=ORT_EQUIVALENT.get(name))


def _assert_close_int8(got: np.ndarray, expected: np.ndarray) -> None:
    diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
    assert diff.max() <= 2, f"off by {diff.max()} quantization steps"
    assert np.mean(diff > 1) <= 0.01, f"{np.mean(diff > 1):.1%} of the elements are off by 2"


@pytest.mark.parametrize("case", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_reference_matches_onnxruntime(case):
    model, ort_model, x_q = _int8_case(case, seed=3)
    graph = lower(import_onnx(model), check=True)
    conv = [n for n in graph.nodes if n.op == "Conv"]
    assert len(conv) == 1 and graph[conv[0].inputs[0]].dtype == "int8", "the Conv should be lowered to int8"
    assert [n.op for n in graph.nodes] == ["Conv"], "DQ/Q and the activation should be folded into the Conv"
    _assert_close_int8(run_reference(graph, [x_q])[0], ort_outputs(ort_model, {"x": x_q})[0])


def test_int8_asymmetric_weights_stay_float():
    case = INT8_CASES[0]
    _, x_shape, cout, kernel, attrs, act, bias, per_channel = case
    model, _, x_q = qdq_conv_model(np.random.default_rng(4), x_shape, cout, kernel, attrs, act, bias, per_channel,
                                w_zp=3)
    graph = lower(import_onnx(model), check=True)
    conv = [n for n in graph.nodes if n.op == "Conv"]
    assert len(conv) == 1 and graph[conv[0].inputs[0]].dtype == "float32"
    _assert_close_int8(run_reference(graph, [x_q])[0], ort_outputs(model, {"x": x_q})[0])


def test_int8_padding_reads_input_zero_point():
    """With an all-zero-point input every output is requant(bias), padded or not."""
    model, _, x_q = qdq_conv_model(np.random.default_rng(5), (1, 3, 5, 5), 4, (3, 3), {"pads": [2, 2, 2, 2]},
                                zx=-20)
    x_q = np.full_like(x_q, -20)
    graph = lower(import_onnx(model), check=True)
    got = run_reference(graph, [x_q])[0]
    assert np.all(got == got[:, :, :1, :1]), "padded and interior positions must agree"
    _assert_close_int8(got, ort_outputs(model, {"x": x_q})[0])


# --------------------------------------------------------------------------- C on the host, whole models


@pytest.mark.parametrize("case", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_c_matches_reference(case):
    x, w, b, attrs = _float_case(case, seed=2)
    model = float_conv_model(x.shape, w, b, attrs, act=(-0.5, 0.5) if case[0] == "3x3" else None)
    expected = run_reference(lower(import_onnx(model)), [x])[0]
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_c_matches_reference_bit_exact(case):
    model, _, x_q = _int8_case(case, seed=6)
    graph = lower(import_onnx(model))
    x2 = np.random.default_rng(7).integers(-128, 128, x_q.shape).astype(np.int8)
    got = host_outputs(model, [{"x": x_q}, {"x": x2}])
    for sample, out in zip([x_q, x2], got):
        np.testing.assert_array_equal(out[0], run_reference(graph, [sample])[0])


# --------------------------------------------------------------------------- bare kernels on strided views


def _int8_graph(x_shape, cout, kernel, attrs, clip=None, seed=0, bias=True) -> tuple[Graph, Node, dict]:
    """An int8 Conv as the QDQ lowering produces it, built directly."""
    return int8_conv(x_shape, cout, kernel, attrs, clip=clip, seed=seed, bias=bias)


def _float_graph(x_shape, cout, kernel, attrs, clip=None, seed=0) -> tuple[Graph, Node, dict]:
    rng = np.random.default_rng(seed)
    group = attrs.get("group", 1)
    w = _weights(rng, cout, x_shape[1] // group, kernel)
    b = rng.standard_normal(cout).astype(np.float32)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    tensors = [Tensor("x", x_shape, "float32", "input"), constant("w", w), constant("b", b)]
    node_attrs = dict(attrs)
    if clip is not None:
        node_attrs.update(clip_min=clip[0], clip_max=clip[1])
    node = Node("conv", "Conv", ("x", "w", "b"), ("y",), node_attrs)
    partial = Graph("g", {t.name: t for t in tensors}, (), ("x",), ())
    shape, dtype = registry.get("Conv").infer(partial, node)[0]
    tensors.append(Tensor("y", shape, dtype, "output"))
    graph = Graph("g", {t.name: t for t in tensors}, (node,), ("x",), ("y",))
    return graph, node, {"x": x}


def _place(graph: Graph, pads: dict, nhwc: bool) -> dict:
    """Each view padded, and with the channels innermost in memory when ``nhwc``."""
    return {name: Place(pad, channels_last(len(graph[name].shape)) if nhwc else None) for name, pad in pads.items()}


STRIDED_CASES = [
    ("3x3_pad", (2, 3, 7, 6), 4, (3, 3), {"pads": [1, 2, 1, 0]}),
    ("stride_dil", (1, 4, 11, 10), 3, (3, 2), {"strides": [2, 3], "dilations": [2, 1], "pads": [2, 1, 0, 1]}),
    ("depthwise", (1, 5, 6, 6), 5, (3, 3), {"group": 5, "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ("grouped", (1, 6, 5, 5), 9, (1, 1), {"group": 3}),
    ("conv1d", (1, 3, 13), 4, (4,), {"auto_pad": "SAME_LOWER", "dilations": [2]}),
]


@needs_gcc
@pytest.mark.parametrize("case", STRIDED_CASES, ids=[c[0] for c in STRIDED_CASES])
@pytest.mark.parametrize("clip", [None, (0.0, 2.0)], ids=["noclip", "clip"])
@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "channels_last"])
def test_int8_kernel_on_strided_views_is_bit_exact(tmp_path, case, clip, nhwc):
    _, x_shape, cout, kernel, attrs = case
    graph, node, values = _int8_graph(x_shape, cout, kernel, attrs, clip, seed=8)
    op = registry.get("Conv")
    assert op.accepts_int8(graph, node)
    expected = run_reference(graph, [values["x"]])[0]
    got = run_kernel(tmp_path, op.kernel(graph, node), graph, values, _place(graph, {"x": 1, "y": 2}, nhwc))[0]
    np.testing.assert_array_equal(got, expected)


@needs_gcc
def test_int8_kernel_without_bias_is_bit_exact(tmp_path):
    graph, node, values = _int8_graph((1, 4, 6, 6), 3, (3, 3), {"pads": [1, 1, 1, 1]}, seed=9, bias=False)
    op = registry.get("Conv")
    expected = run_reference(graph, [values["x"]])[0]
    np.testing.assert_array_equal(run_kernel(tmp_path, op.kernel(graph, node), graph, values, {"x": 1})[0], expected)


@needs_gcc
@pytest.mark.parametrize("case", STRIDED_CASES, ids=[c[0] for c in STRIDED_CASES])
@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "channels_last"])
def test_float_kernel_on_strided_views(tmp_path, case, nhwc):
    _, x_shape, cout, kernel, attrs = case
    graph, node, values = _float_graph(x_shape, cout, kernel, attrs, clip=(-0.7, 0.9), seed=10)
    op = registry.get("Conv")
    expected = run_reference(graph, [values["x"]])[0]
    got = run_kernel(tmp_path, op.kernel(graph, node), graph, values, _place(graph, {"x": 2, "y": 1}, nhwc))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- declaration


def test_expr_group1_2d():
    graph, node, _ = _float_graph((1, 3, 9, 8), 4, (3, 2), {"strides": [2, 1], "dilations": [1, 2],
                                                            "pads": [1, 0, 1, 2]})
    op = registry.get("Conv")
    e = op.expr(graph, node)
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [
        ("n", 1, "spatial"), ("oc", 4, "spatial"), ("oh", 5, "spatial"), ("ow", 8, "spatial"),
        ("ic", 3, "reduction"), ("kh", 3, "reduction"), ("kw", 2, "reduction")]
    assert e.inputs[0] == (Dim.identity("n"), Dim.identity("ic"), Dim.window("oh", "kh", 2, 1, 1),
                           Dim.window("ow", "kw", 1, 2, 0))
    assert e.inputs[1] == (Dim.identity("oc"), Dim.identity("ic"), Dim.identity("kh"), Dim.identity("kw"))
    assert e.inputs[2] == (Dim.identity("oc"),)
    assert e.outputs[0] == (Dim.identity("n"), Dim.identity("oc"), Dim.identity("oh"), Dim.identity("ow"))
    # oh = (9 + 2 - 3) // 2 + 1 = 5, ow = (8 + 2 - 3) // 1 + 1 = 8; MACs = 4*5*8 outputs * 3*3*2 taps
    assert op.macs(graph, node) == 4 * 5 * 8 * 3 * 3 * 2


def test_expr_depthwise_grouped_and_1d():
    op = registry.get("Conv")
    graph, node, _ = _float_graph((1, 6, 8, 8), 6, (3, 3), {"group": 6, "auto_pad": "SAME_UPPER", "strides": [2, 2]})
    e = op.expr(graph, node)
    assert e.inputs[0][1] == Dim.identity("oc") and e.axis("ic").extent == 1
    # SAME_UPPER, 8 -> 4 with stride 2: total pad (4-1)*2 + 3 - 8 = 1, all of it at the end
    assert e.inputs[0][2] == Dim.window("oh", "kh", 2, 1, 0)
    assert op.macs(graph, node) == 6 * 4 * 4 * 9

    graph, node, _ = _float_graph((1, 8, 5, 5), 6, (1, 1), {"group": 2})
    e = op.expr(graph, node)
    assert e.inputs[0][1] == Dim.full() and e.axis("ic").extent == 4
    assert op.macs(graph, node) == 6 * 25 * 4

    graph, node, _ = _float_graph((1, 3, 10), 4, (3,), {"strides": [2], "auto_pad": "SAME_LOWER"})
    e = op.expr(graph, node)
    assert [a.name for a in e.axes] == ["n", "oc", "ow", "ic", "kw"]
    # SAME_LOWER, 10 -> 5 with stride 2: total pad 4*2 + 3 - 10 = 1, all of it at the beginning
    assert e.inputs[0] == (Dim.identity("n"), Dim.identity("ic"), Dim.window("ow", "kw", 2, 1, 1))
    assert graph["y"].shape == (1, 4, 5)
    assert op.macs(graph, node) == 4 * 5 * 3 * 3


def test_non_constant_weights_are_rejected():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 5, 5))
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, (3, 2, 3, 3))
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"])], [x, w],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [])
    with pytest.raises(UnsupportedError, match="constant weights"):
        import_onnx(model)


def test_3d_conv_is_rejected():
    w = np.zeros((2, 1, 3, 3, 3), np.float32)
    model = float_conv_model((1, 1, 5, 5, 5), w, None, {})
    with pytest.raises(UnsupportedError, match="1-D and 2-D"):
        import_onnx(model)


def test_accepts_int8_declines_what_the_kernel_cannot_do():
    op = registry.get("Conv")
    graph, node, _ = _int8_graph((1, 4, 6, 6), 3, (3, 3), {"pads": [1, 1, 1, 1]}, seed=11)
    assert op.accepts_int8(graph, node)

    def with_tensor(name, **changes):
        return graph.replace(tensors={**graph.tensors, name: graph[name].with_(**changes)})

    w_quant = graph["w"].quant
    asymmetric = Quant(w_quant.scale, (0, 1, 0), 0)
    assert not op.accepts_int8(with_tensor("w", quant=asymmetric), node)
    wrong_axis = Quant(w_quant.scale, w_quant.zero_point, 1)
    assert not op.accepts_int8(with_tensor("w", quant=wrong_axis), node)
    per_channel_x = Quant((0.1,) * 4, (0,) * 4, 1)
    assert not op.accepts_int8(with_tensor("x", quant=per_channel_x), node)
    # |w| = 127 over 4*3*3 taps times |x - z_x| <= 255 is 1.17e6; a bias of 2^31 - 1e6 could overflow int32
    big_bias = constant("b", np.full(3, 2**31 - 1_000_000, np.int32), graph["b"].quant)
    big_w = constant("w", np.full((3, 4, 3, 3), 127, np.int8), w_quant)
    overflow = graph.replace(tensors={**graph.tensors, "b": big_bias, "w": big_w})
    assert not op.accepts_int8(overflow, node)


def test_int8_quantize_static_model(tmp_path):
    """A float Conv -> Relu quantized by onnxruntime's own tool (QDQ, int8, per channel)."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    rng = np.random.default_rng(12)
    w = _weights(rng, 6, 4, (3, 3))
    b = (rng.standard_normal(6) * 0.2).astype(np.float32)
    float_model = float_conv_model((1, 4, 8, 8), w, b, {"pads": [1, 1, 1, 1], "strides": [2, 2]}, act="Relu")
    src, dst = tmp_path / "float.onnx", tmp_path / "int8.onnx"
    onnx.save(float_model, src)
    samples = [rng.uniform(-1, 1, (1, 4, 8, 8)).astype(np.float32) for _ in range(8)]

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.items = iter([{"x": s} for s in samples])

        def get_next(self):
            return next(self.items, None)

    quantization.quantize_static(str(src), str(dst), Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8)
    model = onnx.load(dst)
    graph = lower(import_onnx(model), check=True)
    assert any(n.op == "Conv" and graph[n.inputs[0]].dtype == "int8" for n in graph.nodes)
    x = samples[0]
    expected = ort_outputs(model, {"x": x})[0]
    got = run_reference(graph, [x])[0]
    # float in and out: compare in units of the output's quantization step
    step = graph[[n for n in graph.nodes if n.op == "Conv"][0].outputs[0]].quant.scale[0]
    diff = np.abs(got - expected) / step
    assert diff.max() <= 2.01 and np.mean(diff > 1.01) <= 0.01
