"""The convolution family's arithmetic against TensorFlow Lite Micro itself, on small .tflite files made in the
test with inputs chosen to reach where the choices differ: the multipliers of FULLY_CONNECTED and BATCH_MATMUL
from the scales' product in double (not float32: TFLite's source has a GetQuantizedConvolutionMultipler that
multiplies in float32, but the TFLite Micro that checks the conformance cases does not round so), and a 16x8
CONV_2D with an int32 bias, whose int32 sum wraps in TFLite Micro."""
from __future__ import annotations

import numpy as np
import pytest

import tflite_build as tb
from mcudeploy.check.tflm import run_tflm
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.ops.requant import tflite_multiplier, tflite_requantize
from mcudeploy.compile import compile_model



def _both(tmp_path, model: tb.Model, inputs: dict) -> tuple[list, list]:
    """The compiled C's outputs and TensorFlow Lite Micro's on one sample."""
    path = tmp_path / "case.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, "host")
    ours = run_compiled_on_host(compiled, [dict(zip(compiled.graph.inputs, inputs.values()))], tmp_path)[0]
    theirs = run_tflm(path, list(inputs), [inputs])[0]
    return ours, theirs


def test_fully_connected_multiplier_from_the_double_product(tmp_path, need_tflm):
    """Scales whose float32 product gives another multiplier than the double one, and columns with zero weights
    whose accumulator is the bias alone, at values where the two multipliers round apart (found by a search)."""
    sa, sb, sy = 0.09680210053920746, 0.00535478163510561, 2.651597261428833
    f32 = tflite_multiplier(float(np.float32(sa) * np.float32(sb)) / sy)
    f64 = tflite_multiplier(sa * sb / sy)
    bias = np.array([-590830, -529445, -468060, -406675, -345290, -283905, -222520, -161135], np.int32)
    assert f32 != f64 and np.all(tflite_requantize(bias, *f32) != tflite_requantize(bias, *f64))
    w = np.zeros((8, 16), np.int8)
    m = tb._one(tb.OPS.FULLY_CONNECTED, ("x", "w", "b"), ("y",), tb.fc_options(), [
        tb.T("x", (1, 16), "int8", (sa,), (3,)), tb.T("w", (8, 16), "int8", (sb,), (0,), data=w),
        tb.T("b", (8,), "int32", (sa * sb,), (0,), data=bias), tb.T("y", (1, 8), "int8", (sy,), (0,))])
    ours, theirs = _both(tmp_path, m, {"x": np.arange(16, dtype=np.int8).reshape(1, 16)})
    np.testing.assert_array_equal(theirs[0], tflite_requantize(bias, *f64).reshape(1, 8))
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_batch_matmul_multiplier_from_the_double_product(tmp_path, need_tflm):
    """Every int8 code times sixteen others: scales (found by a search) whose float32 and double products give
    multipliers that round some of these accumulators apart."""
    sa, sb, sy = 0.04467364773154259, 0.021880539134144783, 0.11679376661777496
    f32 = tflite_multiplier(float(np.float32(sa) * np.float32(sb)) / sy)
    f64 = tflite_multiplier(sa * sb / sy)
    a = np.arange(-128, 128, dtype=np.int8).reshape(1, 256, 1)
    b = np.array([127, -128, 100, 77, -99, 55, 33, 120, -120, 1, 90, -61, 113, 70, -7, 125], np.int8).reshape(1, 1, 16)
    acc = a.astype(np.int64) * b.astype(np.int64)
    assert np.any(tflite_requantize(acc, *f32) != tflite_requantize(acc, *f64))
    m = tb._one(tb.OPS.BATCH_MATMUL, ("a", "b"), ("y",), tb._options("BatchMatMulOptions", AdjX=False, AdjY=False), [
        tb.T("a", (1, 256, 1), "int8", (sa,), (0,)), tb.T("b", (1, 1, 16), "int8", (sb,), (0,)),
        tb.T("y", (1, 256, 16), "int8", (sy,), (0,))])
    ours, theirs = _both(tmp_path, m, {"a": a, "b": b})
    np.testing.assert_array_equal(theirs[0], np.clip(tflite_requantize(acc, *f64), -128, 127))
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_16x8_conv_with_an_int32_bias_wraps_as_tflite_micro(tmp_path, need_tflm):
    """64 channels of 3x3 taps at their largest overflow the int32 sum TFLite Micro keeps with an int32 bias."""
    w = np.full((2, 3, 3, 64), 127, np.int8)
    w[1] = -127
    sw = (0.004, 0.003)
    m = tb._one(tb.OPS.CONV_2D, ("x", "w", "b"), ("y",), tb.conv_options((1, 1), tb.SAME), [
        tb.T("x", (1, 4, 4, 64), "int16", (0.0004,), (0,)), tb.T("w", (2, 3, 3, 64), "int8", sw, (0, 0), data=w),
        tb.T("b", (2,), "int32", (0.0004 * sw[0], 0.0004 * sw[1]), (0, 0), data=np.array([1000, -1000], np.int32)),
        tb.T("y", (1, 4, 4, 2), "int16", (0.05,), (0,))])
    x = np.full((1, 4, 4, 64), 32767, np.int16)
    x[0, 0, 0, :] = -32768
    assert 9 * 64 * 32767 * 127 > 2**31
    ours, theirs = _both(tmp_path, m, {"x": x})
    np.testing.assert_array_equal(ours[0], theirs[0])
