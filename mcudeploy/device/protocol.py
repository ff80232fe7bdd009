"""The measurer's framed binary protocol, host side (the device side is firmware/runtime/protocol.c).

Frame, all integers little-endian::

    0    2  magic A5 5A
    2    1  protocol version (VERSION)
    3    1  command: a request (< 0x80), its reply (request | 0x80), BOOT (0xFE) or ERROR (0xFF)
    4    2  sequence number; a reply echoes its request's, BOOT carries 0
    6    2  payload length n, at most MAX_PAYLOAD
    8    n  payload
    8+n  4  CRC-32 (zlib.crc32) of bytes 2 .. 8+n-1

Requests and their replies' payloads (run: a u32 run id the host picks for each inference):

    IDENTIFY     -                          -> u8 protocol, u8 inputs, u8 outputs, u8 flags (bit 0: emulated),
                                               u16 max payload, u16 ops, u32 arena bytes, u32 timer Hz,
                                               u32 model id, u32 bytes per input, u32 bytes per output,
                                               str board, str firmware version   (str: u8 length + bytes),
                                               then (firmware since the clock trees) u32 core clock Hz,
                                               u8 clock status (0 reset clock, 1 clock tree applied, 2 fell
                                               back to the reset clock), str the wait that timed out
    LOAD_INPUT   u32 run, u8 index, u32 offset, data -> -
    RUN          u32 run[, u8 flags]        -> u64 total ticks, u16 ops (flags bit 0: a stateful model's state is
                                               reset first, the first run of a sequence)
    READ_TICKS   u32 run, u16 first, u16 count -> u64 ticks of each operator of that run
    READ_OUTPUT  u32 run, u8 index, u32 offset, u16 length -> data
    RUN_OP       u16 op, u32 repeat         -> u64 total, u64 min, u64 max ticks over the repetitions
    CALIBRATE    u32 iterations             -> u64 ticks of a loop of 2 instructions per iteration
    ECHO         data                       -> data
    RESET        -                          -> - (then the board restarts and sends BOOT)
    EXIT         u8 code                    -> - (then QEMU exits with that status; emulated boards only)
    LOAD_INPUT_FILE u32 run, u8 index, u32 offset, u32 length, u32 file offset, str host path -> -
                                               (emulated boards only: the firmware reads the bytes from a host
                                               file through semihosting; QEMU's UART moves ~50 us per byte)
    RUN_LINKED   u32 run, u32 frame, u32 link timeout ms, u32 resend wait us -> as RUN, then u32 tensors resent
                                               on the down link, u32 frames refused from the up link (a chip of
                                               a chain, firmware/runtime/link.c: the inputs of its up link taken,
                                               the model run, the outputs of its down link sent; a link that
                                               fails answers ERROR LINK)
    READ_STACK   -                          -> u32 the stack's bytes, u32 the most of them used since reset (the
                                               paint start-up leaves below its frame, firmware/runtime/startup.c;
                                               all of them where it is gone to the bottom: an overflow, likely)
    ACK          (device)                   -    sent with a request's sequence number before a command
                                                 that takes long (RUN, RUN_OP, CALIBRATE): it is working
    BOOT         (device, unsolicited)      u8 protocol, str board, then (firmware since the stack guard) u8 the
                                               fault that reset the board (FAULT_CPU, FAULT_STACK; 0 none noted: a
                                               power-on, a RESET), u32 its CFSR, u32 its address (MMFAR or BFAR)
    ERROR        (device)                   u8 code, str message

The device never acts on a frame that fails its checksum: it answers ERROR and keeps serving.
Resending is safe for every command but RESET and EXIT:

- a RUN acts only on inputs loaded under its run id, and consumes them; a RUN whose id is that
  of the run just made is answered from its result, not run again (the run may have overwritten
  its inputs in the arena); READ_OUTPUT and READ_TICKS answer only under the id of the run that
  made them, and any LOAD_INPUT, RUN_OP or CALIBRATE makes that run unreadable. A request that
  comes too late or twice can therefore make the host fail (BAD_STATE), never read other numbers;
- a RUN_OP or CALIBRATE frame received twice (the same bytes) is answered from the first reply.
"""
from __future__ import annotations

