"""``run --check`` (mcudeploy/check): a model that drifts from onnxruntime end to end passes when every
operator agrees with onnxruntime on the same inputs, and a planted bug fails, the verdict naming the
operator: a wrong rounding in a C kernel (a patched copy of the kernel library), an off-by-one halo
in a split plan (the split's window arithmetic patched), a wrong rounding in one operator's numpy
reference (caught by onnxruntime, operator by operator)."""
from __future__ import annotations

import logging
import shutil

import numpy as np
import onnx
import pytest
import zoo

from mcudeploy import check
from mcudeploy.cli import main
from mcudeploy.codegen import emit
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry, requant
from mcudeploy.partition import cut as cut_module, ranges, split
from mcudeploy.compile import compile_graph, compile_model, lower
from mcudeploy.plan import CompileOptions
from mcudeploy.resources import firmware_dir
from mcudeploy.search import space

SAMPLES = 3

logging.getLogger().setLevel(logging.ERROR)  # onnxruntime's quantizer suggests pre-processing on every call


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> (float model path, int8 QDQ model path): tests/zoo.py's drift and branching models, and a
    small MobileNetV2 (a stem and one inverted residual block), to split with an int8 input."""
    work = tmp_path_factory.mktemp("check-models")
    out = {}
    for name, build in (("drift", zoo.drift), ("branching", zoo.branching)):
        float_model, qdq, _ = build(work / name)
        out[name] = (work / f"{name}_float.onnx", work / f"{name}_int8.onnx")
        onnx.save(float_model, out[name][0])
        onnx.save(qdq, out[name][1])
    _, qdq, _ = zoo.mobilenetv2(work / "mnv2", size=32, stages=((6, 8, 1, 1),), stem=8, classes=4)
    out["mnv2"] = (None, work / "mnv2_int8.onnx")
    onnx.save(qdq, out["mnv2"][1])
    return out


def verdict_on_host(model, compiled, reference=None, samples=SAMPLES) -> check.Verdict:
    inputs = check.random_inputs(reference or compiled.graph, samples, seed=1)
    return check.check_outputs(model, compiled, run_compiled_on_host(compiled, inputs), inputs, reference)


def first(compiled, op: str):
    return next(n for n in compiled.order if n.op == op)


def test_a_model_that_drifts_end_to_end_passes(models):
    """20 inputs: the AveragePool rounds some ties the other way than onnxruntime, the Sigmoid makes
    that several steps at the output (the old end-to-end limit was 2), and yet no operator is wrong."""
    model = models["drift"][1]
    verdict = verdict_on_host(model, compile_model(model, "host"), samples=20)
    assert verdict.ok, verdict.lines()
    assert verdict.outputs[0].max_diff > 2 and verdict.outputs[0].unit == "steps"
    where = verdict.local.first_difference
    assert where.op == "AveragePool" and where.differ > 0 and where.off == 0, where  # near-ties, all of them
    assert "all near-ties" in verdict.lines()[0] and verdict.lines()[-1].startswith("PASS on 20 input(s)")


def test_an_operator_onnxruntime_does_not_show_is_compared_with_its_reader(models):
    """Without onnxruntime's value of the Conv's output, the Conv runs on onnxruntime's values of its
    inputs and its result feeds the AveragePool, compared with onnxruntime's output of the pool. (A
    merged operator that rounds a tie the other way shows after its reader, amplified by the reader's
    gain: here the pool's, at most one step.)"""
    model = models["drift"][1]
    graph = lower(import_onnx(model))
    samples = check.random_inputs(graph, 2, seed=1)
    values = check.tensor_values(model, graph, samples)
    conv = next(n for n in graph.nodes if n.op == "Conv")
    for v in values:
        del v[conv.outputs[0]]
    report = check.compare_operators(graph, values, check.quantized_from(model))
    (reader,) = graph.users(conv.outputs[0])
    assert [a.node for a in report.ops if a.merged] == [reader.name] and report.ok, report.ops
    assert conv.name not in {a.node for a in report.ops} and not report.uncompared
    assert f"{reader.op} {reader.name} (with {conv.name})" in report.lines()[0]


@pytest.fixture
def floored_sum_kernel(tmp_path, monkeypatch):
    """The kernel library with the int8 Sum kernel's round-half-to-even replaced by a floor, in a
    copy that write_project ships instead of firmware/ (the host build caches it apart)."""
    fw = tmp_path / "firmware"
    shutil.copytree(firmware_dir(), fw)
    source = fw / "kernels" / "variadic.c"
    text = source.read_text()
    rounding = "((int64_t)1 << (p->shift - 1)) - 1 + odd"  # in variadic_s8_out
    assert text.count(rounding) == 1
    source.write_text(text.replace(rounding, "0 * odd"))
    monkeypatch.setattr(emit, "firmware_dir", lambda: fw)


def test_a_wrong_rounding_in_a_c_kernel_fails_naming_the_operator(models, floored_sum_kernel):
    model = models["branching"][1]
    compiled = compile_model(model, "host")
    verdict = verdict_on_host(model, compiled)
    assert not verdict.ok and verdict.local.ok and not verdict.exact
    found = verdict.difference
    assert found.node is first(compiled, "Sum") and found.cause == "kernel", found
    text = "\n".join(verdict.lines())
    assert f"Sum {found.node.name}" in text and "its kernel and its numpy reference disagree" in text
    assert verdict.lines()[-1].startswith("FAIL on 3 input(s)")


