"""Two emulated boards at once: each flashed on its own port, each its own session. Runs on the
two, in turn, are right (bit for bit with the host build); an idle flashed board sleeps (it
costs no host core) and times operators as before; --stop stops the one on --port, --all both."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from devmodels import matmul

from mcudeploy.check import random_inputs
from mcudeploy.device import emulator, qemu
from mcudeploy.check.against_host import compare_with_host
from mcudeploy.device.runner import run_on_board
from mcudeploy.compile import compile_model
from object_cache import fresh_cache

pytestmark = pytest.mark.qemu
IDLE_S = 8.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks of 1/100 s


def qemu_pid(port: int) -> int:
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if cmd.startswith(b"/") and b"qemu-system-arm" in cmd.split(b"\0")[0] and f"tcp:127.0.0.1:{port},".encode() in cmd:
            return int(entry.name)
    raise AssertionError(f"no QEMU listens on port {port}")


def mcudeploy(*args: str, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcudeploy", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_two_boards_flashed_run_in_turn_and_idle(tmp_path, need_qemu, monkeypatch):
    import os

    cache = tmp_path / "cache"
    monkeypatch.setenv("MCUDEPLOY_CACHE", str(fresh_cache(cache)))
    env = dict(os.environ)
    models = [matmul(tmp_path / "a.onnx", 16, k=64, n=32, seed=1), matmul(tmp_path / "b.onnx", 8, k=96, n=48, seed=2)]
    ports = [qemu.free_port(), qemu.free_port()]
    urls = [f"socket://127.0.0.1:{p}" for p in ports]
    try:
        for model, url in zip(models, urls):
            done = mcudeploy("flash", str(model), "-b", "qemu-m4", "--port", url, env=env)
            assert done.returncode == 0, done.stderr
        assert {e.port for e in emulator.running_emulators("qemu-m4")} == set(ports)  # the second left the first
        compiled = [compile_model(m, "qemu-m4") for m in models]
        samples = [random_inputs(c.graph, 2, seed=k) for k, c in enumerate(compiled)]
        first_ticks = {}
        for turn in range(5):
            for k in (0, 1):
                run = run_on_board(compiled[k], samples[k], port=urls[k])
                same, lines = compare_with_host(compiled[k], run.outputs, samples[k])
                assert same, (turn, k, lines)
                first_ticks.setdefault(k, run.runs[0].op_ticks)
                assert run.runs[0].op_ticks == first_ticks[k]
        pids = [qemu_pid(p) for p in ports]
        before = [cpu_seconds(pid) for pid in pids]
        time.sleep(IDLE_S)
        used = [(cpu_seconds(pid) - b) / IDLE_S for pid, b in zip(pids, before)]
        assert all(u < 0.05 for u in used), f"idle emulators used {used} of a core"
        for k in (0, 1):  # asleep and woken: the same ticks per operator
            assert run_on_board(compiled[k], samples[k], port=urls[k]).runs[0].op_ticks == first_ticks[k]
        done = mcudeploy("flash", "-b", "qemu-m4", "--stop", env=env)
        assert done.returncode == 1 and "say which with --port, or stop them all with --all" in done.stderr
        done = mcudeploy("flash", "-b", "qemu-m4", "--stop", "--port", urls[0], env=env)
        assert done.returncode == 0 and [e.port for e in emulator.running_emulators("qemu-m4")] == [ports[1]]
    finally:
        mcudeploy("flash", "-b", "qemu-m4", "--stop", "--all", env=env)
    assert not emulator.running_emulators("qemu-m4")
