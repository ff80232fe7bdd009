"""A pool of emulated boards (tune --boards 2): the kernels to time go to whichever emulator is free,
the plan is the one a single board gives, and an emulator killed in the middle of the tune is taken
out of the pool with a warning while its work is done again on the other."""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from mcudeploy.device.session import Session
from mcudeploy.search import Tuner, space
from mcudeploy.simulate.timing_cache import TimingCache

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


def tune(model, tmp_path, name: str, boards: int, lines: list):
    return Tuner(model, "qemu-m4", tmp_path / name, time_limit=600, progress=lines.append, effort=0.3, budget=4,
                 top_segments=4, pieces=(2, 4), cache=TimingCache("qemu-m4", tmp_path / f"cache-{name}"),
                 boards=boards).run()


def plan(result) -> tuple:
    return (space.scheme_key(result.best.scheme), result.best.arena, result.best.ticks, result.best.run_ticks,
            result.baseline.ticks)


def test_two_emulators_give_the_plan_of_one_even_when_one_dies(small_mobilenet, tmp_path, monkeypatch, need_qemu):
    one_lines, two_lines = [], []
    one = tune(small_mobilenet, tmp_path, "one", 1, one_lines)
    assert one.best.scheme, "\n".join(one_lines)
    killed = []
    real_run_op = Session.run_op

    def run_op(self, index, repeat=1):
        # the second board's emulator dies in the middle of a chunk of kernels, once both boards are busy
        if not killed and threading.current_thread().name == "pool-board 2" and one_lines_busy(two_lines):
            killed.append(qemu_on(self.transport.url))
            os.kill(killed[0], signal.SIGKILL)
        return real_run_op(self, index, repeat)

    monkeypatch.setattr(Session, "run_op", run_op)
    two = tune(small_mobilenet, tmp_path, "two", 2, two_lines)
    assert killed
    assert any("warning: board 2 stopped answering" in line and "done again on another" in line
               for line in two_lines), "\n".join(two_lines)
    assert plan(two) == plan(one)


def one_lines_busy(lines: list) -> bool:
    return any("2/2 boards busy" in line for line in lines)
