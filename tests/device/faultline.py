"""A serial line that damages one frame: the fault injector of the fault campaigns.

``FaultyTransport`` sits where the host's Transport would, in front of the real one (QEMU's
socket, a board's serial port), and cuts both byte streams into frames the way a sniffer does
(magic, length, CRC; bytes outside a frame pass as they are). Frame ``index`` of one direction
("request": host to board, "reply": board to host, BOOT and ACK frames included) gets one
fault:

- ``flip``: one bit anywhere in the frame, magic and checksum included;
- ``truncate``: only its first half arrives;
- ``drop``: it never arrives;
- ``duplicate``: it arrives twice;
- ``delay``: it arrives ``delay`` seconds late (past the host's answer timeout), and what
  follows it in that direction waits behind it, as on a line that stalls;
- ``noise``: random bytes arrive before it (half the time with the frame magic among them).

``inject(fault)`` installs it for every Transport the code under test opens (a context manager
over ``Transport.open``); ``Tally`` counts outcomes. The campaign runs a command once cleanly
to learn how many frames each direction carries, then once per (kind, direction, frame).
"""
from __future__ import annotations

import contextlib
import random
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator, Optional

from mcudeploy.device import protocol as P
from mcudeploy.device.transport import Transport

KINDS = ("flip", "truncate", "drop", "duplicate", "delay", "noise")
DIRECTIONS = ("request", "reply")


@dataclass(frozen=True)
class Fault:
    kind: str
    direction: str
    index: int
    seed: int = 0
    delay: float = 2.0

    def __str__(self) -> str:
        return f"{self.kind} {self.direction} #{self.index}"


class _Stream:
    """One direction: bytes in, frames cut out, the fault applied, bytes out when they are due."""

    def __init__(self, fault: Optional[Fault], counts: dict, name: str):
        self.fault = fault if fault is not None and fault.direction == name else None
        self.counts = counts
        self.name = name
        self.buf = bytearray()
        self.out: deque[tuple[float, bytes]] = deque()  # (release time, bytes), in order
        self.hit = False

    def feed(self, data: bytes) -> None:
        self.buf += data
        while self.buf:
            start = self.buf.find(P.MAGIC)
            if start != 0:  # bytes before a frame (noise of the line's own): pass them on
                cut = len(self.buf) if start < 0 else start
                if start < 0 and self.buf[-1:] == P.MAGIC[:1]:
                    cut -= 1
                if cut == 0:
                    return
                self._emit(bytes(self.buf[:cut]))
                del self.buf[:cut]
                continue
            if len(self.buf) < P.HEADER:
                return
            (n,) = struct.unpack_from("<H", self.buf, 6)
            if n > P.MAX_PAYLOAD:  # not a frame after all
                self._emit(bytes(self.buf[:1]))
                del self.buf[:1]
                continue
            total = P.HEADER + n + P.TRAILER
            if len(self.buf) < total:
                return
            frame = bytes(self.buf[:total])
            del self.buf[:total]
            self._frame(frame)

    def _frame(self, frame: bytes) -> None:
        index = self.counts.get(self.name, 0)
        self.counts[self.name] = index + 1
        f = self.fault
        if f is None or f.index != index or self.hit:
            self._emit(frame)
            return
        self.hit = True
        rng = random.Random(f"{f.seed}:{f}")
        if f.kind == "flip":
            bit = rng.randrange(len(frame) * 8)
            damaged = bytearray(frame)
            damaged[bit // 8] ^= 1 << (bit % 8)
            self._emit(bytes(damaged))
        elif f.kind == "truncate":
            self._emit(frame[:max(len(frame) // 2, 1)])
        elif f.kind == "drop":
            pass
        elif f.kind == "duplicate":
            self._emit(frame + frame)
        elif f.kind == "delay":
            self._emit(frame, time.monotonic() + f.delay)
        elif f.kind == "noise":
            noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 24)))
            if rng.random() < 0.5:
                noise += P.MAGIC + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 8)))
            self._emit(noise + frame)
        else:
            raise ValueError(f"unknown fault kind {f.kind}")

    def _emit(self, data: bytes, when: float = 0.0) -> None:
        if self.out:  # keep the order: nothing overtakes a held frame
            when = max(when, self.out[-1][0])
        self.out.append((when, data))

    def due(self, now: float) -> bytes:
        data = bytearray()
        while self.out and self.out[0][0] <= now:
            data += self.out.popleft()[1]
        return bytes(data)

    def next_release(self) -> Optional[float]:
        return self.out[0][0] if self.out else None


