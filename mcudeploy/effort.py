"""Solver limits counted in work, not in seconds, so that a result does not depend on how busy the machine is.

Every limit of the compile path (``mcudeploy compile --time-limit``, the schedule and placement
limits tune compiles with) is a number of *effort seconds*: work that takes about a second of one
core on an idle machine of the kind mcudeploy runs on, counted so that the same inputs stop at the
same point on an idle machine and on a loaded one (where it takes longer):

- CP-SAT counts its deterministic time (``max_deterministic_time``), with one worker and a fixed
  seed (``solver``). With several workers CP-SAT is deterministic only with ``interleave_search``,
  which is experimental; one worker is deterministic by construction. No wall-clock limit is
  set: one that stopped the solver first would make the result depend on the load again.
  OR-Tools scales the unit to about a second, but on our models it is not: per second of one
  core, the order model (schedule/exact.py) counts about 0.5, the rectangle-packing model
  (memory/exact_placement.py) about 0.05-0.1. So each caller gives its model's rate (``dtime_per_s``),
  and the limit and what was spent are converted with it.
- The heuristics count their own steps, weighted by what each costs (measured on this machine:
  see the constants of the modules that spend them, schedule/refine.py and memory/exact_placement.py).

An ``Effort`` is the counter they share: a limit, what was spent, and whether the limit or a
solver's proof stopped the work. What was spent is recorded in plan.json next to the limit.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional

from mcudeploy import interrupts

SEED = 0


@dataclass
class Effort:
    """Effort seconds: ``limit`` (None: no limit), ``spent`` so far."""

    limit: Optional[float]
    spent: float = 0.0

    def spend(self, seconds: float) -> None:
        self.spent += seconds

    def left(self) -> float:
        return float("inf") if self.limit is None else self.limit - self.spent

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    def share(self, fraction: float, at_most: Optional[float] = None) -> "Effort":
        """A sub-budget of ``fraction`` of what is left (at most ``at_most``); spend it back with ``settle``."""
        part = self.left() * fraction
        return Effort(part if at_most is None else min(part, at_most))

    def settle(self, part: "Effort") -> None:
        self.spend(part.spent)


def solver(seconds: float, dtime_per_s: float):
    """A CP-SAT solver that stops after ``seconds`` of effort (``seconds * dtime_per_s`` of its
    deterministic time), one worker, a fixed seed: the same model gives the same answer however
    busy the machine is. CP-SAT's own SIGINT handler stays off: it would take Ctrl-C as "stop
    the search" and swallow it (the command went on with the best plan so far and ended with status
    0), and left SIGINT's default action behind (a second Ctrl-C killed the process); with it off,
    ``run_solver`` runs it so that Python's handler is heard during the solve."""
    from ortools.sat.python import cp_model

    s = cp_model.CpSolver()
    s.parameters.catch_sigint_signal = False
    s.parameters.max_deterministic_time = max(float(seconds), 0.01) * dtime_per_s
    s.parameters.num_workers = 1
    s.parameters.random_seed = SEED
    return s


def solver_effort(s, dtime_per_s: float) -> float:
    """Effort seconds a CP-SAT solver spent in its last solve."""
    return float(s.deterministic_time) / dtime_per_s


def run_solver(s, model) -> int:
    """``s.Solve(model)``, stopped at once by Ctrl-C or SIGTERM. Python runs a signal handler only in
    the main thread and only between bytecodes, and one solve of a large model takes tens of seconds
    on a loaded machine; so in the main thread the solve runs in a helper thread (CP-SAT releases the
    GIL) while the main thread waits in short steps, and on KeyboardInterrupt it asks CP-SAT to stop until
    the helper has ended, and re-raises. The search is the same either way (one worker, a fixed seed)."""
    if threading.current_thread() is not threading.main_thread():
        return s.Solve(model)
    status: list = []
    failed: list = []

    def run() -> None:
        try:
            status.append(s.Solve(model))
        except BaseException as exc:  # handed to the main thread
            failed.append(exc)

    helper = threading.Thread(target=run, name="cp-sat", daemon=True)
    helper.start()
    try:
        while helper.is_alive():
            helper.join(0.05)
            interrupts.check()  # a signal deferred by the caller is honoured here too
    except KeyboardInterrupt:
        while helper.is_alive():  # again and again: a stop asked before the solve began is not kept
            s.StopSearch()
            helper.join(0.05)
        raise
    if failed:
        raise failed[0]
    return status[0]