import enum
import struct
import time
import zlib
from dataclasses import dataclass
from typing import Optional

MAGIC = b"\xa5\x5a"
VERSION = 2
HEADER = 8
TRAILER = 4
MAX_PAYLOAD = 2048
REPLY = 0x80
CLOCK_RESET, CLOCK_SET, CLOCK_FALLBACK, CLOCK_UNKNOWN = 0, 1, 2, -1  # IDENTIFY's clock status (mcud_clock.h)
FAULT_CPU, FAULT_STACK = 3, 4  # BOOT's fault: MCUD_EXIT_FAULT, MCUD_EXIT_STACK (firmware/runtime/mcud_fw.h)


class Command(enum.IntEnum):
    IDENTIFY = 0x01
    LOAD_INPUT = 0x02
    RUN = 0x03
    READ_TICKS = 0x04
    READ_OUTPUT = 0x05
    RUN_OP = 0x06
    CALIBRATE = 0x07
    ECHO = 0x08
    RESET = 0x09
    EXIT = 0x0A
    LOAD_INPUT_FILE = 0x0B
    RUN_LINKED = 0x0C
    READ_STACK = 0x0D
    ACK = 0xFD
    BOOT = 0xFE
    ERROR = 0xFF


class ErrorCode(enum.IntEnum):
    BAD_CRC = 1
    TRUNCATED = 2
    TOO_LONG = 3
    BAD_VERSION = 4
    UNKNOWN_COMMAND = 5
    BAD_ARGUMENT = 6
    UNSUPPORTED = 7
    BAD_STATE = 8
    STALLED = 9  # a pipeline of two cores: the other core took or finished no frame in time
    LINK = 10  # a chain of chips: a link frame failed its check or did not come, or the next chip took none


# The device saw a damaged request: sending it again is the cure.
RETRYABLE = frozenset({ErrorCode.BAD_CRC, ErrorCode.TRUNCATED, ErrorCode.TOO_LONG, ErrorCode.BAD_VERSION})


class FrameError(Exception):
    """A frame arrived damaged (bad checksum, impossible length, wrong version) or cut short."""


class TruncatedFrame(FrameError):
    pass


@dataclass(frozen=True)
class Frame:
    command: int
    seq: int
    payload: bytes = b""
    version: int = VERSION


def encode(frame: Frame) -> bytes:
    if len(frame.payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(frame.payload)} bytes exceeds {MAX_PAYLOAD}")
    body = struct.pack("<BBHH", frame.version, frame.command, frame.seq & 0xFFFF, len(frame.payload)) + frame.payload
    return MAGIC + body + struct.pack("<I", zlib.crc32(body))


def decode(data: bytes) -> Frame:
    """One complete frame from exactly its bytes; FrameError if it is not one."""
    if len(data) < HEADER + TRAILER or data[:2] != MAGIC:
        raise TruncatedFrame(f"frame of {len(data)} bytes is shorter than a header")
    version, command, seq, n = struct.unpack_from("<BBHH", data, 2)
    if n > MAX_PAYLOAD:
        raise FrameError(f"frame announces {n} payload bytes, more than {MAX_PAYLOAD}")
    if len(data) < HEADER + n + TRAILER:
        raise TruncatedFrame(f"frame cut short: {len(data)} of {HEADER + n + TRAILER} bytes")
    (crc,) = struct.unpack_from("<I", data, HEADER + n)
    if crc != zlib.crc32(data[2:HEADER + n]):
        raise FrameError("frame failed its checksum")
    if version != VERSION:
        raise FrameError(f"frame of protocol version {version}, expected {VERSION}")
    return Frame(command, seq, bytes(data[HEADER:HEADER + n]), version)


