"""Generated int8 conformance: QDQ models of each quantizable operator, compiled to C.

Each case is a float model quantized by hand the way onnxruntime's QDQ tooling does it:
QuantizeLinear on the float input, DequantizeLinear -> float op -> QuantizeLinear, int8 weights
quantized per output channel (DequantizeLinear axis 0, or the column axis of a MatMul/Gemm B),
an int32 bias at scale s_x*s_w. The output stays int8. For every case:

- the lowering produced an int8 operator (so the case cannot pass by running float);
- the C output equals the numpy reference bit for bit;
- the C output is within 2 quantization steps of onnxruntime on the QDQ model (no graph
  optimizations, so onnxruntime computes dequantize -> float op -> quantize).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.compile import compile_model
from mcudeploy.reference import run_reference

OPSET = 13
MAX_STEPS = 2


# --------------------------------------------------------------------------- building QDQ models


class QDQ:
    """Accumulates nodes and initializers of one QDQ model."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.feeds: dict[str, np.ndarray] = {}
        self.qparams: dict[str, tuple[np.float32, np.int8]] = {}  # activation -> (scale, zero point)
        self.output_like: str = ""  # an activation whose quantization the output keeps
        self.output_span = 1.0  # < 1: the output range covers only part of the values (they saturate)
        self.opset = OPSET

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def input(self, name: str, shape: tuple[int, ...], lo: float = -1.0, hi: float = 1.0, channels: bool = False) -> str:
        """A float graph input quantized per tensor (asymmetric) and dequantized again; ``channels``: each
        index of dimension 1 gets its own gain and offset (so a reduction over the others still spans
        the output range)."""
        x = self.rng.uniform(lo, hi, size=shape).astype(np.float32)
        if channels:
            bshape = (1, shape[1]) + (1,) * (len(shape) - 2)
            gain = np.linspace(0.1, 1.0, shape[1]).reshape(bshape)
            offset = np.linspace(-1.0, 1.0, shape[1])[::-1].reshape(bshape)
            x = (x * gain + offset).astype(np.float32)
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        self.feeds[name] = x
        return self.qdq(name, float(x.min()), float(x.max()))

    def qdq(self, name: str, lo: float, hi: float) -> str:
        """QuantizeLinear -> DequantizeLinear of an activation with range [lo, hi] (int8, asymmetric)."""
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        scale = np.float32(max(hi - lo, 1e-6) / 255.0)
        zp = np.int8(np.clip(np.round(-128 - lo / scale), -128, 127))
        self.qparams[name] = (scale, zp)
        s = self.const(f"{name}_scale", scale)
        z = self.const(f"{name}_zp", zp)
        self.nodes.append(helper.make_node("QuantizeLinear", [name, s, z], [f"{name}_q"]))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", s, z], [f"{name}_dq"]))
        return f"{name}_dq"

    def weights(self, name: str, shape: tuple[int, ...], axis: int) -> tuple[str, np.ndarray]:
        """Per-channel symmetric int8 weights along ``axis``, dequantized; returns (name, scales)."""
        w = self.rng.normal(0.0, 0.5, size=shape).astype(np.float32)
        other = tuple(i for i in range(len(shape)) if i != axis)
        amax = np.abs(w).max(axis=other)
        scale = (np.maximum(amax, 1e-3) / 127.0).astype(np.float32)
        bshape = [1] * len(shape)
        bshape[axis] = shape[axis]
        wq = np.clip(np.round(w / scale.reshape(bshape)), -127, 127).astype(np.int8)
        self.const(f"{name}_q", wq)
        s = self.const(f"{name}_scale", scale)
        z = self.const(f"{name}_zp", np.zeros(shape[axis], dtype=np.int8))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", s, z], [name], axis=axis))
        return name, scale

    def bias(self, name: str, x: str, w_scale: np.ndarray) -> str:
        """An int32 bias at scale s_x * s_w, dequantized along axis 0."""
        scale = (self.qparams[x.removesuffix("_dq")][0] * w_scale).astype(np.float32)
        real = self.rng.normal(0.0, 0.3, size=w_scale.shape)
        bq = np.round(real / scale).astype(np.int32)
        self.const(f"{name}_q", bq)
        s = self.const(f"{name}_scale", scale)
        z = self.const(f"{name}_zp", np.zeros(w_scale.shape, dtype=np.int32))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", s, z], [name], axis=0))
        return name

    def model(self, output: str, dtype: int, shape=None) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "int8_case", self.inputs,
                                  [helper.make_tensor_value_info(output, dtype, shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", self.opset)])
        model.ir_version = 8
        return model


def _ort(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def quantized(build: Callable[[QDQ], str], seed: int, opset: int = OPSET) -> tuple[onnx.ModelProto, dict]:
    """The QDQ model around ``build``'s float output, with an output scale from its real range."""
    q = QDQ(np.random.default_rng(seed))
    q.opset = opset
    y = build(q)
    real = _ort(q.model(y, TensorProto.FLOAT), q.feeds)[0]
    if q.output_like:
        scale, zp = q.qparams[q.output_like]
    else:
        lo, hi = min(float(real.min()), 0.0) * q.output_span, max(float(real.max()), 0.0) * q.output_span
        scale = np.float32(max(hi - lo, 1e-6) / 255.0)
        zp = np.int8(np.clip(np.round(-128 - lo / scale), -128, 127))
    s = q.const("y_scale", scale)
    z = q.const("y_zp", zp)
    q.nodes.append(helper.make_node("QuantizeLinear", [y, s, z], ["y"]))
    model = q.model("y", TensorProto.INT8, real.shape)
    onnx.checker.check_model(model)
    return model, q.feeds


# --------------------------------------------------------------------------- the operators


def conv(cin=4, cout=6, hw=(9, 9), k=(3, 3), relu=False, span=1.0, **attrs):
    def build(q: QDQ) -> str:
        q.output_span = span
        x = q.input("x", (1, cin, *hw))
        group = attrs.get("group", 1)
        w, s_w = q.weights("w", (cout, cin // group, *k), axis=0)
        b = q.bias("b", x, s_w)
        q.nodes.append(helper.make_node("Conv", [x, w, b], ["conv"], kernel_shape=list(k), **attrs))
        if relu:
            q.nodes.append(helper.make_node("Relu", ["conv"], ["relu"]))
            return "relu"
        return "conv"
    return build, "Conv"


def gemm(m=3, k=16, n=5, trans_b=1):
    def build(q: QDQ) -> str:
        a = q.input("a", (m, k))
        w, s_w = q.weights("w", (n, k) if trans_b else (k, n), axis=0 if trans_b else 1)
        b = q.bias("b", a, s_w)
        q.nodes.append(helper.make_node("Gemm", [a, w, b], ["gemm"], transB=trans_b))
        return "gemm"
    return build, "Gemm"


def matmul(m=4, k=12, n=7, bias=True):
    def build(q: QDQ) -> str:
        a = q.input("a", (m, k))
        w, s_w = q.weights("w", (k, n), axis=1)
        q.nodes.append(helper.make_node("MatMul", [a, w], ["mm"]))
        if not bias:
            return "mm"
        b = q.bias("b", a, s_w)
        q.nodes.append(helper.make_node("Add", ["mm", b], ["add"]))
        return "add"
    # MatMul with a bias Add becomes one Gemm in the integer graph.
    return build, ("Gemm" if bias else "MatMul")


def add(a_shape=(1, 4, 5, 6), b_shape=(1, 4, 5, 6), span=1.0):
    def build(q: QDQ) -> str:
        q.output_span = span
        a = q.input("a", a_shape, -1.0, 2.0)
        b = q.input("b", b_shape, -3.0, 0.5)
        q.nodes.append(helper.make_node("Add", [a, b], ["sum"]))
        return "sum"
    return build, "Add"


def pool(op, shape=(1, 4, 8, 8), same_scale=False, **attrs):
    def build(q: QDQ) -> str:
        x = q.input("x", shape)
        q.nodes.append(helper.make_node(op, [x], ["pool"], **attrs))
        if same_scale:  # what quantizers do for MaxPool: the output keeps the input's quantization
            q.output_like = "x"
        return "pool"
    return build, op


def matmul_act(a_shape=(1, 4, 16, 8), b_shape=(1, 4, 8, 16)):
    """Both operands activations (attention's Q K^T): mcud_matmul_s8."""
    def build(q: QDQ) -> str:
        a = q.input("a", a_shape)
        b = q.input("b", b_shape, -0.5, 1.5)
        q.nodes.append(helper.make_node("MatMul", [a, b], ["mm"]))
        return "mm"
    return build, "MatMul"


def reduce(op, shape=(1, 8, 6, 5), axes=(2, 3), keepdims=1):
    def build(q: QDQ) -> str:
        x = q.input("x", shape, channels=1 not in axes)
        axes_name = q.const("axes", np.array(axes, np.int64))
        q.nodes.append(helper.make_node(op, [x, axes_name], ["red"], keepdims=keepdims))
        return "red"
    return build, op


def variadic(op, shapes):
    def build(q: QDQ) -> str:
        xs = [q.input(f"x{i}", s, -1.0 - 0.1 * i, 1.0 + 0.2 * i) for i, s in enumerate(shapes)]
        q.nodes.append(helper.make_node(op, xs, ["v"]))
        return "v"
    return build, op


CASES = {
    "conv_k3_s1_p1": conv(pads=[1, 1, 1, 1]),
    "conv_k3_s2_p1": conv(strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv_k1": conv(k=(1, 1), cin=8, cout=16),
    "conv_k3_valid": conv(),
    "conv_k5_s2_p2": conv(k=(5, 5), hw=(11, 11), strides=[2, 2], pads=[2, 2, 2, 2]),
    "conv_k3_d2_p2": conv(dilations=[2, 2], pads=[2, 2, 2, 2]),
    "conv_k2x3_s2x1_asym_pads": conv(k=(2, 3), hw=(8, 7), strides=[2, 1], pads=[0, 1, 1, 0]),
    "conv_same_upper_s2": conv(hw=(8, 8), strides=[2, 2], auto_pad="SAME_UPPER"),
    "conv_relu": conv(pads=[1, 1, 1, 1], relu=True),
    "conv_saturating": conv(pads=[1, 1, 1, 1], span=0.6),
    "conv_1d_k3_s2": conv(hw=(15,), k=(3,), strides=[2], pads=[1, 1]),
    "depthwise_k3_s1_p1": conv(cin=8, cout=8, group=8, pads=[1, 1, 1, 1]),
    "depthwise_k3_s2_p1": conv(cin=6, cout=6, group=6, hw=(10, 10), strides=[2, 2], pads=[1, 1, 1, 1]),
    "depthwise_multiplier2": conv(cin=4, cout=8, group=4, pads=[1, 1, 1, 1]),
    "grouped_conv_g2": conv(cin=8, cout=6, group=2, pads=[1, 1, 1, 1]),
    "grouped_conv_g3_s2": conv(cin=6, cout=9, group=3, hw=(8, 8), strides=[2, 2]),
    "gemm_transb": gemm(),
    "gemm_no_transb": gemm(m=2, k=10, n=8, trans_b=0),
    "gemm_batch1": gemm(m=1, k=32, n=10),
    "matmul": matmul(bias=False),
    "matmul_add_bias": matmul(),
    "add_same_shape": add(),
    "add_broadcast_channel": add(b_shape=(1, 4, 1, 1)),
    "add_broadcast_last_dim": add(b_shape=(6,)),
    "add_broadcast_both": add(a_shape=(1, 4, 1, 6), b_shape=(1, 1, 5, 1)),
    "add_saturating": add(span=0.5),
    "maxpool_k2_s2": pool("MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
    "maxpool_k2_s2_same_scale": pool("MaxPool", same_scale=True, kernel_shape=[2, 2], strides=[2, 2]),
    "maxpool_k3_s2_p1": pool("MaxPool", shape=(1, 3, 9, 9), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "averagepool_k2_s2": pool("AveragePool", kernel_shape=[2, 2], strides=[2, 2]),
    "averagepool_k3_s1_p1": pool("AveragePool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "averagepool_k3_s1_p1_include_pad": pool("AveragePool", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                             count_include_pad=1),
    "averagepool_same_scale": pool("AveragePool", same_scale=True, kernel_shape=[2, 2], strides=[2, 2]),
    "globalaveragepool": pool("GlobalAveragePool", shape=(1, 8, 5, 7)),
    "matmul_activations_heads": matmul_act(),
    "matmul_activations_bcast": matmul_act((2, 7, 12), (1, 12, 9)),
    "reducemean_hw": reduce("ReduceMean"),
    "reducemean_last_flat": reduce("ReduceMean", shape=(1, 16, 24), axes=(-1,), keepdims=0),
    "reducesum_channels": reduce("ReduceSum", shape=(1, 3, 6, 5), axes=(1,)),
    "reducemax_hw": reduce("ReduceMax"),
    "reducemin_w": reduce("ReduceMin", axes=(3,)),
    "reducel2_hw": reduce("ReduceL2"),
    "sum_11_inputs": variadic("Sum", [(1, 4, 5, 6)] * 11),
    "mean_bcast": variadic("Mean", [(1, 4, 5, 6), (1, 4, 1, 1), (6,)]),
    "max_3": variadic("Max", [(2, 6, 5)] * 3),
    "min_bcast": variadic("Min", [(2, 6, 5), (5,)]),
}
OPSET_OF = {name: 18 for name in CASES if name.startswith("reduce")}  # axes as an input


@pytest.mark.parametrize("name", sorted(CASES))
def test_int8_case(name, tmp_path):
    build, op = CASES[name]
    model, feeds = quantized(build, seed=sorted(CASES).index(name) + 1, opset=OPSET_OF.get(name, OPSET))

    compiled = compile_model(model, "host")
    graph = compiled.graph
    int8_ops = [n.op for n in graph.nodes if n.op == op and graph[n.outputs[0]].dtype == "int8"]
    assert int8_ops, f"no int8 {op} after lowering: {[(n.op, graph[n.outputs[0]].dtype) for n in graph.nodes]}"
    assert not any(n.op == "DequantizeLinear" for n in graph.nodes), "a float island is left in the graph"

    c = run_compiled_on_host(compiled, [feeds], tmp_path)[0][0]
    ref = run_reference(graph, feeds)[0]
    ort = _ort(model, feeds)[0]
    assert c.dtype == ref.dtype == ort.dtype == np.int8
    np.testing.assert_array_equal(c, ref, err_msg="C and the numpy reference differ")
    steps = np.abs(c.astype(np.int32) - ort.astype(np.int32))
    assert steps.max() <= MAX_STEPS, f"C is {steps.max()} steps from onnxruntime ({np.mean(steps > 0):.1%} differ)"
    assert np.ptp(ort.astype(np.int32)) > 100, "the case uses too little of the int8 range to test anything"
    if name.endswith("_saturating"):
        assert np.mean((ort == -128) | (ort == 127)) > 0.02, "the saturating case does not saturate"
