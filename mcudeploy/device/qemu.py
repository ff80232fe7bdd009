"""Emulated boards: QEMU with the UART on a TCP socket, deterministic time, semihosting exit.

``-icount shift=N`` makes guest time advance by 2^N ns per instruction, so the board's timer
counts instructions (exactly and reproducibly); ``-semihosting`` lets the firmware end QEMU
with an exit status; ``-serial tcp:...,server=on,wait=on,nodelay=on`` holds the guest until
the host connects (nothing the firmware prints is lost) and keeps round trips short.

A chip of a chain (the board's ``links``) has two more UARTs joined to its neighbours' by TCP:
its down link listens (``-chardev socket,server=on,wait=off``: QEMU creates ``-chardev`` backends
before the ``-serial`` ones, so it listens before the host's UART waits for the host), its up link
connects to the down link of the chip before, which therefore starts first.
"""
from __future__ import annotations

import ctypes
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from mcudeploy import interrupts
from mcudeploy.boards import Board, instructions_per_tick  # noqa: F401  (qemu.instructions_per_tick, as before)
from mcudeploy.device.ports import free_port  # noqa: F401  (qemu.free_port, as before)
from mcudeploy.device.transport import LinkLost, Transport
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import locked

log = logging.getLogger(__name__)

QEMU = "qemu-system-arm"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
_STARTING = threading.Lock()
START_LOCK = Path(tempfile.gettempdir()) / f"mcudeploy-{os.getuid()}-qemu-start"  # .lock: across processes
FAULT_EXIT = 3  # MCUD_EXIT_FAULT in firmware/runtime/mcud_fw.h
STACK_EXIT = 4  # MCUD_EXIT_STACK: a push into the stack's guarded bottom (firmware/runtime/startup.c)
EXIT_MEANING = {
    0: "a clean exit",
    FAULT_EXIT: "the firmware took a fault: a HardFault, bus fault or usage fault",
    STACK_EXIT: "the firmware's stack overflowed: give the board file a larger stack_bytes",
    134: "the emulated CPU locked up (a fault inside a fault handler)",
}


def qemu_binary(board: Optional[Board] = None) -> str:
    """The emulator of ``board`` (its qemu.binary; qemu-system-arm without a board), found on PATH."""
    binary, package = (board.qemu.binary, board.qemu.package) if board is not None and board.qemu else (QEMU, QEMU)
    path = shutil.which(binary)
    if path is None:
        who = f"board {board.name} needs" if board is not None else "emulated boards need"
        raise MCUDeployError(f"{who} {binary}, which is not installed (apt-get install {package})")
    return path


def link_args(board: Board, up_port: Optional[int], down_port: Optional[int]) -> tuple[list[str], list[str]]:
    """The ``-chardev`` arguments of the link UARTs (up: a client of ``up_port``, down: a server on
    ``down_port``) and the ``-serial`` arguments after the host's, every index up to the last link's."""
    wanted = {}
    for role, port, server in (("up", up_port, False), ("down", down_port, True)):
        if port is None:
            continue
        if board.links is None or getattr(board.links, role).qemu_serial < 1:
            raise MCUDeployError(f"board {board.name} names no QEMU serial port for its {role} link")
        wanted[getattr(board.links, role).qemu_serial] = (role, port, server)
    chardevs, serials = [], []
    for index in range(1, max(wanted, default=0) + 1):
        if index not in wanted:
            serials += ["-serial", "null"]
            continue
        role, port, server = wanted[index]
        chardevs += ["-chardev", f"socket,id={role},host=127.0.0.1,port={port},nodelay=on"
                     + (",server=on,wait=off" if server else "")]
        serials += ["-serial", f"chardev:{role}"]
    return chardevs, serials


def command_line(board: Board, elf: Path, port: int, qmp_port: Optional[int] = None,
                 up_port: Optional[int] = None, down_port: Optional[int] = None) -> list[str]:
    q = board.qemu
    if board.kind != "qemu" or q is None:
        raise MCUDeployError(f"board {board.name} is not an emulated board")
    chardevs, serials = link_args(board, up_port, down_port)
    cmd = [qemu_binary(board), "-M", q.machine, "-display", "none", "-monitor", "none",
           # sleep=off: measured, the first request after boot otherwise waits about 1 s
           "-icount", f"shift={q.icount_shift},sleep=off",
           "-semihosting-config", "enable=on,target=native",
           "-kernel", str(elf),
           *chardevs, "-serial", f"tcp:127.0.0.1:{port},server=on,wait=on,nodelay=on", *serials]
    if qmp_port is not None:
        cmd += ["-qmp", f"tcp:127.0.0.1:{qmp_port},server=on,wait=off"]
    return cmd + list(q.extra_args)


