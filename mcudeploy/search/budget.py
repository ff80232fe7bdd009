"""What a tune may spend, counted in work rather than seconds, and what it spent.

The search's budget is a number of candidate schemes: each one it evaluates (split, compiled with
the search's settings and estimated by the simulator, or read back from tune-state.json on a
resumed run) costs one, whether or not it is then timed on the board. Every later step follows
from the candidates' results, so the same model, board and options explore the same candidates
and keep the same plan on an idle machine and on a loaded one, where they only take longer.
(Kernels measured on the board are counted too, but not budgeted: how many the board is asked for
depends on what the timing cache already holds, which must not change the result.)

``--time-limit`` stays as an outer bound on the wall clock. When it stops the search (or the final
compiles) first, the result says so (``stopped_by: "time-limit"``): it is then not the
reproducible result of the budget, and running the same command again resumes towards it.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields

# Candidates the search may evaluate. On qemu-m4 at --max-overhead 0.05 the search converges well
# within it on the MLPerf Tiny models (ResNet-8 int8 after 96 candidates, the most); the 600 s
# wall-clock limit it replaces allowed about 100 on an idle machine (70% of it for the search, at
# 4-5 s a candidate on ResNet-8 or MobileNetV2 128: 47 and 35 candidates in 420 and 300 s on a
# machine twice as busy), so a bigger model explores at least as much as it did.
CANDIDATES = 150
TIME_LIMIT = 3600.0  # seconds: the outer bound; the budget, not this, ends a search on a loaded machine too
EFFORT = 5.0  # effort seconds of a compile's schedule and of its placement (mcudeploy/effort.py): --effort

CONVERGED = "converged"  # no cut near the peak lowered the arena within budget
BUDGET = "budget"  # the candidates budget was spent
TIMED_OUT = "time-limit"  # the wall clock ran out first: not the reproducible result
STOPS = (CONVERGED, BUDGET, TIMED_OUT)


@dataclass
class Work:
    """What a tuning run spent. ``rounds``, ``candidates`` (the budget's unit), ``timed`` (candidate
    and final plans timed on the board, kernel by kernel) and ``whole_runs`` (final plans and the
    unsplit one run whole) count the same on a resumed run as on an uninterrupted one;
    ``kernels_measured`` (kernel timings the board was asked for, not found in the timing cache)
    adds up over the runs that made the state file."""

    rounds: int = 0
    candidates: int = 0
    timed: int = 0
    whole_runs: int = 0
    kernels_measured: int = 0

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Work":
        known = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in (data or {}).items() if k in known})

    def resume(self, progress: dict) -> None:
        """Count as the run that kept a scheme had counted up to it (``progress``, tune-state.json's);
        ``kernels_measured`` adds up over the runs and stays."""
        spent = Work(**{**progress, "kernels_measured": self.kernels_measured})
        for f in fields(self):
            setattr(self, f.name, getattr(spent, f.name))

    def summary(self) -> str:
        return (f"{self.rounds} round(s), {self.candidates} candidate(s) evaluated, {self.timed} plan(s) timed on "
                f"the board, {self.whole_runs} whole run(s), {self.kernels_measured} kernel(s) measured")


class Clock:
    """The outer time limit: the search may use all but ``reserve`` of it, the final compiles the rest."""

    def __init__(self, limit: float, reserve: float = 0.0):
        self.start = time.monotonic()
        self.limit = limit
        self.reserve = reserve

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        """Seconds left for the search."""
        return self.limit - self.reserve - self.elapsed()

    def left_in_all(self) -> float:
        return self.limit - self.elapsed()


__all__ = ["BUDGET", "CANDIDATES", "CONVERGED", "Clock", "STOPS", "TIME_LIMIT", "TIMED_OUT", "Work"]
