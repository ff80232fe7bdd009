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


def test_what_the_peer_sends_at_once_is_kept(monkeypatch):
    """An emulator that holds its guest until the host connects starts it then; its first frame may arrive
    before pyserial's open ends, which used to discard it (the guest is made faster than the host here)."""
    import select
    import threading

    from mcudeploy.device import transport

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def guest():
        peer, _ = server.accept()
        peer.sendall(b"BOOT")
        time.sleep(1.0)
        peer.close()

    def slow_host(port):  # inside open, after connecting: wait until the guest has written
        select.select([port._socket], [], [], 5.0)

    monkeypatch.setattr(transport._SocketPort, "_reconfigure_port", slow_host)
    thread = threading.Thread(target=guest)
    thread.start()
    link = Transport.open(f"socket://127.0.0.1:{server.getsockname()[1]}")
    try:
        assert link.read(4, 2.0) == b"BOOT"
    finally:
        link.close()
        thread.join()
        server.close()
