""".tflite models: import (NHWC kept at the edges), TFLite's arithmetic in numpy and in C, bit for bit
with TensorFlow Lite Micro (its Python interpreter, in a child process), and one-sentence refusals.

The MLPerf Tiny .tflite files come from ../shared/models/tflite (or $MCUDEPLOY_MODELS) and skip without
them; the comparisons with TFLite Micro skip where the tflite-micro package is missing."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tflite_build
from mcudeploy import check
from mcudeploy.cli import main
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.frontend import import_model
from mcudeploy.ops.requant import tflite_multiplier, tflite_requantize
from mcudeploy.compile import compile_model
from shared_models import MODELS, ROOT

TFLITE = MODELS / "tflite"
# TensorFlow Lite Micro's activation bytes (../shared/models/README.md): the arena must not exceed them
TFLM_ACTIVATIONS = {"kws_dscnn_int8": 16000, "vww_mobilenetv1_int8": 73728, "ic_resnet8_int8": 49152,
                    "ic_resnet8_large_int8": 122880, "ad_autoencoder_int8": 768, "sww_streaming_int8": 6656}


def tflite_model(name: str):
    path = TFLITE / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"the MLPerf Tiny .tflite models are not at {TFLITE} (set MCUDEPLOY_MODELS)")
    return path



def _check_on_host(path, tmp_path, samples=20):
    compiled = compile_model(path, "host")
    inputs = check.random_inputs(compiled.graph, samples)
    outputs = run_compiled_on_host(compiled, inputs, tmp_path, sanitize=True)
    return compiled, check.check_tflite_outputs(path, compiled, outputs, inputs)


# ---------------------------------------------------------------- TFLite's requantization


def _tflite_requantize_literal(x: int, mult: int, exponent: int) -> int:
    """MultiplyByQuantizedMultiplier as TFLite writes it, on Python integers."""
    left, right = max(exponent, 0), max(-exponent, 0)
    a = ((x << left) + 2**31) % 2**32 - 2**31
    ab = a * mult
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    n = ab + nudge
    h = n // (1 << 31) if n >= 0 else -((-n) // (1 << 31))  # C's division truncates toward zero
    mask = (1 << right) - 1
    return (h >> right) + ((h & mask) > (mask >> 1) + (1 if h < 0 else 0))


@given(st.integers(-2**24, 2**24), st.floats(min_value=1e-9, max_value=8.0))
@settings(max_examples=400, deadline=None)
def test_tflite_requantization_is_tflites_double_rounding(acc, real):
    mult, shift = tflite_multiplier(real)
    assert int(tflite_requantize(np.array([acc]), mult, shift)[0]) == _tflite_requantize_literal(acc, mult, 31 - shift)


def test_tflite_multiplier_rounds_half_away_and_flushes_tiny_ones():
    assert tflite_multiplier(0.5) == (1 << 30, 31)
    assert tflite_multiplier(2.0 ** -40) == (0, 31)  # TFLite: a shift below -31 is a zero multiplier
    mult, shift = tflite_multiplier(0.3)
    assert abs(mult / 2.0 ** shift - 0.3) < 2.0 ** -31


def test_c_requantization_equals_numpy(tmp_path):
    """mcud_requant_tfl and its one-SMLAL form mcud_requant_tfl_r on the host compiler."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    rng = np.random.default_rng(7)
    acc = np.concatenate([rng.integers(-2**31, 2**31, 3000), rng.integers(-3000, 3000, 3000), [-1, 0, 1]])
    mult = rng.integers(2**30, 2**31, acc.size)
    mult[::5] = 2**30
    shift = rng.integers(20, 63, acc.size)
    want = tflite_requantize(acc, mult, shift)
    got = _host_c(tmp_path, "mcud.h", 'long a,m,s;while(scanf("%ld %ld %ld",&a,&m,&s)==3){printf("%d %d\\n",'
                  'mcud_requant_tfl(a,m,s),s>=33?mcud_requant_tfl_r(a,m,s):mcud_requant_tfl(a,m,s));}',
                  zip(acc, mult, shift)).reshape(-1, 2)
    assert np.array_equal(got[:, 0], want) and np.array_equal(got[:, 1], want)


