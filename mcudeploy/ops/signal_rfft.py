"""SignalRfft (signal/src/rfft_*.cc over kiss_fft 1.3.0, the version TensorFlow Lite Micro builds): per row of x
(its last dimension, zero-padded to ``fft_length``), the fft_length / 2 + 1 complex bins of its real FFT, as
interleaved (re, im) pairs of x's type.

The arithmetic is kiss_fft's, which this module states step by step (the C kernel, firmware/kernels/signal_fft.c, does
the same): a complex FFT of n = fft_length / 2 points of the row read as (re, im) pairs, mixed radix over kiss_fft's
factorisation of n (fours first, then twos, threes, fives; ``factors``), decimation in time, each stage's inputs divided
by its radix first in fixed point (x * (SAMP_MAX / radix), rounded: the result is the DFT / n), twiddles
floor(0.5 + SAMP_MAX * cos/sin(-2 pi i / n)); then the split of the two interleaved real halves with the "super
twiddles" of phase -pi ((k + 1) / n + 1/2). In fixed point (int16: 15 fraction bits, products in int32; int32: 31, in
int64) every product is rounded half up (sround) and every stored value wraps to the type, as C's conversions do;
float32 is plain float arithmetic (no division by the radix).

TensorFlow Lite Micro allocates nothing at run time, so its kiss_fft cannot run a radix above 5 (the generic butterfly
needs a buffer it does not get): such lengths, and odd ones, are refused.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ops.base import Array, Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register

TYPES = {"int16": 16, "int32": 32, "float32": 0}
PI = 3.141592653589793238462643383279502884197169399375105820974944  # as kiss_fft.c spells it (the same double)
PI_SUPER = 3.14159265358979323846264338327  # kiss_fftr.c's


def factors(n: int) -> tuple[int, ...]:
    """kiss_fft's kf_factor: (radix, remaining length) pairs, fours first, then twos, then odd numbers from three up
    to floor(sqrt(n)) of the original n, then whatever is left."""
    out, p, floor_sqrt = [], 4, math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = 2 if p == 4 else 3 if p == 2 else p + 2
            if p > floor_sqrt:
                p = n
        n //= p
        out += [p, n]
        if n <= 1:
            return tuple(out)


def _round_twiddle(value: float, bits: int):
    return float(np.float32(value)) if not bits else math.floor(0.5 + ((1 << (bits - 1)) - 1) * value)


def twiddles(n: int, bits: int, inverse: bool = False) -> np.ndarray:
    """kiss_fft_alloc's twiddles of an n-point FFT: (n, 2) (re, im); the inverse's phases are the forward's negated."""
    ph = [(-1 if inverse else 1) * (-2 * PI * i / n) for i in range(n)]
    return np.array([[_round_twiddle(math.cos(p), bits), _round_twiddle(math.sin(p), bits)] for p in ph])


