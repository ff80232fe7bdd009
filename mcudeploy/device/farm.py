"""Boards in a labgrid farm: a place acquired, its serial port opened through the network, released.

``acquired(board, place, count)`` asks the labgrid coordinator of the user's environment
(``$LG_COORDINATOR``, else labgrid's default 127.0.0.1:20408; nothing about hosts is kept in
mcudeploy) for places: the one named (``--place NAME``, or ``$LG_PLACE``), else ``count`` idle
places whose tag ``board`` names the board (``labgrid-client -p NAME set-tags board=qemu-m4``).
Each is acquired, its NetworkSerialPort resource becomes the board's port (``rfc2217://HOST:PORT``,
or ``socket://HOST:PORT`` for a raw one), and every place is released when the block ends, on an
error and on Ctrl-C or SIGTERM (mcudeploy/interrupts.py turns both into KeyboardInterrupt).

Flashing: a place whose tag ``emulator`` gives the UART of its QEMU (``socket://127.0.0.1:PORT``,
behind the RFC 2217 bridge of mcudeploy/device/bridge.py that the place exports) is flashed by
starting QEMU on the firmware there (mcudeploy/device/emulator.py), which works where that
emulator runs on this machine; a place of a real board must run the right firmware already
(``mcudeploy flash`` on the exporter's host), as a board behind ``--port`` must.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
from typing import Iterator, Optional
from urllib.parse import urlparse

from mcudeploy.boards import Board
from mcudeploy.device.pool import PoolBoard
from mcudeploy.errors import MCUDeployError

log = logging.getLogger(__name__)
DEFAULT_COORDINATOR = "127.0.0.1:20408"  # labgrid-client's own default
BOARD_TAG = "board"
EMULATOR_TAG = "emulator"


def coordinator() -> str:
    return os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR


def _client():
    try:
        from labgrid.remote.client import start_session
    except ImportError:
        raise MCUDeployError("a farm place needs labgrid: pip install 'mcudeploy[farm]'") from None
    address = coordinator()
    args = argparse.Namespace(place=None, allow_unmatched=False, kick=False)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return start_session(address, extra={"args": args})
    except Exception as exc:  # noqa: BLE001  (grpc's errors: the coordinator is not there)
        raise MCUDeployError(f"cannot reach the labgrid coordinator at {address} ($LG_COORDINATOR): "
                             f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from None


def _call(session, coroutine):
    """Run one of labgrid's client coroutines; what it prints goes to the log, its errors are one sentence."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            return session.loop.run_until_complete(coroutine)
    except (KeyboardInterrupt, MCUDeployError):
        raise
    except Exception as exc:  # noqa: BLE001  (labgrid's UserError, ServerError)
        raise MCUDeployError(f"labgrid: {str(exc).strip() or type(exc).__name__}") from None
    finally:
        if out.getvalue().strip():
            log.info("labgrid: %s", out.getvalue().strip())


def _names(session, board: Board, place: Optional[str], count: int) -> list[str]:
    place = place or os.environ.get("LG_PLACE")
    if place:
        _call_sync(session.get_place, place)
        return [place]
    idle = sorted(name for name, p in session.places.items()
                  if p.tags.get(BOARD_TAG) == board.name and not p.acquired)
    if len(idle) < count:
        raise MCUDeployError(f"the labgrid farm at {coordinator()} has {len(idle)} idle place(s) tagged "
                             f"{BOARD_TAG}={board.name}, {count} wanted (or name one with --place)")
    return idle[:count]


def _call_sync(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001
        raise MCUDeployError(f"labgrid: {str(exc).strip() or type(exc).__name__}") from None


def serial_url(session, name: str) -> str:
    """The URL of the acquired place's NetworkSerialPort."""
    place = _call_sync(session.get_place, name)
    resources = _call_sync(session.get_target_resources, place)
    for (_, cls), resource in sorted(resources.items()):
        if cls == "NetworkSerialPort":
            params = resource.params
            scheme = "socket" if params.get("protocol") == "raw" else "rfc2217"
            return f"{scheme}://{params['host']}:{params['port']}"
    raise MCUDeployError(f"labgrid place {name} has no NetworkSerialPort: export the board's serial port "
                         f"(NetworkSerialPort, or RawSerialPort through ser2net) and add it to the place")


def _flasher(session, name: str, board: Board):
    """How the place is flashed: an emulated one by starting its QEMU on the firmware; None: it is not."""
    emulator_url = _call_sync(session.get_place, name).tags.get(EMULATOR_TAG)
    if not emulator_url:
        return None
    from mcudeploy.device import emulator

    port = emulator.socket_port(emulator_url)

    def flash(firmware) -> None:
        log.info("flashing labgrid place %s: QEMU on %s", name, emulator_url)
        emulator.start_emulator(board, firmware.elf, port)

    return flash


@contextlib.contextmanager
def acquired(board: Board, place: Optional[str] = None, count: int = 1) -> Iterator[list[PoolBoard]]:
    """The boards of ``count`` places (or of the one named), acquired for the block and released after."""
    session = _client()
    taken: list[str] = []
    try:
        for name in _names(session, board, place, count):
            session.args.place = name
            _call(session, session._acquire_place(name))
            taken.append(name)
            log.info("acquired labgrid place %s", name)
        boards = []
        for k, name in enumerate(taken):
            url = serial_url(session, name)
            host = urlparse(url).hostname
            boards.append(PoolBoard(k, url, f"place {name}", _flasher(session, name, board)
                                    if host in ("127.0.0.1", "localhost") else None))
        yield boards
    finally:
        for name in taken:
            try:
                _call(session, session._release_place(name))
                log.info("released labgrid place %s", name)
            except (MCUDeployError, KeyboardInterrupt) as exc:
                log.warning("could not release labgrid place %s: %s", name, exc)
        with contextlib.suppress(Exception):
            session.loop.run_until_complete(session.stop())
