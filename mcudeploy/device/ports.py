"""TCP ports on 127.0.0.1 for emulators' UARTs and links: free now, and given to no one else until they are used.

A port that ``bind(("127.0.0.1", 0))`` reports free is free only at that moment: the kernel draws it from its
ephemeral range, from which it also gives every outgoing connection its local port and every other process's
``bind(0)`` its port, so by the time QEMU binds it (after a build, or a whole system's chips later) another test's
connection may hold it ("Address already in use"). ``free_port`` therefore hands out ports from below the ephemeral
range (/proc/sys/net/ipv4/ip_local_port_range), which the kernel gives no one unasked, and notes each in a file
shared by this user's mcudeploy processes, so that none is handed out twice within HOLD_SECONDS; a port something
listens on (or holds) is passed over by a bind test. Where the range leaves no room below it, the kernel's choice.
"""
from __future__ import annotations

import json
import os
import random
import socket
import tempfile
import time
from pathlib import Path

from mcudeploy.files import locked, write_atomic

HOLD_SECONDS = 900.0  # long enough for a flash of a whole system: every chip's port is chosen before the builds
LOWEST = 20000  # below the usual ephemeral range (32768-60999) and above the common services' ports
GIVEN = Path(tempfile.gettempdir()) / f"mcudeploy-{os.getuid()}-ports.json"
RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
TRIES = 200


def free_port() -> int:
    """A port nothing listens on and no mcudeploy process of this user was given in the last HOLD_SECONDS."""
    top = _ephemeral_start()
    if top - LOWEST < 1000:
        return _kernel_port()
    with locked(GIVEN):
        now = time.time()
        given = {p: t for p, t in _read_given().items() if now - t < HOLD_SECONDS}
        for _ in range(TRIES):
            port = random.randrange(LOWEST, top)
            if port not in given and _bindable(port):
                given[port] = now
                _write_given(given)
                return port
    return _kernel_port()


def _ephemeral_start() -> int:
    try:
        return int(RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_given() -> dict[int, float]:
    try:
        return {int(p): float(t) for p, t in json.loads(GIVEN.read_text()).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}  # missing, or damaged: every port is checked by binding it anyway


def _write_given(given: dict[int, float]) -> None:
    write_atomic(GIVEN, json.dumps({str(p): t for p, t in given.items()}))
