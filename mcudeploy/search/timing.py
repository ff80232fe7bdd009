"""What the search asks the board (mcudeploy/search/tune.py): a plan's ticks, the sum of its kernels'
timings through the board's timing cache (the board is asked only for kernels the cache lacks), and
one whole run of a plan's own firmware, the final check. Each answer is recorded in the tune state
(mcudeploy/search/state.py) as it comes, so a resumed run reads it there instead of asking again."""
from __future__ import annotations

import logging
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Optional

from mcudeploy import check, interrupts
from mcudeploy.boards import Board
from mcudeploy.device.measure import measure_model
from mcudeploy.device.pool import BoardPool, Job
from mcudeploy.device.runner import run_on_board
from mcudeploy.ops import registry
from mcudeploy.partition import Cut
from mcudeploy.plan import Compiled
from mcudeploy.search.budget import Work
from mcudeploy.search.state import TuneState
from mcudeploy.simulate.timing_cache import CacheView, TimingCache, kernel_signature

log = logging.getLogger(__name__)


@dataclass
class TimedScheme:
    """A split scheme, its compiled plan and what the board said of it (plan/record.py writes a compiled
    plan as plan.json; this is one of the search's candidates)."""

    scheme: tuple[Cut, ...]
    compiled: Compiled
    ticks: Optional[int] = None  # measured on the board: the sum of its kernels' timings (timing cache)
    run_ticks: Optional[int] = None  # one whole run of its own firmware (the final plan and the baseline)

    @property
    def arena(self) -> int:
        return self.compiled.placement.arena_bytes


class BoardTimer:
    """The board, as the search sees it. ``measure(compiled) -> ticks`` times a plan kernel by kernel
    through ``cache``; ``run(compiled) -> ticks`` times one whole run of the plan's own firmware
    (both injectable for tests; ``run`` defaults to ``measure`` then). Kernels the board measures
    are counted in ``work.kernels_measured``."""

    def __init__(self, board: Board, state: TuneState, work: Work, cache: TimingCache, port: Optional[str] = None,
                 measure: Optional[Callable[[Compiled], int]] = None, run: Optional[Callable[[Compiled], int]] = None,
                 pool: Optional[BoardPool] = None):
        self.board = board
        self.state = state
        self.work = work
        self.cache = cache
        self.port = port
        self.pool = pool  # the boards kernels are timed on, in chunks (device/measure.py); None: ``port``
        self._measure = measure or self._measure_on_board
        self._run = run or measure or self._run_on_board
        self.known: set[str] = set()  # signatures of the kernels this run has timed (or read as timed)

    def _measure_on_board(self, compiled: Compiled) -> int:
        result = measure_model(compiled, port=self.port, repeat=3, cache=self.cache, pool=self.pool)
        self.work.kernels_measured += sum(not o.cached for o in result.ops)
        self.state.kernels_measured = self.work.kernels_measured
        return result.total_ticks

    def _run_on_board(self, compiled: Compiled) -> int:
        """Ticks of one whole run of the plan's firmware on a seeded input. A kernel's time can
        depend on what else model.c inlines next to it (measured: the same fast convolution took
        5-18% more instructions in a firmware that also holds mcud_conv_s8_direct), which a sum of
        cached kernel timings from other firmware does not see."""
        inputs = check.random_inputs(compiled.graph, 1, seed=0)
        if self.pool is None:
            result = run_on_board(compiled, inputs, port=self.port)
        else:
            result = self.pool.map([Job(f"one whole run of {Path(compiled.model).name}",
                                        lambda b: run_on_board(compiled, inputs, port=b.port, flash=b.flash))])[0]
        return int(result.runs[0].total_ticks)

    def _recorded(self, key: str, field: str, measure: Callable[[], int]) -> tuple[int, bool]:
        """(the value of `field` for scheme `key`, from the state file if known, else measured and
        recorded; whether it was measured now)."""
        known = self.state.candidates.get(key, {}).get(field)
        if known is not None:
            return int(known), False
        with interrupts.deferred():  # what the board answered is recorded before a signal ends the tune
            value = int(measure())
            self.state.record(key, **{field: value})
        return value, True

    def time(self, plan: TimedScheme, key: str) -> int:
        """Measured ticks of a plan, from the state file when this scheme was timed before. Its kernels
        join those the estimates may read (``known``, and the state's ``kernels``), whether they were
        measured now or not: a resumed run that reads the plans of its round from the state comes to
        know what the uninterrupted run knew at the same point."""
        plan.ticks, now = self._recorded(key, "ticks", lambda: self._measure(plan.compiled))
        graph, lives, placement = plan.compiled.graph, plan.compiled.lifetimes, plan.compiled.placement
        signatures = {kernel_signature(graph, n, lives, placement) for n in plan.compiled.order
                      if not registry.get(n.op).view} - {None}
        self.known |= signatures
        self.state.add_kernels(signatures)
        if now:  # what replay() knows after it
            self.state.record(key, known_after=len(self.state.kernels))
        return plan.ticks

    def replay(self, key: str) -> None:
        """A plan timed before, whose verdict the search reads back without timing it again: its
        kernels are known from here on, as they were in the run that timed it."""
        count = self.state.candidates.get(key, {}).get("known_after")
        if count:
            self.known |= set(self.state.kernels[:count])

    def run_whole(self, plan: TimedScheme, key: str) -> int:
        """One whole run's ticks of a plan, from the state file when it was run before."""
        def run() -> int:
            log.info("board %s: one whole run of %s", self.board.name, key)
            return self._run(plan.compiled)

        plan.run_ticks, _ = self._recorded(key, "run_ticks", run)
        return plan.run_ticks

    def taken(self) -> CacheView:
        """The kernel timings this run has taken (not whatever else the board's timing cache holds,
        which would make the search depend on earlier runs)."""
        return self.cache.view(self.known)
