"""A fake measurer in Python, behind the Transport interface, with faults to inject.

It speaks the protocol of mcudeploy/device/protocol.py for a pretend model with one 16-byte
int8 input, one 16-byte output (input + 1) and two operators of 100 and 200 ticks, with the
firmware's rules for run ids (firmware/runtime/protocol.c): a RUN needs inputs loaded under its
id and consumes them, a repeated RUN id is answered from its result, outputs and ticks are read
under the id of the run that made them; long commands are acknowledged (ACK) first. Each fault
knob counts down as it is used, so a test says "corrupt the next two replies" and then
checks that the session resent and succeeded, or gave up with one sentence.
"""
from __future__ import annotations

import struct
import time

from mcudeploy.device import protocol as P

OP_TICKS = (100, 200)
NBYTES = 16


class FakeDevice:
    def __init__(self, board: str = "fake-board"):
        self.board = board
        self.rx = bytearray()
        self.tx = bytearray()
        self.input = bytearray(NBYTES)
        self.output = bytearray(NBYTES)
        self.seen: list[int] = []  # commands acted on
        self.runs = 0  # model runs actually made
        self.load_id = 0
        self.loaded = False
        self.run_id = 0
        self.run_valid = False
        self.stack = None  # READ_STACK's payload (bytes), or None: firmware from before the command (UNKNOWN_COMMAND)
        # faults
        self.corrupt_replies = 0    # flip a byte of the next N replies (their CRC fails)
        self.truncate_replies = 0   # send only the first half of the next N replies
        self.corrupt_requests = 0   # the link damages the next N requests: the device answers BAD_CRC
        self.truncate_requests = 0  # the link drops the tail of the next N requests: the device answers TRUNCATED
        self.drop_requests = 0      # the link loses the next N requests whole
        self.drop_replies = 0       # the link loses the next N replies whole (ACKs still arrive)
        self.silent = False         # the device stopped answering
        self.freeze_after_ack = False  # the device stops answering once it has acknowledged a long command
        self.reset_on: set[int] = set()  # commands during which the device restarts (it sends BOOT)
        self.fault = b""  # what its BOOT says made it restart: u8 fault, u32 CFSR, u32 address (b"": older firmware)
        self.stale_before_reply = 0  # send a reply with a wrong sequence number before the next N replies

    # ------------------------------------------------------------------ Transport interface

    def write(self, data: bytes) -> None:
        if self.truncate_requests and len(data) > P.HEADER:
            self.truncate_requests -= 1
            data = data[:len(data) // 2]
            self.rx += data
            seq = struct.unpack_from("<H", data, 4)[0] if len(data) >= 6 else 0
            self.rx.clear()  # the firmware drops a frame that stops half-way, after its frame timeout
            self._send(P.Frame(P.Command.ERROR, seq, bytes([P.ErrorCode.TRUNCATED]) + P.pack_string("frame truncated")))
            return
        if self.drop_requests:
            self.drop_requests -= 1
            return
        if self.corrupt_requests:
            self.corrupt_requests -= 1
            data = bytearray(data)
            data[-5] ^= 0x40
        self.rx += data
        self._serve()

    def read(self, n: int, timeout: float) -> bytes:
        if not self.tx:
            time.sleep(max(timeout, 0.0))
            return b""
        out = bytes(self.tx[:n])
        del self.tx[:n]
        return out

    def discard_input(self) -> int:
        n = len(self.tx)
        self.tx.clear()
        return n

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ the pretend firmware

    def _send(self, frame: P.Frame) -> None:
        if self.silent:
            return
        raw = bytearray(P.encode(frame))
        if frame.command & P.REPLY and frame.command not in (P.Command.BOOT, P.Command.ERROR, P.Command.ACK):
            if self.stale_before_reply:
                self.stale_before_reply -= 1
                self.tx += P.encode(P.Frame(frame.command, (frame.seq + 7) & 0xFFFF, frame.payload))
            if self.drop_replies:
                self.drop_replies -= 1
                return
            if self.corrupt_replies:
                self.corrupt_replies -= 1
                raw[P.HEADER - 1 + len(frame.payload) // 2 + 1] ^= 0x01
            elif self.truncate_replies:
                self.truncate_replies -= 1
                raw = raw[:len(raw) // 2]
        self.tx += raw
        if frame.command == P.Command.ACK and self.freeze_after_ack:
            self.silent = True

    def boot(self) -> None:
        self.input[:] = bytes(NBYTES)
        self._send(P.Frame(P.Command.BOOT, 0, bytes([P.VERSION]) + P.pack_string(self.board) + self.fault))

    def _serve(self) -> None:
        while True:
            start = self.rx.find(P.MAGIC)
            if start < 0:
                self.rx.clear()
                return
            del self.rx[:start]
            if len(self.rx) < P.HEADER:
                return
            n = struct.unpack_from("<H", self.rx, 6)[0]
            total = P.HEADER + n + P.TRAILER
            if len(self.rx) < total:
                return
            raw = bytes(self.rx[:total])
            del self.rx[:total]
            seq = struct.unpack_from("<H", raw, 4)[0]
            try:
                frame = P.decode(raw)
            except P.FrameError:
                self._send(P.Frame(P.Command.ERROR, seq, bytes([P.ErrorCode.BAD_CRC]) + P.pack_string("bad checksum")))
                continue
            self._handle(frame)

    def _handle(self, f: P.Frame) -> None:
        self.seen.append(f.command)
        if f.command in self.reset_on:
            self.reset_on.discard(f.command)
            self.boot()
            return
        reply = f.command | P.REPLY
        p = f.payload
        if f.command == P.Command.IDENTIFY:
            body = struct.pack("<BBBBHHIIIII", P.VERSION, 1, 1, 0, P.MAX_PAYLOAD, len(OP_TICKS), 64, 1000000,
                               0x1234, NBYTES, NBYTES)
            self._send(P.Frame(reply, f.seq, body + P.pack_string(self.board) + P.pack_string("fake")))
        elif f.command == P.Command.LOAD_INPUT:
            run, index, offset = struct.unpack_from("<IBI", p)
            if run != self.load_id:
                self.load_id, self.loaded = run, False
            self.run_valid = False
            self.input[offset:offset + len(p) - 9] = p[9:]
            self.loaded = True
            self._send(P.Frame(reply, f.seq))
        elif f.command == P.Command.RUN:
            (run,) = struct.unpack_from("<I", p)
            if not (self.run_valid and run == self.run_id):
                if not (self.loaded and run == self.load_id):
                    self._send(P.Frame(P.Command.ERROR, f.seq, bytes([P.ErrorCode.BAD_STATE]) +
                                       P.pack_string("RUN before every input of this run id was loaded")))
                    return
                self._send(P.Frame(P.Command.ACK, f.seq))
                self.output[:] = bytes((b + 1) & 0xFF for b in self.input)
                self.input[:] = bytes(NBYTES)  # a run overwrites its inputs (in the arena)
                self.runs += 1
                self.loaded, self.run_id, self.run_valid = False, run, True
            else:
                self._send(P.Frame(P.Command.ACK, f.seq))
            self._send(P.Frame(reply, f.seq, struct.pack("<QH", sum(OP_TICKS), len(OP_TICKS))))
        elif f.command in (P.Command.READ_TICKS, P.Command.READ_OUTPUT) and not (
                self.run_valid and struct.unpack_from("<I", p)[0] == self.run_id):
            self._send(P.Frame(P.Command.ERROR, f.seq, bytes([P.ErrorCode.BAD_STATE]) +
                               P.pack_string("no such run")))
        elif f.command == P.Command.READ_TICKS:
            _, first, count = struct.unpack_from("<IHH", p)
            self._send(P.Frame(reply, f.seq, struct.pack(f"<{count}Q", *OP_TICKS[first:first + count])))
        elif f.command == P.Command.READ_OUTPUT:
            _, index, offset, length = struct.unpack_from("<IBIH", p)
            self._send(P.Frame(reply, f.seq, bytes(self.output[offset:offset + length])))
        elif f.command == P.Command.RUN_OP:
            op, repeat = struct.unpack_from("<HI", p)
            t = OP_TICKS[op]
            self.run_valid = self.loaded = False
            self._send(P.Frame(P.Command.ACK, f.seq))
            self._send(P.Frame(reply, f.seq, struct.pack("<QQQ", t * repeat, t, t)))
        elif f.command == P.Command.ECHO:
            self._send(P.Frame(reply, f.seq, p))
        elif f.command == P.Command.READ_STACK and self.stack is not None:
            self._send(P.Frame(reply, f.seq, self.stack))
        else:
            self._send(P.Frame(P.Command.ERROR, f.seq, bytes([P.ErrorCode.UNKNOWN_COMMAND]) +
                               P.pack_string("unknown command")))
