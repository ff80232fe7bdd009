"""A conversation with the measurer firmware: identify, load inputs, run, read outputs and ticks.

Retry policy, per request (every command but RESET and EXIT is safe to send twice, see
protocol.py; each attempt sends the same frame, same sequence number):

- a reply that arrives damaged (bad checksum, cut short), an ERROR saying the device saw a
  damaged request, or silence for ``timeout`` seconds (plus the time the bytes need on the wire):
  send the request again, at most ``retries`` more times, each silence doubling the wait for the
  next attempt (a board or an emulator slowed by a loaded host answers late, not never); then one
  sentence saying what went wrong;
- an ACK (a long command has started): wait for its result, sending the request again now and
  then in case the result was lost (the device answers a repeat from what it kept, it does not
  run again), up to ``run_timeout`` seconds in all; once the same kind of command (a RUN, or
  one RUN_OP of one operator) has finished in this session, up to ``PATIENCE_FACTOR`` times the
  longest it took, but at least ``PATIENCE_FLOOR`` seconds: a board that froze after starting a
  run is named within seconds, not after ``run_timeout``;
- a BOOT frame while a reply is awaited: before the board has answered anything in this session,
  it just came up and the request is sent again; otherwise it restarted (crash, watchdog, power),
  what it held is gone, and the session stops with one sentence saying so, and why where the
  firmware noted a fault before its reset (BoardFault: the stack's guard, or a CPU fault);
- a reply with another sequence number is a late answer to an earlier attempt: skipped.

Every inference gets a run id of its own (``begin_run``): the device runs only on inputs loaded
under that id and hands out outputs and ticks only under the id of the run that made them, so a
request that is lost, repeated or late ends in an error, never in another inference's numbers.
"""
from __future__ import annotations

import logging
import random
import struct
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from mcudeploy.device import protocol as P
from mcudeploy.errors import MCUDeployError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 1.0  # silence after a request (beyond the time its bytes need on the wire) before resending
GAP = 1.0  # silence inside a frame that has begun before it counts as cut short
RUN_TIMEOUT = 300.0
# Once a kind of long command has finished, a later one may take this many times its longest
# (a loaded host slows an emulator several times over), and at least this many seconds.
PATIENCE_FACTOR = 20.0
PATIENCE_FLOOR = 30.0
BACKOFF_CAP = 8  # a silent attempt doubles the next one's wait, up to this many times the first's


