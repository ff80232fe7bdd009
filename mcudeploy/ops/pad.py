"""Pad: constant, reflect, symmetric, edge and wrap modes, any rank up to 6, float32, int8, int16 and int32.

Every output coordinate o along a dim reads input coordinate o - pad_begin, mapped back into
[0, n) by the mode (reflect repeats the mirror, edge clamps, wrap takes it modulo n) or, in
constant mode, replaced by the pad value (symmetric, TFLite's MIRROR_PAD, repeats the edge in the mirror
where reflect does not). Negative pads crop. Pads and the constant value
(opset 11+) and axes (opset 18+) must be constant inputs; they become attributes.
An int8 Pad moves data only: it needs equal input and output quantization, and its pad value
is the constant quantized with them (normally the zero point). A TFLite model's Pad gives its integer
pad value as attribute ``code`` instead: TFLite Micro pads with a code and moves the others as they are.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import ints, norm_axis

MODES = {"constant": 0, "reflect": 1, "edge": 2, "wrap": 3, "symmetric": 4}
SUFFIX = {"float32": "f32", "int8": "s8", "int16": "s16", "int32": "s32"}
MAX_DIMS = 6


def _pads(graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(pad_begin, pad_end) for every dim of the input."""
    rank = len(graph[node.inputs[0]].shape)
    pads = node.attr("pads")
    axes = node.attr("axes")
    if axes is None:
        require(len(pads) == 2 * rank, f"pads has {len(pads)} values for a rank-{rank} input")
        return tuple(pads[:rank]), tuple(pads[rank:])
    axes = [norm_axis(a, rank, "Pad") for a in axes]
    require(len(set(axes)) == len(axes), "Pad axes repeat")
    require(len(pads) == 2 * len(axes), f"pads has {len(pads)} values for {len(axes)} axes")
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a], end[a] = pads[i], pads[i + len(axes)]
    return tuple(begin), tuple(end)


