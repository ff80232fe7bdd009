"""The Keras 3 corpus (tests/keras_corpus, made by ``python -m tests.keras_corpus.make``): ordinary architectures as
users export them, float and int8, each run by mcudeploy's C and checked end to end against TensorFlow Lite Micro
bit for bit (LiteRT's reference kernels for a file TFLite Micro cannot run), as ``run --check --sanitize`` does (the host C under AddressSanitizer and UBSan); the int8 ones
that fit also on an emulated Cortex-M4. A stateful (streaming) model is fed a sequence of inputs, its state carried
from one to the next on both sides.

A model over 1 MB (MobileNetV2's float export) is not committed: it skips until make.py has written it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcudeploy import check
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.compile import compile_model

CORPUS = Path(__file__).resolve().parent / "keras_corpus"
MODELS = json.loads((CORPUS / "corpus.json").read_text())["models"]
STEPS = 20  # inputs in sequence per model: a streaming model's state must hold over many calls
# models run on qemu-m4 in CI: one per family of operators (all of them: benchmarks/corpus_bench.py --board qemu-m4)
ON_QEMU = ("conv1d_classifier-int8.tflite", "dscnn_gap-int8.tflite", "se_resnet-int8.tflite",
           "streaming_kws-int8.tflite", "denoiser-int16.tflite")


def _path(model: dict) -> Path:
    path = CORPUS / model["file"]
    if not path.is_file():
        pytest.skip(f"{path.name} ({model['bytes']:,} bytes) is not committed: python -m tests.keras_corpus.make "
                    f"{model['architecture']}")
    return path



@pytest.mark.parametrize("model", MODELS, ids=[m["file"] for m in MODELS])
def test_runs_on_host_bit_for_bit_with_the_reference(model, need_tflm, tmp_path):
    path = _path(model)
    compiled = compile_model(path, "host")
    samples = check.random_inputs(compiled.graph, STEPS)
    outputs = run_compiled_on_host(compiled, samples, tmp_path, sanitize=True)
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert verdict.ok, "\n".join(verdict.lines())
    assert bool(verdict.why_not_tflm) == (model["reference"] == "litert")


@pytest.mark.slow
@pytest.mark.qemu
@pytest.mark.parametrize("name", ON_QEMU)
def test_runs_on_qemu_bit_for_bit(name, need_tflm):
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)} (apt-get install qemu-system-arm gcc-arm-none-eabi)")
    path = _path(next(m for m in MODELS if m["file"] == name))
    compiled = compile_model(path, "qemu-m4")
    samples = check.random_inputs(compiled.graph, STEPS)
    outputs = run_on_board(compiled, samples).outputs
    same, lines = compare_with_host(compiled, outputs, samples)
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert same and verdict.ok, "\n".join(lines + verdict.lines())


def test_the_corpus_holds_every_architecture_of_the_issue():
    architectures = {m["architecture"] for m in MODELS}
    assert {"conv1d_classifier", "dscnn_gap", "mobilenetv2", "se_resnet", "unet_nearest", "unet_bilinear",
            "lstm_kws", "gru_kws", "streaming_kws", "denoiser"} <= architectures
    made = {(m["architecture"], m["type"]) for m in MODELS}
    assert {(a, t) for a in architectures for t in ("float32", "int8")} <= made
    assert {("dscnn_gap", "int16"), ("denoiser", "int16"), ("lstm_kws", "int16")} <= made  # 16x8 (issue 43)