class FrameReader:
    """Cuts frames out of a byte stream, skipping noise and resynchronising after damage.

    ``read(transport, deadline)`` returns the next good frame, or None if none began before
    ``deadline`` (time.monotonic()). A frame that began but stopped for ``gap`` seconds raises
    TruncatedFrame; a damaged one raises FrameError. Bytes after the damage stay buffered, so a
    good frame behind a bad one is still found by the next call.
    """

    def __init__(self, gap: float = 1.0):
        self.gap = gap
        self._buf = bytearray()

    def clear(self) -> None:
        self._buf.clear()

    def _parse(self) -> Optional[Frame]:
        start = self._buf.find(MAGIC)
        if start < 0:
            keep = 1 if self._buf[-1:] == MAGIC[:1] else 0
            del self._buf[:len(self._buf) - keep]
            return None
        del self._buf[:start]
        if len(self._buf) < HEADER:
            return None
        (n,) = struct.unpack_from("<H", self._buf, 6)
        if n > MAX_PAYLOAD:
            del self._buf[:1]
            raise FrameError(f"frame announces {n} payload bytes, more than {MAX_PAYLOAD}")
        total = HEADER + n + TRAILER
        if len(self._buf) < total:
            return None
        raw = bytes(self._buf[:total])
        try:
            frame = decode(raw)
        except FrameError:
            del self._buf[:1]  # resynchronise on the next magic
            raise
        del self._buf[:total]
        return frame

    def read(self, transport, deadline: float) -> Optional[Frame]:
        last_byte = time.monotonic()
        while True:
            frame = self._parse()
            if frame is not None:
                return frame
            now = time.monotonic()
            if self._buf:  # a frame has begun: it gets its gap, even past the deadline
                if now - last_byte >= self.gap:
                    got = len(self._buf)
                    self._buf.clear()
                    raise TruncatedFrame(f"frame cut short: {got} bytes, then nothing for {self.gap:g} s")
                limit = last_byte + self.gap
            else:
                if now >= deadline:
                    return None
                limit = deadline
            want = 1
            if len(self._buf) >= HEADER:
                want = HEADER + struct.unpack_from("<H", self._buf, 6)[0] + TRAILER - len(self._buf)
            elif self._buf:
                want = HEADER - len(self._buf)
            chunk = transport.read(max(want, 1), max(limit - now, 0.0))
            if chunk:
                self._buf += chunk
                last_byte = time.monotonic()


# --------------------------------------------------------------------------- payloads


def pack_string(text: str) -> bytes:
    raw = text.encode()[:255]
    return bytes([len(raw)]) + raw


def unpack_string(data: bytes, pos: int) -> tuple[str, int]:
    n = data[pos]
    return data[pos + 1:pos + 1 + n].decode(errors="replace"), pos + 1 + n


@dataclass(frozen=True)
class DeviceInfo:
    protocol: int
    emulated: bool
    max_payload: int
    num_ops: int
    arena_bytes: int
    timer_hz: int
    model_id: int
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    board: str
    firmware_version: str
    core_hz: int = 0  # 0: an older firmware that does not say
    clock_status: int = CLOCK_UNKNOWN
    clock_note: str = ""

    def clock_line(self) -> str:
        """The core clock for people, and a warning when the start-up fell back to the reset clock."""
        if not self.core_hz:
            return "core clock not reported (older firmware)"
        line = f"core clock {self.core_hz / 1e6:g} MHz"
        if self.clock_status == CLOCK_FALLBACK:
            line += f": the clock tree was NOT applied ({self.clock_note or 'a ready flag'} timed out), reset clock"
        elif self.clock_status == CLOCK_RESET:
            line += " (the reset clock: the board file has no clock tree)"
        return line


def parse_identify(p: bytes) -> DeviceInfo:
    try:
        protocol, n_in, n_out, flags, max_payload, ops, arena, hz, model_id = struct.unpack_from("<BBBBHHIII", p, 0)
        pos = 20
        ins = struct.unpack_from(f"<{n_in}I", p, pos)
        pos += 4 * n_in
        outs = struct.unpack_from(f"<{n_out}I", p, pos)
        pos += 4 * n_out
        board, pos = unpack_string(p, pos)
        version, pos = unpack_string(p, pos)
        core_hz, status, note = 0, CLOCK_UNKNOWN, ""
        if len(p) > pos:  # the clock fields, appended by newer firmware
            core_hz, status = struct.unpack_from("<IB", p, pos)
            note, pos = unpack_string(p, pos + 5)
    except (struct.error, IndexError):
        raise FrameError(f"IDENTIFY reply of {len(p)} bytes is malformed") from None
    return DeviceInfo(protocol, bool(flags & 1), max_payload, ops, arena, hz, model_id, ins, outs, board, version,
                      core_hz, status, note)


