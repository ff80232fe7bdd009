"""gemmlowp's fixed-point arithmetic and TFLite's integer helpers built on it, in numpy: what TFLite's
integer kernels compute (logistic, tanh, exp, log, 1 / (1 + x), 1 / sqrt) reproduced bit for bit, so
mcudeploy can emulate them over every input code at compile time (mcudeploy/ops/tflite_tables.py) and
its C kernels (firmware/include/mcud_fixedpoint.h) can do at run time what depends on a whole row.

A value is a raw int32 held in an int64 array; ``bits`` is its number of integer bits (gemmlowp's
FixedPoint<int32_t, bits>: raw / 2^(31 - bits)). Additions wrap as int32 does on every target, and
every function here works elementwise on arrays.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ops.requant import rdbpot, srdhm, tflite_requantize, wrap32

INT32_MIN = -2**31
INT32_MAX = 2**31 - 1

__all__ = ["INT32_MAX", "INT32_MIN", "clrsb32", "clz32", "exp_on_negative_values", "half_sum", "inv_sqrt", "log_x",
           "logistic", "mbqm", "one", "one_over_one_plus_x", "rdbpot", "rdbpot_x86", "reciprocal", "rescale", "sat_add",
           "sat_shl", "srdhm", "tanh", "wrap32"]


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def one(bits: int) -> int:
    """The raw value of 1.0 (Q0.31 has no 1.0: its largest value stands for it)."""
    return INT32_MAX if bits == 0 else 1 << (31 - bits)


def sat_shl(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT: x * 2^exponent, saturated to int32 going up, rounded half away
    from zero going down."""
    x = _i64(x)
    if exponent == 0:
        return x
    if exponent < 0:
        return rdbpot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def sat_shl_param(x, exponent) -> np.ndarray:
    """TFLite's SaturatingRoundingMultiplyByPOTParam: ``sat_shl`` with a run-time exponent >= 0."""
    x, exponent = np.broadcast_arrays(_i64(x), _i64(exponent))
    out = x.copy()
    for e in np.unique(exponent):
        sel = exponent == e
        out[sel] = sat_shl(x[sel], int(e))
    return out


def rescale(x, bits_from: int, bits_to: int) -> np.ndarray:
    """gemmlowp's Rescale: the same real number with ``bits_to`` integer bits."""
    return sat_shl(x, bits_from - bits_to)


def sat_add(a, b) -> np.ndarray:
    return np.clip(_i64(a) + _i64(b), INT32_MIN, INT32_MAX)


def half_sum(a, b) -> np.ndarray:
    """RoundingHalfSum: (a + b) / 2 rounded half away from zero."""
    s = _i64(a) + _i64(b)
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))


def clz32(x) -> np.ndarray:
    """Leading zeros of x as a uint32 (32 for 0)."""
    u = _i64(x) & 0xFFFFFFFF
    out = np.full(u.shape, 32, dtype=np.int64)
    for b in range(31, -1, -1):
        out = np.where((out == 32) & ((u >> b) & 1 == 1), 31 - b, out)
    return out


def clrsb32(x) -> np.ndarray:
    """Leading redundant sign bits of an int32 (31 for 0 and -1), as TFLite's CountLeadingSignBits."""
    x = _i64(x)
    return clz32(np.where(x < 0, ~x, x)) - 1


def rdbpot_x86(x, exponent) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT for any exponent >= 0, where TFLite's int8 DIV reaches shifts of 32 or more
    (a zero numerator or divisor), which C leaves undefined: computed as x86 computes it, where TensorFlow Lite
    Micro's reference runs (its mask (1 << exponent) - 1 made in 64 bits and cut to 32, a 32-bit shift count
    taken modulo 32, a 64-bit one modulo 64). The C twin is in firmware/kernels/binary.c."""
    x = _i64(x)
    e = _i64(exponent)
    mask = wrap32((np.int64(1) << (e & 63)) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (e & 31)) + ((x & mask) > threshold)


def mbqm(x, mult, exponent) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier(x, mult, exponent), double rounding (exponent > 0: left)."""
    return tflite_requantize(x, mult, 31 - _i64(exponent))


# ---------------------------------------------------------------------------------------------- exp

_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
               (4, 242))  # exp(-2^e) in Q0.31


def _exp_quarter(a) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0.31 in and out: a Taylor expansion around -1/8."""
    x = _i64(a) + (1 << 28)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    poly = rdbpot(srdhm(rdbpot(x4, 2) + x3, 715827883) + x2, 1)
    return 1895147668 + srdhm(1895147668, x + poly)


def exp_on_negative_values(a, bits: int) -> np.ndarray:
    """exp(a) in Q0.31 for a <= 0 with ``bits`` integer bits."""
    a = _i64(a)
    frac = 31 - bits
    quarter = 1 << (frac - 2)
    mod = (a & (quarter - 1)) - quarter
    result = _exp_quarter(rescale(mod, bits, 0))
    remainder = wrap32(mod - a)
    for e, m in _EXP_BARREL:
        if bits > e:
            result = np.where(remainder & (1 << (frac + e)), srdhm(result, m), result)
    if bits > 5:
        result = np.where(a < -(1 << (36 - bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


# ---------------------------------------------------------------------------------------------- division

def _newton_reciprocal(half_denominator) -> np.ndarray:
    """1 / half_denominator in Q2.29 by three Newton-Raphson steps from 48/17 - 32/17 d."""
    x = wrap32(1515870810 + srdhm(half_denominator, -1010580540))  # int32 additions wrap, as in C
    for _ in range(3):
        x = wrap32(x + sat_shl(srdhm(x, wrap32((1 << 29) - srdhm(half_denominator, x))), 2))
    return x


def one_over_one_plus_x(a) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1), Q0.31 in and out."""
    return sat_shl(_newton_reciprocal(half_sum(a, INT32_MAX)), 1)


