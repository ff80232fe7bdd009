"""The integer requantization every int8 kernel shares."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.ops.requant import quantize_multiplier, requantize


@given(st.floats(min_value=1e-9, max_value=1e6, allow_nan=False))
@settings(max_examples=300, deadline=None)
def test_multiplier_represents_the_real_value(real):
    mult, shift = quantize_multiplier(real)
    assert 1 <= shift <= 62
    assert 0 <= mult < 2 ** 31
    assert abs(mult / 2.0 ** shift - real) <= real * 2.0 ** -29 + 2.0 ** -62


@given(st.integers(-2 ** 24, 2 ** 24), st.floats(min_value=1e-6, max_value=4.0))
@settings(max_examples=500, deadline=None)
def test_requantize_rounds_to_nearest(acc, real):
    mult, shift = quantize_multiplier(real)
    y = int(requantize(np.array([acc]), mult, shift)[0])
    exact = acc * mult / 2.0 ** shift
    assert abs(y - exact) <= 0.5  # nearest to the fixed-point product
    if exact - np.floor(exact) == 0.5:
        assert y % 2 == 0  # ties to even
    assert abs(y - acc * real) <= 0.5 + abs(acc) * real * 2.0 ** -29 + 1e-9


def test_zero_multiplier_gives_zero():
    mult, shift = quantize_multiplier(0.0)
    assert int(requantize(np.array([12345]), mult, shift)[0]) == 0


def test_ties_round_to_even_like_quantize_linear():
    # 1/4 is exact: acc/4 for acc = 2, 6, -2, -6, 10 are ties 0.5, 1.5, -0.5, -1.5, 2.5
    mult, shift = quantize_multiplier(0.25)
    got = requantize(np.array([2, 6, -2, -6, 10, 3, -3]), mult, shift).tolist()
    assert got == np.rint(np.array([0.5, 1.5, -0.5, -1.5, 2.5, 0.75, -0.75])).astype(int).tolist()
