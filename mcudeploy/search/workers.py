"""The search's compiles, several at once: forked worker processes, one per board of the pool.

A candidate's compile is Python (the schedule heuristics and the placement), which threads would
run one at a time, so ``Compiles`` runs them in processes forked from the tuner (they start with its
lowered model and options, and nothing is sent to them but the scheme and the compile's options)
and takes the compiled plans back. The caller decides on the results in the order it asked for
them, so the search does what it would with one board. A worker ignores Ctrl-C (the tuner is told
and ends them) and dies with the tuner.
"""
from __future__ import annotations

import copyreg
import ctypes
import multiprocessing
import signal
import types
from concurrent.futures import ProcessPoolExecutor
from typing import Optional, Sequence

from mcudeploy.errors import MCUDeployError

_TUNER = None  # the tuner the workers were forked from (set in the parent just before the fork)
PR_SET_PDEATHSIG = 1


def _proxy(entries: dict) -> types.MappingProxyType:
    return types.MappingProxyType(entries)


# A compiled plan's frozen mappings (a node's attributes) travel back from the workers as dicts.
copyreg.pickle(types.MappingProxyType, lambda m: (_proxy, (dict(m),)))


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _compile(search: bool, scheme: tuple, options: dict):
    """In a worker: the tuner's search compile (or its compile with ``options``) of ``scheme``, or the
    error that refused it."""
    try:
        return _TUNER.search_compile(scheme) if search else _TUNER.compile(scheme, **options)
    except MCUDeployError as exc:
        return MCUDeployError(str(exc))


class Compiles:
    def __init__(self, tuner, workers: int):
        self.tuner = tuner
        self.workers = workers
        self._pool: Optional[ProcessPoolExecutor] = None

    def run(self, schemes: Sequence[tuple], search: bool = True, options: Sequence[dict] = ()) -> list:
        """The compiled plan (or the MCUDeployError refusing it) of every scheme, in order; ``search``:
        Tuner.search_compile, else Tuner.compile with each scheme's ``options``."""
        global _TUNER
        if self._pool is None:
            _TUNER = self.tuner
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_start_worker)
        opts = list(options) or [{}] * len(schemes)
        futures = [self._pool.submit(_compile, search, tuple(s), o) for s, o in zip(schemes, opts)]
        try:
            return [f.result() for f in futures]
        except BaseException:
            self.close(at_once=True)
            raise

    def close(self, at_once: bool = False) -> None:
        """End the workers. Between runs (no compile under way) each reads its end from the queue and exits, and
        the pool's threads are joined: killed instead, the pool's manager thread took them for a broken pool while
        the tuner went on, and Python 3.11's executor then wrote to a pipe being closed and printed a traceback
        (OSError: Bad file descriptor; a tune whose every board was lost, in CI). ``at_once``: a compile may be
        under way (an interrupt while waiting for one): it is not waited for, the workers are killed."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not at_once:
            pool.shutdown(wait=True, cancel_futures=True)
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            if p.is_alive():
                p.kill()
