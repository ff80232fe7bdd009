"""Integer arithmetic shared by the int8 operators, mirrored exactly by firmware/include/mcud.h.

Requantization maps an int32 accumulator to the output scale with a multiplier ``mult`` in
[2^30, 2^31) and a right shift ``shift`` in [1, 62]:

    p = acc * mult                                   (64-bit product)
    y = (p + 2^(shift-1) - 1 + ((p >> shift) & 1)) >> shift      (arithmetic shift)

i.e. multiply by mult / 2^shift ≈ M and round half to even, as QuantizeLinear does (exact
ties are common where the scales cancel, e.g. an average pool over 64 values). The C kernels
compute the same expression, so the numpy reference and the C code agree bit for bit.

A model imported from TFLite (``Graph.arithmetic == "tflite"``) rounds as TFLite's reference
kernels and CMSIS-NN do instead, with the same (mult, shift) (TFLite's exponent is 31 - shift):

    t = acc << max(0, 31 - shift)                    (32-bit, wrapping)
    h = (t * mult + 2^30) >> 31                      gemmlowp's doubling high multiply (round half up)
    y = (h + 2^(r-1) - (h < 0)) >> r,  r = max(0, shift - 31)      (round half away from zero)

and its multipliers come from TFLite's QuantizeMultiplier (frexp, std::round half away from zero,
a shift below -31 flushed to zero). ``tflite_*`` below; ``mcud_requant_tfl`` in mcud.h.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node, Quant, Tensor

QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "int32": (-2**31, 2**31 - 1)}


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(mult, shift) with mult / 2^shift ≈ real; mult in [2^30, 2^31) and shift in [1, 62]."""
    if not (real >= 0.0 and math.isfinite(real)):
        raise UnsupportedError(f"requantization multiplier {real} is not a finite non-negative number")
    if real == 0.0:
        return 0, 1
    frac, exp = math.frexp(real)  # real = frac * 2^exp, frac in [0.5, 1)
    mult = int(round(frac * (1 << 31)))
    if mult == 1 << 31:
        mult //= 2
        exp += 1
    shift = 31 - exp
    if shift > 62:  # tiny multiplier: keep as many bits as the 62-bit shift allows
        mult = int(round(real * 2.0 ** 62))
        shift = 62
    if shift < 1:
        raise UnsupportedError(f"requantization multiplier {real} is too large (at least 2^30)")
    return mult, shift


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(float(r)) for r in np.ravel(reals)]
    return (np.array([p[0] for p in pairs], dtype=np.int32), np.array([p[1] for p in pairs], dtype=np.int32))