def longest_cut(lowered, halo: str = "keep"):
    """The longest valid cut into 4 pieces with this halo (deterministic)."""
    cuts = [c for c in space.candidate_cuts(lowered, space.segments(lowered), frozenset(), frozenset())
            if c.pieces == 4 and c.halo == halo]
    return max(cuts, key=lambda c: (len(c.axes), c.axes))


@pytest.mark.parametrize("halo", ("keep", "recompute"))
def test_the_trace_of_a_correct_split_plan_finds_no_difference(models, halo):
    model = models["mnv2"][1]
    lowered = lower(import_onnx(model), int8_input=True)
    cut = longest_cut(lowered, halo)
    compiled = compile_graph(split(lowered, (cut,)), "host",
                             options=CompileOptions(scheme=(cut,), schedule_method="pieces"))
    sample = check.random_inputs(lowered, 1, seed=2)[0]
    assert check.first_difference(compiled, sample, lowered) is None


def test_an_off_by_one_halo_in_a_split_plan_fails_naming_the_operator(models, monkeypatch):
    model = models["mnv2"][1]
    lowered = lower(import_onnx(model), int8_input=True)
    cut = longest_cut(lowered)
    window_read = cut_module.window_read

    def one_row_early(lo, hi, size, stride, dilation, pad, kernel):
        r = window_read(lo, hi, size, stride, dilation, pad, kernel)
        return ranges.Read(r.lo - 1, r.hi - 1, r.pads) if 0 < r.lo and r.hi < size else r

    monkeypatch.setattr(cut_module, "window_read", one_row_early)
    compiled = compile_graph(split(lowered, (cut,)), "host",
                             options=CompileOptions(scheme=(cut,), schedule_method="pieces", int8_input=True))
    monkeypatch.undo()
    verdict = verdict_on_host(model, compiled, lowered)
    assert not verdict.ok and verdict.local.ok and not verdict.exact
    found = verdict.difference
    assert found.cause == "split" and found.node.piece is not None and found.node.piece.index is not None, found
    assert found.node.piece.of in {name for name, _ in cut.axes}
    line = next(x for x in verdict.lines() if x.startswith("the C first differs"))
    assert f"{found.node.op} {found.node.piece.of} (its piece {found.node.piece.index})" in line
    assert "the split gives this piece other values than the model's" in line


def test_a_wrong_rounding_in_a_reference_fails_against_onnxruntime(models, monkeypatch):
    """Conv's numpy reference floors instead of rounding: within one step of onnxruntime everywhere, but
    not the nearest step at many elements; the C (right) now differs from it too."""
    conv = type(registry.get("Conv"))
    reference = conv.reference

    def floored(self, graph, node, inputs):
        with monkeypatch.context() as m:
            m.setattr(requant, "round_shift", lambda p, shift: np.asarray(p, np.int64) >> np.asarray(shift, np.int64))
            return reference(self, graph, node, inputs)

    monkeypatch.setattr(conv, "reference", floored)
    model = models["drift"][1]
    compiled = compile_model(model, "host")
    verdict = verdict_on_host(model, compiled)
    assert not verdict.local.ok and not verdict.ok
    bad = verdict.local.failures[0]
    assert (bad.op, bad.node) == ("Conv", first(compiled, "Conv").name) and bad.max_diff <= 1 and bad.off > 0
    assert f"Conv {bad.node} differs by" in verdict.lines()[0] and "not the nearest step" in verdict.lines()[0]
    assert verdict.difference is not None and verdict.difference.node.name == bad.node


def test_cli_reports_figures_against_a_float_model(models, capsys):
    float_model, model = models["drift"]
    assert main(["run", str(model), "-b", "host", "--check", "--samples", "3", "--float-model", str(float_model)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any("vs onnxruntime end to end" in x and "; vs the float model: SNR " in x for x in out), out
    assert out[-1].startswith("PASS on 3 input(s)") and len(out) == 4


def _error(capsys, argv) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcudeploy: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_cli_refuses_a_float_model_that_does_not_match(models, capsys):
    _, model = models["drift"]
    other, _ = models["branching"]  # input x is 1x3x16x16; the drift model's is 1x4x16x16
    err = _error(capsys, ["run", str(model), "-b", "host", "--check", "--float-model", str(other)])
    assert f"--float-model {other}: input x has shape 1x3x16x16; the model's input x is 1x4x16x16" in err
    err = _error(capsys, ["run", str(model), "-b", "host", "--float-model", str(other)])
    assert "--float-model applies only with --check" in err


def test_random_inputs_cover_every_code_of_a_quantized_input_and_both_bools():
    """A 16x8 model's int16 input over its whole range (not [-128, 127]), a uint8 one over [0, 255], a bool one
    both ways: run --check reaches the codes a model meets."""
    from mcudeploy.samples import random_inputs
    from mcudeploy.ir import Graph, Quant, Tensor

    q = Quant((0.01,), (0,), None)
    tensors = {"a": Tensor("a", (64, 64), "int16", "input", q), "u": Tensor("u", (64, 64), "uint8", "input", q),
               "b": Tensor("b", (64,), "bool", "input"), "i": Tensor("i", (64,), "int32", "input")}
    graph = Graph("g", tensors, (), ("a", "u", "b", "i"), ())
    (sample,) = random_inputs(graph, 1)
    assert sample["a"].min() < -30000 and sample["a"].max() > 30000
    assert sample["u"].min() == 0 and sample["u"].max() == 255
    assert set(sample["b"].tolist()) == {False, True}
    assert -128 <= sample["i"].min() and sample["i"].max() <= 127  # plain integers (indices): a small range
