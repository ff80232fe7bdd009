"""TFLite Micro's integer arithmetic for the element-wise operators of one input, emulated at compile time.

An int8 operator of one input is a function of its input code: TFLite's kernel (its fixed-point logistic,
tanh and 1 / sqrt, its hard-swish in 16-bit fixed point, its requantizations, the float formulas it
tabulates for ELU) is run here on each of the 256 codes and mcud_lut_s8 looks the result up. An int16 one
has 65,536 codes, too many for a table: its kernel computes TFLite's arithmetic per element from the few
integers given here (``Piecewise``, ``sigmoid_s16``), and the numpy below is its bit-exact reference.

The float parameters are computed as TensorFlow Lite Micro's build computes them (its x86-64 Python
package, the specification the conformance suite checks against): a ratio of two float32 scales in double,
ELU's and softmax's tables in float32 with the C library's expf and roundf.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ops import fixedpoint as fx
from mcudeploy.ops.requant import QRANGE, tflite_round

f32 = np.float32

# TFLite's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h): sigmoid(i / 24) in Q0.16 for
# i = 0..255, tuned by its authors (it is not the rounded function); the int16 LOGISTIC and TANH interpolate
# in it. firmware/kernels/activation.c holds the same numbers (a test keeps them equal).
SIGMOID_Q16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535
], dtype=np.int64)


def roundf(x) -> np.ndarray:
    """std::round of float32 values (half away from zero), computed without float32's double rounding."""
    return tflite_round(np.asarray(x, dtype=np.float64)).astype(np.float32)


