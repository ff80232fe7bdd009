"""flash DIR: the plan a compile -o folder records goes on the board as it is (its plan id, its
model.c), then run DIR --port --check and measure DIR --port find that plan there and run it; the
same for a plan with a fast-memory budget and one that streams its input. The three flashes share
one PlatformIO project, so each after the first rebuilds only the model's C."""
from __future__ import annotations

import re

import onnx
import pytest

from mcudeploy.cli import main
from mcudeploy.device.qemu import free_port
from residual import residual_model

PLANS = {"plain": [], "fast-memory": ["--fast-memory", "50%"], "stream-input": ["--stream-input"]}


@pytest.fixture(scope="module")
def residual(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "residual.onnx"
    onnx.save(residual_model(), path)
    return path


def _ok(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return out


@pytest.mark.qemu
@pytest.mark.parametrize("plan", PLANS)
def test_flash_a_compiled_folder_then_run_and_measure_it_through_the_port(plan, residual, tmp_path_factory, capsys,
                                                                         need_qemu):
    folder = tmp_path_factory.mktemp(plan) / "out"
    _ok(capsys, "compile", str(residual), "-b", "qemu-m4", "-o", str(folder), *PLANS[plan])
    (planned,) = re.findall(r"PLAN_ID (0x[0-9A-F]{8}u)", (folder / "residual.h").read_text())
    project = tmp_path_factory.getbasetemp() / "flash-project"  # shared: the later flashes rebuild only the model
    url = f"socket://127.0.0.1:{free_port()}"
    try:
        out = _ok(capsys, "flash", str(folder), "-b", "qemu-m4", "--port", url, "--project-dir", str(project))
        assert f"plan {planned}, model id" in out
        assert (project / "model.c").read_bytes() == (folder / "model.c").read_bytes()
        # run finds the folder's model.c on the board (its model id) and runs that plan
        memory = [line for line in out.splitlines() if line.startswith(("SRAM", "flash "))]
        out = _ok(capsys, "run", str(folder), "--port", url, "--check", "--samples", "3")
        assert f"({planned})" in out and "SAME as the host board on 3 input(s)" in out and "PASS on 3" in out
        # the flashed firmware's memory, region by region, is the one run built to learn its model id
        assert memory == [line for line in out.splitlines() if line.startswith(("SRAM", "flash "))]
        if plan == "plain":
            out = _ok(capsys, "measure", str(folder), "--port", url, "--repeat", "1")
            assert "measured on the board" in out
    finally:
        main(["flash", "-b", "qemu-m4", "--stop", "--port", url])


def _error(capsys, argv) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_folder_with_a_plan_changing_option_is_one_sentence(tmp_path, capsys):
    (tmp_path / "plan.json").write_text("{}")  # refused before the folder is read
    for command in ("flash", "run", "measure"):
        err = _error(capsys, [command, str(tmp_path), "--fast-memory", "50%"])
        assert f"{tmp_path} holds a plan whose shapes, order and offsets are fixed: --fast-memory applies only" in err
    assert "give the board with -b BOARD" in _error(capsys, ["flash", str(tmp_path / "m.onnx")])
    assert "--stream-input changes a model's plan" in _error(capsys, ["flash", "-b", "qemu-m4", "--stream-input"])
