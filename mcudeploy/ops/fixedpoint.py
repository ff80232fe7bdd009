"""gemmlowp's fixed-point arithmetic as TFLite's reference kernels use it, in numpy (int32 values held in
int64 arrays, wrapping where the C++ wraps): what requant.py does not already hold (srdhm, rdbpot).

Where TFLite's C++ leaves a result undefined (a shift by 32 or more, which its int8 DIV reaches for a
zero numerator or divisor), it is computed as x86 computes it, where TensorFlow Lite Micro's reference
runs: a 32-bit shift count modulo 32, a 64-bit one modulo 64. The C twins of these functions are in
firmware/kernels/binary.c.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.requant import srdhm, wrap32

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def clz32(x) -> np.ndarray:
    """Leading zeros of x as a uint32 (32 for 0), as TFLite's CountLeadingZeros."""
    x = np.asarray(x, dtype=np.int64) & 0xFFFFFFFF
    n = np.full(x.shape, 32, dtype=np.int64)
    for k in range(32):
        n = np.where((x >> k) != 0, 31 - k, n)
    return n


def clrsb32(x) -> np.ndarray:
    """Leading redundant sign bits of an int32 (31 for 0 and -1), as TFLite's CountLeadingSignBits."""
    x = np.asarray(x, dtype=np.int64)
    return clz32(np.where(x < 0, ~x, x)) - 1


def rdbpot_x86(x, exponent) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT for any exponent >= 0: its mask (1 << exponent) - 1 made in 64 bits
    and cut to 32, its arithmetic shift of x by the exponent; each shift count as x86 takes it."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = wrap32((np.int64(1) << (e & 63)) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (e & 31)) + ((x & mask) > threshold)


def _saturating_shl(x, k: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT<k> for k > 0 on int32."""
    limit = (1 << (31 - k)) - 1
    return np.where(x > limit, INT32_MAX, np.where(x < -limit, INT32_MIN, wrap32(np.asarray(x, np.int64) << k)))


def one_over_one_plus_x(a) -> np.ndarray:
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1 on Q0.31 raw values: three Newton-Raphson steps in Q2.29
    from 48/17 - 32/17 d, d = (1 + a) / 2."""
    s = np.asarray(a, dtype=np.int64) + INT32_MAX  # RoundingHalfSum(a, One()): One() of Q0.31 is 2^31 - 1
    s = s + np.where(s >= 0, 1, -1)
    half = np.sign(s) * (np.abs(s) // 2)  # C's division truncates
    x = wrap32(1515870810 + srdhm(half, -1010580540))  # 48/17 and -32/17 in Q2.29
    for _ in range(3):
        one_minus = wrap32((1 << 29) - srdhm(half, x))
        x = wrap32(x + _saturating_shl(srdhm(x, one_minus), 2))
    return _saturating_shl(x, 1)


def reciprocal(x) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal(x, 31, &shift) of int32 x >= 0: (1 / x in Q0.31 scaled by a power of two,
    the number of bits of x above the unit). x = 0 gives what x86 gives."""
    x = np.asarray(x, dtype=np.int64)
    headroom_plus_one = clz32(x)
    shifted = wrap32(((x & 0xFFFFFFFF) << (headroom_plus_one & 31)) - 2**31)
    return one_over_one_plus_x(shifted), 31 - headroom_plus_one
