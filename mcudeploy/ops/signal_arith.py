"""The integer arithmetic TensorFlow Lite Micro's Signal library shares between its operators (signal/src in the
tflite-micro repository: msb, square root, log, PCAN's gain), in numpy, element by element as its C computes it
(firmware/kernels/signal.c holds the same in C). Unsigned values stay in numpy's unsigned types, whose sums and
products wrap as C's do."""
from __future__ import annotations

import math

import numpy as np

LOG_SEGMENTS = 128  # log2's fraction in 128 segments, each corrected by a table entry
PCAN_SNR_BITS, PCAN_OUTPUT_BITS = 12, 6
PCAN_LUT_MIN = 4 * 32 - 6 + 3  # entries PCAN's gain reads for a noise level of 32 bits


def msb(x: np.ndarray, bits: int = 32) -> np.ndarray:
    """1 + the index of the highest set bit; ``bits`` for 0 (TFLite Micro's MostSignificantBit32/64 as GCC
    builds it, with __builtin_clz)."""
    x = np.asarray(x, np.uint64)
    out = np.zeros(x.shape, np.int64)
    v = x.copy()
    for _ in range(bits):
        nz = v != 0
        out += nz
        v = v >> np.uint64(1)
    return np.where(x == 0, bits, out)


def log_lut() -> tuple[int, ...]:
    """The correction of log2's linear fraction per segment, in 1/65536: round((log2(1 + t) - t) * 2^16) at
    t = i / 128 for i in 0..128, and a 0 after (read as the next segment's value of the last). These are the
    values of TFLite Micro's kLogLut, computed rather than copied."""
    return tuple(int(math.floor((math.log2(1 + i / LOG_SEGMENTS) - i / LOG_SEGMENTS) * 65536 + 0.5))
                 for i in range(LOG_SEGMENTS + 1)) + (0,)


def log32(x: np.ndarray, out_scale: int) -> np.ndarray:
    """TFLite Micro's Log32(x, out_scale) for x > 1 (uint32 in, uint32 out)."""
    lut = np.array(log_lut(), np.int64)
    x = np.asarray(x, np.int64)
    integer = msb(x) - 1
    frac = x - (np.int64(1) << integer)  # < 2^31: an int32 in C
    frac = np.where(integer < 16, frac << np.maximum(16 - integer, 0), frac >> np.maximum(integer - 16, 0))
    seg = frac >> 9
    c0, c1 = lut[seg], lut[seg + 1]
    rel = ((c1 - c0) * (frac - 512 * seg)) >> 16
    fraction = (frac + c0 + rel) & 0xFFFFFFFF
    log2 = ((integer << 16) + fraction) & 0xFFFFFFFF
    loge = ((45426 * log2 + 32768) >> 16) & 0xFFFFFFFF
    return ((((out_scale & 0xFFFFFFFF) * loge) & 0xFFFFFFFF) + 32768 & 0xFFFFFFFF) >> 16


def _isqrt_rounded(n: int, cap: int) -> int:
    r = math.isqrt(n)
    return r + 1 if n - r * r > r and r != cap else r


def sqrt64(x: np.ndarray) -> np.ndarray:
    """TFLite Micro's Sqrt64: the integer square root, + 1 where the remainder exceeds the root (not past
    0xFFFF when the value fits 32 bits, its Sqrt32 shortcut, else 0xFFFFFFFF)."""
    flat = [_isqrt_rounded(int(v), 0xFFFF if int(v) >> 32 == 0 else 0xFFFFFFFF)
            for v in np.asarray(x, np.uint64).ravel()]
    return np.array(flat, np.uint64).reshape(np.shape(x))


def pcan_gain(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLite Micro's WideDynamicFunction(x, lut) as int16, per element of uint32 x."""
    x = np.asarray(x, np.int64)
    lut = np.asarray(lut, np.int64)
    interval = msb(x)
    base = np.clip(4 * interval - 6, 0, len(lut) - 3)
    frac = np.where(interval < 11, (x << np.maximum(11 - interval, 0)) & 0xFFFFFFFF,
                    x >> np.maximum(interval - 11, 0)) & 0x3FF
    r = (lut[base + 2] * frac) >> 5
    r = _wrap32(r + _wrap32((lut[base + 1] & 0xFFFFFFFF) << 5))
    r = _wrap32(r * frac)
    r = (r + (1 << 14)) >> 15
    r = r + lut[base]
    small = lut[np.minimum(x, 2)]
    return np.where(x <= 2, small, _wrap16(r))


def pcan_shrink(snr: np.ndarray) -> np.ndarray:
    snr = np.asarray(snr, np.int64)
    return np.where(snr < (2 << PCAN_SNR_BITS), (snr * snr) >> (2 + 2 * PCAN_SNR_BITS - PCAN_OUTPUT_BITS),
                    ((snr >> (PCAN_SNR_BITS - PCAN_OUTPUT_BITS)) - (1 << PCAN_OUTPUT_BITS)) & 0xFFFFFFFF)


def _wrap32(v):
    return ((np.asarray(v, np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _wrap16(v):
    return ((np.asarray(v, np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)
