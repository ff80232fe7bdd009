"""QuantizeLinear and DequantizeLinear that remain after QDQ lowering (at float boundaries); Requantize,
TFLite's QUANTIZE from one integer quantization to another."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Call, OnnxNode, Op, Struct, elementwise_expr, require, require_valid, Array
from mcudeploy.ops.requant import QRANGE, arithmetic, tflite_multiplier, tflite_requantize, tflite_round
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import norm_axis


def _params(onnx: OnnxNode, what: str):
    require(len(onnx.inputs) > 1 and onnx.inputs[1], f"{what} needs a scale")
    scale = onnx.const(onnx.inputs[1])
    require(scale is not None, f"{what} needs a constant scale")
    zp = onnx.const(onnx.inputs[2]) if len(onnx.inputs) > 2 and onnx.inputs[2] else None
    require(scale.dtype.kind == "f", f"{what} needs a float scale, not {scale.dtype}")
    require(zp is None or zp.dtype.kind in "iu", f"{what} needs an integer zero point, not {getattr(zp, 'dtype', '')}")
    require(scale.ndim <= 1 and (zp is None or zp.ndim <= 1), f"{what} needs a scalar or 1-D scale and zero point")
    require_valid(scale.size > 0, f"has no value in its scale {onnx.inputs[1]}")
    with np.errstate(all="ignore"):
        f32 = np.ravel(scale).astype(np.float32)  # as the kernels hold it
    bad = np.ravel(scale)[~(np.isfinite(f32) & (f32 > 0))]
    require_valid(not bad.size, f"has scale {float(bad[0]) if bad.size else 0:g} in {onnx.inputs[1]}: a quantization "
                                f"scale must be positive and finite")
    require_valid(zp is None or zp.size == scale.size,
                  f"has {zp.size if zp is not None else 0} zero points for {scale.size} scales")
    return scale, zp


def _check_channels(graph: Graph, node: Node, name: str) -> None:
    """A per-channel quantization has one scale per index of its axis; zero points lie in the
    range of the quantized type."""
    scale = node.attr("scale")
    qdtype = graph[name].dtype if node.op == "DequantizeLinear" else node.attr("qdtype")
    lo, hi = QRANGE.get(qdtype, (-2**31, 2**31 - 1))
    bad = [z for z in node.attr("zero_point") if not lo <= z <= hi]
    require_valid(not bad, f"has zero point {bad[0] if bad else 0}, outside the range of {qdtype} ({lo}..{hi})")
    if len(scale) > 1:
        shape = graph[name].shape
        axis = norm_axis(node.attr("axis"), len(shape), node.op)
        require_valid(shape[axis] == len(scale), f"has {len(scale)} scales for the {shape[axis]} channels of "
                                                 f"axis {axis} of {name}")


def _axis_info(graph: Graph, node: Node, name: str):
    """(channel count, inner size) of the quantization axis, or (1, 1) per tensor."""
    scale = node.attr("scale")
    if len(scale) == 1:
        return 1, 1
    shape = graph[name].shape
    axis = node.attr("axis")
    return shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))


def _bcast(graph: Graph, node: Node, name: str, values) -> np.ndarray:
    values = np.asarray(values)
    if values.size == 1:
        return values.reshape(())
    shape = [1] * len(graph[name].shape)
    shape[node.attr("axis")] = values.size
    return values.reshape(shape)


class _QDQ(Op):
    def from_onnx(self, onnx: OnnxNode):
        require(not onnx.attrs.get("block_size"), "blocked quantization (block_size) is not supported")
        scale, zp = _params(onnx, f"{onnx.op_type}")
        out_dtype = "int8" if zp is None else str(zp.dtype)
        attrs = {"scale": tuple(float(s) for s in np.ravel(scale)),
                 "zero_point": tuple(int(z) for z in np.ravel(zp)) if zp is not None else (0,) * scale.size,
                 "axis": int(onnx.attrs.get("axis", 1)), "qdtype": out_dtype}
        require(out_dtype in ("int8", "uint8", "int16", "int32"), f"{onnx.op_type} to {out_dtype} is not supported")
        return onnx.inputs[:1], attrs

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def _axis(self, graph: Graph, node: Node) -> Node:
        if len(node.attr("scale")) > 1:
            rank = len(graph[node.inputs[0]].shape)
            return node.with_(attrs={**node.attrs, "axis": norm_axis(node.attr("axis"), rank, node.op)})
        return node


@register
class QuantizeLinear(_QDQ):
    name = "QuantizeLinear"
    onnx_types = ("QuantizeLinear",)

    def infer(self, graph, node):
        require(graph[node.inputs[0]].dtype == "float32", "QuantizeLinear takes a float32 input")
        require(node.attr("qdtype") in ("int8", "uint8", "int16"), "QuantizeLinear produces int8, uint8 or int16")
        _check_channels(graph, node, node.inputs[0])
        return [(graph[node.inputs[0]].shape, node.attr("qdtype"))]

    def reference(self, graph, node, inputs):
        node = self._axis(graph, node)
        x = inputs[0].astype(np.float32)
        scale = _bcast(graph, node, node.inputs[0], np.float32(node.attr("scale")))
        zp = _bcast(graph, node, node.inputs[0], node.attr("zero_point"))
        lo, hi = QRANGE[node.attr("qdtype")]
        if arithmetic(graph) == "tflite":  # TFLite's AffineQuantize: float32 quotient, TfLiteRound
            q = tflite_round(x / scale).astype(np.int64) + zp
        else:
            q = np.rint(x / scale).astype(np.int64) + zp
        return [np.clip(q, lo, hi).astype(node.attr("qdtype"))]

    def kernel(self, graph, node):
        node = self._axis(graph, node)
        channels, inner = _axis_info(graph, node, node.inputs[0])
        fn = {"int8": "mcud_quantize_s8", "uint8": "mcud_quantize_u8", "int16": "mcud_quantize_s16"}[node.attr("qdtype")]
        if arithmetic(graph) == "tflite":
            fn += "_tfl"
        return Call(fn, (node.inputs[0], node.outputs[0]), Struct.of(
            "mcud_qdq_params", scale=Array("float", node.attr("scale")),
            zero_point=Array("int32_t", node.attr("zero_point")), channels=channels, inner=inner))


@register
class DequantizeLinear(_QDQ):
    name = "DequantizeLinear"
    onnx_types = ("DequantizeLinear",)

    def from_onnx(self, onnx: OnnxNode):
        inputs, attrs = super().from_onnx(onnx)
        q = onnx.const(inputs[0])
        if q is not None and q.size and q.dtype.kind in "iu":  # weights, whose float values must exist
            scale, zp = max(attrs["scale"]), max(abs(z) for z in attrs["zero_point"])
            reach = (float(np.abs(q.astype(np.int64)).max()) + zp) * scale  # a bound on |(q - zp) * scale|
            require_valid(reach <= float(np.finfo(np.float32).max),
                          f"dequantizes {inputs[0]} beyond what a float holds (scale {scale:g})")
        return inputs, attrs

    def infer(self, graph, node):
        dtype = graph[node.inputs[0]].dtype
        require(dtype in ("int8", "uint8", "int16", "int32"), f"DequantizeLinear of {dtype} is not supported")
        _check_channels(graph, node, node.inputs[0])
        return [(graph[node.inputs[0]].shape, "float32")]

    def reference(self, graph, node, inputs):
        node = self._axis(graph, node)
        scale = _bcast(graph, node, node.inputs[0], np.float32(node.attr("scale")))
        zp = _bcast(graph, node, node.inputs[0], node.attr("zero_point"))
        return [((inputs[0].astype(np.int64) - zp).astype(np.float32) * scale).astype(np.float32)]

    def kernel(self, graph, node):
        node = self._axis(graph, node)
        channels, inner = _axis_info(graph, node, node.inputs[0])
        fn = {"int8": "mcud_dequantize_s8", "uint8": "mcud_dequantize_u8", "int16": "mcud_dequantize_s16",
              "int32": "mcud_dequantize_s32"}
        return Call(fn[graph[node.inputs[0]].dtype], (node.inputs[0], node.outputs[0]), Struct.of(
            "mcud_qdq_params", scale=Array("float", node.attr("scale")),
            zero_point=Array("int32_t", node.attr("zero_point")), channels=channels, inner=inner))


REQUANT_SUFFIX = {"int8": "s8", "int16": "s16", "int32": "s32", "uint8": "u8"}
# the (input, output) types TFLite Micro's QUANTIZE requantizes between (quantize_common.cc)
REQUANT_PAIRS = {("int8", "int8"), ("int8", "int16"), ("int8", "int32"), ("int8", "uint8"), ("uint8", "int8"),
                 ("int16", "int8"), ("int16", "int16"), ("int16", "int32"), ("int32", "int8"), ("int32", "int16")}


@register
class Requantize(Op):
    """An integer tensor to another quantization, as TFLite Micro's QUANTIZE does (quantize_common.cc,
    reference/requantize.h): y = clamp(z_o + MultiplyByQuantizedMultiplier(x - z_i, M), range of y's type)
    with M = s_i / s_o from QuantizeMultiplier (mcudeploy/ops/requant.py: tflite_*). Per tensor; the pairs of
    types TFLite Micro takes (REQUANT_PAIRS: int8, int16 and int32 among themselves, int8 to and from uint8, as
    streaming wake-word models write their uint8 output). Elementwise: in place, split along every axis."""

    name = "Requantize"

    def _params(self, graph: Graph, node: Node) -> tuple[int, int, int, int]:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        require(x.quant is not None and y.quant is not None, "Requantize needs a quantized input and output")
        require(not x.quant.per_channel and not y.quant.per_channel, "Requantize is per tensor")
        (s_i, z_i), (s_o, z_o) = x.quant.single(), y.quant.single()
        mult, shift = tflite_multiplier(s_i / s_o)
        return z_i, z_o, mult, shift

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        out = node.attr("qdtype")
        require((x.dtype, out) in REQUANT_PAIRS, f"Requantize of {x.dtype} to {out} (TensorFlow Lite Micro's QUANTIZE "
                                                 f"does not take that pair)")
        return [(x.shape, out)]

    def accepts_int8(self, graph, node):
        try:
            self._params(graph, node)
        except Exception:  # noqa: BLE001  (a multiplier out of range, a per-channel quantization)
            return False
        return True

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return 0 if graph[node.inputs[0]].dtype == node.attr("qdtype") else None

    def reference(self, graph, node, inputs):
        z_i, z_o, mult, shift = self._params(graph, node)
        lo, hi = QRANGE[node.attr("qdtype")]
        y = tflite_requantize(inputs[0].astype(np.int64) - z_i, mult, shift) + z_o
        return [np.clip(y, lo, hi).astype(node.attr("qdtype"))]

    def kernel(self, graph, node):
        z_i, z_o, mult, shift = self._params(graph, node)
        x = graph[node.inputs[0]]
        fn = f"mcud_requantize_{REQUANT_SUFFIX[x.dtype]}_{REQUANT_SUFFIX[node.attr('qdtype')]}"
        return Call(fn, (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_requantize_params", in_zp=z_i, out_zp=z_o, mult=mult, shift=shift))
