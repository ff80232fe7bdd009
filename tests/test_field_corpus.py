"""The field corpus (tests/field_corpus, made by ``python -m tests.field_corpus.make``): what models from the field
hold (issue 59), each run by mcudeploy's C and checked end to end against TensorFlow Lite Micro bit for bit, as
``run --check --sanitize`` does (the host C under AddressSanitizer and UBSan)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcudeploy import check
from mcudeploy.compile import compile_model
from mcudeploy.device.host import run_compiled_on_host

CORPUS = Path(__file__).resolve().parent / "field_corpus"
MODELS = json.loads((CORPUS / "corpus.json").read_text())["models"]



@pytest.mark.parametrize("model", MODELS, ids=[m["file"] for m in MODELS])
def test_runs_on_host_bit_for_bit_with_tflite_micro(model, need_tflm, tmp_path):
    path = CORPUS / model["file"]
    compiled = compile_model(path, "host")
    samples = check.random_inputs(compiled.graph, 8)
    outputs = run_compiled_on_host(compiled, samples, tmp_path, sanitize=True)
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert verdict.ok, "\n".join(verdict.lines())
    assert not verdict.why_not_tflm, verdict.why_not_tflm


def test_a_shared_bias_is_read_raw_at_each_operators_scale():
    from mcudeploy.frontend import import_model
    graph = import_model(CORPUS / "shared_bias-conv-depthwise-int8.tflite")
    convs = [n for n in graph.nodes if n.op == "Conv"]
    first, second = (graph[n.inputs[2]] for n in convs)
    assert (first.data == second.data).all() and first.quant.scale != second.quant.scale


def test_an_open_reshape_takes_its_size_from_the_input():
    from mcudeploy.frontend import import_model
    graph = import_model(CORPUS / "reshape-open-batch-int8.tflite")
    assert graph["flat"].shape == (1, 32)
    assert not any("fed" in n.inputs for n in graph.nodes)  # the operand fed at run time is not read


def test_a_fed_output_shape_over_an_open_output_is_refused_in_one_sentence(tmp_path):
    import tflite_build as tb
    from field_corpus.make import transpose_conv_fed_shape
    from mcudeploy.errors import UnsupportedError
    from mcudeploy.frontend import import_model
    model = transpose_conv_fed_shape("float32")
    model.tensors[model.index("y")] = tb.T("y", (-1, 6, 6, 5), "float32")
    path = tmp_path / "open.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError, match="output shape given at run time") as info:
        import_model(path)
    assert "operator 0 (TRANSPOSE_CONV)" in str(info.value) and "\n" not in str(info.value)


def test_where_both_reference_kernel_sets_abort_litert_default_kernels_are_the_oracle(need_tflm, tmp_path,
                                                                                        monkeypatch):
    """TensorFlow Lite Micro and LiteRT's reference resolver made to fail (as both abort on one Keras MobileNetV2
    int8 export); LiteRT's default kernels then run for real, and the verdict names them and why."""
    from mcudeploy.check import litert
    from mcudeploy.check import tflite as check_tflite
    from mcudeploy.errors import MCUDeployError

    path = CORPUS / "shared_bias-conv-depthwise-int8.tflite"
    real = litert.run_litert
    kernels_run = []

    def tflm_aborts(model, inputs, samples):
        raise MCUDeployError(f"TensorFlow Lite Micro could not run {model} (Aborted)")

    def reference_aborts(model, inputs, samples, kernels="reference"):
        kernels_run.append(kernels)
        if kernels == "reference":
            raise MCUDeployError(f"LiteRT could not run {model} either (Aborted)")
        return real(model, inputs, samples, kernels)

    monkeypatch.setattr(check_tflite, "run_tflm", tflm_aborts)
    monkeypatch.setattr(litert, "run_litert", reference_aborts)
    compiled = compile_model(path, "host")
    samples = check.random_inputs(compiled.graph, 4)
    outputs = run_compiled_on_host(compiled, samples, tmp_path)
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert kernels_run == ["reference", "default"]
    assert verdict.ok, "\n".join(verdict.lines())
    first = verdict.lines()[0]
    assert first.startswith("the reference is LiteRT's default (optimized) kernels: TensorFlow Lite Micro could not "
                            "run") and "LiteRT could not run" in first
    assert all(o.oracle == litert.DEFAULT_NAME for o in verdict.outputs)
    # their requantization may round a sum one step away from the reference kernels' (2 of 576 here): tolerated,
    # and said; more is not
    last = verdict.lines()[-1]
    assert last.startswith("PASS") and "within 1 step(s) of LiteRT's default (optimized) kernels'" in last
    assert all(o.max_diff <= 1 for o in verdict.outputs)


def test_the_default_kernels_tolerance_is_one_step_and_no_more():
    from mcudeploy.check import litert
    from mcudeploy.check.tflite import OutputAgreement
    assert OutputAgreement("y", "int8", 3, 1.0, 10, litert.DEFAULT_NAME, 1).ok
    assert not OutputAgreement("y", "int8", 3, 2.0, 10, litert.DEFAULT_NAME, 1).ok
    assert not OutputAgreement("y", "int8", 1, 1.0, 10, litert.NAME).ok  # the reference kernels: bit for bit
