"""Issue 43: what the user sees of a 16x8 model says int16. `run --input` takes int16 arrays and quantizes float
ones with the input's scale (saying so), refusing in one sentence what does not fit; the text summary, the HTML
report and the generated header give the inputs' and outputs' types and bytes; errors name int16, never int8."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcudeploy import check
from mcudeploy.check.inputs import quantize
from mcudeploy.cli import main
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.compile import compile_model
from mcudeploy.plan import board_plan, plan_dict
from mcudeploy.reference import run_reference
from mcudeploy.report.html import render
from mcudeploy.report.text import plan_text

CORPUS = Path(__file__).resolve().parent / "keras_corpus"
DSCNN16, DSCNN8, DSCNN_FLOAT = (CORPUS / f"dscnn_gap-{t}.tflite" for t in ("int16", "int8", "float32"))
SHAPE = (1, 49, 10, 1)  # the DS-CNN's input: 49 frames of 10 MFCCs


@pytest.fixture(scope="module")
def graph16():
    return import_model(DSCNN16)


def _load(tmp_path, graph, x):
    np.save(tmp_path / "x.npy", x)
    said = []
    samples = check.load_input(tmp_path / "x.npy", graph, said.append)
    return samples[0][graph.model_inputs()[0]], said


def test_int16_arrays_are_taken_as_they_are(graph16, tmp_path):
    x = np.random.default_rng(1).integers(-32768, 32768, SHAPE).astype(np.int16)
    got, said = _load(tmp_path, graph16, x)
    assert got.dtype == np.int16 and not said
    np.testing.assert_array_equal(got, x)
    got, said = _load(tmp_path, graph16, x.astype(np.int8))  # int8 fits in int16: converted, nothing lost
    assert got.dtype == np.int16 and not said
    np.testing.assert_array_equal(got, x.astype(np.int8))


@pytest.mark.parametrize("model,dtype,bits", [(DSCNN16, "int16", 16), (DSCNN8, "int8", 8)])
def test_float_data_for_a_quantized_input_is_quantized_and_said(model, dtype, bits, tmp_path):
    graph = import_model(model)
    t = graph[graph.model_inputs()[0]]
    scale, zero = t.quant.scale[0], t.quant.zero_point[0]
    x = np.random.default_rng(2).standard_normal(SHAPE) * scale * 2 ** (bits - 2)
    got, said = _load(tmp_path, graph, x)
    assert got.dtype == np.dtype(dtype)
    expect = np.clip(np.rint((x.astype(np.float32) / np.float32(scale)).astype(np.float32)) + zero,
                     -2 ** (bits - 1), 2 ** (bits - 1) - 1)
    np.testing.assert_array_equal(got, expect)
    assert len(said) == 1 and f"input {t.name}" in said[0] and f"quantized to {dtype}" in said[0], said
    assert f"scale {scale:.6g}" in said[0]


def test_quantize_rounds_ties_to_even_saturates_and_sends_nan_low(graph16):
    t = graph16[graph16.model_inputs()[0]]
    s = np.float32(t.quant.scale[0])
    x = np.zeros(SHAPE, np.float32)
    x.flat[:6] = [0.5 * s, 1.5 * s, -2.5 * s, 1e9, -1e9, np.nan]  # the header's quantize helper: 0, 2, -2, ...
    assert list(quantize(x, t).flat[:6]) == [0, 2, -2, 32767, -32768, -32768]


@pytest.mark.parametrize("make,words", [
    (lambda: np.zeros(SHAPE, np.int32), ["is int32[1, 49, 10, 1]", "give it as int16"]),
    (lambda: np.zeros(SHAPE, np.uint16), ["is uint16[1, 49, 10, 1]", "give it as int16"]),
    (lambda: np.zeros((1, 49, 10), np.int16), ["is int16[1, 49, 10]"]),
    (lambda: np.zeros(SHAPE, np.bool_), ["is bool[1, 49, 10, 1]"]),
])
def test_what_does_not_fit_is_refused_in_one_sentence(graph16, tmp_path, make, words):
    with pytest.raises(MCUDeployError) as exc:
        _load(tmp_path, graph16, make())
    text = str(exc.value)
    name = graph16.model_inputs()[0]
    for word in [f"input {name}", "the model expects int16[1, 49, 10, 1] (scale ", *words]:
        assert word in text, text
    assert "\n" not in text and text.count(". ") == 0, text


def test_a_float_model_takes_any_real_array(tmp_path):
    graph = import_model(DSCNN_FLOAT)
    x = np.random.default_rng(3).standard_normal(SHAPE)
    got, said = _load(tmp_path, graph, x)
    assert got.dtype == np.float32 and not said
    np.testing.assert_array_equal(got, x.astype(np.float32))


def test_run_input_quantizes_float_data_for_an_int16_model(graph16, tmp_path, capsys):
    """The host build of the 16x8 DS-CNN given float data gives the reference's outputs of the quantized codes."""
    name = graph16.model_inputs()[0]
    s = graph16[name].quant.scale[0]
    x = (np.random.default_rng(4).standard_normal(SHAPE) * s * 4000).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(DSCNN16), "-b", "host", "--input", str(tmp_path / "x.npy"),
                 "-o", str(tmp_path / "y.npz")]) == 0
    err = capsys.readouterr().err
    assert f"input {name}: the float32 values of" in err and "quantized to int16" in err, err
    out = graph16.model_outputs()[0]
    got = np.load(tmp_path / "y.npz")[out][0]
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, run_reference(graph16, {name: quantize(x, graph16[name])})[0])


def test_the_report_says_int16_with_bytes(graph16):
    plan = plan_dict(compile_model(DSCNN16, "host"))
    text = plan_text(board_plan(plan))
    name, out = graph16.model_inputs()[0], graph16.model_outputs()[0]
    s = graph16[name].quant.scale[0]
    # 49 * 10 * 1 elements of 2 bytes; 12 classes of 2 bytes
    assert f"inputs: {name} int16[1, 49, 10, 1], 980 bytes, scale {s:.6g}, zero point 0" in text, text
    assert f"outputs: {out} int16[1, 12], 24 bytes" in text, text
    arena = len(plan["tensors"])  # every tensor in the arena of a 16x8 network is int16 (weights are in flash)
    assert f"tensors in the arena: int16 ({arena} tensors)" in text, text
    page = render(board_plan(plan))
    assert f"{name} int16[1, 49, 10, 1], 980 bytes" in page and 'id="fact-inputs"' in page
    assert f"int16 ({arena} tensors)" in page


def test_the_header_says_int16(tmp_path):
    assert main(["compile", str(DSCNN16), "-b", "host", "-o", str(tmp_path / "c"), "--name", "kws"]) == 0
    header = (tmp_path / "c" / "kws.h").read_text()
    for line in ("#define KWS_INPUT0_BYTES 980u", '#define KWS_INPUT0_DTYPE "int16"', "typedef int16_t kws_input0_t;",
                 "#define KWS_OUTPUT0_BYTES 24u", "typedef int16_t kws_output0_t;", "-32768, 32767);"):
        assert line in header, line
