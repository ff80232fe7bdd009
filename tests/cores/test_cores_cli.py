"""The command line of one inference on two cores: -b qemu-an521 --objective latency compiles a plan on the chip's
two cores (plan.json records each step's core and phase), tune chooses one by measuring plans on the cores, `run DIR --check` runs the recorded plan on both cores
bit for bit, measure --json gives the critical path beside the one-core latency plan, and a system whose chips share
no memory between cores refuses the objective in one sentence."""
from __future__ import annotations

import json

import onnx
import pytest

import zoo
from mcudeploy.cli import main


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("branching")
    _, qdq, _ = zoo.BUILDERS["branching"](folder)
    path = folder / "branching_int8.onnx"
    onnx.save(qdq, str(path))
    return path


@pytest.mark.qemu
def test_tune_then_run_the_folder_on_both_cores_checked(need_qemu, model, tmp_path, capsys):
    out = tmp_path / "plan"
    assert main(["tune", str(model), "-b", "qemu-an521", "--objective", "latency", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("the estimate's plan: critical path ") and "measured, operators cut at 8 barriers" in said
    assert "plan(s) measured, each bit for bit the reference" in said
    plan = json.loads((out / "plan.json").read_text())
    assert plan["board"] == "qemu-an521-chip" and plan["cores"]["count"] == 2
    assert set(plan["cores"]["core"]) == {-1, 0, 1} and len(plan["cores"]["phase"]) == len(plan["order"])
    capsys.readouterr()
    assert main(["run", str(out), "--check", "--samples", "3"]) == 0
    said = capsys.readouterr().out
    assert "on qemu-an521-chip" in said and "bit for bit" in said and "PASS" in said
    assert "one inference on 2 cores: no per-operator ticks" in said


@pytest.mark.qemu
def test_measure_gives_the_critical_path_beside_one_core(need_qemu, model, capsys):
    assert main(["measure", str(model), "-b", "qemu-an521", "--objective", "latency", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["one_core_board"] == "qemu-an521-core" and got["board"] == "qemu-an521-chip"
    assert 0 < got["critical_path_instructions"] < got["one_core_instructions"]
    assert got["ratio"] == pytest.approx(got["critical_path_instructions"] / got["one_core_instructions"])
    assert sum(got["core_instructions"]) >= got["critical_path_instructions"] - got["barrier_instructions"]


def test_a_system_of_chips_refuses_the_latency_objective(model, tmp_path, capsys):
    assert main(["compile", str(model), "-b", "qemu-m4x2", "--objective", "latency", "-o", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "--objective latency applies to one board, not to the system qemu-m4x2" in err and err.count("\n") == 1


def test_tune_of_a_system_takes_the_latency_objective_only(model, tmp_path, capsys):
    assert main(["tune", str(model), "-b", "qemu-an521", "-o", str(tmp_path / "t")]) != 0
    err = capsys.readouterr().err
    assert "with --objective latency a system whose chip's cores share its memory" in err and err.count("\n") == 1


def test_measure_of_a_folder_on_two_cores_is_refused(model, tmp_path, capsys):
    out = tmp_path / "plan"
    assert main(["compile", str(model), "-b", "qemu-an521", "--objective", "latency", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["measure", str(out)]) != 0
    assert "is a plan of one inference on 2 cores: measure its model file with -b SYSTEM" in capsys.readouterr().err
