"""One byte stream to a board, over any pyserial URL, with explicit timeouts.

The same code talks to a real board (``/dev/ttyACM0``), to QEMU (``socket://127.0.0.1:PORT``)
and to tests (``loop://``). Every read names its timeout:

``read(n, timeout)`` returns as soon as ``n`` bytes have arrived, or once ``timeout``
seconds have passed with whatever did arrive (possibly ``b""``). It never waits longer than
``timeout`` and a timeout is not an error: the caller decides what silence means. A link that
breaks (the emulator exited, the cable was pulled) raises :class:`LinkLost`.
"""
from __future__ import annotations

import logging
import socket
import time
from typing import Optional

import serial
from serial.urlhandler import protocol_socket

from mcudeploy import interrupts
from mcudeploy.errors import MCUDeployError

log = logging.getLogger(__name__)
POLL = 0.1  # longest single wait: a signal deferred meanwhile is honoured within this


class LinkLost(MCUDeployError):
    """The connection to the board went away."""


class Transport:
    def __init__(self, port, url: str):
        self._port = port
        self.url = url

    @classmethod
    def open(cls, url: str, baudrate: int = 115200, connect_timeout: float = 0.0) -> "Transport":
        """Open ``url``; retry for up to ``connect_timeout`` seconds while nothing listens there yet."""
        deadline = time.monotonic() + connect_timeout
        while True:
            try:
                # pyserial's RFC 2217 client (a farm's network serial port) has no write timeout
                extra = {} if url.startswith("rfc2217://") else {"write_timeout": 10}
                if url.startswith("socket://"):
                    port = _SocketPort(url, baudrate=baudrate, timeout=0, **extra)
                else:
                    port = serial.serial_for_url(url, baudrate=baudrate, timeout=0, **extra)
                return cls(port, url)
            except (serial.SerialException, OSError, ValueError) as exc:
                if time.monotonic() >= deadline:
                    raise LinkLost(f"cannot open {url}: {_reason(exc)}") from None
                time.sleep(0.02)

    def write(self, data: bytes) -> None:
        try:
            self._port.write(data)
            self._port.flush()
        except (serial.SerialException, OSError) as exc:
            raise LinkLost(f"writing to {self.url} failed: {_reason(exc)}") from None

    def read(self, n: int, timeout: float) -> bytes:
        """Up to ``n`` bytes: all of them if they arrive within ``timeout`` seconds, else what came."""
        deadline = time.monotonic() + max(timeout, 0.0)
        data = bytearray()
        try:
            while len(data) < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    # one non-blocking look, so that a timeout of 0 still returns what is buffered
                    self._port.timeout = 0
                    data += self._port.read(n - len(data))
                    break
                self._port.timeout = min(remaining, POLL)
                chunk = self._port.read(n - len(data))
                if chunk:
                    data += chunk
                else:
                    interrupts.check()  # a signal that came while waiting ends the wait
        except (serial.SerialException, OSError) as exc:
            if data:
                return bytes(data)
            raise LinkLost(f"the connection to {self.url} was lost: {_reason(exc)}") from None
        return bytes(data)

    def discard_input(self) -> int:
        """Drop whatever has arrived and not been read; return how many bytes that was."""
        dropped = 0
        while True:
            chunk = self.read(4096, 0.0)
            if not chunk:
                return dropped
            dropped += len(chunk)

    def close(self) -> None:
        try:
            self._port.close()
        except (serial.SerialException, OSError):  # already gone
            pass

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _SocketPort(protocol_socket.Serial):
    """pyserial's ``socket://`` port, with two changes.

    It keeps what arrives while it opens: pyserial's ``open`` discards the input after connecting, but a
    connection is new, so nothing before it is stale, and an emulator that holds its guest until the host
    connects (QEMU's ``wait=on``) starts it then: a firmware that writes its BOOT frame at once lost it
    whenever the host was slower than the guest (seen on qemu-m0 in CI: ``boots_seen == 0``).

    It closes without the 0.3 s sleep its ``close`` takes "in case of quick reconnects": whoever connects
    again here retries until the board answers (``Transport.open``'s ``connect_timeout``; an emulator's
    listening socket queues the connection meanwhile), and a session that starts and stops an emulator per
    run lost 0.3 s at each stop (39 s of a 90 s fault campaign)."""

    _opening = False

    def open(self) -> None:
        self._opening = True
        try:
            super().open()
        finally:
            self._opening = False

    def reset_input_buffer(self) -> None:
        if not self._opening:
            super().reset_input_buffer()

    def close(self) -> None:
        if self.is_open and self._socket:
            sock, self._socket = self._socket, None
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # the other end went first
                pass
            sock.close()
        self.is_open = False


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().rstrip(".")
    return text or type(exc).__name__


def open_transport(url: str, baudrate: Optional[int] = None, connect_timeout: float = 0.0) -> Transport:
    return Transport.open(url, baudrate or 115200, connect_timeout)
