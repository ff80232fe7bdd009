"""Ctrl-C and SIGTERM at any moment: the command ends at once (within PROMPT seconds: moments, on a loaded machine) with status 130 and one line,
stops its emulators, and leaves no file that looks complete but is not."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from devmodels import matmul
from signals import PROMPT, interrupt, left_running, start, tagged_env

from mcudeploy import interrupts

pytestmark = pytest.mark.qemu


@pytest.fixture
def model(tmp_path):
    return matmul(tmp_path / "m.onnx", 256, k=256, n=256)  # a run of a few seconds under QEMU


def test_deferred_signals_wait_for_the_step_and_checks_end_waits():
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    interrupts.install()
    try:
        recorded = []
        with pytest.raises(KeyboardInterrupt):
            with interrupts.deferred():
                signal.raise_signal(signal.SIGTERM)  # arrives after the board answered
                recorded.append("timing")  # so the answer is still recorded
        assert recorded == ["timing"]
        with pytest.raises(KeyboardInterrupt):
            with interrupts.deferred():
                signal.raise_signal(signal.SIGINT)  # arrives while the board works
                interrupts.check()  # the wait notices it at once
                recorded.append("never")
        assert recorded == ["timing"]
        proc = subprocess.Popen(["sleep", "30"])
        start_ = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            with interrupts.deferred():
                signal.raise_signal(signal.SIGINT)
                interrupts.wait(proc)
        assert proc.returncode is not None and time.monotonic() - start_ < 2
    finally:
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])


def test_a_signal_during_a_fragile_import_waits_for_its_end(tmp_path, monkeypatch):
    """An extension module that runs Python from C++ while it is imported (onnx) must not see a
    KeyboardInterrupt there: import_deferred lets the import finish, then raises it."""
    (tmp_path / "fragile_ext.py").write_text("import signal\nsignal.raise_signal(signal.SIGTERM)\nFINISHED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    interrupts.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            interrupts.import_deferred(("fragile_ext",))
        assert sys.modules["fragile_ext"].FINISHED  # the module was imported whole
    finally:
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])
        sys.modules.pop("fragile_ext", None)
    assert "onnx" in interrupts.FRAGILE_IMPORTS


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("after", [0.5, 2.0, 4.0])
def test_run_on_qemu_ends_at_once_and_leaves_no_emulator(model, tmp_path, need_qemu, sig, after):
    env, tag = tagged_env(tmp_path / "cache")
    out = tmp_path / "y.npz"
    ended = interrupt(start(["run", str(model), "-b", "qemu-m4", "--samples", "8", "-o", str(out)], env), after, sig)
    assert ended.returncode == 130, ended.stderr
    assert ended.seconds_after_signal < PROMPT
    assert ended.stderr.strip().splitlines()[-1] == "mcudeploy: interrupted" and "Traceback" not in ended.stderr
    assert not left_running(tag)
    assert not out.exists()  # the outputs are written whole at the end, or not at all
    assert not list(tmp_path.glob(".y.npz.*"))


@pytest.mark.parametrize("after", [1.0, 3.0, 5.0])
def test_measure_and_flash_end_at_once_and_leave_no_emulator(model, tmp_path, need_qemu, after):
    env, tag = tagged_env(tmp_path / "cache")
    for args in (["measure", str(model), "-b", "qemu-m4", "--repeat", "40"],
                 ["flash", str(model), "-b", "qemu-m4", "--project-dir", str(tmp_path / "pio")]):
        ended = interrupt(start(args, env), after)
        if ended.returncode == 0:  # it finished first: a flash leaves its emulator running, as asked
            assert args[0] == "flash"
            start(["flash", "-b", "qemu-m4", "--stop", "--all"], env).wait(30)
            continue
        assert ended.returncode == 130, (args[0], ended.stderr)
        assert ended.seconds_after_signal < PROMPT, args[0]
        assert ended.stderr.strip().splitlines()[-1] == "mcudeploy: interrupted" and "Traceback" not in ended.stderr
        assert not left_running(tag), args[0]


def test_an_interrupted_compile_leaves_no_plan(model, tmp_path, monkeypatch):
    from mcudeploy.codegen import emit
    from mcudeploy.compile import compile_model

    compiled = compile_model(model, "host")
    out = emit.write_project(compiled, tmp_path / "out")
    assert (out / "plan.json").is_file()
    calls = {"n": 0}
    real = emit.write_atomic

    def interrupted_write(path, data):
        calls["n"] += 1
        if calls["n"] == 2:  # model.c is written, model.h is not
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(emit, "write_atomic", interrupted_write)
    with pytest.raises(KeyboardInterrupt):
        emit.write_project(compiled, out)
    assert not (out / "plan.json").exists()  # the old plan went first: the folder does not look complete
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_signal_a_library_swallowed_still_ends_the_command_as_interrupted(monkeypatch, capsys):
    """A KeyboardInterrupt raised inside a C extension can come back as another error that a broad handler
    takes for the library's own failure; the command then finishes, but it was interrupted all the same."""
    from mcudeploy import cli

    def boards_swallowing_the_interrupt(args):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # what such a handler does
        return 0

    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(cli, "cmd_boards", boards_swallowing_the_interrupt)
    try:
        assert cli.main(["boards"]) == 130
    finally:
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])
    assert capsys.readouterr().err.strip() == "mcudeploy: interrupted"