def codes(dtype: str) -> np.ndarray:
    lo, hi = QRANGE[dtype]
    return np.arange(lo, hi + 1, dtype=np.int64)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: (multiplier, exponent) with real ~ multiplier * 2^exponent / 2^31 (a
    negative real gives a negative multiplier; below 2^-31 it is flushed to zero)."""
    if real == 0.0:
        return 0, 0
    q, exponent = math.frexp(real)
    mult = int(tflite_round(q * 2.0**31))
    if mult == 2**31:
        mult //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    return mult, exponent


def _rescale(real: float) -> tuple[int, int]:
    """``quantize_multiplier`` of a ratio of scales that a kernel multiplies by (an exponent above 30 would
    shift an int32 left by 31 or more, in TFLite as here)."""
    mult, exponent = quantize_multiplier(real)
    if exponent > 30:
        raise UnsupportedError(f"a ratio of quantization scales of {real:g} (2^30 or more) is not supported")
    return mult, exponent


def _ratio(a: float, b: float) -> float:
    """a / b of two float32 scales, divided in double (TensorFlow Lite Micro's build does)."""
    return float(f32(a)) / float(f32(b))


# ---------------------------------------------------------------------------------------------- piecewise linear

@dataclass(frozen=True)
class Piecewise:
    """y = clamp(out_zp + M(x - in_zp), lo, hi), M being TFLite's MultiplyByQuantizedMultiplier with
    (pos_mult, pos_exp) where x >= in_zp and (neg_mult, neg_exp) below (a negative multiplier negates):
    TFLite's RELU, RELU6, LEAKY_RELU and ABS, at int8 (as a table) and int16 (mcud_piecewise_s16)."""

    in_zp: int
    out_zp: int
    pos_mult: int
    pos_exp: int
    neg_mult: int
    neg_exp: int
    lo: int
    hi: int

    def apply(self, x) -> np.ndarray:
        d = np.asarray(x, dtype=np.int64) - self.in_zp
        y = np.where(d >= 0, fx.mbqm(d, self.pos_mult, self.pos_exp), fx.mbqm(d, self.neg_mult, self.neg_exp))
        return np.clip(self.out_zp + y, self.lo, self.hi)


IDENTITY = (1 << 30, 1)  # a multiplier of exactly 1.0


def relu(dtype: str, s_in: float, zp_in: int, s_out: float, zp_out: int) -> Piecewise:
    """RELU (ReluQuantized): requantized to the output, then clamped at the output's zero."""
    lo, hi = QRANGE[dtype]
    m, e = _rescale(_ratio(s_in, s_out))
    return Piecewise(zp_in, zp_out, m, e, m, e, max(lo, zp_out), hi)


def clamp(dtype: str, s_in: float, zp_in: int, low: float, high: float) -> Piecewise:
    """RELU6 (Relu6Quantized): the input codes clamped to those of ``low`` and ``high`` in the input's
    quantization; TFLite Micro does not requantize (the output's own scale is not read)."""
    def code(v: float) -> int:
        lo, hi = QRANGE[dtype]
        if math.isinf(v):
            return lo if v < 0 else hi
        return min(max(int(roundf(f32(v) / f32(s_in))) + zp_in, lo), hi)
    return Piecewise(0, 0, *IDENTITY, *IDENTITY, code(low), code(high))


def leaky_relu(dtype: str, s_in: float, zp_in: int, s_out: float, zp_out: int, alpha: float) -> Piecewise:
    """LEAKY_RELU (QuantizeLeakyRelu): the identity multiplier above the zero point, alpha's below."""
    lo, hi = QRANGE[dtype]
    m_id, e_id = _rescale(_ratio(s_in, s_out))
    m_a, e_a = _rescale(float(f32(s_in)) * float(f32(alpha)) / float(f32(s_out)))
    return Piecewise(zp_in, zp_out, m_id, e_id, m_a, e_a, lo, hi)


def absolute(dtype: str, s_in: float, zp_in: int, s_out: float, zp_out: int) -> Piecewise:
    """ABS (AbsEvalQuantized): |x - zp| requantized when the scales differ (the multiplier's rounding is
    symmetric, so a negated multiplier below the zero point is the same)."""
    lo, hi = QRANGE[dtype]
    m, e = IDENTITY if f32(s_in) == f32(s_out) else _rescale(_ratio(s_in, s_out))
    return Piecewise(zp_in, zp_out, m, e, -m, e, lo, hi)


# ---------------------------------------------------------------------------------------------- int8 tables

def _fixed_input(s_in: float, bits: int) -> tuple[int, int, int]:
    """(multiplier, left shift, radius) taking an int8 difference to Q(bits) (LOGISTIC and TANH's Prepare)."""
    q, shift = math.frexp(float(f32(s_in)) * float(1 << (31 - bits)))
    mult = int(fx.wrap32(int(tflite_round(q * 2.0**31))))
    return mult, shift, fx.input_radius(bits, shift)


def logistic_s8(s_in: float, zp_in: int) -> np.ndarray:
    """LOGISTIC int8 (output scale 1/256, zero point -128): gemmlowp's logistic of the input in Q4.27."""
    mult, shift, radius = _fixed_input(s_in, 4)
    x = codes("int8") - zp_in
    inside = fx.logistic(fx.mbqm(x, mult, shift), 4)
    y = np.clip(fx.rdbpot(inside, 23) - 128, -128, 127)
    return np.where(x <= -radius, -128, np.where(x >= radius, 127, y))


def tanh_s8(s_in: float, zp_in: int) -> np.ndarray:
    """TANH int8 (output scale 1/128, zero point 0): gemmlowp's tanh of the input in Q4.27."""
    mult, shift, radius = _fixed_input(s_in, 4)
    x = codes("int8") - zp_in
    y = np.clip(fx.rdbpot(fx.tanh(fx.mbqm(x, mult, shift), 4), 24), -128, 127)
    return np.where(x <= -radius, -128, np.where(x >= radius, 127, y))


def _wrap16(x) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + 2**15) & 0xFFFF) - 2**15


def _srdhm16(a, b) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int16: round half away from zero."""
    ab = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    t = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    q = np.where(t >= 0, t >> 15, -((-t) >> 15))
    return np.where((np.asarray(a) == -32768) & (np.asarray(b) == -32768), 32767, _wrap16(q))


def _sdhm16(a, b) -> np.ndarray:
    """TFLite's SaturatingDoublingHighMul on int16: the product / 2^15 truncated toward zero."""
    ab = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    q = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    return np.where((np.asarray(a) == -32768) & (np.asarray(b) == -32768), 32767, _wrap16(q))


def _sat_shl16(x, amount: int) -> np.ndarray:
    return np.clip(np.asarray(x, dtype=np.int64) * (1 << amount), -32768, 32767)


