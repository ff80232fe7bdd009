"""`--schedule` and `--time-limit` on `mcudeploy plan` and `compile`."""
from __future__ import annotations

import onnx
import pytest

from mcudeploy.cli import main
from test_sched_exact import two_branches_onnx


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "two_branches.onnx"
    onnx.save(two_branches_onnx(), path)
    return str(path)


def test_plan_with_a_schedule_method(model, capsys):
    assert main(["plan", model, "-b", "host", "--schedule", "model", "--time-limit", "1"]) == 0
    model_order = capsys.readouterr().out
    assert main(["plan", model, "-b", "host"]) == 0  # auto
    auto = capsys.readouterr().out
    assert "2,112" in model_order and "2,112" not in auto and "1,152" in auto


def test_compile_with_a_schedule_method(model, tmp_path):
    assert main(["compile", model, "-b", "host", "--schedule", "exact", "--time-limit", "5",
                 "-o", str(tmp_path / "out")]) == 0
    assert '"proven_optimal": true' in (tmp_path / "out" / "plan.json").read_text()


@pytest.mark.parametrize("option", [["--schedule", "fastest"], ["--time-limit", "0"]])
def test_bad_schedule_option_is_one_line(model, option, capsys):
    assert main(["plan", model, "-b", "host", *option]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcudeploy: error:") and err.count("\n") == 1
