"""device/ports.free_port: ports from below the kernel's ephemeral range, never handed out twice while held,
never one something listens on; the kernel's choice where the range leaves no room."""
from __future__ import annotations

import socket

import pytest

from mcudeploy.device import ports


@pytest.fixture
def given(tmp_path, monkeypatch):
    monkeypatch.setattr(ports, "GIVEN", tmp_path / "ports.json")
    return tmp_path / "ports.json"


def test_ports_come_from_below_the_ephemeral_range_and_are_not_given_twice(given):
    top = ports._ephemeral_start()
    handed = [ports.free_port() for _ in range(50)]
    assert len(set(handed)) == 50
    assert all(ports.LOWEST <= p < top for p in handed)


def test_a_port_held_by_another_process_is_not_given(given, monkeypatch):
    # every candidate but one was given a moment ago (by another process, as the shared file says)
    given.write_text("{" + ", ".join(f'"{p}": 9e18' for p in range(ports.LOWEST, ports.LOWEST + 99)) + "}")
    monkeypatch.setattr(ports, "_ephemeral_start", lambda: ports.LOWEST + 1100)
    monkeypatch.setattr(ports.random, "randrange", _sequence(ports.LOWEST, ports.LOWEST + 100))
    assert ports.free_port() == ports.LOWEST + 99


def test_a_port_something_listens_on_is_passed_over(given, monkeypatch):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        monkeypatch.setattr(ports, "LOWEST", busy)
        monkeypatch.setattr(ports, "_ephemeral_start", lambda: busy + 1100)
        monkeypatch.setattr(ports.random, "randrange", _sequence(busy, busy + 2))
        assert ports.free_port() == busy + 1


def test_no_room_below_the_range_takes_the_kernels_port(given, monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_start", lambda: ports.LOWEST + 10)
    port = ports.free_port()
    assert port >= 1024 and not given.exists()


def test_a_damaged_file_of_given_ports_is_read_as_none_given(given):
    given.write_text("{not json")
    assert ports.LOWEST <= ports.free_port() < ports._ephemeral_start()


def _sequence(start: int, stop: int):
    values = iter(range(start, stop))
    return lambda *_: next(values)
