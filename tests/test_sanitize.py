"""``run --sanitize -b host`` and ``measure --sanitize -b host``: the generated C, the kernels and the runner (or
the timing runner) built with AddressSanitizer and UndefinedBehaviorSanitizer; a report ends the run in one
sentence naming the operator.

The shared models and the corpora run this way in their own tests (test_models.py, test_tflite.py, the corpus
tests: ``run_compiled_on_host(..., sanitize=True)``); here, faults planted in one operator's C show that a
report is caught and named, and that a clean model runs clean."""
from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest
import zoo

from mcudeploy import check
from mcudeploy.cli import main
from mcudeploy.codegen import write_project
from mcudeploy.compile import compile_model
from mcudeploy.device import host, host_measure, sanitize
from mcudeploy.device.labels import model_name, op_labels
from mcudeploy.errors import MCUDeployError

# planted after operator 1's call, inside MCUD_OP_BEGIN(1) .. MCUD_OP_END(1): mcud_sanitize_op is 1 there
FAULTS = {
    "signed overflow": "{ volatile int32_t big = 2147483647; big = big + mcud_sanitize_op; }",
    "arena overrun": "{ uint8_t *volatile p = mcud_arena; volatile int32_t at = (int32_t)sizeof mcud_arena; "
                     "p[at] = 1; }",
}


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    model, _, _ = zoo.mlp(tmp_path_factory.mktemp("mlp"))
    path = tmp_path_factory.mktemp("model") / "mlp.onnx"
    onnx.save(model, path)
    return path


def _plant(project: Path, fault: str) -> None:
    source = (project / "model.c").read_text()
    call = re.search(r"^    mcud_op_1\(\);", source, re.M)
    assert call, "model.c has no call of operator 1 to plant the fault after"
    (project / "model.c").write_text(source[:call.end()] + " " + fault + source[call.end():])


def _run_with(compiled, folder: Path, fault: str):
    project = write_project(compiled, folder, sanitize=True)
    _plant(project, fault)
    exe = host.build(project, compiled.board, sanitize=True)
    return host.run(exe, compiled.graph, check.random_inputs(compiled.graph, 1),
                    sanitized=(model_name(compiled), op_labels(compiled)))


def _time_with(compiled, folder: Path, fault: str):
    """measure --sanitize's timing build, the fault planted in operator 1."""
    project = write_project(compiled, folder, sanitize=True, timing=True)
    _plant(project, fault)
    exe = host.build(project, compiled.board, sanitize=True, timing=True)
    return host_measure.run_timed(exe, compiled, 2, sanitize=True)


@pytest.mark.parametrize("build", ["run", "measure"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_report_names_the_operator(mlp, tmp_path, fault, build):
    compiled = compile_model(mlp, "host")
    with pytest.raises(MCUDeployError) as caught:
        (_run_with if build == "run" else _time_with)(compiled, tmp_path, FAULTS[fault])
    text = str(caught.value)
    label = op_labels(compiled)[1]
    assert len(text.splitlines()) == 1, text
    assert f"in operator 1 ({label})" in text, text
    assert ("signed integer overflow" if fault == "signed overflow" else "global-buffer-overflow") in text, text
    kept = Path(re.search(r"the whole report: (\S+)\)$", text).group(1))
    assert "MCUD_SANITIZE_OP 1" in kept.read_text()
    kept.unlink()


def test_a_clean_model_runs_clean_and_the_same(mlp, tmp_path):
    compiled = compile_model(mlp, "host")
    samples = check.random_inputs(compiled.graph, 3)
    plain = host.run_compiled_on_host(compiled, samples, tmp_path / "plain")
    sanitized = host.run_compiled_on_host(compiled, samples, tmp_path / "sanitized", sanitize=True)
    assert all((a == b).all() for p, s in zip(plain, sanitized) for a, b in zip(p, s))


def test_where_a_report_falls():
    labels = ["Gemm: fc", "Relu: act"]
    assert sanitize._where("x\nMCUD_SANITIZE_OP -1\n", labels) == "before the first operator"
    assert sanitize._where("x\nMCUD_SANITIZE_OP -3\n", labels) == "after operator 1 (Relu: act), outside any operator"
    assert sanitize._where("no index", labels) == "outside the model's operators"


def test_cli_runs_sanitized_and_refuses_other_boards(mlp, capsys):
    assert main(["run", str(mlp), "-b", "host", "--check", "--sanitize", "--samples", "2"]) == 0
    assert "sanitized host build (AddressSanitizer, UndefinedBehaviorSanitizer): 2 sample(s), no report" in \
        capsys.readouterr().out
    assert main(["run", str(mlp), "-b", "qemu-m4", "--sanitize"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "give -b host, not -b qemu-m4" in err, err


def test_host_measure_times_every_operator(mlp, tmp_path):
    from mcudeploy.device.measure import measure_model

    compiled = compile_model(mlp, "host")
    for sanitized in (False, True):
        result = measure_model(compiled, repeat=3, sanitize=sanitized, workdir=tmp_path / str(sanitized))
        assert [o.label for o in result.ops] == op_labels(compiled)
        assert all(o.repeat == 3 and 0 < o.ticks <= o.mean <= o.max and not o.cached for o in result.ops), result.ops
        assert result.timer_hz == 10 ** 9 and result.instructions_per_tick is None
        assert "1 tick = 1 ns" in result.lines()[-1]
        assert ("no report" in result.lines()[-1]) == sanitized


def test_cli_measures_sanitized_and_refuses_what_the_host_lacks(mlp, tmp_path, capsys):
    assert main(["measure", str(mlp), "-b", "host", "--sanitize", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "AddressSanitizer and UndefinedBehaviorSanitizer: no report" in out, out
    for args, said in ((["-b", "qemu-m4", "--sanitize"], "give -b host, not -b qemu-m4"),
                       (["-b", "host", "-o", str(tmp_path / "t")], "the host board builds no firmware"),
                       (["-b", "host", "--estimate-for", "pico"], "under QEMU: give an emulated board")):
        assert main(["measure", str(mlp), *args]) != 0
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and said in err, err
    assert not (tmp_path / "t").exists()
