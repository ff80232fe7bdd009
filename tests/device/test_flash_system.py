"""flash -b SYSTEM: each stage's measurer firmware built for its core's board and started on an
emulator of its own (the stages do not replace one another), each running its own stage bit for bit
with the host build, their link UARTs joined so that run -b SYSTEM --port ... streams frames through
them chip to chip; ports that do not match the stages, or a real system without them, are one
sentence before anything is built."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest

from mcudeploy.check import random_inputs
from mcudeploy.cli import main
from mcudeploy.device import emulator
from mcudeploy.check.against_host import compare_with_host
from mcudeploy.device.runner import run_on_board
from mcudeploy.frontend import import_model
from mcudeploy.compile import lower
from mcudeploy.stages.system import load_system
from mcudeploy.stages.system_plan import compile_system
from residual import residual_model
from object_cache import fresh_cache


@pytest.fixture
def residual(tmp_path):
    path = tmp_path / "residual.onnx"
    onnx.save(residual_model(), path)
    return path


def mcudeploy(*args: str, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcudeploy", *args], capture_output=True, text=True, env=env,
                          timeout=900)


@pytest.mark.qemu
def test_each_stage_runs_on_an_emulator_of_its_own(residual, tmp_path, need_qemu, monkeypatch):
    monkeypatch.setenv("MCUDEPLOY_CACHE", str(fresh_cache(tmp_path / "cache")))
    env = dict(os.environ)
    try:
        done = mcudeploy("flash", str(residual), "-b", "qemu-m4x2", "--project-dir", str(tmp_path / "p"), env=env)
        assert done.returncode == 0, done.stderr
        assert "qemu-m4x2: 2 firmware(s) for the 2 stage(s)" in done.stdout and "--stop --all" in done.stdout
        running = {e.port: e for e in emulator.running_emulators("qemu-m4")}
        urls = [line.split("QEMU runs it on ")[1].strip() for line in done.stdout.splitlines() if "QEMU runs it on" in line]
        assert len(urls) == 2 and {emulator.socket_port(u) for u in urls} == set(running)
        plan = compile_system(lower(import_model(str(residual))), load_system("qemu-m4x2"), str(residual))
        for stage, url in zip(plan.staged.stages, urls):
            samples = random_inputs(stage.compiled.graph, 2, seed=stage.index)
            run = run_on_board(stage.compiled, samples, port=url)
            same, lines = compare_with_host(stage.compiled, run.outputs, samples)
            assert same, (stage.index, lines)
        # the emulators flash left running have their link UARTs joined: run streams frames through them
        done = mcudeploy("run", str(residual), "-b", "qemu-m4x2", "--port", urls[0], "--port", urls[1], "--check",
                         "--samples", "3", env=env)
        assert done.returncode == 0, done.stderr
        assert f"each stage ran on the flashed chip on {urls[0]}, {urls[1]}" in done.stdout
        assert "over their joined UARTs, the host carrying none" in done.stdout
        assert "bit for bit identical" in done.stdout and "PASS on 3 input(s)" in done.stdout
        # and measure times each stage on its own flashed chip
        done = mcudeploy("measure", str(residual), "-b", "qemu-m4x2", "--port", urls[0], "--port", urls[1], "--json",
                         "--repeat", "1", env=env)
        assert done.returncode == 0, done.stderr
        stages = json.loads(done.stdout)["stages"]
        assert len(stages) == 2 and all(s["ticks"] > 0 and s["ticks_source"] == "measured" for s in stages)
    finally:
        mcudeploy("flash", "-b", "qemu-m4", "--stop", "--all", env=env)
    assert not emulator.running_emulators("qemu-m4")


def _error(capsys, argv) -> str:
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_ports_that_do_not_match_the_stages_are_one_sentence(residual, tmp_path, capsys):
    p = str(tmp_path / "p")
    assert "takes one --port per stage (2, in stage order), not 1" in _error(
        capsys, ["flash", str(residual), "-b", "qemu-m4x2", "--port", "socket://127.0.0.1:5555", "--project-dir", p])
    assert "needs the serial port of each of its 4 stage(s)' chips" in _error(
        capsys, ["flash", str(residual), "-b", "nucleo-f446re-x4", "--project-dir", p])
    assert "needs the model its stages run" in _error(capsys, ["flash", "-b", "qemu-m4x2", "--project-dir", p])
    assert "flash takes one --port for the board qemu-m4" in _error(
        capsys, ["flash", "-b", "qemu-m4", "--port", "socket://127.0.0.1:5555", "--port", "socket://127.0.0.1:5556"])
    assert not (tmp_path / "p").exists()  # refused before anything was built


@pytest.mark.qemu
def test_two_stages_on_two_cores_are_one_firmware_on_one_emulator(residual, tmp_path, need_qemu, monkeypatch):
    from mcudeploy.device.session import Session
    from mcudeploy.device.transport import Transport

    monkeypatch.setenv("MCUDEPLOY_CACHE", str(fresh_cache(tmp_path / "cache")))
    env = dict(os.environ)
    plan = compile_system(lower(import_model(str(residual))), load_system("qemu-an521"), str(residual))
    board = plan.system.chip_firmware(0).board.name
    try:
        done = mcudeploy("flash", str(residual), "-b", "qemu-an521", "--project-dir", str(tmp_path / "p"), env=env)
        assert done.returncode == 0, done.stderr
        assert "1 firmware(s) for the 2 stage(s)" in done.stdout and "stages 0 and 1 on its two cores" in done.stdout
        [emu] = emulator.running_emulators(board)
        session = Session(Transport.open(emu.url), board)
        info = session.open(boot_wait=2.0)
        graph = plan.graph
        assert info.input_bytes == tuple(graph[n].nbytes for n in graph.inputs)  # core 0 takes the model's inputs
        assert info.output_bytes == tuple(graph[n].nbytes for n in graph.outputs)  # core 1 makes its outputs
        assert info.arena_bytes == sum(s.compiled.placement.arena_bytes for s in plan.staged.stages)
        session.transport.close()
    finally:
        mcudeploy("flash", "-b", board, "--stop", "--all", env=env)
    assert not emulator.running_emulators(board)


def test_run_through_ports_needs_one_per_stage(residual, capsys):
    err = _error(capsys, ["run", str(residual), "-b", "qemu-m4x2", "--port", "socket://127.0.0.1:9"])
    assert "give one --port per stage, first to last, not 1" in err
