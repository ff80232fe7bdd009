"""A labgrid farm on the loopback interface for the tests: a coordinator, an RFC 2217 bridge in
front of where an emulated board's UART will be (mcudeploy/device/bridge.py), an exporter that
exports the bridge as a NetworkSerialPort, and a place holding it, tagged with the board's name and
its emulator's port (so mcudeploy flashes it by starting QEMU there, mcudeploy/device/farm.py)."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from mcudeploy.device import qemu
from mcudeploy.device.processes import end_group


def labgrid_tool(name: str) -> str:
    """A labgrid command beside this Python (its venv) or on PATH; '' if labgrid is not installed."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or "")


def _start(cmd: list, log: Path, env: dict) -> subprocess.Popen:
    with open(log, "wb") as out:
        # cwd: the coordinator keeps its places in places.yaml there
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=log.parent)


def client(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, labgrid_tool("labgrid-client"), *args], capture_output=True, text=True,
                          env=env, timeout=60)


def _wait(what: str, ready, procs: list, logs: list, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        for proc, log in zip(procs, logs):
            if proc.poll() is not None:
                raise RuntimeError(f"{what}: {proc.args[1]} ended: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready within {timeout:g} s: " + " | ".join(l.read_text()[-500:] for l in logs))
        time.sleep(0.2)


@contextlib.contextmanager
def loopback_farm(folder: Path, board: str, place: str = "mcud-test") -> Iterator[dict]:
    """Yields the environment (LG_COORDINATOR set) under which ``place`` is the farm's one place."""
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["LG_COORDINATOR"] = f"127.0.0.1:{qemu.free_port()}"
    emulator_port, bridge_port = qemu.free_port(), qemu.free_port()
    config = folder / "exporter.yaml"
    config.write_text(f"{place}-uart:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {bridge_port}\n"
                      f"    speed: 115200\n    protocol: rfc2217\n")
    procs, logs = [], []
    try:
        logs.append(folder / "coordinator.log")
        procs.append(_start([sys.executable, labgrid_tool("labgrid-coordinator"), "-l", env["LG_COORDINATOR"]],
                            logs[-1], env))
        logs.append(folder / "bridge.log")
        procs.append(_start([sys.executable, "-m", "mcudeploy.device.bridge", "--listen", f"127.0.0.1:{bridge_port}",
                             f"socket://127.0.0.1:{emulator_port}"], logs[-1], env))
        _wait("the coordinator", lambda: client(env, "places").returncode == 0, procs, logs)
        logs.append(folder / "exporter.log")
        procs.append(_start([sys.executable, labgrid_tool("labgrid-exporter"), "-c", env["LG_COORDINATOR"], "--name",
                             "mcud-exporter", "--hostname", "127.0.0.1", str(config)], logs[-1], env))
        _wait("the exporter", lambda: "NetworkSerialPort" in client(env, "resources").stdout, procs, logs)
        for args in (("create",), ("add-match", "mcud-exporter/*/NetworkSerialPort"),
                     ("set-tags", f"board={board}", f"emulator=socket://127.0.0.1:{emulator_port}")):
            done = client(env, "-p", place, *args)
            assert done.returncode == 0, done.stderr
        yield env
    finally:
        for proc in reversed(procs):
            end_group(proc.pid)
        from mcudeploy.device import emulator

        emulator.end_emulators_on(emulator_port)


def acquired_by(env: dict, place: str) -> str:
    """Who holds the place ('' if nobody), as labgrid-client shows it."""
    shown = client(env, "-p", place, "show").stdout
    for line in shown.splitlines():
        if line.strip().startswith("acquired:"):
            value = line.split(":", 1)[1].strip()
            return "" if value == "None" else value
    return ""
