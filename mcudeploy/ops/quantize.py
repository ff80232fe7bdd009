"""QuantizeLinear and DequantizeLinear that remain after QDQ lowering (at float boundaries)."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Call, OnnxNode, Op, Struct, elementwise_expr, require, require_valid, Array
from mcudeploy.ops.requant import QRANGE, arithmetic, tflite_round
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
        require(out_dtype in ("int8", "uint8", "int32"), f"{onnx.op_type} to {out_dtype} is not supported")
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
        require(node.attr("qdtype") in ("int8", "uint8"), "QuantizeLinear produces int8 or uint8")
        _check_channels(graph, node, node.inputs[0])
        return [(graph[node.inputs[0]].shape, node.attr("qdtype"))]

    def reference(self, graph, node, inputs):
        node = self._axis(graph, node)
        x = inputs[0].astype(np.float32)
        scale = _bcast(graph, node, node.inputs[0], np.float32(node.attr("scale")))
        zp = _bcast(graph, node, node.inputs[0], node.attr("zero_point"))
        lo, hi = (-128, 127) if node.attr("qdtype") == "int8" else (0, 255)
        if arithmetic(graph) == "tflite":  # TFLite's AffineQuantize: float32 quotient, TfLiteRound
            q = tflite_round(x / scale).astype(np.int64) + zp
        else:
            q = np.rint(x / scale).astype(np.int64) + zp
        return [np.clip(q, lo, hi).astype(node.attr("qdtype"))]

    def kernel(self, graph, node):
        node = self._axis(graph, node)
        channels, inner = _axis_info(graph, node, node.inputs[0])
        fn = "mcud_quantize_s8" if node.attr("qdtype") == "int8" else "mcud_quantize_u8"
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
        require(dtype in ("int8", "uint8", "int32"), f"DequantizeLinear of {dtype} is not supported")
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
        fn = {"int8": "mcud_dequantize_s8", "uint8": "mcud_dequantize_u8", "int32": "mcud_dequantize_s32"}
        return Call(fn[graph[node.inputs[0]].dtype], (node.inputs[0], node.outputs[0]), Struct.of(
            "mcud_qdq_params", scale=Array("float", node.attr("scale")),
            zero_point=Array("int32_t", node.attr("zero_point")), channels=channels, inner=inner))
