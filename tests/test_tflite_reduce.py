"""Reductions, scans and integer resizes in .tflite files made here (tflite_build), where the converter
does not write them (an int8 CUMSUM, which it brackets with DEQUANTIZE and QUANTIZE; a MEAN whose
multiplier is tiny; an int8 RESIZE_BILINEAR whose output quantization differs from its input's), each
bit for bit with TensorFlow Lite Micro; and the one-sentence refusals of what TFLite Micro refuses."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tflite
from tflite_build import OPS, T, _one, _options

from mcudeploy.check import check_tflite_outputs
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import InvalidModelError
from mcudeploy.frontend import import_model
from mcudeploy.ops.requant import QRANGE
from mcudeploy.partition import Cut
from mcudeploy.compile import compile_model, lower
from mcudeploy.plan import CompileOptions

CONFORMANCE = Path(__file__).resolve().parent / "conformance" / "tflite"



def _axes(*axes):
    return T("axes", (len(axes),), "int32", data=np.array(axes, np.int32))


def cumsum_int8(exclusive: bool, reverse: bool):
    options = _options("CumsumOptions", Exclusive=exclusive, Reverse=reverse)
    return _one(OPS.CUMSUM, ("x", "axes"), ("y",), options, [
        T("x", (2, 9, 5), scale=(0.04,), zero_point=(-7,)), _axes(1),
        T("y", (2, 9, 5), scale=(0.2,), zero_point=(11,))])


def mean_int8_same_quantization():
    q = dict(scale=(0.05,), zero_point=(-3,))
    return _one(OPS.MEAN, ("x", "axes"), ("y",), _options("ReducerOptions", KeepDims=False), [
        T("x", (1, 5, 7, 16), **q), _axes(1, 2), T("y", (1, 16), **q)])


def mean_int16_tiny_multiplier():
    """s_x / s_y = 2^-24 over 3000 values: TFLite's folded shift is clamped below log2(3000)."""
    return _one(OPS.MEAN, ("x", "axes"), ("y",), _options("ReducerOptions", KeepDims=True), [
        T("x", (2, 3000), "int16", scale=(2.0**-30,), zero_point=(0,)), _axes(-1),
        T("y", (2, 1), "int16", scale=(2.0**-6,), zero_point=(0,))])


def sum_int16_channels():
    return _one(OPS.SUM, ("x", "axes"), ("y",), _options("ReducerOptions", KeepDims=False), [
        T("x", (1, 4, 5, 40), "int16", scale=(0.001,), zero_point=(0,)), _axes(3),
        T("y", (1, 4, 5), "int16", scale=(0.02,), zero_point=(0,))])


def bilinear_int8_requantized(align: bool, half: bool):
    size = T("size", (2,), "int32", data=np.array([11, 4], np.int32))
    return _one(OPS.RESIZE_BILINEAR, ("x", "size"), ("y",),
                _options("ResizeBilinearOptions", AlignCorners=align, HalfPixelCenters=half), [
                    T("x", (1, 5, 7, 3), scale=(0.05,), zero_point=(4,)), size,
                    T("y", (1, 11, 4, 3), scale=(0.08,), zero_point=(-20,))])


CASES = {
    "cumsum-int8": lambda: cumsum_int8(False, False),
    "cumsum-int8-exclusive-reverse": lambda: cumsum_int8(True, True),
    "mean-int8-same-quantization": mean_int8_same_quantization,
    "mean-int16-tiny-multiplier": mean_int16_tiny_multiplier,
    "sum-int16-channels": sum_int16_channels,
    "bilinear-int8-requantized-half-pixel": lambda: bilinear_int8_requantized(False, True),
    "bilinear-int8-requantized-align-corners": lambda: bilinear_int8_requantized(True, False),
}


def _check(path, tmp_path, scheme=()):
    compiled = compile_model(path, "host", options=CompileOptions(scheme=scheme))
    rng = np.random.default_rng(5)
    samples = []
    for _ in range(4):
        sample = {}
        for name in compiled.graph.inputs:
            t = compiled.graph[name]
            if t.dtype == "float32":
                sample[name] = rng.standard_normal(t.shape).astype(np.float32)
            else:
                sample[name] = rng.integers(QRANGE[t.dtype][0], QRANGE[t.dtype][1] + 1, t.shape).astype(t.dtype)
        samples.append(sample)
    outputs = run_compiled_on_host(compiled, samples, tmp_path)
    verdict = check_tflite_outputs(path, compiled, outputs, samples)
    assert verdict.ok, "\n".join(verdict.lines())
    return compiled


@pytest.mark.parametrize("case", sorted(CASES))
def test_bit_for_bit_with_tflite_micro(case, tmp_path, need_tflm):
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(CASES[case]().build())
    _check(path, tmp_path)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
def test_pool_and_global_average_cut_along_rows_bit_for_bit_with_tflite_micro(dtype, tmp_path, need_tflm):
    """AVERAGE_POOL_2D then MEAN over H and W, both cut into three strips of rows: the pieces of the mean
    add their rows to a running sum that is finished once (ReduceSumPart, ReduceFinish)."""
    path = CONFORMANCE / f"mean-after-pool-hw-{dtype}.tflite"
    graph = lower(import_model(path))
    pool, mean = (next(n for n in graph.nodes if n.op == op) for op in ("AveragePool", "ReduceMean"))
    compiled = _check(path, tmp_path, (Cut(((pool.name, "oh"), (mean.name, "r2")), 3, "keep"),))
    assert [n.op for n in compiled.graph.nodes].count("ReduceSumPart") == 3

def test_reduce_max_of_two_quantizations_is_refused_in_one_sentence(tmp_path):
    path = tmp_path / "max.tflite"
    model = _one(OPS.REDUCE_MAX, ("x", "axes"), ("y",), _options("ReducerOptions", KeepDims=False), [
        T("x", (2, 6), scale=(0.05,), zero_point=(0,)), _axes(1), T("y", (2,), scale=(0.04,), zero_point=(0,))])
    path.write_bytes(model.build())
    with pytest.raises(InvalidModelError, match=r"operator 0 \(REDUCE_MAX\) has different input and output "
                                                r"quantization, which TFLite Micro's int8 REDUCE_MAX does not allow"):
        import_model(path)


def test_bilinear_with_both_flags_is_refused_in_one_sentence(tmp_path):
    path = tmp_path / "both.tflite"
    path.write_bytes(bilinear_int8_requantized(True, True).build())
    with pytest.raises(InvalidModelError, match="has both align_corners and half_pixel_centers"):
        import_model(path)


def test_arg_max_to_int64_is_imported(tmp_path):
    """TFLite Micro writes only int32 indices; mcudeploy writes int64 ones too (tf.argmax's default)."""
    path = tmp_path / "argmax64.tflite"
    options = _options("ArgMaxOptions", OutputType=tflite.TensorType.INT64)
    model = _one(OPS.ARG_MAX, ("x", "axes"), ("y",), options,
                 [T("x", (3, 7), "float32"), _axes(1), T("y", (3,), "int64")])
    path.write_bytes(model.build())
    graph = import_model(path)
    assert [(n.op, graph[n.outputs[0]].dtype) for n in graph.nodes] == [("ArgMax", "int64")]