def _host_c(tmp_path, header: str, body: str, rows) -> np.ndarray:
    """The integers printed by main() { body } (including firmware/include/header), built by the host's gcc and fed
    `rows` one line each."""
    src = tmp_path / "t.c"
    src.write_text(f'#include <stdio.h>\n#include "{header}"\nint main(void){{{body}return 0;}}\n')
    exe = tmp_path / "t"
    subprocess.run(["gcc", "-O2", "-I", str(ROOT / "firmware" / "include"), str(src), "-o", str(exe)], check=True)
    text = "\n".join(" ".join(str(v) for v in row) for row in rows)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout
    return np.array(out.split(), dtype=np.int64)


def test_c_doubled_requantization_equals_numpy(tmp_path):
    """mcud_requant_tfl_2 (twice the accumulator, c = 2 k, rs = r1 + 1: the block kernels' form where rq2 is given)
    on the host compiler, at the rounding ties too (mult 2^30, small accumulators), output zero point folded in."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    rng = np.random.default_rng(11)
    acc = np.concatenate([rng.integers(-2**30 + 1, 2**30, 3000), rng.integers(-3000, 3000, 3000), [-1, 0, 1]])
    mult = rng.integers(2**30, 2**31, acc.size)
    mult[::3] = 2**30
    shift = rng.integers(33, 63, acc.size)
    zy = rng.integers(-128, 128, acc.size)
    k = (1 << (shift - 33)) + zy * (1 << (shift - 32))
    keep = np.abs(2 * k) + 2**30 + 1 < 2**31  # requant.doubled_route's condition
    acc, mult, shift, zy, k = acc[keep], mult[keep], shift[keep], zy[keep], k[keep]
    want = tflite_requantize(acc, mult, shift) + zy
    got = _host_c(tmp_path, "mcud_dsp.h", 'long a,m,c,s;while(scanf("%ld %ld %ld %ld",&a,&m,&c,&s)==4)'
                  '{printf("%d\\n",mcud_requant_tfl_2(2*a,m,c,s));}',
                  ((a, m, 2 * c, s - 31) for a, m, c, s in zip(acc, mult, k, shift)))
    assert acc.size > 3000 and np.array_equal(got, want)


# ---------------------------------------------------------------- import


@pytest.mark.parametrize("name", ["kws_dscnn_int8", "vww_mobilenetv1_int8", "ic_resnet8_int8", "ad_autoencoder_float"])
def test_reference_models_keep_their_nhwc_inputs_and_outputs(name):
    import tflite

    path = tflite_model(name)
    graph = import_model(path)
    sub = tflite.Model.GetRootAsModel(path.read_bytes(), 0).Subgraphs(0)
    shapes = [tuple(sub.Tensors(int(i)).ShapeAsNumpy()) for i in sub.InputsAsNumpy()]
    assert [graph[n].shape for n in graph.inputs] == shapes
    assert graph.arithmetic == "tflite"
    readers = [n for x in graph.inputs for n in graph.users(x)]
    assert all(n.op != "Transpose" for n in readers), "an input is copied into another layout"


def test_a_model_is_told_by_its_content_not_its_name(tmp_path):
    path = tmp_path / "kws.onnx.bin"
    shutil.copy(tflite_model("kws_dscnn_int8"), path)
    assert import_model(path).arithmetic == "tflite"


# ---------------------------------------------------------------- bit for bit with TensorFlow Lite Micro


@pytest.mark.parametrize("case", sorted(tflite_build.CASES))
def test_operator_bit_for_bit_with_tflite_micro(case, tmp_path, need_tflm):
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(tflite_build.CASES[case]().build())
    _, verdict = _check_on_host(path, tmp_path, samples=5)
    assert verdict.ok, "\n".join(verdict.lines())


def test_kws_bit_for_bit_with_tflite_micro_and_within_its_arena(tmp_path, need_tflm):
    compiled, verdict = _check_on_host(tflite_model("kws_dscnn_int8"), tmp_path)
    assert verdict.ok, "\n".join(verdict.lines())
    assert compiled.placement.arena_bytes <= TFLM_ACTIVATIONS["kws_dscnn_int8"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vww_mobilenetv1_int8", "ic_resnet8_int8", "ad_autoencoder_int8", "sww_streaming_int8",
                                  "vww_mobilenetv1_float"])
def test_reference_model_bit_for_bit_with_tflite_micro(name, tmp_path, need_tflm):
    compiled, verdict = _check_on_host(tflite_model(name), tmp_path)
    assert verdict.ok, "\n".join(verdict.lines())
    if name in TFLM_ACTIVATIONS:
        assert compiled.placement.arena_bytes <= TFLM_ACTIVATIONS[name]


@pytest.mark.qemu
def test_kws_on_qemu_bit_for_bit_with_tflite_micro(tmp_path, need_tflm):
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)} (apt-get install qemu-system-arm gcc-arm-none-eabi)")
    path = tflite_model("kws_dscnn_int8")
    compiled = compile_model(path, "qemu-m4")
    samples = check.random_inputs(compiled.graph, 5)
    outputs = run_on_board(compiled, samples).outputs
    same, lines = compare_with_host(compiled, outputs, samples)
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert same and verdict.ok, "\n".join(lines + verdict.lines())


def test_onnx_and_tflite_models_get_their_own_kernels():
    """The rounding is chosen at compile time: an ONNX model calls no TFLite kernel, and the reverse."""
    from mcudeploy.ops import registry

    tfl = compile_model(tflite_model("kws_dscnn_int8"), "host")
    onnx_path = MODELS / "onnx" / "kws_dscnn_int8.onnx"
    if not onnx_path.is_file():
        pytest.skip(f"no {onnx_path}")
    onx = compile_model(onnx_path, "host")

    def kernels(c):
        ops = [(registry.get(n.op), n) for n in c.graph.nodes if n.name not in c.lifetimes.elided]
        return {op.kernel(c.graph, n).fn for op, n in ops if not op.view}

    assert not any(k.endswith("_tfl") or "_tfl_" in k for k in kernels(onx))
    assert {"mcud_conv_s8_dw_tfl", "mcud_avgpool_s8_tfl", "mcud_softmax_s8_tfl"} <= kernels(tfl)
    assert kernels(tfl) & {"mcud_gemm_s8_tfl", "mcud_gemm_s8_tfl_a16", "mcud_gemm_s8_tfl_a16p"}  # rows widened: _a16*


# ---------------------------------------------------------------- refusals: one sentence naming the file


def _error(capsys, path) -> str:
    assert main(["plan", str(path), "-b", "host"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(path) in err, err
    return err


def test_a_truncated_tflite_is_one_sentence(tmp_path, capsys):
    path = tmp_path / "cut.tflite"
    path.write_bytes(tflite_build.case_conv_same_relu6().build()[:300])
    assert "truncated or damaged" in _error(capsys, path)


def test_a_file_that_is_no_flatbuffer_is_one_sentence(tmp_path, capsys):
    path = tmp_path / "text.tflite"
    path.write_text("not a model at all\n")
    assert "is not a TFLite model" in _error(capsys, path)


def test_an_unsupported_operator_is_named_with_its_index(tmp_path, capsys):
    path = tmp_path / "custom.tflite"
    path.write_bytes(tflite_build.case_unsupported().build())
    assert "operator 1 (CUSTOM Mystery) is not supported" in _error(capsys, path)


def test_sparse_weights_are_refused_naming_the_tensor(tmp_path, capsys):
    path = tmp_path / "sparse.tflite"
    path.write_bytes(tflite_build.case_sparse_weights().build())
    err = _error(capsys, path)
    assert "operator 0 (FULLY_CONNECTED)" in err and "constant w, stored sparse" in err, err
