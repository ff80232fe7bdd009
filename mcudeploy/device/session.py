"""A conversation with the measurer firmware: identify, load inputs, run, read outputs and ticks.

Retry policy, per request:

- a reply that arrives damaged (bad checksum, cut short) or an ERROR saying the device saw a
  damaged request: send the same request again (same sequence number), at most ``retries``
  more times, all within the request's timeout;
- silence until the timeout: one sentence, "board X did not answer within N s";
- a BOOT frame while a reply is awaited: the board restarted (crash, watchdog, power), the
  inputs it held are gone, and the run stops with one sentence saying so;
- a reply with another sequence number is a late answer to an earlier attempt: skipped.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from mcudeploy.device import protocol as P
from mcudeploy.errors import MCUDeployError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
RUN_TIMEOUT = 300.0


@dataclass(frozen=True)
class RunResult:
    total_ticks: int
    op_ticks: tuple[int, ...]


@dataclass(frozen=True)
class OpTiming:
    repeat: int
    total: int
    min: int
    max: int

    @property
    def mean(self) -> float:
        return self.total / self.repeat


class Session:
    def __init__(self, transport, board: str, timeout: float = DEFAULT_TIMEOUT, run_timeout: float = RUN_TIMEOUT,
                 retries: int = 3, gap: float = 1.0):
        self.transport = transport
        self.board = board
        self.timeout = timeout
        self.run_timeout = run_timeout
        self.retries = retries
        self.reader = P.FrameReader(gap)
        self.info: Optional[P.DeviceInfo] = None
        self.boots_seen = 0
        self._seq = 0

    # ------------------------------------------------------------------ plumbing

    def _next_seq(self) -> int:
        self._seq = self._seq % 0xFFFF + 1  # 1 .. 65535; 0 is BOOT's
        return self._seq

    def request(self, command: P.Command, payload: bytes = b"", timeout: Optional[float] = None) -> bytes:
        timeout = self.timeout if timeout is None else timeout
        seq = self._next_seq()
        raw = P.encode(P.Frame(command, seq, payload))
        deadline = time.monotonic() + timeout
        damage = []
        for attempt in range(self.retries + 1):
            if attempt:
                log.info("board %s: resending %s (attempt %d): %s", self.board, command.name, attempt + 1, damage[-1])
            self.transport.write(raw)
            while True:
                try:
                    reply = self.reader.read(self.transport, deadline)
                except P.FrameError as exc:
                    damage.append(f"damaged reply: {exc}")
                    break
                if reply is None:
                    raise MCUDeployError(f"board {self.board} did not answer {command.name} within {timeout:g} s")
                if reply.command == P.Command.BOOT:
                    self.boots_seen += 1
                    raise MCUDeployError(f"board {self.board} restarted while handling {command.name} "
                                         f"(a crash, a watchdog or a power glitch), so its state is lost")
                if reply.command == P.Command.ERROR:
                    code, message = P.parse_error(reply.payload)
                    if code in P.RETRYABLE:
                        damage.append(f"the board received a damaged request ({message})")
                        break
                    if reply.seq != seq:
                        continue
                    raise MCUDeployError(f"board {self.board} refused {command.name}: {message}")
                if reply.seq != seq or reply.command != (command | P.REPLY):
                    log.debug("board %s: skipping a stale frame (command 0x%02x, seq %d)", self.board,
                              reply.command, reply.seq)
                    continue
                return reply.payload
            if time.monotonic() >= deadline:
                break
        raise MCUDeployError(f"board {self.board} answered {command.name} only with damaged frames "
                             f"after {len(damage)} attempt(s) (last: {damage[-1]})")

    # ------------------------------------------------------------------ commands

    def open(self, boot_wait: float = 0.0) -> P.DeviceInfo:
        """Start talking: take the BOOT frame if one comes within ``boot_wait`` s, drop stale bytes, IDENTIFY."""
        if boot_wait > 0:
            try:
                frame = self.reader.read(self.transport, time.monotonic() + boot_wait)
            except P.FrameError:
                frame = None
            if frame is not None and frame.command == P.Command.BOOT:
                self.boots_seen += 1
        self.reader.clear()
        self.transport.discard_input()
        return self.identify()

    def identify(self) -> P.DeviceInfo:
        try:
            self.info = P.parse_identify(self.request(P.Command.IDENTIFY))
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed IDENTIFY reply ({exc})") from None
        if self.info.protocol != P.VERSION:
            raise MCUDeployError(f"board {self.board} speaks protocol version {self.info.protocol}; "
                                 f"this mcudeploy speaks {P.VERSION}: flash it again")
        return self.info

    def _chunk(self) -> int:
        return min(P.MAX_PAYLOAD, self.info.max_payload if self.info else P.MAX_PAYLOAD) - 8

    def load_input(self, index: int, data: bytes) -> None:
        step = self._chunk()
        for offset in range(0, len(data), step):
            self.request(P.Command.LOAD_INPUT, P.pack_load_input(index, offset, data[offset:offset + step]))

    def load_input_file(self, index: int, path: str, file_offset: int, length: int) -> None:
        """Emulated boards: the firmware reads input ``index`` from ``length`` bytes of a host file."""
        self.request(P.Command.LOAD_INPUT_FILE, P.pack_load_input_file(index, 0, length, file_offset, path))

    def read_output(self, index: int, nbytes: int) -> bytes:
        step = self._chunk()
        out = bytearray()
        for offset in range(0, nbytes, step):
            length = min(step, nbytes - offset)
            chunk = self.request(P.Command.READ_OUTPUT, P.pack_read_output(index, offset, length))
            if len(chunk) != length:
                raise MCUDeployError(f"board {self.board} returned {len(chunk)} bytes of output {index} "
                                     f"where {length} were asked")
            out += chunk
        return bytes(out)

    def run(self) -> RunResult:
        try:
            total, ops = P.unpack_run(self.request(P.Command.RUN, timeout=self.run_timeout))
            ticks: list[int] = []
            step = self._chunk() // 8
            for first in range(0, ops, step):
                count = min(step, ops - first)
                ticks += P.unpack_u64s(self.request(P.Command.READ_TICKS, P.pack_read_ticks(first, count)), count)
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed RUN reply ({exc})") from None
        return RunResult(total, tuple(ticks))

    def run_op(self, op: int, repeat: int = 1) -> OpTiming:
        payload = self.request(P.Command.RUN_OP, P.pack_run_op(op, repeat), timeout=self.run_timeout)
        try:
            total, lo, hi = P.unpack_u64s(payload, 3)
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed RUN_OP reply ({exc})") from None
        return OpTiming(repeat, total, lo, hi)

    def calibrate(self, iterations: int) -> int:
        return P.unpack_u64s(self.request(P.Command.CALIBRATE, P.pack_calibrate(iterations),
                                          timeout=self.run_timeout), 1)[0]

    def echo(self, data: bytes) -> bytes:
        return self.request(P.Command.ECHO, data)

    def infer(self, inputs: Sequence[bytes], output_bytes: Sequence[int]) -> tuple[list[bytes], RunResult]:
        """Load every input, run once, read every output."""
        for i, data in enumerate(inputs):
            self.load_input(i, data)
        result = self.run()
        return [self.read_output(i, n) for i, n in enumerate(output_bytes)], result

    def reset(self) -> None:
        self.request(P.Command.RESET)

    def exit(self, code: int = 0) -> None:
        """Ask an emulated board to end the emulator with ``code``."""
        self.request(P.Command.EXIT, bytes([code & 0xFF]))
