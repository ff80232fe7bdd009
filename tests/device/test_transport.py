"""read(n, timeout): what arrived, never a wait longer than the timeout; a dead link is one sentence."""
from __future__ import annotations

import socket
import time

import pytest
import serial

from mcudeploy.device.qemu import free_port
from mcudeploy.device.transport import LinkLost, Transport


def test_read_returns_what_arrived_when_the_timeout_expires():
    link = Transport(serial.serial_for_url("loop://", timeout=0), "loop://")
    link.write(b"abc")
    start = time.monotonic()
    assert link.read(10, 0.2) == b"abc"
    assert 0.15 < time.monotonic() - start < 1.0
    link.write(b"defgh")
    start = time.monotonic()
    assert link.read(3, 5.0) == b"def"  # returns as soon as n bytes are there
    assert time.monotonic() - start < 0.5
    assert link.read(10, 0.0) == b"gh"  # a timeout of 0 still returns what is buffered
    assert link.read(10, 0.0) == b""
    link.write(b"zz")
    assert link.discard_input() == 2


def test_open_retries_until_its_connect_timeout_then_says_so():
    port = free_port()
    start = time.monotonic()
    with pytest.raises(LinkLost, match=f"cannot open socket://127.0.0.1:{port}"):
        Transport.open(f"socket://127.0.0.1:{port}", connect_timeout=0.3)
    assert 0.25 < time.monotonic() - start < 2.0


def test_a_closed_peer_is_a_lost_link():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    link = Transport.open(f"socket://127.0.0.1:{server.getsockname()[1]}")
    peer, _ = server.accept()
    peer.sendall(b"hi")
    assert link.read(2, 1.0) == b"hi"
    peer.close()
    server.close()
    with pytest.raises(LinkLost, match="was lost"):
        link.read(1, 1.0)
    link.close()