def _multiplier16(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, then DownScaleInt32ToInt16Multiplier."""
    m, e = quantize_multiplier(real)
    return (32767 if m >= fx.INT32_MAX - (1 << 15) else (m + (1 << 15)) >> 16), e


def hard_swish_params(s_in: float, s_out: float) -> tuple[int, int, int, int]:
    """(output multiplier, its exponent, reluish multiplier, its exponent), int16 (HardSwishPrepare)."""
    hires = f32(1.0 / 128.0) * f32(s_in)
    out_m, out_e = _multiplier16(_ratio(hires, s_out))
    relu_m, relu_e = _multiplier16(_ratio(hires, 3.0 / 32768.0))
    return out_m, out_e, relu_m, relu_e


def hard_swish_s8(s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """HARD_SWISH int8: x * relu6(x + 3) / 6 in 16-bit fixed point (reference_ops::HardSwish)."""
    out_m, out_e, relu_m, relu_e = hard_swish_params(s_in, s_out)
    if out_e > 0:
        raise UnsupportedError("an int8 HARD_SWISH whose output scale is below 1/128 of its input's is refused by "
                               "TensorFlow Lite Micro")
    hires = _wrap16(_wrap16(codes("int8") - zp_in) * 128)
    preshift = _srdhm16(hires, out_m)
    reluish = hires
    if relu_e > 0:
        reluish = _sat_shl16(reluish, relu_e - 1)
    reluish = _srdhm16(reluish, relu_m)
    if relu_e > 0:
        reluish = _sat_shl16(reluish, 1)
    if relu_e < 0:
        reluish = fx.rdbpot(reluish, -relu_e)
    reluish = (reluish + (1 << 15)) >> 1
    out = _wrap16(fx.rdbpot(_sdhm16(reluish, preshift), -out_e) + zp_out)
    return np.clip(out, -128, 127)


def float_lut_s8(transform: Callable[[np.ndarray], np.ndarray], s_in: float, zp_in: int, s_out: float,
                 zp_out: int) -> np.ndarray:
    """TFLite's LUTPopulate for int8 (ELU's table): the float32 function of each dequantized code,
    rescaled by the inverse output scale, rounded half away from zero."""
    x = f32(s_in) * (codes("int8") - zp_in).astype(np.float32)
    y = roundf(transform(x) * (f32(1.0) / f32(s_out)))
    return np.clip(y.astype(np.int64) + zp_out, -128, 127)


def dequantize_quantize_s8(function: Callable[[np.ndarray], np.ndarray], s_in: float, zp_in: int, s_out: float,
                           zp_out: int) -> np.ndarray:
    """A float operator between TFLite's DEQUANTIZE and QUANTIZE as one int8 table: each code dequantized
    as TFLite does (the double product, then float32), ``function`` (float64 in, its float32 result is the
    C library's, correctly rounded), quantized as TFLite does (the float32 quotient rounded half away from
    zero; a quotient beyond int32, or NaN, converts to INT32_MIN as on x86, then the zero point wraps)."""
    x = (float(f32(s_in)) * (codes("int8") - zp_in).astype(np.float64)).astype(np.float32)
    with np.errstate(all="ignore"):
        y = np.asarray(function(x.astype(np.float64))).astype(np.float32)
        q = roundf(y / f32(s_out)).astype(np.float64)
    q = np.where(np.isfinite(q) & (np.abs(q) < 2.0**31), q, -2.0**31).astype(np.int64)
    return np.clip(fx.wrap32(q + zp_out), -128, 127)


def expf(x: np.ndarray) -> np.ndarray:
    """exp of float32 values, correctly rounded to float32 (as the C library's expf, within its 0.502 ulp)."""
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(x, dtype=np.float64)).astype(np.float32)


def elu_f32(x: np.ndarray) -> np.ndarray:
    """ELU's function in TFLite's int8 Prepare: exp(x) - 1 below zero, float32."""
    return np.where(x < 0, expf(x) - f32(1.0), x).astype(np.float32)


def rsqrt_params(s_in: float, s_out: float) -> tuple[int, int]:
    return quantize_multiplier(1.0 / (math.sqrt(float(f32(s_in))) * float(f32(s_out))))