class Refused(MCUDeployError):
    """The board answered a request with ERROR (``code``: protocol.ErrorCode)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class StackUse:
    """READ_STACK's answer: the firmware's stack and the most of it used since the board started."""
    size: int
    used: int

    @property
    def overflowed(self) -> bool:
        return self.used >= self.size

    def describe(self) -> str:
        if self.overflowed:
            return f"stack: all {self.size:,} B used (it likely overflowed into the memory below it)"
        return f"stack: at most {self.used:,} of {self.size:,} B used"


class NoAnswer(MCUDeployError):
    """The board stopped answering: silence, or a restart in the middle of a request (a pool of
    boards takes such a board out and gives its work to another, mcudeploy/device/pool.py)."""


class BoardFault(MCUDeployError):
    """The board restarted in the middle of a request after a fault its firmware noted (``boot``):
    the work itself fails there, so a pool does not hand it to another board."""

    def __init__(self, message: str, boot: P.Boot):
        super().__init__(message)
        self.boot = boot


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
    def __init__(self, transport, board: str, timeout: Optional[float] = None, run_timeout: float = RUN_TIMEOUT,
                 retries: int = 3, gap: Optional[float] = None, baud: int = 115200):
        self.transport = transport
        self.board = board
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        self.run_timeout = run_timeout
        self.retries = retries
        self.baud = baud
        self.reader = P.FrameReader(GAP if gap is None else gap)
        self.info: Optional[P.DeviceInfo] = None
        self.boots_seen = 0
        self.run_id = 0
        self._seq = 0
        self._next_run = random.SystemRandom().randrange(1, 1 << 32)
        self._answered = False  # the board has answered a request of this session
        self._longest: dict = {}  # per kind of long command, the longest it took from its ACK (s)

    # ------------------------------------------------------------------ plumbing

    def _next_seq(self) -> int:
        self._seq = self._seq % 0xFFFF + 1  # 1 .. 65535; 0 is BOOT's
        return self._seq

    def _wire_seconds(self, nbytes: int) -> float:
        """Time ``nbytes`` take on a UART at the session's baud rate (10 bits a byte)."""
        return nbytes * 10.0 / self.baud

    def _first_answer(self, raw: bytes) -> float:
        """How long the first attempt of request ``raw`` waits for its reply: the timeout plus the
        wire time of the request and of the longest reply."""
        return self.timeout + self._wire_seconds(len(raw) + P.HEADER + P.MAX_PAYLOAD + P.TRAILER)

    def request(self, command: P.Command, payload: bytes = b"", timeout: Optional[float] = None,
                kind=None) -> bytes:
        """Send one request and return its reply's payload (see the module's retry policy).

        ``timeout``: how long a started long command (one the device ACKs) may take in all
        (default ``run_timeout``, or what the longest of its ``kind`` so far allows; the kind
        defaults to the command and its payload)."""
        seq = self._next_seq()
        raw = P.encode(P.Frame(command, seq, payload))
        first = answer = self._first_answer(raw)
        kind = (command, payload) if kind is None else kind
        patience, why = self.run_timeout if timeout is None else timeout, ""
        if timeout is None and kind in self._longest:
            learnt = max(PATIENCE_FLOOR, PATIENCE_FACTOR * self._longest[kind])
            if learnt < patience:
                patience, why = learnt, f" ({PATIENCE_FACTOR:g} times the longest one took before, {self._longest[kind]:.2g} s)"
        problems: list[str] = []
        started: Optional[float] = None  # when the device acknowledged a long command
        poll, polls = answer, 0
        self.transport.write(raw)
        deadline = time.monotonic() + answer
        while True:
            resend = None
            try:
                frame = self.reader.read(self.transport, deadline)
            except P.FrameError as exc:
                frame, resend = None, f"a damaged reply ({exc})"
            if frame is None and resend is None:
                if started is not None:
                    if time.monotonic() - started >= patience and polls:
                        raise NoAnswer(f"board {self.board} started {command.name} but gave no result "
                                             f"within {patience:g} s{why}")
                    # the result may have been lost on the way: ask again (the device answers from what it kept)
                    log.info("board %s: no result of %s after %.1f s; asking again", self.board, command.name,
                             time.monotonic() - started)
                    self.transport.write(raw)
                    polls += 1
                    poll = min(poll * 2, 30.0)
                    deadline = time.monotonic() + poll
                    continue
                resend = f"no answer within {answer:.2g} s"
                answer = min(answer * 2, first * BACKOFF_CAP)
            elif frame is not None:
                if frame.command == P.Command.BOOT:
                    self.boots_seen += 1
                    if self._answered or started is not None:
                        self._restarted(command, frame.payload)
                    resend = "the board had just started"
                elif frame.command == P.Command.ERROR:
                    code, message = P.parse_error(frame.payload)
                    if code in P.RETRYABLE:
                        resend = f"the board received a damaged request ({message})"
                    elif frame.seq == seq:
                        raise Refused(f"board {self.board} refused {command.name}: {message}", code)
                elif frame.seq != seq:
                    log.debug("board %s: skipping a stale frame (command 0x%02x, seq %d)", self.board,
                              frame.command, frame.seq)
                elif frame.command == P.Command.ACK:
                    if started is None:
                        started = time.monotonic()
                    deadline = time.monotonic() + poll
                elif frame.command == (command | P.REPLY):
                    self._answered = True
                    if started is not None:
                        self._longest[kind] = max(self._longest.get(kind, 0.0), time.monotonic() - started)
                    return frame.payload
            if resend is None:
                continue
            problems.append(resend)
            if len(problems) > self.retries:
                failure = NoAnswer if all(p.startswith("no answer") for p in problems) else MCUDeployError
                raise failure(self._failure(command, problems))
            log.info("board %s: resending %s (attempt %d): %s", self.board, command.name, len(problems) + 1, resend)
            self.transport.write(raw)
            deadline = time.monotonic() + (poll if started is not None else answer)

    def _boot(self, payload: bytes) -> P.Boot:
        """A BOOT frame's payload; one cut short says no fault (it passed its checksum: the board did restart)."""
        try:
            return P.parse_boot(payload)
        except P.FrameError:
            return P.Boot(0, self.board)

    def _restarted(self, command: P.Command, payload: bytes) -> None:
        """The board restarted in the middle of ``command``: one sentence, with the fault it noted if any."""
        boot = self._boot(payload)
        why = boot.fault_text()
        if why:
            raise BoardFault(f"board {self.board} restarted while handling {command.name}: {why}, so its state is "
                             f"lost", boot)
        raise NoAnswer(f"board {self.board} restarted while handling {command.name} "
                       f"(a crash, a watchdog or a power glitch), so its state is lost")

    def _failure(self, command: P.Command, problems: list[str]) -> str:
        if all(p.startswith("no answer") for p in problems):
            first, last = problems[0].split()[-2], problems[-1].split()[-2]
            waits = f"{first} s each" if first == last else f"{first} s at first, {last} s at last"
            return (f"board {self.board} did not answer {command.name} "
                    f"({len(problems)} attempts, waiting {waits})")
        return (f"board {self.board} answered {command.name} only with damaged frames after "
                f"{len(problems)} attempt(s) (last: {problems[-1]})")

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
                why = self._boot(frame.payload).fault_text()
                if why:
                    log.warning("board %s had restarted before this session: %s", self.board, why)
        self.reader.clear()
        self.transport.discard_input()
        return self.identify()

    def identify(self) -> P.DeviceInfo:
        try:
            info = P.parse_identify(self.request(P.Command.IDENTIFY))
            if self.info is not None and info.model_id != self.info.model_id:
                self._longest.clear()  # another firmware: its runs take their own time
            self.info = info
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed IDENTIFY reply ({exc})") from None
        if self.info.protocol != P.VERSION:
            raise MCUDeployError(f"board {self.board} speaks protocol version {self.info.protocol}; "
                                 f"this mcudeploy speaks {P.VERSION}: flash it again")
        return self.info

    def _chunk(self) -> int:
        return min(P.MAX_PAYLOAD, self.info.max_payload if self.info else P.MAX_PAYLOAD) - P.LOAD_INPUT_HEADER

    def begin_run(self) -> int:
        """A new run id: the inputs loaded next, the RUN and the outputs read after it belong to it."""
        self.run_id = self._next_run
        self._next_run = self._next_run % 0xFFFFFFFF + 1
        return self.run_id

    def load_input(self, index: int, data: bytes) -> None:
        step = self._chunk()
        for offset in range(0, len(data), step):
            self.request(P.Command.LOAD_INPUT, P.pack_load_input(self.run_id, index, offset, data[offset:offset + step]))

    def load_input_file(self, index: int, path: str, file_offset: int, length: int) -> None:
        """Emulated boards: the firmware reads input ``index`` from ``length`` bytes of a host file."""
        self.request(P.Command.LOAD_INPUT_FILE, P.pack_load_input_file(self.run_id, index, 0, length, file_offset, path))

    def read_output(self, index: int, nbytes: int, run_id: Optional[int] = None) -> bytes:
        """Output ``index`` of the current run, or of the earlier ``run_id`` (a pipeline of two cores
        keeps the outputs of the frames its second core finished until the host read them)."""
        run_id = self.run_id if run_id is None else run_id
        step = self._chunk()
        out = bytearray()
        for offset in range(0, nbytes, step):
            length = min(step, nbytes - offset)
            chunk = self.request(P.Command.READ_OUTPUT, P.pack_read_output(run_id, index, offset, length))
            if len(chunk) != length:
                raise MCUDeployError(f"board {self.board} returned {len(chunk)} bytes of output {index} "
                                     f"where {length} were asked")
            out += chunk
        return bytes(out)

    def run(self, reset: bool = False) -> RunResult:
        """Run the model once on the inputs loaded under the current run id; its total and per-operator ticks.
        ``reset``: a stateful model's state is set to its initial value first (the first run of a sequence)."""
        try:
            total, ops = P.unpack_run(self.request(P.Command.RUN, P.pack_run(self.run_id, reset), kind=P.Command.RUN))
            ticks: list[int] = []
            step = self._chunk() // 8
            for first in range(0, ops, step):
                count = min(step, ops - first)
                ticks += P.unpack_u64s(self.request(P.Command.READ_TICKS, P.pack_read_ticks(self.run_id, first, count)),
                                       count)
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed RUN reply ({exc})") from None
        return RunResult(total, tuple(ticks))

    def run_linked(self, frame: int, timeout_ms: int, wait_us: int) -> tuple[int, int, int]:
        """A chip of a chain: take frame ``frame``'s linked inputs from the chip before, run on them (and
        the inputs loaded under the current run id), send the linked outputs to the chip after; a link
        frame unanswered for ``wait_us`` is sent again, a link silent for ``timeout_ms`` given up. The
        run's total ticks, the tensors it sent again and the damaged or repeated frames it refused."""
        try:
            payload = self.request(P.Command.RUN_LINKED, P.pack_run_linked(self.run_id, frame, timeout_ms, wait_us))
            ticks, _, resent, refused = P.unpack_run_linked(payload)
            return ticks, resent, refused
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed RUN_LINKED reply ({exc})") from None

    def run_op(self, op: int, repeat: int = 1) -> OpTiming:
        payload = self.request(P.Command.RUN_OP, P.pack_run_op(op, repeat))
        try:
            total, lo, hi = P.unpack_u64s(payload, 3)
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed RUN_OP reply ({exc})") from None
        return OpTiming(repeat, total, lo, hi)

    def calibrate(self, iterations: int) -> int:
        try:
            return P.unpack_u64s(self.request(P.Command.CALIBRATE, P.pack_calibrate(iterations)), 1)[0]
        except P.FrameError as exc:
            raise MCUDeployError(f"board {self.board} sent a malformed CALIBRATE reply ({exc})") from None

    def read_stack(self) -> Optional[StackUse]:
        """The stack's size and the most of it used since the board started; None from firmware without READ_STACK."""
        try:
            payload = self.request(P.Command.READ_STACK)
        except Refused as exc:
            if exc.code == P.ErrorCode.UNKNOWN_COMMAND:
                return None
            raise
        try:
            size, used = struct.unpack_from("<II", payload)
        except struct.error:
            raise MCUDeployError(f"board {self.board} sent a malformed READ_STACK reply ({len(payload)} bytes)") from None
        return StackUse(size, used)

    def echo(self, data: bytes) -> bytes:
        return self.request(P.Command.ECHO, data)

    def infer(self, inputs: Sequence[bytes], output_bytes: Sequence[int],
              reset: bool = False) -> tuple[list[bytes], RunResult]:
        """Load every input, run once (``reset``: as Session.run), read every output, all under a new run id."""
        self.begin_run()
        for i, data in enumerate(inputs):
            self.load_input(i, data)
        result = self.run(reset)
        return [self.read_output(i, n) for i, n in enumerate(output_bytes)], result

    def reset(self) -> None:
        self.request(P.Command.RESET)

    def exit(self, code: int = 0) -> None:
        """Ask an emulated board to end the emulator with ``code``."""
        self.request(P.Command.EXIT, bytes([code & 0xFF]))
