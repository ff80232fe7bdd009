"""The command line of one inference on two cores: -b qemu-an521 --objective latency compiles a plan on the chip's
two cores (plan.json records each step's core and phase), tune chooses one by measuring plans on the cores, `run DIR
--check` runs the recorded plan on both cores bit for bit, measure --json gives the critical path beside the
one-core latency plan (and --estimate-for, milliseconds on a real board of two such cores), and a system whose
chips share no memory between cores refuses the objective in one sentence."""
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
    assert main(["tune", str(model), "-b", "qemu-an521", "--objective", "latency", "-o", str(out),
                 "--budget", "2"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("the estimate's plan: critical path ") and "measured, operators cut at 8 barriers" in said
    assert "the budget of 2 plans measured is spent" in said
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


@pytest.mark.qemu
def test_measure_estimates_the_critical_path_for_a_real_board_of_two_such_cores(need_qemu, model, capsys):
    assert main(["measure", str(model), "-b", "qemu-an521", "--objective", "latency", "--estimate-for", "pico2",
                 "--json"]) == 0
    e = json.loads(capsys.readouterr().out)["estimate"]
    assert e["board"] == "pico2" and e["cores"] == 2 and e["core"] == "cortex-m33" and e["clock_hz"] > 0
    assert 0 < e["critical_path_ms"] < e["one_core_ms"]
    assert e["critical_path_ms"] == pytest.approx(e["critical_path_cycles"] * 1e3 / e["clock_hz"])
    assert e["range_ms"][0] <= e["critical_path_ms"] <= e["range_ms"][1]
    assert "contention" in e["note"] and "unvalidated" in e["note"]


@pytest.mark.parametrize("board, reason", [
    ("nucleo-u575zi-q", "board nucleo-u575zi-q names no 2 cores sharing its memory"),
    ("nucleo-l4r5zi", "the instructions traced would be another core's"),
    ("qemu-m4", "names a real board to estimate for")])
def test_estimate_for_a_board_without_such_cores_is_refused(model, board, reason, capsys):
    assert main(["measure", str(model), "-b", "qemu-an521", "--objective", "latency", "--estimate-for", board]) != 0
    err = capsys.readouterr().err
    assert reason in err and err.count("\n") == 1


def test_a_board_whose_cores_are_data_builds_no_firmware_for_them(model, tmp_path):
    from mcudeploy.boards import load_board
    from mcudeploy.compile import lower
    from mcudeploy.cores.compile import plan_on_cores
    from mcudeploy.device.runner import build_for_board
    from mcudeploy.errors import MCUDeployError
    from mcudeploy.frontend import import_model

    board = load_board("pico2")
    compiled = plan_on_cores(lower(import_model(str(model))), board).compiled(str(model), board)
    with pytest.raises(MCUDeployError, match="board pico2's cores are data for plans and estimates: the firmware "
                                             "starts a core only through sse200, not rp2350-sio"):
        build_for_board(compiled, tmp_path)
