"""Process groups of the helpers mcudeploy starts in the background (PlatformIO, emulators):
whether one is alive, and ending a whole group (TERM, then KILL)."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


def group_alive(pgid: int) -> bool:
    """Some live (not zombie) process is in process group ``pgid``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def end_group(pid: int) -> None:
    """End the process group led by ``pid`` and everything in it (the leader may have gone
    first): SIGTERM, and SIGKILL for what is left after 3 s."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not group_alive(pid):
            return


def command_lines() -> dict[int, bytes]:
    """pid -> command line (NUL-separated) of every process that can be read."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = (entry / "cmdline").read_bytes()
            except OSError:
                continue
    return out
