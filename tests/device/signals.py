"""Helpers of the signal tests: run a command in its own process, interrupt it, and find what it
left running. Every process the command starts inherits a tag in its environment, so emulators
left behind are found even after they were re-parented."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from object_cache import fresh_cache

TAG = "MCUDEPLOY_TEST_TAG"
# How long after the signal an interrupted command may take to end: it stops at once (a few hundredths
# of a second when idle), but two test workers, their emulators and compilers share two cores in CI.
# The bound tells an interruption honoured from one that waited for the work (tens of seconds) to end.
PROMPT = 8.0


@dataclass
class Ended:
    returncode: int
    seconds_after_signal: float
    stdout: str
    stderr: str


def tagged_env(cache: Path) -> tuple[dict, str]:
    tag = uuid.uuid4().hex
    return {**os.environ, "MCUDEPLOY_CACHE": str(fresh_cache(cache)), TAG: tag}, tag


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mcudeploy", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def interrupt(proc: subprocess.Popen, after: float, sig: int = signal.SIGINT, limit: float = 30.0) -> Ended:
    """Send ``sig`` ``after`` seconds from now (unless the command ended first) and wait for the end."""
    try:
        proc.wait(after)
        sent = None
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
        sent = time.monotonic()
    out, err = proc.communicate(timeout=limit)
    return Ended(proc.returncode, (time.monotonic() - sent) if sent else 0.0, out, err)


def left_running(tag: str) -> list[str]:
    """Command lines of live processes that carry ``tag`` (the command and what it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if f"{TAG}={tag}".encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            found.append(cmd[:120])
    return found