def source_index(o: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Input coordinate read by shifted output coordinates o (-1 where constant padding applies)."""
    inside = (o >= 0) & (o < n)
    if mode == "constant":
        return np.where(inside, o, -1)
    if mode == "edge":
        return np.clip(o, 0, n - 1)
    if mode == "wrap":
        return np.mod(o, n)
    if mode == "symmetric":
        m = np.mod(o, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if n == 1:
        return np.zeros_like(o)
    period = 2 * (n - 1)
    m = np.mod(o, period)
    return np.where(m < n, m, period - m)


@register
class Pad(Op):
    name = "Pad"
    onnx_types = ("Pad",)

    def from_onnx(self, onnx: OnnxNode):
        mode = onnx.attrs.get("mode", "constant")
        require(mode in MODES and mode != "symmetric", f"mode {mode} is not supported")
        if onnx.opset < 11:
            pads = onnx.attrs.get("pads", onnx.attrs.get("paddings"))
            require(pads is not None, "pads is required")
            return onnx.inputs[:1], {"pads": ints(pads), "axes": None, "mode": mode,
                                     "value": float(onnx.attrs.get("value", 0.0))}
        pads = onnx.const(onnx.inputs[1])
        require(pads is not None, "pads must be a constant")
        value = 0.0
        if len(onnx.inputs) > 2 and onnx.inputs[2]:
            v = onnx.const(onnx.inputs[2])
            require(v is not None, "constant_value must be a constant")
            require(v.size == 1, "constant_value must be a scalar")
            value = float(np.ravel(v)[0])
        axes = None
        if len(onnx.inputs) > 3 and onnx.inputs[3]:
            a = onnx.const(onnx.inputs[3])
            require(a is not None, "axes must be a constant")
            axes = ints(a)
        return onnx.inputs[:1], {"pads": ints(pads), "axes": axes, "mode": mode, "value": value}

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype in SUFFIX, f"Pad of {x.dtype} is not supported")
        require(x.dtype != "int16" or node.attr("code") is not None or x.quant is not None,
                "Pad of int16 is not supported")
        require(1 <= len(x.shape) <= MAX_DIMS, f"Pad of a rank-{len(x.shape)} tensor is not supported")
        begin, end = _pads(graph, node)
        out = tuple(n + b + e for n, b, e in zip(x.shape, begin, end))
        require(all(o >= 0 for o in out), f"negative pads crop more than the input has ({x.shape} -> {out})")
        mode = node.attr("mode")
        if mode != "constant":
            require(all(n > 0 for n, b, e in zip(x.shape, begin, end) if b > 0 or e > 0),
                    f"{mode} padding of an empty dim")
        return [(out, x.dtype)]

    def accepts_int8(self, graph, node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if node.attr("code") is not None:  # TFLite: codes moved, the pad value a code
            return x.dtype == y.dtype
        return (x.dtype in ("int8", "int16") and y.dtype == x.dtype and x.quant is not None and x.quant == y.quant
                and len(x.quant.scale) == 1)

    def _value(self, graph, node):
        """The pad value in the input's dtype (int8, int16: quantized with the input's parameters)."""
        x = graph[node.inputs[0]]
        if x.dtype == "float32":
            return np.float32(node.attr("value"))
        if node.attr("code") is not None:
            lo, hi = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max
            require(lo <= node.attr("code") <= hi, f"pad value {node.attr('code')} outside the range of {x.dtype}")
            return np.dtype(x.dtype).type(node.attr("code"))
        if x.dtype == "int32":
            return np.int32(round(node.attr("value")))
        require(self.accepts_int8(graph, node), f"{x.dtype} Pad needs equal input and output quantization")
        scale, zp = x.quant.single()
        q = int(np.rint(np.float32(node.attr("value")) / np.float32(scale))) + zp
        info = np.iinfo(x.dtype)
        return np.dtype(x.dtype).type(np.clip(q, info.min, info.max))

    def expr(self, graph, node):
        x = graph[node.inputs[0]].shape
        out = graph[node.outputs[0]].shape
        begin, end = _pads(graph, node)
        axes, dims = [], []
        for i, n in enumerate(out):
            axes.append(Axis(f"d{i}", n))
        for i in range(len(x)):
            if begin[i] == 0 and end[i] == 0:
                dims.append(Dim.identity(f"d{i}"))
            elif node.attr("mode") == "constant":
                # x index = d - pad_begin: a window of one tap, reading the pad value outside
                axes.append(Axis(f"k{i}", 1, "reduction"))
                dims.append(Dim.window(f"d{i}", f"k{i}", 1, 1, begin[i]))
            else:
                dims.append(Dim.full())  # reflect/edge/wrap read the far side of the dim
        return TensorExpr(tuple(axes), (tuple(dims),), (tuple(Dim.identity(f"d{i}") for i in range(len(out))),))

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        x = inputs[0]
        out = graph[node.outputs[0]].shape
        begin, _ = _pads(graph, node)
        mode = node.attr("mode")
        idx = [source_index(np.arange(o) - b, n, mode) for o, b, n in zip(out, begin, x.shape)]
        value = self._value(graph, node)
        if any(s == 0 for s in x.shape):
            return [np.full(out, value, dtype=x.dtype)]
        y = x[np.ix_(*[np.maximum(i, 0) for i in idx])]
        if mode == "constant":
            valid = np.ones(out, bool)
            for d, i in enumerate(idx):
                shape = [1] * len(out)
                shape[d] = len(i)
                valid = valid & (i >= 0).reshape(shape)
            y = np.where(valid, y, value)
        return [np.ascontiguousarray(y, dtype=x.dtype)]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        begin, _ = _pads(graph, node)
        require(all(n > 0 for n in x.shape), "Pad of an empty tensor has no kernel")
        value = self._value(graph, node)
        params = Struct.of("mcud_pad_params", pad_begin=tuple(begin) + (0,) * (MAX_DIMS - len(begin)),
                           mode=MODES[node.attr("mode")], value=float(node.attr("value")),
                           ivalue=0 if x.dtype == "float32" else int(value))
        suffix = SUFFIX[x.dtype]
        return Call(f"mcud_pad_{suffix}", (node.inputs[0], node.outputs[0]), params)
