"""flash -b SYSTEM: each stage's measurer firmware built for its core's board and started on an
emulator of its own (the stages do not replace one another), each running its own stage bit for bit
with the host build, their link UARTs joined so a frame passes from chip to chip; ports that do not match the stages, or a real system without them, are one
sentence before anything is built."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest

from mcudeploy.check import random_inputs
from mcudeploy.cli import main
from mcudeploy.device import emulator
from mcudeploy.device.runner import compare_with_host, run_on_board
from mcudeploy.frontend import import_model
from mcudeploy.pipeline import lower
from mcudeploy.stages.system import load_system
from mcudeploy.stages.system_plan import compile_system
from residual import residual_model


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
    monkeypatch.setenv("MCUDEPLOY_CACHE", str(tmp_path / "cache"))
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
        _one_frame_over_the_joined_links(plan, urls, tmp_path)
    finally:
        mcudeploy("flash", "-b", "qemu-m4", "--stop", "--all", env=env)
    assert not emulator.running_emulators("qemu-m4")


def _one_frame_over_the_joined_links(plan, urls, tmp_path) -> None:
    """The emulators flash left running have their link UARTs joined: a frame the host gives the first
    chip comes out of the last, passed on by the chips (RUN_LINKED), as the host build computes it."""
    from mcudeploy.device.samples import output_array, sample_bytes
    from mcudeploy.device.session import Session
    from mcudeploy.device.transport import Transport
    from mcudeploy.stages.stream import run_on_host

    sample = random_inputs(plan.graph, 1, seed=9)
    sessions = [Session(Transport.open(url), "qemu-m4") for url in urls]
    try:
        for session, stage in zip(sessions, plan.staged.stages):
            session.open()
            session.begin_run()
            g = stage.compiled.graph
            for i, name in enumerate(g.inputs):
                if name not in stage.receives:
                    session.load_input(i, sample_bytes(g, {name: sample[0][name]})[0])
        ticks: list = []
        later = threading.Thread(target=lambda: ticks.append(sessions[1].run_linked(0, 5000)))
        later.start()
        ticks.insert(0, sessions[0].run_linked(0, 5000))
        later.join(60)
        assert len(ticks) == 2 and min(ticks) > 0  # both chips ran the frame
        g = plan.staged.stages[1].compiled.graph
        got = [output_array(g, o, sessions[1].read_output(i, g[o].nbytes)) for i, o in enumerate(g.outputs)]
    finally:
        for session in sessions:
            session.transport.close()
    [want] = run_on_host(plan, sample, tmp_path / "host")
    assert [o for o in plan.outputs] == list(g.outputs)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


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

    monkeypatch.setenv("MCUDEPLOY_CACHE", str(tmp_path / "cache"))
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
