"""The int16 QDQ ONNX corpus (tests/onnx16_corpus, made by ``python -m tests.onnx16_corpus.make``; issue 43): the
16x8 architectures and one model per operator as onnxruntime's quantize_static writes them (int16 activations, int8
weights), each run by mcudeploy's C (under AddressSanitizer and UBSan) and checked against onnxruntime as
``run --check --sanitize`` does: every operator within one
step of onnxruntime given the same inputs, the C bit for bit mcudeploy's numpy reference. Two architectures also on
an emulated Cortex-M4.

A PASS says nothing of where the arithmetic happens: an operator the QDQ lowering leaves in float passes too. So the
operators that fold into mcudeploy's int16 kernels are listed here (``IN_INT16``) and checked to stay folded."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcudeploy import check
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.compile import compile_model

CORPUS = Path(__file__).resolve().parent / "onnx16_corpus"
MODELS = json.loads((CORPUS / "corpus.json").read_text())["models"]
STEPS = 8  # inputs per model: enough to meet near-ties in every operator, few enough to keep the host tier fast
ON_QEMU = ("dscnn_gap-int16.onnx", "denoiser-int16.onnx")

# Per fixture, the operators that run on int16 tensors once lowered (a Relu after a Conv is fused into it).
# Asymmetric activations (the -asym variants) keep Conv/Gemm in float: the 16x8 kernels take a zero point of 0. Add,
# Sub, Mul, Sigmoid, Tanh, Softmax, the averages (AveragePool, GlobalAveragePool, ReduceMean) and the LSTM's gate
# arithmetic stay float in every model: there is no int16 form of them for an ONNX model yet (still correct: the
# float operator is checked against onnxruntime too).
IN_INT16 = {
    "conv-int16.onnx": {"Conv"}, "conv-int16-io.onnx": {"Conv"}, "conv-int16-ms.onnx": {"Conv"},
    "conv1d-int16.onnx": {"Conv"}, "conv_relu-int16.onnx": {"Conv"}, "depthwise-int16.onnx": {"Conv"},
    "conv_transpose-int16.onnx": {"ConvTranspose"}, "gemm-int16.onnx": {"Gemm"}, "matmul-int16.onnx": {"MatMul"},
    "concat-int16.onnx": {"Concat"}, "pad-int16.onnx": {"Pad"}, "maxpool-int16.onnx": {"MaxPool"},
    "reshape-int16.onnx": {"Reshape"}, "slice-int16.onnx": {"Slice"}, "relu-int16.onnx": {"Relu"},
    "clip-int16.onnx": {"Clip"}, "leaky_relu-int16.onnx": {"LeakyRelu"},
    "quantize-int16.onnx": {"QuantizeLinear"}, "dequantize-int16.onnx": {"DequantizeLinear"},
    "dscnn_gap-int16.onnx": {"Conv", "Gemm", "Flatten"}, "dscnn_gap-int16-io.onnx": {"Conv", "Gemm", "Flatten"},
    "dscnn_gap-int16-asym.onnx": {"Flatten"},
    "denoiser-int16.onnx": {"Conv", "ConvTranspose", "LeakyRelu"},
    "denoiser-int16-io.onnx": {"Conv", "ConvTranspose", "LeakyRelu"}, "denoiser-int16-asym.onnx": {"LeakyRelu"},
    "lstm_kws-int16.onnx": {"Gemm", "Split"}, "lstm_kws-int16-asym.onnx": {"Split"},
}


def _int16_operators(graph) -> set[str]:
    """The operators with an int16 activation among their inputs and outputs."""
    def int16(name):
        return name and not graph.is_const(name) and graph[name].dtype == "int16"

    return {n.op for n in graph.nodes if any(int16(t) for t in n.inputs + n.outputs)}


@pytest.mark.parametrize("model", MODELS, ids=[m["file"] for m in MODELS])
def test_runs_on_host_within_a_step_of_onnxruntime(model, tmp_path):
    path = CORPUS / model["file"]
    compiled = compile_model(path, "host")
    assert IN_INT16.get(model["file"], set()) <= _int16_operators(compiled.graph)
    samples = check.random_inputs(compiled.graph, STEPS)
    outputs = run_compiled_on_host(compiled, samples, tmp_path, sanitize=True)
    verdict = check.check_outputs(path, compiled, outputs, samples)
    assert verdict.ok, "\n".join(verdict.lines())


@pytest.mark.slow
@pytest.mark.qemu
@pytest.mark.parametrize("name", ON_QEMU)
def test_runs_on_qemu_as_on_the_host(name):
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)} (apt-get install qemu-system-arm gcc-arm-none-eabi)")
    path = CORPUS / name
    compiled = compile_model(path, "qemu-m4")
    samples = check.random_inputs(compiled.graph, STEPS)
    outputs = run_on_board(compiled, samples).outputs
    same, lines = compare_with_host(compiled, outputs, samples)
    verdict = check.check_outputs(path, compiled, outputs, samples)
    assert same and verdict.ok, "\n".join(lines + verdict.lines())


def test_the_corpus_holds_the_architectures_and_operators_of_the_issue():
    files = {m["file"] for m in MODELS}
    assert files == {p.name for p in CORPUS.glob("*.onnx")}  # corpus.json lists every committed fixture
    assert set(IN_INT16) <= files
    architectures = {m["architecture"] for m in MODELS}
    assert {"dscnn_gap", "denoiser", "lstm_kws"} <= architectures
    operators = set().union(*(m["operators"] for m in MODELS))
    assert {"Conv", "Gemm", "MatMul", "ConvTranspose", "Add", "Sub", "Mul", "Pad", "MaxPool", "AveragePool",
            "ReduceMean", "GlobalAveragePool", "Reshape", "Slice", "Concat", "LeakyRelu", "Relu", "Clip", "Tanh",
            "Sigmoid", "Softmax", "QuantizeLinear", "DequantizeLinear"} <= operators
