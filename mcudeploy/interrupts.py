"""Ctrl-C and SIGTERM: end at once, clean up, lose nothing that was measured.

``install()`` (the command line calls it) makes SIGTERM behave as Ctrl-C: both raise
KeyboardInterrupt, so every ``finally`` runs (emulators stopped, temporary files removed) and
the command exits with status 130 within moments.

A step that asks a board for a result and then records it (a kernel timing into the timing
cache, a whole run into tune's state) runs inside ``deferred()``: a signal that comes while
the board works ends the wait at once (``check()`` is called by every wait on the board and on
subprocesses), but one that comes after the answer arrived waits until the answer is recorded.
An interrupted run therefore never throws away a measurement it had, and the resumed run asks
the board for nothing it already knows.
"""
from __future__ import annotations

import contextlib
import importlib
import signal
import subprocess
import threading
import time
from typing import Iterator, Optional

_pending = False
_received = False
_depth = 0  # deferred() blocks open (in the main thread)
_stop_threads = threading.Event()  # a pool's worker threads are to stop (the main thread was interrupted)


def _handler(signum, frame) -> None:
    global _pending, _received
    _received = True
    if _depth:
        _pending = True
        return
    raise KeyboardInterrupt()


def install() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt (deferred inside ``deferred()``); no signal received yet."""
    global _pending, _received
    _pending = _received = False
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)
        signal.signal(signal.SIGTERM, _handler)


def received() -> bool:
    """A signal came since install(): whatever went wrong after it (a C extension that was being
    imported turns the KeyboardInterrupt into an ImportError) is the interruption."""
    return _received


def stop_threads(stop: bool) -> None:
    """Tell the threads of a board pool (mcudeploy/device/pool.py) to stop at their next ``check()``
    (the main thread, which alone receives signals, was interrupted or a job failed); False again
    once they have."""
    if stop:
        _stop_threads.set()
    else:
        _stop_threads.clear()


def check() -> None:
    """Raise KeyboardInterrupt if a signal came during a deferred step: called by waits, where
    nothing has been received that would need recording. In another thread than the main one:
    if the pool it works for is stopping (stop_threads)."""
    global _pending
    main = threading.current_thread() is threading.main_thread()
    if _stop_threads.is_set() and not main:
        raise KeyboardInterrupt()
    if _pending:
        if main:  # another thread stops its own work but leaves the signal for the main thread to raise
            _pending = False
        raise KeyboardInterrupt()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal during the block is honoured at the next ``check()`` or when the block ends."""
    global _depth
    main = threading.current_thread() is threading.main_thread()
    if main:
        _depth += 1
    try:
        yield
    finally:
        if main:
            _depth -= 1
    if main and not _depth:
        check()


# Extension modules whose import runs Python from C++ that does not expect an exception there: a
# KeyboardInterrupt raised in the middle ends the process instead (onnx, through nanobind: "terminate
# called after throwing an instance of 'nanobind::python_error'", status -6 where 130 was due; seen
# with SIGTERM 0.5 s after `mcudeploy run` started on a loaded machine).
FRAGILE_IMPORTS = ("onnx",)


def import_deferred(names=FRAGILE_IMPORTS) -> None:
    """Import ``names`` with a signal that comes meanwhile honoured once the imports are done."""
    with deferred():
        for name in names:
            importlib.import_module(name)


def wait(proc: subprocess.Popen, timeout: Optional[float] = None, poll: float = 0.05) -> int:
    """``proc.wait`` that honours a deferred signal (it kills ``proc`` and raises KeyboardInterrupt)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            return proc.wait(poll)
        except subprocess.TimeoutExpired:
            pass
        try:
            check()
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
            raise
        if deadline is not None and time.monotonic() >= deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)
