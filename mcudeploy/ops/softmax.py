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

A TFLite model's int8 Softmax (``arithmetic == "tflite"``, output scale 1/256 and zero point -128)
follows TFLite's reference kernel: each difference d = x - max is rescaled by beta * s_x into Q5.26
and passed through gemmlowp's fixed-point exp; those values depend on d alone, so both the exp (Q0.31)
and its Q12.19 share of the sum are tables of 256 int32 computed here (``tfl_tables``). Per row the
kernel adds the Q12.19 values, takes gemmlowp's fixed-point reciprocal of the sum (``tfl_reciprocal``)
and scales each exp by it, as TFLite does.
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


# ---------------------------------------------------------------- TFLite's fixed point (gemmlowp)
INT32_MAX = 2**31 - 1
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
              (4, 242))  # exp(-2^e) in Q0.31, gemmlowp's exp_on_negative_values


def _sat_shl(x, e: int):
    """gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent."""
    x = np.asarray(x, dtype=np.int64)
    threshold = (1 << (31 - e)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, -2**31, x << e))


def _exp_quarter(a):
    """exp on [-1/4, 0) in Q0.31 (gemmlowp's Taylor expansion around -1/8)."""
    srdhm, rdbpot = requant.srdhm, requant.rdbpot
    x = a + (1 << 28)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbpot(x4, 2)
    poly = rdbpot(srdhm(x4_over_4 + x3, 715827883) + x2, 1)
    return 1895147668 + srdhm(1895147668, x + poly)


def _exp_negative(a):
    """exp of Q5.26 values <= 0, in Q0.31 (gemmlowp's exp_on_negative_values with 5 integer bits)."""
    a = np.asarray(a, dtype=np.int64)
    quarter = 1 << 24
    mod = (a & (quarter - 1)) - quarter
    result = _exp_quarter(_sat_shl(mod, 5))
    remainder = mod - a
    for e, m in EXP_BARREL:
        result = np.where(remainder & (1 << (26 + e)), requant.srdhm(result, m), result)
    return np.where(a == 0, INT32_MAX, result)


def tfl_params(beta: float, s_x: float) -> tuple[int, int, int]:
    """(multiplier, left shift, diff_min) of TFLite's int8 softmax (PreprocessSoftmaxScaling)."""
    real = min(beta * s_x * (1 << 26), float(INT32_MAX))
    mult, shift = requant.tflite_multiplier(real)
    left = 31 - shift
    radius = math.floor(31.0 * (1 << 26) / (1 << left))
    return mult, left, -radius


def tfl_tables(beta: float, s_x: float) -> tuple[np.ndarray, np.ndarray]:
    """(exp in Q0.31, its Q12.19 share of the sum) for d = max - x in 0..255; 0 where TFLite skips d."""
    mult, left, diff_min = tfl_params(beta, s_x)
    d = -np.arange(256, dtype=np.int64)
    rescaled = requant.srdhm(requant.wrap32(d << left), mult)
    e = _exp_negative(rescaled)
    e = np.where(d >= diff_min, e, 0)
    return e, requant.rdbpot(e, 12)


def tfl_reciprocal(total):
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1 of a Q12.19 sum scaled into [1, 2): (Q0.31 scale,
    bits over unit), as TFLite's GetReciprocal."""
    total = np.asarray(total, dtype=np.int64)
    bits = np.zeros_like(total)
    for b in range(32):
        bits = np.where((total >> (31 - b)) == 0, b + 1, bits)  # leading zeros of a positive int32
    headroom = np.minimum(bits, 32)
    over = 12 - headroom
    a = ((total << headroom) & 0xFFFFFFFF) - (1 << 31)
    s = a + INT32_MAX
    half = np.where(s >= 0, (s + 1) // 2, -((-(s - 1)) // 2))
    srdhm = requant.srdhm
    x = 1515870810 + srdhm(half, -1010580540)
    for _ in range(3):
        x = x + _sat_shl(srdhm(x, (1 << 29) - srdhm(half, x)), 2)
    return _sat_shl(x, 1), over


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
        if requant.arithmetic(graph) == "tflite":
            return x.dtype == "int8" and y.quant.single() == (1 / 256, -128) and int(np.prod(x.shape[a0:a1])) <= 4096
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
        if requant.arithmetic(graph) == "tflite":
            return [self._tfl_reference(graph, node, x, axes)]
        table, m, zy = self._int8_params(graph, node)
        xi = x.astype(np.int64)
        e = table[xi.max(axis=axes, keepdims=True) - xi]
        denom = e.sum(axis=axes, keepdims=True) << INV_BITS
        q, r = np.divmod(e * m, denom)
        q = q + ((2 * r > denom) | ((2 * r == denom) & (q % 2 == 1))) + zy
        lo, hi = requant.QRANGE[graph[node.outputs[0]].dtype]
        return [np.clip(q, lo, hi).astype(x.dtype)]

    def _tfl_check(self, graph, node):
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        require(x.dtype == "int8" and y.dtype == "int8" and y.quant is not None and y.quant.single() == (1 / 256, -128),
                "TFLite's int8 Softmax needs an int8 output of scale 1/256 and zero point -128")
        a0, a1 = reduced_dims(graph, node)
        require(int(np.prod(x.shape[a0:a1])) <= 4096, "an int8 Softmax of more than 4096 elements per row")
        return tfl_tables(float(node.attr("beta", 1.0)), x.quant.single()[0])

    def _tfl_reference(self, graph, node, x, axes):
        e0, acc = self._tfl_check(graph, node)
        xi = x.astype(np.int64)
        d = xi.max(axis=axes, keepdims=True) - xi
        total = acc[d].sum(axis=axes, keepdims=True)
        scale, over = tfl_reciprocal(total)
        out = requant.rdbpot(requant.srdhm(scale, e0[d]), over + 31 - 8) - 128
        return np.clip(out, -128, 127).astype(np.int8)

    def kernel(self, graph, node):
        a0, a1 = reduced_dims(graph, node)
        if graph[node.inputs[0]].dtype == "int8" and requant.arithmetic(graph) == "tflite":
            e0, acc = self._tfl_check(graph, node)
            return Call("mcud_softmax_s8_tfl", (node.inputs[0], node.outputs[0]), Struct.of(
                "mcud_softmax_tfl_params", axis=a0, axis_end=a1, exp_q31=Array("int32_t", tuple(int(v) for v in e0)),
                exp_q19=Array("int32_t", tuple(int(v) for v in acc))))
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