class QemuBoard:
    """One QEMU process running a firmware ELF; ``start()`` returns the transport to its UART.

    Use as a context manager; ``stop()`` asks nothing of the firmware (send EXIT first for a
    clean shutdown), waits for QEMU to end and returns its exit status, killing it after
    ``timeout`` seconds. ``qmp=True`` also opens QEMU's machine protocol, for ``system_reset``.
    A chip of a chain: ``up_port`` is the down link its up link connects to; ``down=True`` makes its
    down link listen, on ``down_port`` once started.
    """

    def __init__(self, board: Board, elf: Path, qmp: bool = False, up_port: Optional[int] = None,
                 down: bool = False):
        self.board = board
        self.elf = Path(elf)
        self.qmp = qmp
        self.up_port = up_port
        self.down = down
        self.down_port: Optional[int] = None
        self.proc: Optional[subprocess.Popen] = None
        self.transport: Optional[Transport] = None
        self.port: Optional[int] = None
        self.qmp_port: Optional[int] = None
        self._log = None

    def start(self, connect_timeout: float = 10.0) -> Transport:
        # One at a time on this machine (the boards of a pool start from threads, tests from several
        # processes): between free_port() and QEMU listening, another could be given the same port and
        # connect to this QEMU.
        with _STARTING, locked(START_LOCK):
            return self._start(connect_timeout)

    def _start(self, connect_timeout: float) -> Transport:
        for attempt in range(3):
            self.port = free_port()
            self.qmp_port = free_port() if self.qmp else None
            self.down_port = free_port() if self.down else None
            cmd = command_line(self.board, self.elf, self.port, self.qmp_port, self.up_port, self.down_port)
            log.info("starting %s", " ".join(cmd))
            self._log = tempfile.TemporaryFile()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
            try:
                self.transport = self._connect(connect_timeout)
                return self.transport
            except _PortTaken:
                log.info("port %d was taken; trying another", self.port)
                continue
        raise MCUDeployError(f"QEMU for board {self.board.name} could not get a free TCP port")

    def _connect(self, timeout: float) -> Transport:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                output = self.output()
                if "Address already in use" in output:
                    raise _PortTaken()
                if self.proc.returncode < 0:  # killed from outside: the board is gone, not the job wrong
                    raise LinkLost(f"QEMU for board {self.board.name} was killed (signal {-self.proc.returncode}) "
                                   f"before the firmware started")
                raise MCUDeployError(f"QEMU for board {self.board.name} exited with status {self.proc.returncode} "
                                     f"before the firmware started: {_last_line(output)}")
            try:
                return Transport.open(f"socket://127.0.0.1:{self.port}", connect_timeout=0.0)
            except LinkLost:
                interrupts.check()
                if time.monotonic() >= deadline:
                    self.kill()
                    raise MCUDeployError(f"QEMU for board {self.board.name} did not open its serial port "
                                         f"within {timeout:g} s") from None
                time.sleep(0.02)

    def output(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    @property
    def returncode(self) -> Optional[int]:
        return None if self.proc is None else self.proc.poll()

    def exit_reason(self) -> str:
        code = self.returncode
        if code is None:
            return "still running"
        return f"exit status {code} ({EXIT_MEANING.get(code, 'see the QEMU output')})"

    def system_reset(self) -> None:
        """Reset the emulated board, as a watchdog or the reset button would (needs qmp=True)."""
        if self.qmp_port is None:
            raise RuntimeError("QemuBoard was started without qmp=True")
        with socket.create_connection(("127.0.0.1", self.qmp_port), timeout=5) as s:
            f = s.makefile("rw")
            f.readline()  # greeting
            for cmd in ({"execute": "qmp_capabilities"}, {"execute": "system_reset"}):
                f.write(json.dumps(cmd) + "\n")
                f.flush()
                while True:
                    reply = json.loads(f.readline())
                    if "return" in reply or "error" in reply:
                        break

    def stop(self, timeout: float = 5.0) -> Optional[int]:
        if self.transport is not None:
            self.transport.close()
            self.transport = None
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        code = self.proc.returncode
        if self._log is not None:
            if code not in (0, None):
                log.info("QEMU output:\n%s", self.output())
            self._log.close()
            self._log = None
        return code

    def wait(self, timeout: float) -> Optional[int]:
        """QEMU's exit status once it has ended, waiting up to ``timeout`` s; None if it still runs."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "QemuBoard":
        return self

    def __exit__(self, *exc) -> None:
        self.stop(timeout=0.0 if exc[0] is not None else 5.0)


def _die_with_parent() -> None:
    """In the child, before exec: the kernel kills this QEMU when the process that started it dies,
    however it dies (SIGKILL included), so no emulator outlives its command."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the command's own cleanup has to do
        pass


class _PortTaken(Exception):
    pass


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"
