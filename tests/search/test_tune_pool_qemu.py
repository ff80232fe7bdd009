"""Boards other than one local emulator give the plan one local emulator gives (issue 22).

A pool of two emulated boards (tune --boards 2): the kernels to time go to whichever emulator is
free, and an emulator killed or frozen in the middle of the tune is taken out of the pool with a warning
while its work is done again on the other (acceptance 3). A labgrid farm on the loopback interface: a
coordinator, an exporter exporting an emulated board's UART as a network serial port (RFC 2217),
one place; measure through the place gives the ticks of a direct --port, a short tune through it the
plan of a local emulator, and Ctrl-C (a tune) or SIGTERM (a measure) releases the place (acceptance 2)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from mcudeploy.boards import load_board
from mcudeploy.device import emulator, qemu
from mcudeploy.device.measure import measure_model
from mcudeploy.device.pool import BoardPool
from mcudeploy.device.runner import build_for_board
from mcudeploy.device.session import Session
from mcudeploy.search import TuneOptions, Tuner, space
from mcudeploy.compile import compile_model
from mcudeploy.simulate.timing_cache import TimingCache
from object_cache import fresh_cache

pytestmark = pytest.mark.qemu


def qemu_on(url: str) -> int:
    """The pid of the QEMU whose UART is the TCP port of ``url``."""
    needle = f"tcp:127.0.0.1:{url.rsplit(':', 1)[1]},".encode()
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if b"qemu-system-arm" in cmd.split(b"\0")[0] and needle in cmd:
            return int(entry.name)
    raise AssertionError(f"no QEMU listens on {url}")


def tune(model, folder, lines: list, **where):
    """A short tune from an empty timing cache (every kernel timed on the boards)."""
    return Tuner(model, "qemu-m4", folder, progress=lines.append, cache=TimingCache("qemu-m4", folder / "cache"),
                 options=TuneOptions(time_limit=600, effort=0.3, budget=3, top_segments=3, pieces=(2, 4)),
                 **where).run()


@pytest.fixture(scope="module")
def one_board(small_mobilenet, tmp_path_factory):
    """The plan of one local emulator, which every other way of tuning must give."""
    import shutil

    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    lines = []
    result = tune(small_mobilenet, tmp_path_factory.mktemp("one-board"), lines)
    assert result.best.scheme, "\n".join(lines)
    return plan(result)


def plan(result) -> tuple:
    return (space.scheme_key(result.best.scheme), result.best.arena, result.best.ticks, result.best.run_ticks,
            result.baseline.ticks)


@pytest.mark.parametrize("sig, why", [(signal.SIGKILL, "socket://127.0.0.1"), (signal.SIGSTOP, "did not answer RUN_OP")],
                         ids=["dies", "falls-silent"])
def test_two_emulators_give_the_plan_of_one_even_when_one_stops_answering(small_mobilenet, one_board, tmp_path,
                                                                          monkeypatch, sig, why):
    two_lines = []
    stopped = []
    real_run_op = Session.run_op

    def run_op(self, index, repeat=1):
        # the second board's emulator dies (its link lost) or freezes (silence) in the middle of a chunk of
        # kernels, once both boards are busy
        if not stopped and threading.current_thread().name == "pool-board 2" and both_busy(two_lines):
            stopped.append(qemu_on(self.transport.url))
            os.kill(stopped[0], sig)
        return real_run_op(self, index, repeat)

    monkeypatch.setattr(Session, "run_op", run_op)
    two = tune(small_mobilenet, tmp_path / "two", two_lines, boards=2)
    assert stopped
    warned = [line for line in two_lines if "warning: board 2 stopped answering" in line]
    assert len(warned) == 1 and why in warned[0] and "done again on another" in warned[0], "\n".join(two_lines)
    assert plan(two) == one_board


def both_busy(lines: list) -> bool:
    return any("2/2 boards busy" in line for line in lines)


PLACE = "mcud-test"


@pytest.fixture
def farm(tmp_path, need_qemu):
    pytest.importorskip("labgrid", reason="needs labgrid (pip install 'mcudeploy[farm]')")
    import labfarm

    if not labfarm.labgrid_tool("labgrid-coordinator"):
        pytest.skip("needs labgrid's commands (labgrid-coordinator, labgrid-exporter) beside this Python or on PATH")
    with labfarm.loopback_farm(tmp_path / "farm", "qemu-m4", PLACE) as env:
        yield env


def mcudeploy(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcudeploy", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def ticks(done: subprocess.CompletedProcess) -> list:
    assert done.returncode == 0, done.stderr
    return [(op["name"], op["ticks"]) for op in json.loads(done.stdout)["ops"]]


def test_measure_and_tune_through_a_labgrid_place(farm, small_mobilenet, one_board, tmp_path):
    import labfarm

    from mcudeploy.device import farm as lab

    env = dict(farm, MCUDEPLOY_CACHE=str(fresh_cache(tmp_path / "cache-farm")))
    through = ticks(mcudeploy(env, "measure", str(small_mobilenet), "-b", "qemu-m4", "--place", PLACE, "--json"))
    assert labfarm.acquired_by(env, PLACE) == ""  # released after the command
    board = load_board("qemu-m4")
    compiled = compile_model(small_mobilenet, board)
    with tempfile.TemporaryDirectory() as tmp:  # the same model flashed on an emulator, measured on its --port
        emu = emulator.start_emulator(board, build_for_board(compiled, Path(tmp)).elf, qemu.free_port())
    try:
        direct = measure_model(compiled, port=emu.url, cache=TimingCache("qemu-m4", tmp_path / "cache-direct"))
    finally:
        emulator.end_emulators_on(emu.port)
    assert [(o.label, o.ticks) for o in direct.ops] == through
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LG_COORDINATOR", farm["LG_COORDINATOR"])
        with lab.acquired(board, PLACE) as boards:
            assert labfarm.acquired_by(env, PLACE)
            remote = tune(small_mobilenet, tmp_path / "farm-tune", [], pool=BoardPool(board, boards))
    assert plan(remote) == one_board

    # Ctrl-C in the middle of a tune, SIGTERM in the middle of a measure through the farm: the place is released
    interrupt_releases(env, signal.SIGINT, "tune", str(small_mobilenet), "-b", "qemu-m4", "--place", PLACE,
                       "-o", str(tmp_path / "interrupted"))
    fresh = dict(env, MCUDEPLOY_CACHE=str(fresh_cache(tmp_path / "cache-interrupted")))
    interrupt_releases(fresh, signal.SIGTERM, "measure", str(small_mobilenet), "-b", "qemu-m4", "--place", PLACE)


def interrupt_releases(env: dict, sig: int, *argv: str) -> None:
    """``sig`` sent to the command once it holds the place: it ends with status 130 and the place is free."""
    import labfarm

    proc = subprocess.Popen([sys.executable, "-m", "mcudeploy", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not labfarm.acquired_by(env, PLACE):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert labfarm.acquired_by(env, PLACE) == ""