@dataclass(frozen=True)
class Boot:
    """A BOOT frame: the board just started; ``fault``: why, where the firmware noted it before its reset."""
    protocol: int
    board: str
    fault: int = 0  # 0: none noted (a power-on, a RESET, an older firmware)
    cfsr: int = 0
    fault_address: int = 0

    def fault_text(self) -> str:
        """The noted fault for people ("" where none was noted)."""
        if self.fault == FAULT_STACK:
            return "its stack overflowed (a push reached its guarded bottom)"
        if self.fault == FAULT_CPU:
            where = f", fault address 0x{self.fault_address:08X}" if self.fault_address else ""
            return f"it took a CPU fault (CFSR 0x{self.cfsr:08X}{where})"
        return ""


def parse_boot(p: bytes) -> Boot:
    try:
        board, pos = unpack_string(p, 1)
        fault, cfsr, address = struct.unpack_from("<BII", p, pos) if len(p) >= pos + 9 else (0, 0, 0)
    except (struct.error, IndexError):
        raise FrameError(f"BOOT frame of {len(p)} bytes is malformed") from None
    return Boot(p[0], board, fault, cfsr, address)


def parse_error(p: bytes) -> tuple[int, str]:
    if not p:
        return 0, "no message"
    try:
        message, _ = unpack_string(p, 1)
    except IndexError:
        message = ""
    return p[0], message


LOAD_INPUT_HEADER = 9  # u32 run, u8 index, u32 offset


def pack_load_input(run: int, index: int, offset: int, data: bytes) -> bytes:
    return struct.pack("<IBI", run, index, offset) + data


def pack_load_input_file(run: int, index: int, offset: int, length: int, file_offset: int, path: str) -> bytes:
    raw = path.encode()
    if len(raw) > 255:
        raise ValueError(f"host path {path} is longer than 255 bytes")
    return struct.pack("<IBIII", run, index, offset, length, file_offset) + pack_string(path)


def pack_run(run: int, reset: bool = False) -> bytes:
    return struct.pack("<IB", run, 1) if reset else struct.pack("<I", run)


def pack_run_linked(run: int, frame: int, timeout_ms: int, wait_us: int) -> bytes:
    return struct.pack("<IIII", run, frame, timeout_ms, wait_us)


def unpack_run_linked(p: bytes) -> tuple[int, int, int, int]:
    """RUN_LINKED's reply: total ticks, operators, tensors resent on the down link, frames refused from the up link."""
    if len(p) < 18:
        raise FrameError(f"RUN_LINKED reply of {len(p)} bytes is too short")
    return struct.unpack_from("<QHII", p, 0)


def pack_read_output(run: int, index: int, offset: int, length: int) -> bytes:
    return struct.pack("<IBIH", run, index, offset, length)


def pack_read_ticks(run: int, first: int, count: int) -> bytes:
    return struct.pack("<IHH", run, first, count)


def pack_run_op(op: int, repeat: int) -> bytes:
    return struct.pack("<HI", op, repeat)


def pack_calibrate(iterations: int) -> bytes:
    return struct.pack("<I", iterations)


def unpack_u64s(p: bytes, count: Optional[int] = None) -> tuple[int, ...]:
    count = len(p) // 8 if count is None else count
    if len(p) < 8 * count:
        raise FrameError(f"reply of {len(p)} bytes is too short for {count} tick counts")
    return struct.unpack_from(f"<{count}Q", p, 0)


def unpack_run(p: bytes) -> tuple[int, int]:
    if len(p) < 10:
        raise FrameError(f"RUN reply of {len(p)} bytes is too short")
    return struct.unpack_from("<QH", p, 0)
