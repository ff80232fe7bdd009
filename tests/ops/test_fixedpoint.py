"""gemmlowp's fixed point as mcudeploy computes it (mcudeploy/ops/fixedpoint.py, vectorised numpy; and
firmware/include/mcud_fixedpoint.h) against a literal, one-value-at-a-time transcription of gemmlowp's
and TFLite's functions on Python integers with C's int32 semantics (below), and the constant tables the C
kernels hold against the Python that computes them."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.ops import fixedpoint as fx
from mcudeploy.ops import softmax, tflite_tables
from mcudeploy.resources import firmware_dir

MIN, MAX = -2**31, 2**31 - 1


# ---------------------------------------------------------------- the literal transcription


def i32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def c_div(a: int, b: int) -> int:
    """C's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def srdhm(a: int, b: int) -> int:
    if a == b == MIN:
        return MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return i32(c_div(ab + nudge, 1 << 31))


def rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if (x & mask) > threshold else 0)


def pot(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT."""
    if e <= 0:
        return rdbpot(x, -e)
    threshold = (1 << (31 - e)) - 1
    return MAX if x > threshold else MIN if x < -threshold else i32(x << e)


def half_sum(a: int, b: int) -> int:
    s = a + b
    return c_div(s + (1 if s >= 0 else -1), 2)


def clz(x: int) -> int:
    u = x & 0xFFFFFFFF
    return 32 - u.bit_length()


def exp_quarter(a: int) -> int:
    x = a + (1 << 28)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = pot(x4, -2)
    inner = pot(srdhm(x4_over_4 + x3, 715827883) + x2, -1)
    return 1895147668 + srdhm(1895147668, x + inner)


def exp_negative(a: int, bits: int) -> int:
    frac = 31 - bits
    quarter = 1 << (frac - 2)
    mod = (a & (quarter - 1)) - quarter
    result = exp_quarter(pot(mod, bits))
    remainder = i32(mod - a)
    for e, m in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
                 (4, 242)):
        if bits > e and remainder & (1 << (frac + e)):
            result = srdhm(result, m)
    if bits > 5 and a < -(1 << (36 - bits)):
        result = 0
    return MAX if a == 0 else result


def newton(half: int) -> int:
    x = 1515870810 + srdhm(half, -1010580540)
    for _ in range(3):
        x = x + pot(srdhm(x, (1 << 29) - srdhm(half, x)), 2)
    return x


def one_over_one_plus(a: int) -> int:
    return pot(newton(half_sum(a, MAX)), 1)


def logistic(a: int, bits: int) -> int:
    if a == 0:
        return 1 << 30
    positive = one_over_one_plus(exp_negative(-abs(a), bits))
    return positive if a > 0 else MAX - positive


def tanh(a: int, bits: int) -> int:
    if a == 0:
        return 0
    t = pot(newton(half_sum(exp_negative(-abs(a), bits + 1), MAX)) - (1 << 29), 2)
    return -t if a < 0 else t


def log_x(a: int, bits_in: int, bits_out: int) -> int:
    acc = bits_out + 1
    quarter = pot(536870912, -acc)
    head_a = clz(a)
    r_a = pot(srdhm(pot(a, head_a - 1), 1518500250), 1)
    pow_a = max(MIN, min(MAX, pot(bits_in - head_a, 31 - acc) + quarter))
    head_b = clz(srdhm(a, 1518500250)) - 1
    r_b = pot(a, head_b)
    pow_b = max(MIN, min(MAX, pot(bits_in - head_b, 31 - acc) - quarter))
    r, pow2 = min(r_a, r_b), max(pow_a, pow_b)
    p = half_sum(r, 1805811301)
    q = i32(r - 1805811301)
    q = i32(q + q)
    sq = srdhm(q, q)
    num = i32(srdhm(q, r) + srdhm(srdhm(q, sq), 117049297))
    den = i32(srdhm(p, i32(i32(1057819769 + q) + srdhm(127690142, sq))) + srdhm(638450708, q))
    return pot(i32(srdhm(pow2, 1488522236) + srdhm(pot(num, -acc), one_over_one_plus(den))), 1)


def inv_sqrt(v: int) -> tuple[int, int]:
    if v <= 1:
        return MAX, 0
    shift = 11
    while v >= 1 << 29:
        v //= 4
        shift += 1
    pairs = (clz(v) - 1) // 2 - 1
    shift -= pairs
    v <<= 2 * pairs
    half = pot(v >> 1, -1)
    x = 1 << 28
    for _ in range(5):
        x3 = pot(srdhm(srdhm(x, x), x), 6)
        x = pot(i32(srdhm((1 << 28) + (1 << 27), x) - srdhm(half, x3)), 3)
    m = srdhm(x, 1518500250)
    if shift < 0:
        m, shift = i32(m << -shift), 0
    return m, -shift


# ---------------------------------------------------------------- numpy against the transcription

INT32 = st.integers(MIN + 1, MAX)


@settings(max_examples=300, deadline=None)
@given(a=st.lists(st.integers(MIN + 1, 0), min_size=1, max_size=20), bits=st.sampled_from([4, 5, 6, 12]))
def test_exp_on_negative_values(a, bits):
    assert fx.exp_on_negative_values(a, bits).tolist() == [exp_negative(v, bits) for v in a]


@settings(max_examples=300, deadline=None)
@given(a=st.lists(INT32, min_size=1, max_size=20), bits=st.sampled_from([3, 4, 5]))
def test_logistic_and_tanh(a, bits):
    assert fx.logistic(a, bits).tolist() == [logistic(v, bits) for v in a]
    assert fx.tanh(a, bits).tolist() == [tanh(v, bits) for v in a]


@settings(max_examples=300, deadline=None)
@given(a=st.lists(st.integers(1 << 19, MAX), min_size=1, max_size=20))
def test_log_of_a_q12_sum(a):
    assert fx.log_x(a, 12, 5).tolist() == [log_x(v, 12, 5) for v in a]


@settings(max_examples=300, deadline=None)
@given(v=st.integers(0, MAX))
def test_inv_sqrt(v):
    assert fx.inv_sqrt(v) == inv_sqrt(v)
    if v > 1:  # and it is 1 / sqrt(v): mult * 2^exponent / 2^31
        m, e = fx.inv_sqrt(v)
        assert abs(m * 2.0**e / 2.0**31 * np.sqrt(v) - 1) < 2e-6


def test_the_functions_are_close_to_the_real_ones():
    x = np.linspace(-7.9, 7.9, 2001)
    raw = np.round(x * 2**27).astype(np.int64)  # Q4.27
    assert np.max(np.abs(fx.logistic(raw, 4) / 2**31 - 1 / (1 + np.exp(-x)))) < 1e-7
    assert np.max(np.abs(fx.tanh(raw, 4) / 2**31 - np.tanh(x))) < 2e-7
    total = np.arange(1, 4000) * (1 << 19) + 12345  # Q12.19 sums
    assert np.max(np.abs(fx.log_x(total, 12, 5) / 2**26 - np.log(total / 2**19))) < 1e-6


# ---------------------------------------------------------------- the C against numpy


def test_c_fixed_point_equals_numpy(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.integers(2, 2**31, 2000), rng.integers(2, 5000, 1000), [0, 1, 2, 3, 2**31 - 1,
                                                                                       1 << 19, (1 << 29) - 1]])
    src = tmp_path / "t.c"
    src.write_text('#include <stdio.h>\n#include "mcud_fixedpoint.h"\nint main(void){long v;int32_t m,e;'
                   'while(scanf("%ld",&v)==1){mcud_fx_inv_sqrt((int32_t)v,&m,&e);printf("%d %d %d %d\\n",m,e,'
                   'v>=(1<<19)?mcud_fx_log_x((int32_t)v,12,5):0,mcud_fx_one_over_one_plus_x((int32_t)v));}return 0;}\n')
    exe = tmp_path / "t"
    subprocess.run(["gcc", "-O2", "-I", str(firmware_dir() / "include"), str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], input="\n".join(map(str, values)), capture_output=True, text=True, check=True)
    got = np.array(out.stdout.split(), dtype=np.int64).reshape(-1, 4)
    assert got[:, :2].tolist() == [list(fx.inv_sqrt(int(v))) for v in values]
    big = values >= 1 << 19
    assert np.array_equal(got[big, 2], fx.log_x(values[big], 12, 5))
    assert np.array_equal(got[:, 3], fx.one_over_one_plus_x(values))


# ---------------------------------------------------------------- tables the C kernels hold


def _c_table(source: str, name: str) -> np.ndarray:
    text = (firmware_dir() / "kernels" / source).read_text()
    body = re.search(rf"{name}\[\d+\] = \{{(.*?)\}};", text, re.DOTALL).group(1)
    return np.array([int(v) for v in body.replace("\n", " ").split(",") if v.strip()], dtype=np.int64)


def test_the_c_tables_are_the_pythons():
    assert np.array_equal(_c_table("activation.c", "sigmoid_q16"), tflite_tables.SIGMOID_Q16)
    assert np.array_equal(_c_table("softmax.c", "s16_exp"), softmax.S16_EXP)
    assert np.array_equal(_c_table("softmax.c", "s16_reciprocal"), softmax.S16_RECIPROCAL)
    # what the tables are: sigmoid(i / 24) in Q0.16 (TFLite's hand-tuned numbers, within 1.2 of it, the last
    # capped at 65535), exp on
    # [-10, 0] and 1 / (1 + x) on [0, 1] in Q0.15
    i = np.arange(256)
    assert np.max(np.abs(tflite_tables.SIGMOID_Q16 - 65536 / (1 + np.exp(-i / 24)))[:-1]) < 1.2
    assert tflite_tables.SIGMOID_Q16[-1] == 65535
    x = np.linspace(-10, 0, 513)
    assert np.max(np.abs(softmax.S16_EXP - np.exp(x) * 32767.5)) <= 2
    x = np.linspace(0, 1, 513)
    assert np.max(np.abs(softmax.S16_RECIPROCAL - 32767.5 / (1 + x))) <= 2
