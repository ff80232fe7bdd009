"""Emulated boards flashed in the background: QEMU keeps serving after ``flash`` returns.

``start_emulator`` (the ``emulate`` hook below is PlatformIO's upload command for an emulated
board) starts QEMU in the background with the board's UART on ``socket://127.0.0.1:PORT``,
connects once to take the firmware's BOOT frame and IDENTIFY it (as a real board boots after its
upload; this also proves the firmware serves) and records the emulator under
``<mcudeploy cache>/emulators/<board>@<port>.json``, so ``--port socket://127.0.0.1:PORT`` reaches
the measurer, connection after connection. One emulator runs per port: flashing another port
leaves it running (several boards side by side), flashing its port again replaces it. It stops
when the firmware exits (EXIT), with ``stop_emulator`` (``mcudeploy flash -b BOARD --stop
[--port URL | --all]``), or after $MCUDEPLOY_EMULATOR_LIFETIME seconds (default an hour; an idle
measurer sleeps until its UART has a byte, so a forgotten emulator costs no CPU, but it holds
its port and memory). QEMU runs under a small supervisor (``supervise``) in a process group of
its own, so it outlives PlatformIO's upload step and one signal stops both.

A chip of a chain flashed by ``flash -b SYSTEM`` also gets its link UARTs (qemu.py): its up link
connects to the down link of the chip flashed before it, its down link listens on a port of its own
($MCUDEPLOY_EMULATOR_LINKS, "UP:DOWN", either may be empty), so the emulators left running pass
their frames to each other as ``run`` joins its own.
"""
from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence
from urllib.parse import urlparse

from mcudeploy.boards import Board, load_board
from mcudeploy.device import qemu
from mcudeploy.device.host import cache_dir
from mcudeploy.device.pio_core import pio_python_env
from mcudeploy.device.processes import alive, command_lines, end_group
from mcudeploy.device.session import Session
from mcudeploy.device.transport import LinkLost, open_transport
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import write_atomic

log = logging.getLogger(__name__)

EMULATOR_START_TIMEOUT_S = 15.0
EMULATOR_BOOT_WAIT_S = 5.0  # for the BOOT frame (it comes 45-85 ms after the connection; a lost one costs this)
PORT_ENV = "MCUDEPLOY_EMULATOR_PORT"
LINKS_ENV = "MCUDEPLOY_EMULATOR_LINKS"  # "UP:DOWN": the chip's up link connects to UP, its down link listens on DOWN
LIFETIME_ENV = "MCUDEPLOY_EMULATOR_LIFETIME"
DEFAULT_LIFETIME_S = 3600.0


def socket_port(url: str) -> int:
    """The TCP port of a ``socket://127.0.0.1:PORT`` URL (the only kind an emulated board takes)."""
    parts = urlparse(url)
    if parts.scheme != "socket" or parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
        raise MCUDeployError(f"an emulated board listens on socket://127.0.0.1:PORT; '{url}' is not such a URL")
    return parts.port


def _emulators_dir() -> Path:
    path = cache_dir() / "emulators"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Emulator:
    board: str
    pid: int  # the supervisor's, which leads the process group QEMU runs in
    port: int
    elf: str
    log: str
    lifetime: float

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"