class FaultyTransport(Transport):
    """The host's side of a line with one fault on it (see the module)."""

    def __init__(self, inner: Transport, fault: Optional[Fault], counts: dict):
        super().__init__(inner._port, inner.url)
        self.inner = inner
        self.requests = _Stream(fault, counts, "request")
        self.replies = _Stream(fault, counts, "reply")
        self._ready = bytearray()

    def _flush_requests(self) -> None:
        data = self.requests.due(time.monotonic())
        if data:
            self.inner.write(data)

    def write(self, data: bytes) -> None:
        self.requests.feed(data)
        self._flush_requests()

    def _pump(self, wait: float) -> None:
        chunk = self.inner.read(1, wait)
        if chunk:
            chunk += self.inner.read(4096, 0.0)
            self.replies.feed(chunk)
        self._ready += self.replies.due(time.monotonic())
        self._flush_requests()

    def read(self, n: int, timeout: float) -> bytes:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            self._pump(0.0)
            if self._ready:
                out = bytes(self._ready[:n])
                del self._ready[:n]
                return out
            now = time.monotonic()
            if now >= deadline:
                return b""
            wake = min(t for t in (deadline, self.replies.next_release(), self.requests.next_release())
                       if t is not None)
            self._pump(min(max(wake - now, 0.0), 0.05))

    def discard_input(self) -> int:
        self._pump(0.0)
        dropped = len(self._ready)
        self._ready.clear()
        return dropped + self.inner.discard_input()

    def close(self) -> None:
        self.inner.close()


@contextlib.contextmanager
def inject(fault: Optional[Fault], counts: Optional[dict] = None) -> Iterator[dict]:
    """Every Transport opened inside is a FaultyTransport with ``fault`` (None: a clean line that
    only counts frames); yields the frame counts per direction, summed over every link."""
    counts = {} if counts is None else counts
    real_open = Transport.open.__func__

    def faulty_open(cls, url, baudrate=115200, connect_timeout=0.0):
        return FaultyTransport(real_open(Transport, url, baudrate, connect_timeout), fault, counts)

    Transport.open = classmethod(faulty_open)
    try:
        yield counts
    finally:
        Transport.open = classmethod(real_open)


@dataclass
class Tally:
    """Outcomes of a campaign: right results, clear errors, and the failures (wrong results with
    exit 0, hangs, tracebacks, errors of more than one sentence) with the fault that caused them."""
    right: int = 0
    errors: int = 0
    failures: list[str] = field(default_factory=list)
    error_kinds: dict = field(default_factory=dict)

    @property
    def tried(self) -> int:
        return self.right + self.errors + len(self.failures)

    def line(self, what: str) -> str:
        return (f"{what}: {self.tried} faults tried, {self.right} right results, {self.errors} clear errors, "
                f"{len(self.failures)} failures")


def plan(counts: dict, kinds=KINDS, stride: int = 1, seed: int = 0, delay: float = 2.0) -> list[Fault]:
    """Every (kind, direction, frame) of a conversation with ``counts`` frames per direction; with
    ``stride`` > 1, every stride-th frame, the offset turning with the kind so every frame gets some."""
    faults = []
    for k, kind in enumerate(kinds):
        for direction in DIRECTIONS:
            for index in range(k % stride, counts.get(direction, 0), stride):
                faults.append(Fault(kind, direction, index, seed, delay))
    return faults
