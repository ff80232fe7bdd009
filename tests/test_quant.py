"""The integer requantization every int8 kernel shares."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.ops.quant import quantize_multiplier, requantize


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
    assert abs(y - exact) <= 0.5  # round half up of the fixed-point product
    assert abs(y - acc * real) <= 0.5 + abs(acc) * real * 2.0 ** -29 + 1e-9


def test_zero_multiplier_gives_zero():
    mult, shift = quantize_multiplier(0.0)
    assert int(requantize(np.array([12345]), mult, shift)[0]) == 0
