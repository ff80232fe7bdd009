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

A TFLite model's Softmax of int8 to int16 (``out_dtype`` int16; output scale 1/65536 within 0.1%, zero point
-32768, TFLite Micro's conditions) is the same kernel with 16 output bits: the scaled exp divided by 2^(bits over
unit + 15) instead of 2^(bits over unit + 23), less 32768 instead of 128.

A TFLite model's int16 Softmax (zero points 0, output scale 2^-15) is TFLite's SoftmaxInt16: each
difference from the row's max, rescaled so that [-65535, 0] spans [-10, 0], is looked up in a 513-entry
exp table with interpolation, and the sum's reciprocal in a second one; both tables depend on nothing
(``S16_EXP``, ``S16_RECIPROCAL``, also held by firmware/kernels/softmax.c).

LogSoftmax (TFLite's LOG_SOFTMAX, over the last axis): float32 as TFLite computes it (x - max - log of
the sum of exp), int8 (output scale 16/256, zero point 127) as TFLite's LogSoftmaxQuantized: the
rescaled difference (Q5.26) and its exp (Q12.19) are tables of 256 by the difference; per row the
kernel adds the exps, takes gemmlowp's fixed-point log of the sum and subtracts it.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import fixedpoint as fx
from mcudeploy.ops import requant
from mcudeploy.ops import tflite_tables as tfl
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
INT32_MAX = fx.INT32_MAX


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
    e = fx.exp_on_negative_values(rescaled, 5)
    e = np.where(d >= diff_min, e, 0)
    return e, requant.rdbpot(e, 12)


