"""Softmax, float32 and integer-exact int8/uint8.

The normalisation runs over a contiguous range of dimensions [axis, axis_end): opset 13 and
later reduce one axis (axis_end = axis + 1); earlier opsets coerce the input to 2-D at axis
and reduce everything from axis on (axis_end = rank).

int8/uint8 (per-tensor input scale s_x and output scale s_y, zero points cancel on the input):

    d    = max - x                                   in [0, 255]
    e    = EXP[d] = round(exp(-s_x * d) * 2^24)      a 256-entry int32 table, EXP[0] = 2^24
    sum  = sum of e over the reduced dimensions      (int64)
    y    = zy + (e * M) / D,  D = sum * 2^16         integer division rounded half to even

with M = round(2^16 / s_y), i.e. y = zy + round(e / sum / s_y), ties to even as QuantizeLinear
rounds them (they happen: a uniform row of 512 at s_y = 1/256 gives exactly 0.5 steps). The C
kernel does the same integer arithmetic, so it agrees with this reference bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Array, Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import norm_axis

EXP_BITS = 24  # fraction bits of the exp table
INV_BITS = 16  # fraction bits of M = 1 / s_y
MAX_REDUCED = 1 << 22  # sum * 2^16 + e * M stays below 2^63


def reduced_dims(graph: Graph, node: Node) -> tuple[int, int]:
    """[axis, axis_end) of the dimensions one softmax normalises over."""
    rank = len(graph[node.inputs[0]].shape)
    require(rank >= 1, "Softmax of a scalar is not supported")
    axis = norm_axis(int(node.attr("axis", -1)), rank, "Softmax")
    return axis, (rank if node.attr("coerce_2d", False) else axis + 1)


def exp_table(s_x: float) -> np.ndarray:
    d = np.arange(256, dtype=np.float64)
    return np.rint(np.exp(-s_x * d) * 2.0 ** EXP_BITS).astype(np.int64)


def inv_scale(s_y: float) -> int:
    return int(round(2.0 ** INV_BITS / s_y))


@register
class Softmax(Op):
    name = "Softmax"
    onnx_types = ("Softmax",)

    def from_onnx(self, onnx: OnnxNode):
        if onnx.opset >= 13:
            return onnx.inputs[:1], {"axis": int(onnx.attrs.get("axis", -1))}
        return onnx.inputs[:1], {"axis": int(onnx.attrs.get("axis", 1)), "coerce_2d": True}

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype in ("float32", "int8", "uint8"), f"Softmax of {x.dtype} is not supported")
        reduced_dims(graph, node)
        return [(x.shape, x.dtype)]

    def expr(self, graph, node):
        shape = graph[node.inputs[0]].shape
        a0, a1 = reduced_dims(graph, node)
        axes, dims = [], []
        for i, n in enumerate(shape):
            if a0 <= i < a1:  # every output along these dims depends on the whole row
                axes.append(Axis(f"r{i}", n, "reduction"))
                dims.append(Dim.full())
            else:
                axes.append(Axis(f"d{i}", n))
                dims.append(Dim.identity(f"d{i}"))
        return TensorExpr(tuple(axes), (tuple(dims),), (tuple(dims),))

    def inplace(self, graph, node):
        # Each kernel pass reads x[i] no later than it writes y[i], at the same position.
        return 0

    def accepts_int8(self, graph: Graph, node: Node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if x.dtype not in ("int8", "uint8") or y.dtype != x.dtype or x.quant is None or y.quant is None:
            return False
        if len(x.quant.scale) != 1 or len(y.quant.scale) != 1:
            return False
        s_x, s_y = x.quant.scale[0], y.quant.scale[0]
        if not (s_x > 0 and s_y > 0 and math.isfinite(s_x) and math.isfinite(s_y)):
            return False
        a0, a1 = reduced_dims(graph, node)
        return 1 <= inv_scale(s_y) < 2 ** 31 and int(np.prod(x.shape[a0:a1])) <= MAX_REDUCED

    def _int8_params(self, graph: Graph, node: Node):
        require(self.accepts_int8(graph, node), "an int8 Softmax needs per-tensor quantized input and output of the "
                                                "same type, an output scale in [2^-15, 2^16] and at most 2^22 "
                                                "elements per row")
        s_x, _ = graph[node.inputs[0]].quant.single()
        s_y, zy = graph[node.outputs[0]].quant.single()
        return exp_table(s_x), inv_scale(s_y), zy

    def reference(self, graph, node, inputs):
        x = inputs[0]
        a0, a1 = reduced_dims(graph, node)
        axes = tuple(range(a0, a1))
        if x.dtype == np.float32:
            e = np.exp(x - x.max(axis=axes, keepdims=True))
            return [(e / e.sum(axis=axes, keepdims=True, dtype=np.float32)).astype(np.float32)]
        table, m, zy = self._int8_params(graph, node)
        xi = x.astype(np.int64)
        e = table[xi.max(axis=axes, keepdims=True) - xi]
        denom = e.sum(axis=axes, keepdims=True) << INV_BITS
        q, r = np.divmod(e * m, denom)
        q = q + ((2 * r > denom) | ((2 * r == denom) & (q % 2 == 1))) + zy
        lo, hi = requant.QRANGE[graph[node.outputs[0]].dtype]
        return [np.clip(q, lo, hi).astype(x.dtype)]

    def kernel(self, graph, node):
        a0, a1 = reduced_dims(graph, node)
        views = (node.inputs[0], node.outputs[0])
        dtype = graph[node.inputs[0]].dtype
        if dtype == "float32":
            return Call("mcud_softmax_f32", views, Struct.of("mcud_softmax_params", axis=a0, axis_end=a1))
        table, m, zy = self._int8_params(graph, node)
        lo, hi = requant.QRANGE[dtype]
        fn = "mcud_softmax_s8" if dtype == "int8" else "mcud_softmax_u8"
        return Call(fn, views, Struct.of(
            "mcud_softmax_q_params", axis=a0, axis_end=a1, exp_table=Array("int32_t", tuple(int(v) for v in table)),
            inv_out_scale=m, out_zero_point=zy, out_min=lo, out_max=hi))