def emulator_lifetime() -> float:
    """Seconds a flashed emulator may run ($MCUDEPLOY_EMULATOR_LIFETIME, 0 for no limit; default an hour):
    a forgotten one does not hold its port and memory for ever."""
    try:
        return max(float(os.environ.get(LIFETIME_ENV) or DEFAULT_LIFETIME_S), 0.0)
    except ValueError:
        raise MCUDeployError(f"${LIFETIME_ENV} should be a number of seconds, not "
                             f"'{os.environ[LIFETIME_ENV]}'") from None


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _is_our_emulator(emu: Emulator) -> bool:
    """The recorded pid is still our supervisor (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{emu.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return alive(emu.pid)
    return b"supervise" in cmdline and emu.elf.encode() in cmdline


def _record(board_name: str, port: int) -> Path:
    return _emulators_dir() / f"{board_name}@{port}.json"


def running_emulators(board_name: Optional[str] = None) -> list[Emulator]:
    """The emulators earlier flashes started that still run (of one board, or of all), newest first."""
    found = []
    for path in _emulators_dir().glob(f"{board_name or '*'}@*.json"):
        try:
            emu = Emulator(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if alive(emu.pid) and _is_our_emulator(emu):
            found.append((path.stat().st_mtime, emu))
        else:
            path.unlink(missing_ok=True)
    return [emu for _, emu in sorted(found, key=lambda f: (-f[0], f[1].port))]


def running_emulator(board_name: str, port: Optional[int] = None) -> Optional[Emulator]:
    """The emulator of this board listening on ``port`` (None: the one flashed last), if it still runs."""
    for emu in running_emulators(board_name):
        if port is None or emu.port == port:
            return emu
    return None


def _stop(emu: Emulator) -> Emulator:
    end_group(emu.pid)
    _record(emu.board, emu.port).unlink(missing_ok=True)
    return emu


def stop_emulator(board_name: str, port: Optional[int] = None) -> Optional[Emulator]:
    """Stop the emulator of this board on ``port`` (None: the only one that runs); return it, or None
    when none runs there. Several running and no port given is one sentence asking for one."""
    running = running_emulators(board_name)
    if port is not None:
        running = [e for e in running if e.port == port]
    elif len(running) > 1:
        ports = ", ".join(f"socket://127.0.0.1:{e.port}" for e in running)
        raise MCUDeployError(f"{len(running)} emulators of board {board_name} run ({ports}): say which with "
                             f"--port, or stop them all with --all")
    return _stop(running[0]) if running else None


def stop_emulators(board_name: Optional[str] = None) -> list[Emulator]:
    """Stop every emulator of this board (None: of every board)."""
    return [_stop(emu) for emu in running_emulators(board_name)]


def emulator_port(board: Board) -> int:
    """The port a flash without --port uses: that of the board's emulator flashed last (it is
    replaced), else a free one."""
    last = running_emulator(board.name)
    return last.port if last else qemu.free_port()


def end_emulators_on(port: int) -> None:
    """Stop the emulator listening on ``port``, recorded or not (a flash interrupted before it
    recorded the emulator it started leaves only the supervisor's command line to find it by)."""
    for emu in running_emulators():
        if emu.port == port:
            _stop(emu)
    needle = f"tcp:127.0.0.1:{port},".encode()
    for pid, cmd in command_lines().items():
        if b"mcudeploy.device.emulator" in cmd and b"supervise" in cmd and needle in cmd:
            end_group(pid)


def link_ports(text: str) -> tuple[Optional[int], Optional[int]]:
    """$MCUDEPLOY_EMULATOR_LINKS ("UP:DOWN", either empty) as (up port, down port)."""
    try:
        up, down = (text or ":").split(":")
        return (int(up) if up else None), (int(down) if down else None)
    except ValueError:
        raise MCUDeployError(f"${LINKS_ENV} should be UP:DOWN, two TCP ports either of which may be empty, "
                             f"not '{text}'") from None


def start_emulator(board: Board, elf: Path, port: int = 0, lifetime: Optional[float] = None,
                   up_port: Optional[int] = None, down_port: Optional[int] = None) -> Emulator:
    """Start QEMU on ``elf`` in the background, its UART listening on 127.0.0.1:port.

    ``port`` 0: the port of this board's emulator flashed last (which this one replaces), else a
    free one; an emulator already on the port asked for stops first, and emulators on other ports
    keep running, so several boards can be flashed side by side, one per port. QEMU runs under a
    small supervisor (``supervise`` below) in a process group of its own, so it outlives
    PlatformIO's upload step, ends after ``lifetime`` seconds, and one signal stops both.
    ``up_port`` and ``down_port``: a chip of a chain's links (the module's docstring).
    """
    port = port or emulator_port(board)
    end_emulators_on(port)
    lifetime = emulator_lifetime() if lifetime is None else lifetime
    if _port_taken(port):
        raise MCUDeployError(f"port {port} on 127.0.0.1 is taken; flash with another --port socket://127.0.0.1:PORT")
    log_path = _emulators_dir() / f"{board.name}@{port}.log"
    cmd = [sys.executable, "-m", "mcudeploy.device.emulator", "supervise", "--lifetime", f"{lifetime:g}", "--",
           *qemu.command_line(board, elf.resolve(), port, up_port=up_port, down_port=down_port)]
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=pio_python_env())
    try:
        deadline = time.monotonic() + EMULATOR_START_TIMEOUT_S
        while not _port_taken(port):
            if proc.poll() is not None:
                message = log_path.read_text(errors="replace").strip().splitlines()
                raise MCUDeployError(f"QEMU exited with status {proc.returncode} before listening on port {port}"
                                     f"{': ' + message[-1] if message else ''}")
            if time.monotonic() > deadline:
                raise MCUDeployError(f"QEMU did not listen on port {port} within {EMULATOR_START_TIMEOUT_S:.0f} s")
            time.sleep(0.01)
        _await_boot(board, port, proc, log_path)
    except BaseException:
        end_group(proc.pid)
        raise
    emu = Emulator(board.name, proc.pid, port, str(elf.resolve()), str(log_path), lifetime)
    write_atomic(_record(board.name, port), json.dumps(emu.__dict__) + "\n")
    return emu