def tfl_reciprocal(total):
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1 of a Q12.19 sum scaled into [1, 2): (Q0.31 scale,
    bits over unit), as TFLite's GetReciprocal."""
    total = np.asarray(total, dtype=np.int64)
    headroom = fx.clz32(total)
    shifted = fx.wrap32(((total << headroom) & 0xFFFFFFFF) - (1 << 31))
    return fx.one_over_one_plus_x(shifted), 12 - headroom


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
        require(x.dtype in ("float32", "int8", "uint8", "int16"), f"Softmax of {x.dtype} is not supported")
        out = node.attr("out_dtype", x.dtype)
        require(out == x.dtype or (x.dtype, out) == ("int8", "int16"),
                f"Softmax of {x.dtype} to {out} is not supported")
        reduced_dims(graph, node)
        return [(x.shape, out)]

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
        # Each kernel pass reads x[i] no later than it writes y[i], at the same position; an int16 y[i] of an
        # int8 x would overwrite x[2i] and x[2i + 1] before they are read.
        return 0 if graph[node.outputs[0]].dtype == graph[node.inputs[0]].dtype else None

    def accepts_int8(self, graph: Graph, node: Node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if x.dtype == "int16" and requant.arithmetic(graph) == "tflite":
            return s16_accepts(graph, node)
        if x.dtype == "int8" and y.dtype == "int16":
            return requant.arithmetic(graph) == "tflite" and s8_s16_accepts(graph, node)
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
        if x.dtype == np.float32:  # TFLite's float kernel: exp((x - max) * beta), the row's sum, each over it
            beta = np.float32(node.attr("beta", 1.0))
            e = np.exp((x - x.max(axis=axes, keepdims=True)) * beta)
            return [(e / e.sum(axis=axes, keepdims=True, dtype=np.float32)).astype(np.float32)]
        if x.dtype == np.int16:
            return [s16_reference(graph, node, x, axes)]
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
        if y.dtype == "int16":
            require(x.dtype == "int8" and s8_s16_accepts(graph, node),
                    "TFLite's Softmax of int8 to int16 needs an output of scale 1/65536 (within 0.1%) and zero point "
                    "-32768")
        else:
            require(x.dtype == "int8" and y.dtype == "int8" and y.quant is not None
                    and y.quant.single() == (1 / 256, -128),
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
        bits = 16 if graph[node.outputs[0]].dtype == "int16" else 8
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        out = requant.rdbpot(requant.srdhm(scale, e0[d]), over + 31 - bits) + low
        return np.clip(out, low, high).astype(np.int16 if bits == 16 else np.int8)

    def kernel(self, graph, node):
        a0, a1 = reduced_dims(graph, node)
        if graph[node.inputs[0]].dtype == "int8" and requant.arithmetic(graph) == "tflite":
            e0, acc = self._tfl_check(graph, node)
            fn = "mcud_softmax_s8_s16_tfl" if graph[node.outputs[0]].dtype == "int16" else "mcud_softmax_s8_tfl"
            return Call(fn, (node.inputs[0], node.outputs[0]), Struct.of(
                "mcud_softmax_tfl_params", axis=a0, axis_end=a1, exp_q31=Array("int32_t", tuple(int(v) for v in e0)),
                exp_q19=Array("int32_t", tuple(int(v) for v in acc))))
        views = (node.inputs[0], node.outputs[0])
        dtype = graph[node.inputs[0]].dtype
        if dtype == "float32":
            return Call("mcud_softmax_f32", views, Struct.of("mcud_softmax_params", axis=a0, axis_end=a1,
                                                             beta=float(np.float32(node.attr("beta", 1.0)))))
        if dtype == "int16":
            mult, shift = s16_params(graph, node)
            return Call("mcud_softmax_s16_tfl", views, Struct.of("mcud_softmax_s16_params", axis=a0, axis_end=a1,
                                                                  mult=mult, shift=shift))
        table, m, zy = self._int8_params(graph, node)
        lo, hi = requant.QRANGE[dtype]
        fn = "mcud_softmax_s8" if dtype == "int8" else "mcud_softmax_u8"
        return Call(fn, views, Struct.of(
            "mcud_softmax_q_params", axis=a0, axis_end=a1, exp_table=Array("int32_t", tuple(int(v) for v in table)),
            inv_out_scale=m, out_zero_point=zy, out_min=lo, out_max=hi))


# ---------------------------------------------------------------- TFLite's int16 softmax

def _reciprocal_f32(x: np.ndarray) -> np.ndarray:
    return (np.float32(1.0) / (np.float32(1.0) + x)).astype(np.float32)


_S16_RANGE = np.float32(65535)  # int16 max - min, as SoftmaxPrepare writes it
S16_EXP = tfl.float_lut_s16(tfl.expf, np.float32(10.0) / _S16_RANGE, 32767, np.float32(2.0) / _S16_RANGE, 0)
S16_RECIPROCAL = tfl.float_lut_s16(_reciprocal_f32, np.float32(1.0) / _S16_RANGE, -32768,
                                   np.float32(2.0) / _S16_RANGE, 0)


def s16_accepts(graph: Graph, node: Node) -> bool:
    """TFLite Micro's own conditions: zero points 0, an output scale within 0.1% of 2^-15."""
    x, y = graph[node.inputs[0]], graph[node.outputs[0]]
    if y.dtype != "int16" or x.quant is None or y.quant is None or len(x.quant.scale) != 1 or len(y.quant.scale) != 1:
        return False
    (_, zx), (s_y, zy) = x.quant.single(), y.quant.single()
    return zx == 0 and zy == 0 and abs(np.float32(s_y) - np.float32(1 / 32768)) <= np.float32(0.001 / 32768)


def s8_s16_accepts(graph: Graph, node: Node) -> bool:
    """TFLite Micro's conditions on a Softmax of int8 to int16: an output zero point of -32768 and a scale within
    0.1% of 1/65536 (its Prepare's TF_LITE_ENSURE_NEAR, in float32)."""
    x, y = graph[node.inputs[0]], graph[node.outputs[0]]
    if x.dtype != "int8" or y.dtype != "int16" or x.quant is None or y.quant is None:
        return False
    if len(x.quant.scale) != 1 or len(y.quant.scale) != 1:
        return False
    s_y, zy = y.quant.single()
    return zy == -32768 and abs(np.float32(s_y) - np.float32(1 / 65536)) <= np.float32(0.001 / 65536)


def s16_params(graph: Graph, node: Node) -> tuple[int, int]:
    """(multiplier, shift) taking a difference from the row's max to the exp table's input scale."""
    require(requant.arithmetic(graph) == "tflite" and s16_accepts(graph, node),
            "an int16 Softmax is TFLite's: it needs a TFLite model, zero points 0 and an output scale of 2^-15")
    s_x = float(np.float32(graph[node.inputs[0]].quant.single()[0]))
    beta = float(np.float32(node.attr("beta", 1.0)))
    mult, exponent = tfl.quantize_multiplier(s_x * beta / (10.0 / 65535.0))
    require(exponent <= 30, "an int16 Softmax whose input scale times beta is above 2^15")
    return mult, 31 - exponent


def s16_reference(graph: Graph, node: Node, x: np.ndarray, axes) -> np.ndarray:
    mult, shift = s16_params(graph, node)
    xi = x.astype(np.int64)
    scaled = requant.tflite_requantize(xi - xi.max(axis=axes, keepdims=True), mult, shift)
    e = tfl.lut_lookup_s16(np.clip(scaled + 32767, -32768, 32767), S16_EXP)
    total = e.sum(axis=axes, keepdims=True)
    headroom = fx.clz32(total)
    shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
    reciprocal = tfl.lut_lookup_s16(np.clip(shifted - (1 << 15) - (1 << 16), -32768, 32767), S16_RECIPROCAL)
    right = 31 - headroom
    out = (e * reciprocal + (np.int64(1) << (right - 1))) >> right
    return np.clip(out, 0, 32767).astype(np.int16)


# ---------------------------------------------------------------- LogSoftmax

LOG_OUTPUT = (16 / 256, 127)  # TFLite's int8 LogSoftmax output: scale 16/256, zero point 127


def log_softmax_params(s_x: float) -> dict:
    """TFLite's LogSoftmax int8 constants (PreprocessLogSoftmaxScalingExp with beta 1, Q5.26 differences)."""
    mult, left = tfl.quantize_multiplier(min(float(np.float32(s_x)) * (1 << 26), 2.0**31 - 1.0))
    require(left >= 1, "an int8 LogSoftmax of input scale below 2^-26")
    reverse_mult, reverse_exp = tfl.quantize_multiplier((1 << (31 - left)) / mult)
    d = -np.arange(256, dtype=np.int64)
    diff_min = -fx.input_radius(5, left)
    q5 = fx.mbqm(d, mult, left)
    exp_q12 = np.where(d >= diff_min, fx.rdbpot(fx.exp_on_negative_values(q5, 5), 12), 0)
    return {"q5": q5, "exp_q12": exp_q12, "diff_min": diff_min, "reverse_mult": reverse_mult,
            "reverse_exp": reverse_exp}


@register
class LogSoftmax(Softmax):
    """log(softmax(x)) over one axis (TFLite's LOG_SOFTMAX: the last one)."""

    name = "LogSoftmax"
    onnx_types = ()

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype in ("float32", "int8"), f"LogSoftmax of {x.dtype} is not supported")
        reduced_dims(graph, node)
        return [(x.shape, x.dtype)]

    def accepts_int8(self, graph, node):
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if x.dtype != "int8" or y.dtype != "int8" or x.quant is None or y.quant is None:
            return False
        tflite = requant.arithmetic(graph) == "tflite" and node.attr("tflite_kernel")
        return bool(tflite) and len(x.quant.scale) == 1 and len(y.quant.scale) == 1 and y.quant.single() == LOG_OUTPUT

    def _params(self, graph, node) -> dict:
        require(self.accepts_int8(graph, node), "an int8 LogSoftmax is TFLite's kernel (the importer's): it needs "
                                                "an output of scale 16/256 and zero point 127")
        return log_softmax_params(graph[node.inputs[0]].quant.single()[0])

    def reference(self, graph, node, inputs):
        x = inputs[0]
        a0, a1 = reduced_dims(graph, node)
        axes = tuple(range(a0, a1))
        if x.dtype == np.float32:
            shifted = x - x.max(axis=axes, keepdims=True)
            with np.errstate(divide="ignore"):
                log_sum = np.log(np.exp(shifted).sum(axis=axes, keepdims=True, dtype=np.float32))
            return [(shifted - log_sum).astype(np.float32)]
        p = self._params(graph, node)
        xi = x.astype(np.int64)
        d = xi.max(axis=axes, keepdims=True) - xi
        total = fx.wrap32(p["exp_q12"][d].sum(axis=axes, keepdims=True))
        log_sum = fx.log_x(total, 12, 5)
        floor = np.maximum(p["diff_min"] - 1, fx.mbqm(fx.wrap32(log_sum + fx.INT32_MIN), p["reverse_mult"],
                                                      p["reverse_exp"]))
        out = np.clip(fx.rdbpot(fx.wrap32(p["q5"][d] - log_sum), 22) + 127, -128, 127)
        return [np.where(-d > floor, out, -128).astype(np.int8)]

    def kernel(self, graph, node):
        a0, a1 = reduced_dims(graph, node)
        views = (node.inputs[0], node.outputs[0])
        if graph[node.inputs[0]].dtype == "float32":
            return Call("mcud_log_softmax_f32", views, Struct.of("mcud_softmax_params", axis=a0, axis_end=a1,
                                                                 beta=1.0))
        p = self._params(graph, node)
        return Call("mcud_log_softmax_s8_tfl", views, Struct.of(
            "mcud_log_softmax_tfl_params", axis=a0, axis_end=a1, q5=Array("int32_t", tuple(int(v) for v in p["q5"])),
            exp_q12=Array("int32_t", tuple(int(v) for v in p["exp_q12"])), diff_min=p["diff_min"],
            reverse_mult=p["reverse_mult"], reverse_shift=31 - p["reverse_exp"]))