def rsqrt_s8(s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """RSQRT int8 (RsqrtEvalQuantized): TFLite's fixed-point 1 / sqrt of x - zp, requantized; the largest
    code at zero. (Codes below the zero point stop TFLite Micro with an error; the table holds what the
    same arithmetic gives.)"""
    m, e = rsqrt_params(s_in, s_out)
    out = []
    for v in codes("int8") - zp_in:
        if v == 0:
            out.append(127)
            continue
        inv_m, inv_e = fx.inv_sqrt(int(v))
        data = fx.mbqm(1, inv_m, inv_e + 20)
        out.append(int(np.clip(fx.mbqm(data, m, e - 20) + zp_out, -128, 127)))
    return np.array(out, dtype=np.int64)


# ---------------------------------------------------------------------------------------------- int16

def sigmoid_s16_params(s_in: float, tanh: bool) -> tuple[int, int]:
    """(multiplier, right shift) taking an int16 input to the sigmoid table's scale (LOGISTIC and TANH's
    Prepare for int16; a power-of-two input scale of 2^-12, or 2^-12 and 2^-11 for TANH, gives 3 << shift)."""
    log2 = f32(np.log(f32(s_in))) * (f32(1.0) / f32(np.log(f32(2.0))))
    rounded = int(roundf(log2))
    shift = 12 + rounded
    if abs(float(log2 - f32(rounded))) < 1e-3 and shift in ((0, 1) if tanh else (0,)):
        return 3 << shift, 0
    multiplier, shift = float(f32(s_in)) * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


def pot_scale(scale: float, exponent: int) -> bool:
    """TFLite's CheckedLog2(scale) == exponent."""
    log2 = f32(np.log(f32(scale))) * (f32(1.0) / f32(np.log(f32(2.0))))
    rounded = roundf(log2)
    return abs(float(log2 - rounded)) < 1e-3 and int(rounded) == exponent


def _scaled16(x, mult: int, shift: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    return (x * mult + ((1 << shift) >> 1)) >> shift


def sigmoid_s16(x, mult: int, shift: int) -> np.ndarray:
    """LOGISTIC int16 (output 1/32768): the sigmoid table interpolated over 9 fraction bits."""
    v = _scaled16(x, mult, shift)
    a = np.abs(v)
    uh = np.minimum(a >> 9, 254)
    ua, ub = SIGMOID_Q16[uh], SIGMOID_Q16[uh + 1]
    r = np.where((a >> 9) >= 255, 0x7FFF << 10, (ua << 9) + (a & 0x1FF) * (ub - ua))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return (r >> 10).astype(np.int16)


def tanh_s16(x, mult: int, shift: int) -> np.ndarray:
    """TANH int16 (output 1/32768): tanh(x) = 2 sigmoid(2x) - 1 from the same table, 8 fraction bits."""
    v = _scaled16(x, mult, shift)
    a = np.abs(v)
    uh = np.minimum(a >> 8, 254)
    ua, ub = SIGMOID_Q16[uh], SIGMOID_Q16[uh + 1]
    r = np.where((a >> 8) >= 255, 0xFFFF << 8, (ua << 8) + (a & 0xFF) * (ub - ua))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return (r >> 8).astype(np.int16)


def float_lut_s16(transform: Callable[[np.ndarray], np.ndarray], s_in: float, zp_in: int, s_out: float,
                  zp_out: int) -> np.ndarray:
    """TFLite's LUTPopulate for int16: 513 samples of the float32 function over the input range, each
    moved by half the interpolation error at its interval's midpoint (LUTPopulateInt16<float>)."""
    s_in, s_out = f32(s_in), f32(s_out)
    in_min, in_max = s_in * f32(-32768 - zp_in), s_in * f32(32767 - zp_in)
    out_min, out_max = s_out * f32(-32768 - zp_out), s_out * f32(32767 - zp_out)
    step = (in_max - in_min) / f32(512)
    half = step / f32(2)
    inv = f32(65536) / (out_max - out_min)
    i = np.arange(512).astype(np.float32)
    at = in_min + i * step
    val = transform(at)
    mid = transform(at + half)
    nxt = transform(in_min + (i + f32(1)) * step)
    sample = roundf(val * inv)
    interp = roundf((nxt * inv + roundf(val * inv)) / f32(2))
    bias = roundf((interp - roundf(mid * inv)) / f32(2))
    last = roundf(transform(np.array([in_max], dtype=np.float32)) * inv)
    return np.clip(np.concatenate([sample - bias, last]), -32768, 32767).astype(np.int64)


def lut_lookup_s16(x, lut: np.ndarray) -> np.ndarray:
    """TFLite's LUTLookup for int16: the upper 9 bits index, the lower 7 interpolate."""
    x = np.asarray(x, dtype=np.int64)
    index = 256 + (x >> 7)
    base = lut[index]
    slope = lut[np.minimum(index + 1, 512)] - base
    return _wrap16(base + ((slope * (x & 0x7F) + 64) >> 7))