def super_twiddles(n: int, bits: int, inverse: bool = False) -> np.ndarray:
    ph = [(-1 if inverse else 1) * (-PI_SUPER * ((i + 1) / n + .5)) for i in range(n // 2)]
    return np.array([[_round_twiddle(math.cos(p), bits), _round_twiddle(math.sin(p), bits)] for p in ph]).reshape(-1, 2)


class _Fixed:
    """kiss_fft's fixed-point macros on int64 numpy arrays holding values of ``bits`` bits."""

    def __init__(self, bits: int):
        self.bits, self.frac, self.max = bits, bits - 1, (1 << (bits - 1)) - 1

    def wrap(self, v):
        half = 1 << (self.bits - 1)
        return ((v + half) & ((1 << self.bits) - 1)) - half

    def sround(self, v):
        return self.wrap((v + (1 << (self.frac - 1))) >> self.frac)

    def fixdiv(self, c, div):
        k = self.max // div
        return self.sround(c[0] * k), self.sround(c[1] * k)

    def mul(self, a, b):
        return self.sround(a[0] * b[0] - a[1] * b[1]), self.sround(a[0] * b[1] + a[1] * b[0])

    def smul(self, a, b):
        return self.sround(a * b)

    def scale(self, c, s):
        return self.sround(c[0] * s), self.sround(c[1] * s)

    def store(self, v):
        return self.wrap(v)

    def half(self, v):  # HALF_OF on a C int (a sum of two values of the type, wrapped to 32 bits)
        return (((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)) >> 1


class _Float:
    """The same in float32 (C_FIXDIV a no-op, HALF_OF times 0.5f)."""

    def fixdiv(self, c, div):
        return c

    def mul(self, a, b):
        return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]

    def smul(self, a, b):
        return a * b

    def scale(self, c, s):
        return c[0] * s, c[1] * s

    def store(self, v):
        return np.float32(v) if np.isscalar(v) else v.astype(np.float32)

    def half(self, v):
        return v * np.float32(0.5)


def _butterfly(ar, out_re, out_im, lo, radix, m, fstride, tw, inverse=False):
    """kiss_fft's kf_bfly{2,3,4,5} on out[lo : lo + radix * m] (all rows at once)."""
    u = np.arange(m)
    get = lambda q: (out_re[:, lo + q * m: lo + (q + 1) * m], out_im[:, lo + q * m: lo + (q + 1) * m])  # noqa: E731
    t = lambda q: (tw[(q * u * fstride), 0], tw[(q * u * fstride), 1])  # noqa: E731
    add = lambda a, b: (ar.store(a[0] + b[0]), ar.store(a[1] + b[1]))  # noqa: E731
    sub = lambda a, b: (ar.store(a[0] - b[0]), ar.store(a[1] - b[1]))  # noqa: E731
    xs = [ar.fixdiv(get(q), radix) for q in range(radix)]
    a = xs[0]
    if radix == 2:
        tt = ar.mul(xs[1], t(1))
        res = [add(a, tt), sub(a, tt)]
    elif radix == 3:
        b, c = ar.mul(xs[1], t(1)), ar.mul(xs[2], t(2))
        s, d = add(b, c), sub(b, c)
        mid = (ar.store(a[0] - ar.half(s[0])), ar.store(a[1] - ar.half(s[1])))
        d = ar.scale(d, tw[fstride * m, 1])
        res = [add(a, s), (ar.store(mid[0] - d[1]), ar.store(mid[1] + d[0])),
               (ar.store(mid[0] + d[1]), ar.store(mid[1] - d[0]))]
    elif radix == 4:
        b, c, d = ar.mul(xs[1], t(1)), ar.mul(xs[2], t(2)), ar.mul(xs[3], t(3))
        ac, a2, bd, bmd = sub(a, c), add(a, c), add(b, d), sub(b, d)
        sg = -1 if inverse else 1  # the inverse turns the other way
        res = [add(a2, bd), (ar.store(ac[0] + sg * bmd[1]), ar.store(ac[1] - sg * bmd[0])), sub(a2, bd),
               (ar.store(ac[0] - sg * bmd[1]), ar.store(ac[1] + sg * bmd[0]))]
    else:
        b, c, d, e = (ar.mul(xs[q], t(q)) for q in (1, 2, 3, 4))
        ya, yb = tw[fstride * m], tw[2 * fstride * m]
        s7, s10, s8, s9 = add(b, e), sub(b, e), add(c, d), sub(c, d)
        sm = ar.smul
        o0 = (ar.store(a[0] + (s7[0] + s8[0])), ar.store(a[1] + (s7[1] + s8[1])))
        s5 = (ar.store(a[0] + sm(s7[0], ya[0]) + sm(s8[0], yb[0])), ar.store(a[1] + sm(s7[1], ya[0]) + sm(s8[1], yb[0])))
        s6 = (ar.store(sm(s10[1], ya[1]) + sm(s9[1], yb[1])), ar.store(-sm(s10[0], ya[1]) - sm(s9[0], yb[1])))
        s11 = (ar.store(a[0] + sm(s7[0], yb[0]) + sm(s8[0], ya[0])),
               ar.store(a[1] + sm(s7[1], yb[0]) + sm(s8[1], ya[0])))
        s12 = (ar.store(-sm(s10[1], yb[1]) + sm(s9[1], ya[1])), ar.store(sm(s10[0], yb[1]) - sm(s9[0], ya[1])))
        res = [o0, sub(s5, s6), add(s11, s12), sub(s11, s12), add(s5, s6)]
    for q, (r, i) in enumerate(res):
        out_re[:, lo + q * m: lo + (q + 1) * m] = r
        out_im[:, lo + q * m: lo + (q + 1) * m] = i


def _work(ar, out_re, out_im, lo, in_re, in_im, f, fstride, facs, tw, inverse=False):
    radix, m = facs[0], facs[1]
    for k in range(radix):
        if m == 1:
            out_re[:, lo + k] = in_re[:, f + k * fstride]
            out_im[:, lo + k] = in_im[:, f + k * fstride]
        else:
            _work(ar, out_re, out_im, lo + k * m, in_re, in_im, f + k * fstride, fstride * radix, facs[2:], tw,
                  inverse)
    _butterfly(ar, out_re, out_im, lo, radix, m, fstride, tw, inverse)


def leaf_order(n: int) -> tuple[int, ...]:
    """Where kf_work reads each position of its output from: perm[i] is the input index whose value the leaves put
    at position i (kiss_fft's mixed-radix digit reversal)."""
    order = []

    def walk(f, fstride, facs):
        radix, m = facs[0], facs[1]
        for k in range(radix):
            if m == 1:
                order.append(f + k * fstride)
            else:
                walk(f + k * fstride, fstride * radix, facs[2:])
    walk(0, 1, factors(n))
    return tuple(order)


def cycle_leaders(perm) -> tuple[int, ...]:
    """The smallest index of every cycle of ``perm`` longer than one."""
    seen, leaders = set(), []
    for i in range(len(perm)):
        if i in seen or perm[i] == i:
            continue
        leaders.append(i)
        j = i
        while j not in seen:
            seen.add(j)
            j = perm[j]
    return tuple(leaders)


def irfft(x: np.ndarray, fft_length: int, dtype: str) -> np.ndarray:
    """kiss_fftri of every row of x (complex bins interleaved; the first fft_length / 2 + 1 read): (..., fft_length)."""
    bits = TYPES[dtype]
    n = fft_length // 2
    ar = _Fixed(bits) if bits else _Float()
    work = np.float32 if not bits else np.int64
    rows = x.reshape(-1, x.shape[-1]).astype(work)
    fr, fi = rows[:, 0::2], rows[:, 1::2]
    tw = twiddles(n, bits, True).astype(work)
    sup = super_twiddles(n, bits, True).astype(work)
    tr, ti = np.zeros((rows.shape[0], n), work), np.zeros((rows.shape[0], n), work)
    first = ar.fixdiv((ar.store(fr[:, 0] + fr[:, n]), ar.store(fr[:, 0] - fr[:, n])), 2)
    tr[:, 0], ti[:, 0] = first
    for k in range(1, n // 2 + 1):  # in order: the middle bin's second write wins, as in kiss_fftri
        fk = ar.fixdiv((fr[:, k], fi[:, k]), 2)
        fn = ar.fixdiv((fr[:, n - k], ar.store(-fi[:, n - k])), 2)
        even = (ar.store(fk[0] + fn[0]), ar.store(fk[1] + fn[1]))
        odd = ar.mul((ar.store(fk[0] - fn[0]), ar.store(fk[1] - fn[1])), (sup[k - 1, 0], sup[k - 1, 1]))
        tr[:, k], ti[:, k] = ar.store(even[0] + odd[0]), ar.store(even[1] + odd[1])
        tr[:, n - k], ti[:, n - k] = ar.store(even[0] - odd[0]), ar.store(-ar.store(even[1] - odd[1]))
    re, im = np.zeros_like(tr), np.zeros_like(ti)
    _work(ar, re, im, 0, tr, ti, 0, 1, factors(n), tw, True)
    out = np.stack([re, im], axis=-1).reshape(*x.shape[:-1], fft_length)
    if not bits:  # TFLite Micro's float IRFFT divides kiss_fft's output by fft_length (its fixed point does not)
        out = (out / np.float32(fft_length)).astype(np.float32)
    return out.astype(np.dtype(dtype))


def rfft(x: np.ndarray, fft_length: int, dtype: str) -> np.ndarray:
    """kiss_fftr of every row of x (zero-padded to fft_length): (..., fft_length + 2) interleaved (re, im)."""
    bits = TYPES[dtype]
    n = fft_length // 2
    ar = _Fixed(bits) if bits else _Float()
    work = np.float32 if not bits else np.int64
    rows = x.reshape(-1, x.shape[-1]).astype(work)
    padded = np.zeros((rows.shape[0], fft_length), work)
    padded[:, :rows.shape[1]] = rows
    tw = twiddles(n, bits).astype(work)
    sup = super_twiddles(n, bits).astype(work)
    re, im = np.zeros((rows.shape[0], n), work), np.zeros((rows.shape[0], n), work)
    _work(ar, re, im, 0, padded[:, 0::2], padded[:, 1::2], 0, 1, factors(n), tw)
    out_re, out_im = np.zeros((rows.shape[0], n + 1), work), np.zeros((rows.shape[0], n + 1), work)
    dc = ar.fixdiv((re[:, 0], im[:, 0]), 2)
    out_re[:, 0], out_re[:, n] = ar.store(dc[0] + dc[1]), ar.store(dc[0] - dc[1])
    k = np.arange(1, n // 2 + 1)
    if len(k):
        a = ar.fixdiv((re[:, k], im[:, k]), 2)
        b = ar.fixdiv((re[:, n - k], ar.store(-im[:, n - k])), 2)
        f1 = (ar.store(a[0] + b[0]), ar.store(a[1] + b[1]))
        f2 = (ar.store(a[0] - b[0]), ar.store(a[1] - b[1]))
        t = ar.mul(f2, (sup[k - 1, 0], sup[k - 1, 1]))
        out_re[:, k], out_im[:, k] = ar.store(ar.half(f1[0] + t[0])), ar.store(ar.half(f1[1] + t[1]))
        out_re[:, n - k] = ar.store(ar.half(f1[0] - t[0]))
        out_im[:, n - k] = ar.store(ar.half(t[1] - f1[1]))
    out = np.stack([out_re, out_im], axis=-1).reshape(*x.shape[:-1], 2 * (n + 1))
    return out.astype(np.dtype(dtype))


@register
class SignalRfft(Op):
    name = "SignalRfft"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        length = int(node.attr("fft_length"))
        require(x.dtype in TYPES, f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes int16, int32 "
                                  f"and float32)")
        require_valid(len(x.shape) >= 1, f"{self.name} needs an input of 1 dimension or more")
        require(length >= 4 and length % 2 == 0, f"{self.name} of fft_length {length} is not supported (kiss_fft's "
                                                 f"real FFT takes an even length of 4 or more)")
        require(set(factors(length // 2)[0::2]) <= {2, 3, 4, 5},
                f"{self.name} of fft_length {length} is not supported (n = {length // 2} has a prime factor above 5, "
                f"whose butterfly TFLite Micro's kiss_fft cannot allocate)")
        require_valid(x.shape[-1] <= length, f"{self.name}'s rows of {x.shape[-1]} are longer than fft_length {length}")
        return [((*x.shape[:-1], length + 2), x.dtype)]

    def reference(self, graph, node, inputs):
        return [rfft(inputs[0], int(node.attr("fft_length")), graph[node.inputs[0]].dtype)]

    def kernel(self, graph, node):
        dtype = graph[node.inputs[0]].dtype
        length = int(node.attr("fft_length"))
        bits, n = TYPES[dtype], length // 2
        tw, sup = twiddles(n, bits).reshape(-1), super_twiddles(n, bits).reshape(-1)
        if not bits:
            return Call("mcud_signal_rfft_f32", (node.inputs[0], node.outputs[0]),
                        Struct.of("mcud_signal_rfft_f32_params", fft_length=length, factors=Array("int32_t", factors(n)),
                                  twiddles=Array("float", tuple(float(v) for v in tw)),
                                  super_twiddles=Array("float", tuple(float(v) for v in sup))))
        return Call("mcud_signal_rfft_fixed", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_signal_rfft_fixed_params", fft_length=length, bits=bits,
                              factors=Array("int32_t", factors(n)), twiddles=Array("int32_t", tuple(int(v) for v in tw)),
                              super_twiddles=Array("int32_t", tuple(int(v) for v in sup))))
