"""The zoo models (tests/zoo.py), float and int8 QDQ: they import, onnxruntime runs them, and the
numpy reference and the host-compiled C agree with onnxruntime (float within 1e-4; int8 within
2 quantization steps of the output, and the C bit-exact with the reference)."""
from __future__ import annotations

import logging
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import zoo
from mcudeploy import check
from mcudeploy.frontend import import_onnx
from mcudeploy.compile import lower
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference

FLOAT_ABS = 1e-4
INT8_STEPS = 2
SAMPLES = 4

logging.getLogger().setLevel(logging.ERROR)  # onnxruntime's quantizer suggests pre-processing on every call


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = zoo.BUILDERS[name](tmp_path_factory.mktemp(name))
        return cache[name]

    return get


def pick(built, name, kind):
    float_model, qdq_model, example = built(name)
    return (float_model if kind == "float" else qdq_model), example


def inputs_for(model: onnx.ModelProto, example: dict) -> list[dict]:
    graph = import_onnx(model)
    return [example] + check.random_inputs(graph, SAMPLES - 1, seed=3)


def output_scales(model: onnx.ModelProto) -> list[float]:
    """Scale of each graph output of a QDQ model (each comes out of a DequantizeLinear)."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    scales = []
    for out in model.graph.output:
        node = producer[out.name]
        assert node.op_type == "DequantizeLinear", f"output {out.name} is not dequantized"
        scales.append(float(inits[node.input[1]]))
    return scales


def assert_close(kind, model, got, want, what):
    if kind == "float":
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=0, atol=FLOAT_ABS, err_msg=what)
    else:
        for g, w, s in zip(got, want, output_scales(model)):
            steps = np.abs(g.astype(np.float64) - w) / s
            assert steps.max() <= INT8_STEPS + 1e-3, f"{what}: {steps.max():.2f} steps from onnxruntime"


NAMES = sorted(zoo.BUILDERS)
KINDS = ("float", "qdq")


def test_zoo_covers_every_operator(built):
    used = set()
    conv_kinds, resize_modes = set(), set()
    for name in NAMES:
        float_model, qdq_model, _ = built(name)
        used |= {n.op_type for n in float_model.graph.node}
        inits = {t.name: t for t in float_model.graph.initializer}
        for n in float_model.graph.node:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            if n.op_type == "Conv":
                group, cin_per_group = attrs.get("group", 1), inits[n.input[1]].dims[1]
                conv_kinds.add("depthwise" if group > 1 and cin_per_group == 1 else
                               "grouped" if group > 1 else "group=1")
                if max(attrs.get("strides", [1])) > 1:
                    conv_kinds.add("stride")
                if max(attrs.get("dilations", [1])) > 1:
                    conv_kinds.add("dilation")
            if n.op_type == "Resize":
                resize_modes.add(attrs.get("mode", b"nearest").decode())
        assert any(n.op_type == "QuantizeLinear" for n in qdq_model.graph.node), f"{name} was not quantized"
    assert set(zoo.REQUIRED_OPS) <= used, f"missing {sorted(set(zoo.REQUIRED_OPS) - used)}"
    assert conv_kinds == {"group=1", "depthwise", "grouped", "stride", "dilation"}
    assert resize_modes == {"nearest", "linear"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_imports_and_runs(built, name, kind):
    model, example = pick(built, name, kind)
    graph = lower(import_onnx(model), check=True)
    if kind == "qdq":
        assert any(graph[n.outputs[0]].dtype == "int8" for n in graph.nodes if n.op in ("Conv", "Gemm", "MatMul")), \
            "no integer Conv/Gemm after lowering"
    samples = inputs_for(model, example)
    for sample, want in zip(samples, check.run_onnxruntime(model, samples)):
        assert all(np.isfinite(w).all() for w in want)
        assert_close(kind, model, run_reference(graph, sample), want, f"{name} {kind} reference")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_on_host(built, name, kind, tmp_path):
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.compile import compile_model

    model, example = pick(built, name, kind)
    compiled = compile_model(model, "host", check=True)
    samples = inputs_for(model, example)
    c_outputs = run_compiled_on_host(compiled, samples, tmp_path)
    for sample, c, want in zip(samples, c_outputs, check.run_onnxruntime(model, samples)):
        ref = run_reference(compiled.graph, sample)
        assert_close(kind, model, c, want, f"{name} {kind} C")
        for g, r in zip(c, ref):
            if kind == "float":
                np.testing.assert_allclose(g, r, rtol=0, atol=1e-5)
            else:
                np.testing.assert_array_equal(g, r)  # the dequantized output: equal iff the int8 values are


@pytest.mark.parametrize("kind", KINDS)
def test_transformer_passes_run_check_on_host(built, kind, tmp_path, capsys):
    """`mcudeploy run MODEL -b host --check` on the 2-layer encoder: every operator within a step of
    onnxruntime given its inputs, the C bit for bit (int8) or within 1e-4 (float) of the reference."""
    from mcudeploy.cli import main

    model, _ = pick(built, "transformer", kind)
    path = tmp_path / f"transformer_{kind}.onnx"
    onnx.save(model, path)
    assert main(["run", str(path), "-b", "host", "--check", "--samples", "5"]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "the C vs mcudeploy's numpy reference" in out


# --------------------------------------------------------------------------- MobileNetV2 with an int8 input

MNV2_SMALL = dict(size=24, stages=((1, 8, 1, 1), (6, 8, 2, 2)), stem=8, classes=4)


@pytest.fixture(scope="module")
def mnv2(tmp_path_factory):
    """A small MobileNetV2 (QDQ) and its example input; compiled with int8_input=True it takes int8."""
    _, model, example = zoo.mobilenetv2(tmp_path_factory.mktemp("mnv2"), **MNV2_SMALL)
    return model, example


def quantized_example(graph, example: dict) -> dict:
    """The example as the int8-input graph takes it: quantized with the input's scale and zero point
    (round half to even and saturation, as QuantizeLinear does)."""
    out = {}
    for name, value in example.items():
        scale, zero = graph[name].quant.single()
        q = np.rint(np.asarray(value, np.float32) / np.float32(scale)) + zero
        out[name] = np.clip(q, -128, 127).astype(np.int8)
    return out


def test_int8_input_pass_takes_the_quantized_input(mnv2):
    model, _ = mnv2
    graph = lower(import_onnx(model), check=True, int8_input=True)
    floating = lower(import_onnx(model), check=True)
    x = graph[graph.inputs[0]]
    assert graph.inputs == floating.inputs == ("x",)
    assert x.dtype == "int8" and x.quant is not None and len(x.quant.scale) == 1
    assert x.nbytes * 4 == floating[graph.inputs[0]].nbytes
    assert [n.op for n in floating.nodes if "x" in n.inputs] == ["QuantizeLinear"]
    assert len(graph.nodes) == len(floating.nodes) - 1  # only the input's QuantizeLinear went
    assert not any(n.op == "QuantizeLinear" for n in graph.nodes)


def test_int8_input_computes_what_the_float_input_model_does(mnv2):
    """The reference on the quantized example is bit for bit the float-input model's on the float
    example; onnxruntime (fed the int8 input dequantized) agrees within INT8_STEPS."""
    model, example = mnv2
    graph = lower(import_onnx(model), check=True, int8_input=True)
    example_q = quantized_example(graph, example)
    floating = lower(import_onnx(model), check=True)
    for got, want in zip(run_reference(graph, example_q), run_reference(floating, example)):
        np.testing.assert_array_equal(got, want)
    samples = [example_q] + check.random_inputs(graph, SAMPLES - 1, seed=3)
    for sample, values in zip(samples, check.tensor_values(model, graph, samples)):
        want = [values[o] for o in graph.outputs]
        assert_close("qdq", model, run_reference(graph, sample), want, "mnv2 int8-input reference")


def test_int8_input_on_host(mnv2, tmp_path):
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.compile import compile_model

    model, example = mnv2
    compiled = compile_model(model, "host", check=True, options=CompileOptions(int8_input=True))
    samples = [quantized_example(compiled.graph, example)] + check.random_inputs(compiled.graph, SAMPLES - 1, seed=3)
    for c, sample in zip(run_compiled_on_host(compiled, samples, tmp_path), samples):
        for g, r in zip(c, run_reference(compiled.graph, sample)):
            np.testing.assert_array_equal(g, r)


def test_int8_input_needs_a_quantized_input(built):
    from mcudeploy.errors import UnsupportedError

    float_model, _, _ = built("mlp")
    with pytest.raises(UnsupportedError, match="no input of the model is quantized"):
        lower(import_onnx(float_model), int8_input=True)


def test_mobilenetv2_035_with_an_int8_input_passes_run_check_on_host(tmp_path, capsys):
    """Issue 17's --int8-input model, the whole MobileNetV2-0.35 at 96x96: ``run --check --int8-input``
    passes on the host (each operator within a step of onnxruntime given its inputs, the C bit for
    bit the numpy reference). Its arena against the float-input one: benchmarks/split_bench.py
    --int8-input-ratio."""
    from mcudeploy.cli import main

    _, qdq, _ = zoo.mobilenetv2_035(tmp_path / "zoo")
    path = tmp_path / "mobilenetv2_035.onnx"
    onnx.save(qdq, path)
    samples = "2" if os.environ.get("CI") else "5"
    assert main(["run", str(path), "-b", "host", "--int8-input", "--check", "--samples", samples]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "the C vs mcudeploy's numpy reference: bit for bit" in out