def requantize(acc: np.ndarray, mult, shift) -> np.ndarray:
    """The integer requantization above, elementwise (mult and shift broadcast against acc)."""
    acc = np.asarray(acc, dtype=np.int64)
    mult = np.asarray(mult, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    return round_shift(acc * mult, shift)


def round_shift(p, shift):
    """p / 2^shift rounded half to even, for int64 p and shift >= 1 (mcud_round_shift in C)."""
    p = np.asarray(p, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    return (p + (np.int64(1) << (shift - 1)) - 1 + ((p >> shift) & 1)) >> shift


def arithmetic(graph: Graph) -> str:
    """The model's origin's integer arithmetic: "onnx" (round half to even) or "tflite"."""
    return graph.arithmetic


def tflite_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier as (mult, shift) in this module's convention (shift = 31 - exponent)."""
    if not (real >= 0.0 and math.isfinite(real)):
        raise UnsupportedError(f"requantization multiplier {real} is not a finite non-negative number")
    if real == 0.0:
        return 0, 31
    frac, exp = math.frexp(real)
    scaled = frac * (1 << 31)
    mult = int(math.floor(scaled + 0.5))  # std::round: half away from zero (scaled > 0)
    if mult == 1 << 31:
        mult //= 2
        exp += 1
    if exp < -31:
        return 0, 31
    if exp > 30:
        raise UnsupportedError(f"requantization multiplier {real} is too large (at least 2^30)")
    return mult, 31 - exp


def tflite_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    pairs = [tflite_multiplier(float(r)) for r in np.ravel(reals)]
    return (np.array([p[0] for p in pairs], dtype=np.int32), np.array([p[1] for p in pairs], dtype=np.int32))


def multipliers(graph: Graph, reals) -> tuple[np.ndarray, np.ndarray]:
    """(mult, shift) per real multiplier, as the model's arithmetic computes them."""
    return tflite_multipliers(reals) if arithmetic(graph) == "tflite" else quantize_multipliers(reals)


def multiplier(graph: Graph, real: float) -> tuple[int, int]:
    return tflite_multiplier(real) if arithmetic(graph) == "tflite" else quantize_multiplier(real)


def srdhm(a, b) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int32 values (elementwise, int64 out)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    out = (a * b + (1 << 30)) >> 31  # the nudge and truncating division are one round half up
    return np.where((a == b) & (a == -2**31), 2**31 - 1, out)


def rdbpot(x, exponent) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: x / 2^exponent rounded half away from zero."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + ((x & mask) > threshold)


def wrap32(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    return ((x + 2**31) & 0xFFFFFFFF) - 2**31


def tflite_requantize(acc, mult, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier (double rounding), elementwise."""
    acc = np.asarray(acc, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(0, 31 - shift)
    right = np.maximum(0, shift - 31)
    return rdbpot(srdhm(wrap32(acc << left), mult), right)


def doubled_route(bound: int, mult: int, shift: int, zy: int):
    """One channel's constants (mult, c, rs) for ``mcud_requant_tfl_2`` (mcud_dsp.h), which requantizes twice the
    accumulator as TFLite does (c = 2^(rs-1) + zy 2^rs, rs = shift - 31, the output zero point included), or None
    where the channel must take TFLite's general requantization. ``bound`` bounds the accumulator's magnitude. The
    route needs rs in [1, 30], |c| + 2^30 within int32 and a bound below 2^30 (twice the accumulator does not wrap).
    A channel whose output is the zero point whatever its accumulator (a zero multiplier, or one so small that the
    doubling high multiply stays within half the shift's step: Keras's dead channels) takes (1, 2 zy + 1, 1):
    SMMLAR's product of an int32 and 1 rounds away, and (2 zy + 1 - [acc < 0]) >> 1 is zy."""
    rs = shift - 31
    if mult == 0 or (rs >= 2 and bound * mult // 2**31 + 2 < 1 << (rs - 1)):  # |h| < 2^(rs-1): the output is zy
        return 1, 2 * zy + 1, 1
    c = (1 << (rs - 1)) + zy * (1 << rs) if 1 <= rs <= 30 else 0
    if 1 <= rs <= 30 and abs(c) + (1 << 30) + 1 < 1 << 31 and bound < 1 << 30:
        return mult, c, rs
    return None


def tflite_reduced(mult, shift) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator (16x8 kernels) keeps 16 bits of the
    multiplier: (mult16, shift16) with mult16 = (mult + 2^15) >> 16 (0x7FFF from 0x7FFF0000 on) and a right
    shift shift16 = shift - 16 (its 15 - exponent); ``mcud_requant_tfl64`` in mcud.h takes them."""
    mult = np.asarray(mult, dtype=np.int64)
    mult16 = np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)
    return mult16, np.asarray(shift, dtype=np.int64) - 16


def tflite_requantize64(acc, mult, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator (|acc| < 2^47): one rounding, half up,
    with the reduced multiplier, the result truncated to int32 as C's conversion does."""
    return requantize_wide(acc, *tflite_reduced(mult, shift))


def requantize_wide(acc, mult, shift) -> np.ndarray:
    """(acc * mult + 2^(shift-1)) >> shift of an int64 accumulator, truncated to int32: ``mcud_requant_tfl64``, which
    the 16x8 kernels apply to TFLite's reduced multipliers (tflite_reduced) and an ONNX model's (wide_multipliers)."""
    acc = np.asarray(acc, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    return wrap32((acc * np.asarray(mult, dtype=np.int64) + (np.int64(1) << (shift - 1))) >> shift)


WIDE_MULT_MIN = 1 << 22  # an ONNX 16x8 multiplier keeps at least 23 bits: off by < 2^-22 of the result


def wide_multipliers(reals, bounds) -> tuple[np.ndarray, np.ndarray]:
    """An ONNX model's 16x8 requantization (int16 activations, int8 weights): (mult, shift) per real multiplier,
    for ``requantize_wide`` of an int64 sum whose magnitude is at most ``bounds`` (per channel): QuantizeLinear's
    multiplier (quantize_multiplier) with as many low bits dropped as keep bound * mult below 2^62. One rounding,
    half up: the nearest step but at exact ties (which onnxruntime rounds to even), so within one step of its float
    path. UnsupportedError where fewer than 23 bits would be left or the result could leave int32."""
    reals = np.ravel(np.asarray(reals, dtype=np.float64))
    bounds = np.ravel(np.asarray(bounds, dtype=np.int64))
    bounds = bounds.max(initial=0, keepdims=True) if reals.size == 1 else np.broadcast_to(bounds, reals.shape)
    mults, shifts = [], []
    for real, bound in zip(reals, bounds):
        mult, shift = quantize_multiplier(float(real))
        excess = max(0, int(bound).bit_length() + mult.bit_length() - 62)
        if excess:
            mult, shift = (mult + (1 << (excess - 1))) >> excess, shift - excess
        if mult and (mult < WIDE_MULT_MIN or shift < 1):
            raise UnsupportedError(f"16x8 requantization by {real:g} of a sum up to {int(bound)} keeps too few bits")
        if float(bound) * float(real) >= 2.0 ** 31:
            raise UnsupportedError(f"16x8 requantization by {real:g} of a sum up to {int(bound)} leaves int32")
        mults.append(mult)
        shifts.append(shift)
    return np.array(mults, dtype=np.int64), np.array(shifts, dtype=np.int64)


def requantize_as(graph: Graph, acc, mult, shift) -> np.ndarray:
    """``requantize`` or ``tflite_requantize``, by the model's arithmetic."""
    if arithmetic(graph) == "tflite":
        return tflite_requantize(acc, mult, shift)
    return requantize(acc, mult, shift)


def tflite_round(x) -> np.ndarray:
    """TfLiteRound / std::round: half away from zero."""
    x = np.asarray(x)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def clip_range(node: Node, out: Tensor) -> tuple[int, int]:
    """Integer output range of an int8 op: its dtype's range narrowed by a fused Relu/Clip."""
    lo, hi = QRANGE[out.dtype]
    cmin, cmax = node.attr("clip_min"), node.attr("clip_max")
    if out.quant is None:
        return lo, hi
    scale, zp = out.quant.single()
    if cmin is not None and cmin != -math.inf:
        lo = max(lo, min(hi, int(zp + np.round(cmin / scale))))
    if cmax is not None and cmax != math.inf:
        hi = min(hi, max(lo, int(zp + np.round(cmax / scale))))
    return lo, hi


def float_clip(node: Node) -> tuple[float, float]:
    """Output range of a float op with a fused Relu/Clip (±FLT_MAX when none)."""
    fmax = float(np.finfo(np.float32).max)
    cmin, cmax = node.attr("clip_min"), node.attr("clip_max")
    lo = -fmax if cmin is None or cmin == -math.inf else float(cmin)
    hi = fmax if cmax is None or cmax == math.inf else float(cmax)
    return lo, hi


def qparams(graph: Graph, name: str) -> Quant:
    t = graph[name]
    if t.quant is None:
        raise UnsupportedError(f"tensor {name} is {t.dtype} but carries no quantization")
    return t.quant
