"""LayerNormalization (opset 17): each row of the trailing dimensions [axis, rank) normalised to
zero mean and unit variance, times Scale, plus B (firmware/kernels/layernorm.c).

Scale and B must be constants; they are broadcast to the normalised shape at compile time.
The optional Mean and InvStdDev outputs are computed in float (they have the shape of X with
the normalised dimensions of extent 1).

float32, per row of n elements in row-major order (the numpy reference does the same float32
operations in the same order, so C and numpy agree to the last bit or nearly):

    mean = (sum x) / n;  var = (sum (x - mean)^2) / n;  inv = 1 / sqrtf(var + epsilon)
    y    = (x - mean) * inv * scale + bias

int8 (per-tensor input and output; DequantizeLinear -> LayerNormalization -> QuantizeLinear as
onnxruntime's quantize_static writes it, with Scale and B dequantized at compile time): the
statistics are exact integers, S = sum q, c = n q - S, V = sum c^2 = n (n sum q^2 - S^2) (int64, one
pass in C); then in float32

    inv = 1 / sqrtf((float)V * k_var + epsilon)          k_var = s_x^2 / n^3
    y   = lrintf((float)c * k_c * inv * g + b) + z_y      k_c = s_x / n, g = scale / s_y, b = bias / s_y

clamped to the output range: the same float32 operations, one by one, in C and in numpy.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Array, Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS
from mcudeploy.ops.util import norm_axis

MAX_ROW_INT8 = 1 << 15  # n^3 * 255^2 stays within int64


def _axis(graph: Graph, node: Node) -> int:
    rank = len(graph[node.inputs[0]].shape)
    return norm_axis(int(node.attr("axis", -1)), rank, "LayerNormalization")


def _real(graph: Graph, name: str) -> np.ndarray:
    """A constant input as real numbers (a quantized constant dequantized, float64)."""
    t = graph[name]
    value = t.data.astype(np.float64)
    if t.quant is None:
        return value
    scale, zp = t.quant.scale_array(), t.quant.zp_array()
    if t.quant.axis is not None and scale.size > 1:
        shape = [1] * value.ndim
        shape[t.quant.axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return (value - zp) * scale


def affine_params(graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray]:
    """(scale, bias) broadcast to the normalised shape X.shape[axis:], flattened, float64."""
    shape = graph[node.inputs[0]].shape[_axis(graph, node):]
    out = []
    for index in (1, 2):
        name = node.inputs[index] if len(node.inputs) > index else ""
        if not name:
            out.append(np.zeros(int(np.prod(shape)), np.float64))
            continue
        value = _real(graph, name)
        lead = value.shape[:max(value.ndim - len(shape), 0)]
        require(all(d == 1 for d in lead), f"LayerNormalization {('Scale', 'B')[index - 1]} of shape "
                                           f"{graph[name].shape} varies outside the normalised dimensions")
        value = value.reshape(value.shape[len(lead):])
        try:
            out.append(np.broadcast_to(value, shape).reshape(-1))
        except ValueError:
            require(False, f"LayerNormalization {('Scale', 'B')[index - 1]} of shape {graph[name].shape} does not "
                           f"broadcast to the normalised shape {shape}")
    return out[0], out[1]


def _rows(x: np.ndarray, axis: int) -> np.ndarray:
    return x.reshape(x.shape[:axis] + (-1,))


@register
class LayerNormalization(Op):
    name = "LayerNormalization"
    onnx_types = ("LayerNormalization",)

    def from_onnx(self, onnx: OnnxNode):
        require(len(onnx.inputs) >= 2 and onnx.inputs[1], "LayerNormalization needs a Scale input")
        attrs = {"axis": int(onnx.attrs.get("axis", -1)), "epsilon": float(onnx.attrs.get("epsilon", 1e-5))}
        return onnx.inputs[:3], attrs

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype in ("float32", "int8"), f"LayerNormalization of {x.dtype} is not supported")
        require(1 <= len(x.shape) <= MAX_DIMS, f"LayerNormalization of a {len(x.shape)}-D tensor "
                                               f"(1 to {MAX_DIMS} dimensions)")
        axis = _axis(graph, node)
        for name, what in zip(node.inputs[1:], ("Scale", "B")):
            source = graph.producer(name) if name and not graph.is_const(name) else None
            require(not name or graph.is_const(name) or (source is not None and source.op == "DequantizeLinear"
                                                         and graph.is_const(source.inputs[0])),
                    f"LayerNormalization needs a constant {what} (it is compiled into flash)")
        if all(graph.is_const(n) for n in node.inputs[1:] if n):
            affine_params(graph, node)
        stats = tuple(n if d < axis else 1 for d, n in enumerate(x.shape))
        return [(x.shape, x.dtype)] + [(stats, "float32")] * (len(node.outputs) - 1)

    def expr(self, graph, node):
        shape = graph[node.inputs[0]].shape
        axis = _axis(graph, node)
        axes = [Axis(f"r{d}", n, "reduction") if d >= axis else Axis(f"d{d}", n) for d, n in enumerate(shape)]
        dims = tuple(Dim.full() if d >= axis else Dim.identity(f"d{d}") for d in range(len(shape)))
        stats = tuple(Dim.broadcast() if d >= axis else Dim.identity(f"d{d}") for d in range(len(shape)))
        params = tuple(None if not n else tuple(Dim.full() for _ in graph[n].shape) for n in node.inputs[1:])
        return TensorExpr(tuple(axes), (dims,) + params, (dims,) + (stats,) * (len(node.outputs) - 1))

    def macs(self, graph, node):
        return 3 * graph[node.inputs[0]].size

    # ------------------------------------------------------------------ int8
    def accepts_int8(self, graph, node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if len(node.outputs) != 1 or any(t.dtype != "int8" or t.quant is None or len(t.quant.scale) != 1
                                         for t in (x, y)):
            return False
        shape = x.shape[_axis(graph, node):]
        return int(np.prod(shape)) <= MAX_ROW_INT8

    def _int8(self, graph: Graph, node: Node) -> dict:
        require(self.accepts_int8(graph, node), "an int8 LayerNormalization needs per-tensor quantized input and "
                                                "output, one output and at most 2^15 elements per row")
        x = graph[node.inputs[0]]
        n = int(np.prod(x.shape[_axis(graph, node):]))
        sx, _ = x.quant.single()
        sy, zy = graph[node.outputs[0]].quant.single()
        scale, bias = affine_params(graph, node)
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return dict(k_var=np.float32(sx * sx / float(n) ** 3), k_c=np.float32(sx / n),
                    epsilon=np.float32(node.attr("epsilon", 1e-5)), gamma=(scale / sy).astype(np.float32),
                    beta=(bias / sy).astype(np.float32), out_zero_point=zy, act_min=lo, act_max=hi)

    # ------------------------------------------------------------------ reference
    def reference(self, graph, node, inputs):
        x = inputs[0]
        axis = _axis(graph, node)
        r = _rows(x, axis)
        n = r.shape[-1]
        if x.dtype != np.float32:
            return [self._int8_reference(graph, node, r).reshape(x.shape)]
        scale, bias = (v.astype(np.float32) for v in affine_params(graph, node))
        acc = np.zeros(r.shape[:-1], np.float32)
        for j in range(n):  # the kernel's order
            acc = acc + r[..., j]
        mean = acc / np.float32(n)
        acc = np.zeros(r.shape[:-1], np.float32)
        for j in range(n):
            d = r[..., j] - mean
            acc = acc + d * d
        inv = np.float32(1.0) / np.sqrt(acc / np.float32(n) + np.float32(node.attr("epsilon", 1e-5)))
        y = (r - mean[..., None]) * inv[..., None] * scale + bias
        stats_shape = graph[node.outputs[1]].shape if len(node.outputs) > 1 else None
        extra = [mean.reshape(stats_shape), inv.reshape(stats_shape)][:len(node.outputs) - 1]
        return [y.astype(np.float32).reshape(x.shape)] + [e.astype(np.float32) for e in extra]

    def _int8_reference(self, graph, node, r) -> np.ndarray:
        p = self._int8(graph, node)
        q = r.astype(np.int64)
        n = q.shape[-1]
        c = n * q - q.sum(axis=-1, keepdims=True)
        v = (c * c).sum(axis=-1)
        inv = np.float32(1.0) / np.sqrt(v.astype(np.float32) * p["k_var"] + p["epsilon"])
        t = c.astype(np.float32) * p["k_c"] * inv[..., None] * p["gamma"] + p["beta"]
        out = np.rint(np.clip(t, np.float32(-1e9), np.float32(1e9))).astype(np.int64) + p["out_zero_point"]
        return np.clip(out, p["act_min"], p["act_max"]).astype(np.int8)

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        axis = _axis(graph, node)
        stats = tuple(node.outputs[1:3]) + ("",) * (3 - len(node.outputs))
        if x.dtype == "float32":
            scale, bias = (v.astype(np.float32) for v in affine_params(graph, node))
            return Call("mcud_layernorm_f32", (node.inputs[0], node.outputs[0]) + stats[:2], Struct.of(
                "mcud_layernorm_f32_params", axis=axis, epsilon=float(np.float32(node.attr("epsilon", 1e-5))),
                scale=Array("float", tuple(float(v) for v in scale)),
                bias=Array("float", tuple(float(v) for v in bias))))
        p = self._int8(graph, node)
        return Call("mcud_layernorm_s8", (node.inputs[0], node.outputs[0]), Struct.of(
            "mcud_layernorm_s8_params", axis=axis, k_var=float(p["k_var"]), k_c=float(p["k_c"]),
            epsilon=float(p["epsilon"]), gamma=Array("float", tuple(float(v) for v in p["gamma"])),
            beta=Array("float", tuple(float(v) for v in p["beta"])), out_zero_point=p["out_zero_point"],
            act_min=p["act_min"], act_max=p["act_max"]))
