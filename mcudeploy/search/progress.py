"""What ``mcudeploy tune`` says as it searches (mcudeploy/search/tune.py): every line is built here,
prefixed with the wall-clock seconds and the candidates spent of the budget, and handed to a
callback (to_stderr, unless the caller gives another)."""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional

from mcudeploy.search import space
from mcudeploy.search.budget import Clock, Work
from mcudeploy.search.peak import Peak


STATUS_EVERY = 5.0  # seconds between two lines saying what the boards of a pool do


def to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Progress:
    """The search's lines, one method each; ``work`` and ``clock`` are the run's, read at each line."""

    def __init__(self, callback: Callable[[str], None], clock: Clock, work: Work, budget: int):
        self.callback = callback
        self.clock = clock
        self.work = work
        self.budget = budget
        self._status_at, self._busy = 0.0, ""

    def say(self, message: str) -> None:
        self.callback(f"[{self.clock.elapsed():6.1f}s {self.work.candidates:>4}/{self.budget}] {message}")

    # ------------------------------------------------------------------ the search
    def resuming(self, path, evaluated: int) -> None:
        self.say(f"resuming from {path} ({evaluated} schemes already evaluated)")

    def baseline(self, operators: int, arena: int, board: str) -> None:
        self.say(f"baseline: {operators} operators, arena {arena:,} B; timing it on {board}")

    def baseline_timed(self, ticks: int) -> None:
        self.say(f"baseline: {ticks:,} ticks")

    def latency_budget(self, ticks: int, overhead: float, candidates: int) -> None:
        self.say(f"budget: {ticks:,} ticks (+{overhead:.0%}), {candidates} candidates")

    def segments(self, segments: list) -> None:
        self.say(f"{len(segments)} segments in {len({s.component for s in segments})} axis components")

    def resumed_scheme(self, scheme: tuple, arena: int, ticks: int) -> None:
        self.say(f"resumed scheme {space.short(scheme)}: arena {arena:,} B, {ticks:,} ticks")

    def round(self, peak: Peak, crossing: int) -> None:
        where = space.short_name(peak.node) if peak.node else "input"
        self.say(f"round {self.work.rounds}: peak {peak.bytes:,} B at step {peak.step} ({where}); "
                 f"{crossing} segments cross it")

    def probed(self, first: int, count: int, least: Optional[int]) -> None:
        lowest = f"; least arena {least:,} B" if least is not None else ""
        self.say(f"  segments {first}-{first + count - 1}: probed {count}{lowest}")

    def sweeping(self, segment: space.Segment, probe_arena: int) -> None:
        self.say(f"  sweeping [{space.short_axes(segment.axes)}] (probe {probe_arena:,} B)")

    def timing(self, scheme: tuple, arena: int, estimate: Optional[float]) -> None:
        self.say(f"  timing {space.short(scheme)}: arena {arena:,} B"
                 + (f", estimated {estimate:,.0f} ticks" if estimate else ""))

    def verdict(self, kept: bool, ticks: int, baseline_ticks: int) -> None:
        self.say(f"  {'kept' if kept else 'over budget'}: {ticks:,} ticks ({ticks / baseline_ticks - 1:+.1%})")

    def compiling(self, count: int, workers: int) -> None:
        self.say(f"  compiling {count} candidates on {workers} workers")

    def pool_status(self, message: str) -> None:
        """What the boards of a pool do (device/pool.py): a warning always, their status at most every
        STATUS_EVERY seconds."""
        now, busy = time.monotonic(), message.split(";")[0]
        if message.startswith("warning") or busy != self._busy or now - self._status_at >= STATUS_EVERY:
            self._status_at, self._busy = now, busy
            self.say(f"  {message}")

    def stopped(self, stopped_by: str) -> None:
        self.say(f"search stopped ({stopped_by}): {self.work.summary()}")

    # ------------------------------------------------------------------ the final compiles and runs
    def final_out_of_time(self, method: str, scratch: str) -> None:
        self.say(f"final: out of time before schedule {method} ({scratch} scratch)")

    def final_failed(self, method: str, scratch: str, error: Exception) -> None:
        self.say(f"final: schedule {method} ({scratch} scratch) failed: {error}")

    @staticmethod
    def _final(plan, scratch: str, ticks: int) -> str:
        """How the final lines name a plan (a TimedScheme compiled with ``scratch``)."""
        return f"schedule {plan.compiled.schedule_method}, {scratch} scratch, arena {plan.arena:,} B, {ticks:,} ticks"

    def final_over_budget(self, plan, scratch: str, ticks: int) -> None:
        self.say(f"final: {self._final(plan, scratch, ticks)}: over budget")

    def final_kept(self, plan, scratch: str, ticks: int, run: int, base_run: int) -> None:
        self.say(f"final: {self._final(plan, scratch, ticks)}; whole run {run:,} ticks (unsplit {base_run:,}, "
                 f"{run / base_run - 1:+.1%})")

    def final_run_over(self, plan, scratch: str, ticks: int, run: int, base_run: int, overhead: float) -> None:
        self.say(f"final: {self._final(plan, scratch, ticks)}; whole run {run:,} ticks, over the unsplit run's "
                 f"{base_run:,} + {overhead:.0%}")

    def final_unsplit(self) -> None:
        self.say("final: no split plan held its budget in a whole run; keeping the unsplit plan")
