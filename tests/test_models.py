"""Whole MLPerf Tiny reference models on the host board against onnxruntime and the reference, the C built with
AddressSanitizer and UndefinedBehaviorSanitizer (``run --check --sanitize -b host``), and each operator run alone
in that build (``measure --sanitize -b host``)."""
import pytest

from shared_models import need_models, shared_models
from mcudeploy import check
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.compile import compile_model

# TensorFlow Lite Micro's activation bytes from ../shared/models/README.md (measured there):
# mcudeploy's arena must not exceed them on the int8 models.
TFLM_ACTIVATION_BYTES = {
    "kws_dscnn_int8.onnx": 16000,
    "vww_mobilenetv1_int8.onnx": 73728,
    "ic_resnet8_int8.onnx": 49152,
    "ic_resnet8_large_int8.onnx": 122880,
    "ad_autoencoder_int8.onnx": 768,
    "sww_streaming_int8.onnx": 6656,
}

MODELS = shared_models() or [None]


@pytest.mark.slow
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem if p else "no-models")
def test_model_on_host_matches_onnxruntime(path, tmp_path):
    need_models()
    compiled = compile_model(path, "host", check=True)
    samples = check.random_inputs(compiled.graph, 20)
    outputs = run_compiled_on_host(compiled, samples, tmp_path, sanitize=True)
    verdict = check.check_outputs(path, compiled, outputs, samples)
    assert verdict.ok, "\n".join(verdict.lines())
    if "int8" in path.name:
        assert any(n.op == "Conv" or n.op == "Gemm" for n in compiled.graph.nodes)
        assert all(compiled.graph[n.outputs[0]].dtype != "float32" for n in compiled.graph.nodes
                   if n.op in ("Conv", "Gemm")), "an int8 model kept a float Conv/Gemm"


@pytest.mark.slow
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem if p else "no-models")
def test_model_measured_sanitized_on_host(path, tmp_path):
    """Each operator alone after a whole run, as measure runs it, with no report (a report raises)."""
    from mcudeploy.device.labels import op_labels
    from mcudeploy.device.measure import measure_model

    need_models()
    compiled = compile_model(path, "host")
    result = measure_model(compiled, repeat=1, sanitize=True, workdir=tmp_path)
    assert [o.label for o in result.ops] == op_labels(compiled)
    assert "no report" in result.lines()[-1]


@pytest.mark.parametrize("path", [p for p in MODELS if p is None or p.name in TFLM_ACTIVATION_BYTES],
                         ids=lambda p: p.stem if p else "no-models")
def test_int8_arena_within_tflite_micro(path):
    need_models()
    compiled = compile_model(path, "host")
    assert compiled.placement.arena_bytes <= TFLM_ACTIVATION_BYTES[path.name]
    assert compiled.placement.arena_bytes >= compiled.placement.lower_bound_bytes