def _await_boot(board: Board, port: int, proc: subprocess.Popen, log_path: Path) -> None:
    """Connect once, take the firmware's BOOT frame and ask it to IDENTIFY, then hang up.

    QEMU holds the guest until the first connection; this one plays the board's reset. Afterwards
    the emulated board is where a real one is after an upload: booted, its greeting gone, waiting
    for requests, so the host's first frame is answered, not met by BOOT. The IDENTIFY (with the
    session's resending) proves the firmware serves, even when its BOOT frame was lost.
    """

    try:
        with open_transport(f"socket://127.0.0.1:{port}", connect_timeout=EMULATOR_START_TIMEOUT_S) as link:
            info = Session(link, board.name).open(boot_wait=EMULATOR_BOOT_WAIT_S)
            log.info("the firmware booted on QEMU (pid %d) for board %s: %s", proc.pid, board.name, info.board)
            return
    except (LinkLost, MCUDeployError) as exc:
        failure = exc
    if proc.poll() is not None:
        lines = log_path.read_text(errors="replace").strip().splitlines()
        raise MCUDeployError(f"QEMU exited with status {proc.returncode} before the firmware booted"
                             f"{': ' + lines[-1] if lines else ''}")
    raise MCUDeployError(f"the firmware on QEMU for board {board.name} did not start serving "
                         f"({str(failure).rstrip('.')})")


def supervise(cmd: Sequence[str], lifetime: float) -> int:
    """Run ``cmd`` and return its status; end it once ``lifetime`` seconds have passed (0: never)."""
    child = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL)
    try:
        return child.wait(timeout=lifetime or None)
    except subprocess.TimeoutExpired:
        print(f"mcudeploy: ending the emulator after its lifetime of {lifetime:g} s "
              f"(${LIFETIME_ENV})", flush=True)
        child.terminate()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        return 124


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m mcudeploy.device.emulator emulate --board B ELF``: PlatformIO's upload command (also
    ``stop --board B``, and ``supervise``, the emulator's keeper)."""
    p = argparse.ArgumentParser(prog="python -m mcudeploy.device.emulator")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("emulate", help="start QEMU on the ELF in the background (PlatformIO's upload)")
    s.add_argument("--board", required=True)
    s.add_argument("--port", type=int, default=int(os.environ.get(PORT_ENV) or 0),
                   help=f"TCP port for the UART (default ${PORT_ENV}, else any free one)")
    s.add_argument("elf")
    s = sub.add_parser("stop", help="stop the emulator of a board")
    s.add_argument("--board", required=True)
    s.add_argument("--port", type=int, help="the TCP port of the one to stop (default: the only one)")
    s = sub.add_parser("supervise", help="run a command, ending it after --lifetime seconds (0: never)")
    s.add_argument("--lifetime", type=float, default=0.0)
    s.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command == "supervise":
        return supervise(args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd, args.lifetime)
    try:
        if args.command == "emulate":
            emu = start_emulator(load_board(args.board), Path(args.elf), args.port, None,
                                 *link_ports(os.environ.get(LINKS_ENV, "")))
            print(f"QEMU (pid {emu.pid}) runs {Path(args.elf).name}; its UART is at {emu.url}")
        else:
            emu = stop_emulator(args.board, args.port)
            print(f"stopped QEMU (pid {emu.pid})" if emu else f"no emulator runs for board '{args.board}'")
    except MCUDeployError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0



if __name__ == "__main__":
    sys.exit(main())