def reciprocal(x) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal(x, 31, &shift) of int32 x >= 0: (1 / x in Q0.31 scaled by a power of two,
    the number of bits of x above the unit). x = 0 gives what x86 gives (see rdbpot_x86)."""
    x = _i64(x)
    headroom_plus_one = clz32(x)
    shifted = wrap32(((x & 0xFFFFFFFF) << (headroom_plus_one & 31)) - 2**31)
    return one_over_one_plus_x(shifted), 31 - headroom_plus_one


def one_minus_x_over_one_plus_x(a) -> np.ndarray:
    """(1 - a) / (1 + a) for a in [0, 1), Q0.31 in and out."""
    return sat_shl(_newton_reciprocal(half_sum(a, INT32_MAX)) - (1 << 29), 2)


def logistic(a, bits: int) -> np.ndarray:
    """1 / (1 + exp(-a)) in Q0.31 of a with ``bits`` integer bits."""
    a = _i64(a)
    positive = a > 0
    magnitude = np.where(positive, a, -a)
    if_positive = one_over_one_plus_x(exp_on_negative_values(wrap32(-magnitude), bits))
    return np.where(a == 0, 1 << 30, np.where(positive, if_positive, INT32_MAX - if_positive))


def tanh(a, bits: int) -> np.ndarray:
    """tanh(a) in Q0.31 of a with ``bits`` integer bits."""
    a = _i64(a)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))
    t = one_minus_x_over_one_plus_x(exp_on_negative_values(n, bits + 1))  # -tanh(n): exp(2n)
    return np.where(a == 0, 0, np.where(negative, -t, t))


# ---------------------------------------------------------------------------------------------- log

def log_x(a, bits_in: int, bits_out: int) -> np.ndarray:
    """log(a) for a >= 1 with ``bits_in`` integer bits, with ``bits_out`` integer bits (TFLite's
    log_x_for_x_greater_than_or_equal_to_1: the binary exponent, then a rational approximation)."""
    a = _i64(a)
    acc = bits_out + 1
    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    quarter = rescale(536870912, 0, acc)
    headroom_a = clz32(a)
    r_a = sat_shl(srdhm(sat_shl_param(a, headroom_a - 1), sqrt_half), 1)
    pow_a = sat_add(sat_shl_param(bits_in - headroom_a, 31 - acc), quarter)
    headroom_b = clz32(srdhm(a, sqrt_half)) - 1
    r_b = sat_shl_param(a, headroom_b)
    pow_b = np.clip(sat_shl_param(bits_in - headroom_b, 31 - acc) - quarter, INT32_MIN, INT32_MAX)
    r = np.minimum(r_a, r_b)
    pow2 = np.maximum(pow_a, pow_b)
    p = half_sum(r, sqrt_sqrt_half)
    q = wrap32(r - sqrt_sqrt_half)
    q = wrap32(q + q)
    sq = srdhm(q, q)
    num = wrap32(srdhm(q, r) + srdhm(srdhm(q, sq), alpha_n))
    denominator = wrap32(srdhm(p, wrap32(wrap32(alpha_i + q) + srdhm(alpha_d, sq))) + srdhm(alpha_f, q))
    total = wrap32(srdhm(pow2, log_2) + srdhm(rescale(num, 0, acc), one_over_one_plus_x(denominator)))
    return rescale(total, acc, bits_out)


# ---------------------------------------------------------------------------------------------- 1 / sqrt

def inv_sqrt(value: int) -> tuple[int, int]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(value, kReverseShift): (multiplier, exponent) with
    mult * 2^exponent / 2^31 ~ 1 / sqrt(value), for one int32 value >= 0."""
    value = int(value)
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = (int(clz32(value)) - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = rdbpot(value >> 1, 1)
    x = np.int64(1 << 28)  # 1.0 in Q3.28
    for _ in range(5):
        x3 = rescale(srdhm(srdhm(x, x), x), 9, 3)
        x = rescale(wrap32(srdhm((1 << 28) + (1 << 27), x) - srdhm(half_input, x3)), 6, 3)
    mult = int(srdhm(x, 1518500250))  # times sqrt(2) / 2
    if shift < 0:
        mult = int(wrap32(mult << -shift))
        shift = 0
    return mult, -shift


def input_radius(bits: int, left_shift: int, total_bits: int = 31) -> int:
    """TFLite's CalculateInputRadius: the largest |input| whose rescaled value stays inside Q(bits)."""
    return math.floor(math.ldexp(float((1 << bits) - 1) * float(1 << (total_bits - bits)), -left_shift))
