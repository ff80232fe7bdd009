"""A pool of boards of one kind: independent jobs go to whichever board is free.

A board of the pool is a ``PoolBoard``: the serial port of a flashed board (``--port``, given once
per board), a place of a labgrid farm (mcudeploy/device/farm.py: its port and a way to flash it),
or, for an emulated board with no port, a slot in which each job starts its own QEMU
(``--boards N``: N at once). ``BoardPool.map(jobs)`` runs every job on a free board, one thread
per board (the work is subprocesses: QEMU, the compiler, a forked compile), and returns the
results in the order of the jobs, whatever order they finished in, so a caller that decides on
them decides the same way with one board or several.

A board that stops answering (the link is lost, the board falls silent or restarts) is taken
out of the pool with a warning and its job is done again on another board; when none is left,
the job's error is the pool's. Any other error ends the map: the jobs not yet started are
dropped, the running ones are told to stop (interrupts.stop_threads), and the first error in
job order is raised. Ctrl-C does the same.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from mcudeploy import interrupts
from mcudeploy.boards import Board
from mcudeploy.device.session import NoAnswer
from mcudeploy.device.transport import LinkLost
from mcudeploy.errors import MCUDeployError

log = logging.getLogger(__name__)
BOARD_LOST = (LinkLost, NoAnswer)  # what says a board stopped answering, not that the job was wrong


class NoBoardLeft(MCUDeployError):
    """Every board of a pool of several stopped answering."""


@dataclass
class PoolBoard:
    """One board of the pool: ``port`` (None: an emulator each job starts), and for a farm place the
    ``flash(firmware)`` that loads a firmware on it before a job talks to it."""

    index: int
    port: Optional[str] = None
    name: str = ""
    flash: Optional[Callable] = None
    doing: str = ""  # what it does now ("" idle)
    lost: bool = False

    @property
    def label(self) -> str:
        return self.name or f"board {self.index + 1}"


@dataclass(frozen=True)
class Job:
    label: str  # what the board does, for the progress lines
    run: Callable[[PoolBoard], object]


class BoardPool:
    def __init__(self, board: Board, boards: Sequence[PoolBoard], say: Optional[Callable[[str], None]] = None):
        if not boards:
            raise MCUDeployError(f"a pool of {board.name} boards needs one board at least")
        self.board = board
        self.boards = list(boards)
        self.say = say or (lambda message: log.info("%s", message))
        self._lock = threading.Lock()

    @classmethod
    def of(cls, board: Board, count: int = 1, ports: Sequence[str] = (), say=None) -> "BoardPool":
        """``ports``: one flashed board on each; else ``count`` boards, which must then be emulated."""
        if ports:
            if count not in (1, len(ports)):
                raise MCUDeployError(f"--boards {count} and {len(ports)} --port: give one --port per board, or "
                                     f"--boards alone for emulated boards")
            return cls(board, [PoolBoard(i, p) for i, p in enumerate(ports)], say)
        if not (isinstance(count, int) and count >= 1):
            raise MCUDeployError(f"--boards must be a whole number of boards, 1 or more, not {count}")
        if count > 1 and board.kind != "qemu":
            raise MCUDeployError(f"--boards {count} starts emulators; {board.name} is real hardware: give each "
                                 f"board's serial port with --port (once per board), or a farm place with --place")
        return cls(board, [PoolBoard(i) for i in range(count)], say)

    @property
    def size(self) -> int:
        return sum(not b.lost for b in self.boards)

    def status(self) -> str:
        """How many boards are busy and what each does."""
        live = [b for b in self.boards if not b.lost]
        busy = [b for b in live if b.doing]
        return f"{len(busy)}/{len(live)} boards busy" + "".join(f"; {b.label}: {b.doing}" for b in busy)

    def map(self, jobs: Sequence[Job]) -> list:
        """Every job's result, in the order of ``jobs``."""
        jobs = list(jobs)
        if not jobs:
            return []
        live = [b for b in self.boards if not b.lost]
        if len(live) == 1 or len(jobs) == 1:
            return self._in_turn(jobs, live)
        pending = deque(range(len(jobs)))
        results: dict[int, object] = {}
        errors: dict[int, BaseException] = {}
        lock = threading.Condition()

        running = [0]  # jobs under way: a lost board puts its job back, for a board still waiting

        def worker(b: PoolBoard) -> None:
            while True:
                with lock:
                    while not pending and running[0] and not errors:
                        lock.wait(0.1)
                    if errors or not pending:
                        return
                    k = pending.popleft()
                    running[0] += 1
                try:
                    value, error = self._run(b, jobs[k]), None
                except BaseException as exc:  # noqa: BLE001  (handed to the caller's thread)
                    value, error = None, exc
                with lock:
                    running[0] -= 1
                    lock.notify_all()
                    if error is None:
                        results[k] = value
                    elif isinstance(error, BOARD_LOST) and self._lose(b, error):
                        pending.appendleft(k)
                        return
                    elif isinstance(error, BOARD_LOST) and len(self.boards) > 1:
                        errors[k] = self._none_left(error)
                        return
                    else:
                        errors[k] = error
                        return

        threads = [threading.Thread(target=worker, args=(b,), daemon=True, name=f"pool-{b.label}") for b in live]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.1)
                    if errors:
                        interrupts.stop_threads(True)
        except BaseException:
            interrupts.stop_threads(True)
            for t in threads:
                t.join()
            raise
        finally:
            interrupts.stop_threads(False)
        if errors:  # the first in job order; not a job the others' stopping interrupted
            real = {k: e for k, e in errors.items() if not isinstance(e, KeyboardInterrupt)} or errors
            raise real[min(real)]
        if len(results) < len(jobs):  # every board was lost before the jobs were done
            raise NoBoardLeft(f"every {self.board.name} board of the pool stopped answering")
        return [results[k] for k in range(len(jobs))]

    def _in_turn(self, jobs: list, live: list) -> list:
        """One board (or one job): in this thread, in order; a lost board's job goes to the next."""
        out = []
        for job in jobs:
            while True:
                b = next((b for b in live if not b.lost), None)
                if b is None:
                    raise NoBoardLeft(f"every {self.board.name} board of the pool stopped answering")
                try:
                    out.append(self._run(b, job))
                    break
                except BOARD_LOST as exc:
                    if not self._lose(b, exc):
                        if len(self.boards) > 1:
                            raise self._none_left(exc) from None
                        raise
        return out

    def _none_left(self, exc: BaseException) -> MCUDeployError:
        return NoBoardLeft(f"every {self.board.name} board of the pool stopped answering (the last: "
                              f"{str(exc).rstrip('.')})")

    def _run(self, b: PoolBoard, job: Job):
        with self._lock:
            b.doing = job.label
            if len(self.boards) > 1:
                self.say(self.status())
        try:
            return job.run(b)
        finally:
            with self._lock:
                b.doing = ""

    def _lose(self, b: PoolBoard, exc: BaseException) -> bool:
        """Take ``b`` out of the pool; whether another board is left to redo its job."""
        with self._lock:
            b.lost = True
            left = self.size
        if len(self.boards) == 1:  # a board alone: its error is the command's, said once
            return False
        self.say(f"warning: {b.label} stopped answering ({str(exc).rstrip('.')}); taken out of the pool, "
                 f"{left} left" + ("; its work is done again on another" if left else ""))
        return left > 0
