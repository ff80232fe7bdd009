"""TFLite's integer arithmetic of the element-wise operators of two inputs, written out again here line by
line after TFLite's C++ on Python integers (add.h's AddFunc, mul.h, div.h's DivElementwise with gemmlowp's
reciprocal, squared_difference.cc, prelu.h, comparisons.h), against mcudeploy's numpy references on random
codes and quantization parameters. (tests/test_tflite_elementwise.py runs every pair of codes through
TensorFlow Lite Micro itself where it is installed.)"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.reference import run_reference

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


# ------------------------------------------------------------------------------------ TFLite, literally


def i32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def quantize_multiplier(d: float) -> tuple[int, int]:
    """QuantizeMultiplier: (quantized_multiplier, shift) with TFLite's exponent convention."""
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    q_fixed = math.floor(q * (1 << 31) + 0.5)  # TfLiteRound of a positive value
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    return q_fixed, shift


def srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    total = ab + nudge
    return i32(abs(total) // (1 << 31) * (1 if total >= 0 else -1))  # C's division truncates


def rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def mbqm(x: int, mult: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (double rounding)."""
    left, right = (shift, 0) if shift > 0 else (0, -shift)
    return rdbpot(srdhm(i32(x * (1 << left)), mult), right)


def mbqm_smaller(x: int, mult: int, left_shift: int) -> int:
    """MultiplyByQuantizedMultiplierSmallerThanOneExp."""
    return rdbpot(srdhm(x, mult), -left_shift)


def add_func(x, y, qa, qb, qy, left_shift, sign, lo, hi):
    """add.h's AddFunc (sign 1) and sub.h's SubElementwise (sign -1) with add_common.cc's parameters."""
    twice = 2 * max(qa[0], qb[0])
    m1, s1 = quantize_multiplier(qa[0] / twice)
    m2, s2 = quantize_multiplier(qb[0] / twice)
    mo, so = quantize_multiplier(twice / ((1 << left_shift) * qy[0]))
    scaled1 = mbqm_smaller((x - qa[1]) * (1 << left_shift), m1, s1)
    scaled2 = mbqm_smaller((y - qb[1]) * (1 << left_shift), m2, s2)
    raw = mbqm_smaller(i32(scaled1 + sign * scaled2), mo, so) + qy[1]
    return min(hi, max(lo, raw))


def mul_func(x, y, qa, qb, qy, lo, hi):
    m, s = quantize_multiplier(qa[0] * qb[0] / qy[0])
    return min(hi, max(lo, qy[1] + mbqm((x - qa[1]) * (y - qb[1]), m, s)))


def squared_difference_func(x, y, qa, qb, qy, left_shift, lo, hi):
    twice = 2.0 * max(qa[0], qb[0])
    m1, s1 = quantize_multiplier(qa[0] / twice)
    m2, s2 = quantize_multiplier(qb[0] / twice)
    mo, so = quantize_multiplier(twice * twice / float(np.float32((1 << left_shift * 2)) * np.float32(qy[0])))
    diff = mbqm_smaller((x - qa[1]) * (1 << left_shift), m1, s1) - mbqm_smaller((y - qb[1]) * (1 << left_shift), m2, s2)
    return min(hi, max(lo, mbqm(i32(diff * diff), mo, so) + qy[1]))


def prelu_func(x, alpha, qx, qa, qy, lo, hi):
    m1, s1 = quantize_multiplier(qx[0] / qy[0])
    m2, s2 = quantize_multiplier(qx[0] * qa[0] / qy[0])
    v = x - qx[1]
    out = mbqm(v, m1, s1) if v >= 0 else mbqm(v * (alpha - qa[1]), m2, s2)
    return min(hi, max(lo, out + qy[1]))


def compare_scaled(x, q):
    m, s = quantize_multiplier(q[0])
    return mbqm_smaller((x - q[1]) * (1 << 8), m, s)


def saturating_pot(x: int, exponent: int) -> int:
    threshold = (1 << (31 - exponent)) - 1
    return INT32_MAX if x > threshold else INT32_MIN if x < -threshold else i32(x << exponent)


def one_over_one_plus_x(a: int) -> int:
    total = a + INT32_MAX
    half = int((total + (1 if total >= 0 else -1)) / 2)  # RoundingHalfSum(a, One()); exact below 2^53
    x = i32(1515870810 + srdhm(half, -1010580540))
    for _ in range(3):
        one_minus = i32((1 << 29) - srdhm(half, x))
        x = i32(x + saturating_pot(srdhm(x, one_minus), 2))
    return saturating_pot(x, 1)


def get_reciprocal(x: int) -> tuple[int, int]:
    headroom_plus_one = 32 - x.bit_length()  # CountLeadingZeros of x > 0
    shifted = i32((x << headroom_plus_one) - (1 << 31))
    return one_over_one_plus_x(shifted), 31 - headroom_plus_one


def div_func(x, y, qa, qb, qy, lo, hi):
    m, s = quantize_multiplier(float(np.float32(qa[0]) / (np.float32(qb[0]) * np.float32(qy[0]))))
    v1, v2 = x - qa[1], y - qb[1]
    if v2 < 0:
        v1, v2 = -v1, -v2
    inv, recip_shift = get_reciprocal(v2)
    headroom = 31 if v1 in (0, -1) else 32 - (v1 if v1 > 0 else ~v1).bit_length() - 1
    quotient = srdhm(i32(v1 * (1 << headroom)), inv)
    return min(hi, max(lo, qy[1] + mbqm_smaller(quotient, m, s - recip_shift - headroom)))


# ------------------------------------------------------------------------------------ mcudeploy's


def _graph(op, dtypes, shapes, quants, out_dtype=None, out_quant=None) -> Graph:
    names = [f"x{i}" for i in range(len(shapes))]
    tensors = {n: Tensor(n, s, d, "input", None if q is None else Quant((float(np.float32(q[0])),), (q[1],)))
               for n, d, s, q in zip(names, dtypes, shapes, quants)}
    node = Node("n", op, tuple(names), ("y",))
    scope = Graph("g", tensors, (), tuple(names), (), arithmetic="tflite")
    shape, dtype = registry.get(op).infer(scope, node)[0]
    q = None if out_quant is None else Quant((float(np.float32(out_quant[0])),), (out_quant[1],))
    tensors["y"] = Tensor("y", shape, out_dtype or dtype, "output", q)
    return Graph("g", tensors, (node,), tuple(names), ("y",), arithmetic="tflite")


def _f32(x: float) -> float:
    return float(np.float32(x))


scales = st.floats(0.0005, 0.5).map(_f32)
zeros8 = st.integers(-128, 127)
RANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}


def _codes(dtype, seed, n=64):
    lo, hi = RANGE[dtype]
    rng = np.random.default_rng(seed)
    a, b = rng.integers(lo, hi + 1, n), rng.integers(lo, hi + 1, n)
    a[:4], b[:4] = (lo, hi, 0, lo), (hi, lo, 0, lo)
    return a.astype(dtype), b.astype(dtype)


@settings(max_examples=40, deadline=None)
@given(scales, scales, scales, zeros8, zeros8, zeros8, st.sampled_from(["Add", "Sub"]), st.integers(0, 99))
def test_int8_add_and_sub_are_tflites(s_a, s_b, s_y, z_a, z_b, z_y, op, seed):
    qa, qb, qy = (s_a, z_a), (s_b, z_b), (s_y, z_y)
    graph = _graph(op, ("int8", "int8"), ((64,), (64,)), (qa, qb), out_quant=qy)
    a, b = _codes("int8", seed)
    got = run_reference(graph, [a, b])[0]
    sign = 1 if op == "Add" else -1
    want = [add_func(int(x), int(y), qa, qb, qy, 20, sign, -128, 127) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(scales, scales, scales, st.sampled_from(["Add", "Sub", "Mul", "SquaredDifference"]), st.integers(0, 99))
def test_int16_arithmetic_is_tflites(s_a, s_b, s_y, op, seed):
    """int16: symmetric (zero points 0); ADD and SUB shift up by 15, SQUARED_DIFFERENCE by 0."""
    qa, qb, qy = (s_a, 0), (s_b, 0), (s_y, 0)
    graph = _graph(op, ("int16", "int16"), ((64,), (64,)), (qa, qb), out_quant=qy)
    a, b = _codes("int16", seed)
    got = run_reference(graph, [a, b])[0]
    lo, hi = RANGE["int16"]
    funcs = {"Add": lambda x, y: add_func(x, y, qa, qb, qy, 15, 1, lo, hi),
             "Sub": lambda x, y: add_func(x, y, qa, qb, qy, 15, -1, lo, hi),
             "Mul": lambda x, y: mul_func(x, y, qa, qb, qy, lo, hi),
             "SquaredDifference": lambda x, y: squared_difference_func(x, y, qa, qb, qy, 0, lo, hi)}
    np.testing.assert_array_equal(got, [funcs[op](int(x), int(y)) for x, y in zip(a, b)])


@settings(max_examples=40, deadline=None)
@given(scales, scales, scales, zeros8, zeros8, zeros8, st.sampled_from(["Mul", "SquaredDifference", "PRelu"]),
       st.integers(0, 99))
def test_int8_products_are_tflites(s_a, s_b, s_y, z_a, z_b, z_y, op, seed):
    qa, qb, qy = (s_a, z_a), (s_b, z_b), (s_y, z_y)
    graph = _graph(op, ("int8", "int8"), ((64,), (64,)), (qa, qb), out_quant=qy)
    a, b = _codes("int8", seed)
    got = run_reference(graph, [a, b])[0]
    funcs = {"Mul": lambda x, y: mul_func(x, y, qa, qb, qy, -128, 127),
             "SquaredDifference": lambda x, y: squared_difference_func(x, y, qa, qb, qy, 7, -128, 127),
             "PRelu": lambda x, y: prelu_func(x, y, qa, qb, qy, -128, 127)}
    np.testing.assert_array_equal(got, [funcs[op](int(x), int(y)) for x, y in zip(a, b)])


@settings(max_examples=40, deadline=None)
@given(scales, scales, zeros8, zeros8, st.sampled_from(["Equal", "NotEqual", "Greater", "GreaterOrEqual", "Less",
                                                        "LessOrEqual"]), st.integers(0, 99))
def test_int8_comparisons_are_tflites(s_a, s_b, z_a, z_b, op, seed):
    graph = _graph(op, ("int8", "int8"), ((64,), (64,)), ((s_a, z_a), (s_b, z_b)))
    a, b = _codes("int8", seed)
    b[8:16] = a[8:16]  # some equal codes
    got = run_reference(graph, [a, b])[0]
    fn = {"Equal": int.__eq__, "NotEqual": int.__ne__, "Greater": int.__gt__, "GreaterOrEqual": int.__ge__,
          "Less": int.__lt__, "LessOrEqual": int.__le__}[op]
    want = [fn(compare_scaled(int(x), (s_a, z_a)), compare_scaled(int(y), (s_b, z_b))) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(scales, scales, scales, zeros8, zeros8, zeros8, st.integers(0, 99))
def test_int8_div_is_tflites(s_a, s_b, s_y, z_a, z_b, z_y, seed):
    """DivElementwise with gemmlowp's reciprocal, where the divisor is not 0 and every shift is one C defines
    (the other cases, as x86 computes them: tests/test_tflite_elementwise.py against TFLite Micro)."""
    qa, qb, qy = (s_a, z_a), (s_b, z_b), (s_y, z_y)
    graph = _graph("Div", ("int8", "int8"), ((64,), (64,)), (qa, qb), out_quant=qy)
    _, exponent = quantize_multiplier(float(np.float32(s_a) / (np.float32(s_b) * np.float32(s_y))))
    a, b = _codes("int8", seed)
    b = np.where(b == z_b, b ^ 1, b).astype(np.int8)
    keep = []
    for x, y in zip(a, b):
        v1, v2 = (int(x) - z_a) * (1 if int(y) > z_b else -1), abs(int(y) - z_b)
        headroom = 31 if v1 in (0, -1) else 31 - (abs(v1) if v1 > 0 else ~v1).bit_length()
        keep.append(0 <= headroom + (v2.bit_length() - 1) - exponent <= 31)
    got = run_reference(graph, [a, b])[0]
    want = [div_func(int(x), int(y), qa, qb, qy, -128, 127) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got[keep], np.array(want)[keep])
