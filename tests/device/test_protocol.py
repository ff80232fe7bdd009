"""The frame format: round trips, and damaged frames rejected with a clear error, never trusted."""
from __future__ import annotations

import time

import pytest
import serial
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.device import protocol as P
from mcudeploy.device.transport import Transport


@settings(max_examples=200, deadline=None, derandomize=True)
@given(command=st.integers(0, 255), seq=st.integers(0, 0xFFFF), payload=st.binary(max_size=P.MAX_PAYLOAD))
def test_encode_decode_round_trip(command, seq, payload):
    frame = P.Frame(command, seq, payload)
    raw = P.encode(frame)
    assert len(raw) == P.HEADER + len(payload) + P.TRAILER
    assert P.decode(raw) == frame


@settings(max_examples=200, deadline=None, derandomize=True)
@given(payload=st.binary(min_size=1, max_size=64), where=st.integers(2, 10_000), bit=st.integers(0, 7))
def test_any_flipped_bit_after_the_magic_is_rejected(payload, where, bit):
    raw = bytearray(P.encode(P.Frame(P.Command.ECHO, 7, payload)))
    where = 2 + where % (len(raw) - 2)
    raw[where] ^= 1 << bit
    with pytest.raises(P.FrameError):
        P.decode(bytes(raw))


def test_truncated_and_oversized_frames_are_rejected():
    raw = P.encode(P.Frame(P.Command.ECHO, 1, b"hello"))
    with pytest.raises(P.TruncatedFrame, match="cut short"):
        P.decode(raw[:-1])
    big = bytearray(raw)
    big[6:8] = (P.MAX_PAYLOAD + 1).to_bytes(2, "little")
    with pytest.raises(P.FrameError, match="more than"):
        P.decode(bytes(big))
    with pytest.raises(ValueError):
        P.encode(P.Frame(P.Command.ECHO, 1, bytes(P.MAX_PAYLOAD + 1)))


def loop() -> Transport:
    return Transport(serial.serial_for_url("loop://", timeout=0), "loop://")


def test_reader_skips_noise_and_resynchronises_after_a_damaged_frame():
    link = loop()
    good1 = P.encode(P.Frame(0x81, 1, b"first"))
    bad = bytearray(P.encode(P.Frame(0x82, 2, b"damaged")))
    bad[10] ^= 0xFF
    good2 = P.encode(P.Frame(0x83, 3, b"second"))
    link.write(b"\x00noise\xa5" + good1 + bytes(bad) + good2)
    reader = P.FrameReader(gap=0.2)
    deadline = time.monotonic() + 1.0
    assert reader.read(link, deadline).payload == b"first"
    with pytest.raises(P.FrameError, match="checksum"):
        reader.read(link, deadline)
    assert reader.read(link, deadline).payload == b"second"  # the good frame behind the bad one survives
    assert reader.read(link, time.monotonic() + 0.1) is None


def test_reader_reports_a_frame_cut_short_within_its_gap():
    link = loop()
    link.write(P.encode(P.Frame(0x81, 1, b"x" * 100))[:50])
    start = time.monotonic()
    with pytest.raises(P.TruncatedFrame, match="50 bytes"):
        P.FrameReader(gap=0.2).read(link, start + 5.0)
    assert time.monotonic() - start < 1.0


def test_reader_returns_none_at_the_deadline_on_silence():
    start = time.monotonic()
    assert P.FrameReader().read(loop(), start + 0.2) is None
    assert 0.15 < time.monotonic() - start < 1.0


def test_identify_payload_round_trip():
    body = (bytes([1, 2, 1, 1]) + (2048).to_bytes(2, "little") + (12).to_bytes(2, "little") +
            (16000).to_bytes(4, "little") + (25_000_000).to_bytes(4, "little") + (0xDEADBEEF).to_bytes(4, "little") +
            (490).to_bytes(4, "little") + (4).to_bytes(4, "little") + (12).to_bytes(4, "little") +
            P.pack_string("qemu-m4") + P.pack_string("0.1.0"))
    info = P.parse_identify(body)
    assert (info.num_ops, info.arena_bytes, info.timer_hz, info.model_id) == (12, 16000, 25_000_000, 0xDEADBEEF)
    assert (info.input_bytes, info.output_bytes, info.board, info.emulated) == ((490, 4), (12,), "qemu-m4", True)
    assert (info.core_hz, info.clock_status) == (0, P.CLOCK_UNKNOWN)  # a firmware from before the clock trees
    assert "not reported" in info.clock_line()
    with pytest.raises(P.FrameError, match="malformed"):
        P.parse_identify(body[:10])
    newer = P.parse_identify(body + (16_000_000).to_bytes(4, "little") + bytes([P.CLOCK_FALLBACK])
                             + P.pack_string("PLL lock (RCC_CR.PLLRDY)"))
    assert (newer.board, newer.core_hz, newer.clock_status) == ("qemu-m4", 16_000_000, P.CLOCK_FALLBACK)
    assert newer.clock_line() == ("core clock 16 MHz: the clock tree was NOT applied (PLL lock (RCC_CR.PLLRDY) timed "
                                  "out), reset clock")
    with pytest.raises(P.FrameError, match="malformed"):
        P.parse_identify(body + b"\x01\x02")
