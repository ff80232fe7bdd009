"""``mcudeploy tune``: the least-memory plan whose latency, measured on the board, stays within budget.

1. The unsplit model is compiled and timed on the board: its ticks are the baseline, and the
   budget is ``baseline * (1 + max_overhead)``.
2. The scheme grows one cut at a time. Each round lists the cuts (mcudeploy/search/space.py) that
   cross the operators live at the current plan's peak, compiles each candidate scheme with fast
   settings and ranks them by arena (memory first: no board needed). From the smallest arena up,
   a candidate is estimated by the simulator (cached kernel timings, a fitted model for the
   rest); one clearly over budget is dropped unmeasured, others are timed on the board, which is
   asked only for kernel signatures the timing cache lacks. The first candidate within budget is
   kept, and the next round starts from it.
3. When no cut helps or the time limit is reached, the kept scheme is compiled with every
   schedule method and exact placement, the smallest arena is timed once more, and the C project
   and plan.json (with the scheme, the split's saving and the latency) are written.

Every verdict is saved to ``DIR/tune-state.json`` as it is reached (mcudeploy/search/state.py), so
a run that is interrupted resumes without compiling or measuring anything twice.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from mcudeploy.boards import Board, load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_onnx
from mcudeploy.memory import areas, lifetimes, place
from mcudeploy.partition import Cut, describe, split
from mcudeploy.pipeline import Compiled, lower
from mcudeploy.schedule import schedule
from mcudeploy.search import space
from mcudeploy.search.state import TuneState, model_digest
from mcudeploy.simulate.timing_cache import TimingCache

SEARCH_SCHEDULE = "refine"  # fast and good on graphs of hundreds of pieces
FINAL_SCHEDULES = ("auto", "refine", "demand", "dfs", "rpo")
ESTIMATE_SLACK = 1.25
TOP_SEGMENTS = 10  # segments compiled per round, the smallest boundary bytes first (space.ranked_segments)  # a candidate estimated above budget * slack is not worth a board run


@dataclass
class Plan:
    scheme: tuple[Cut, ...]
    compiled: Compiled
    ticks: Optional[int] = None  # measured on the board

    @property
    def arena(self) -> int:
        return self.compiled.placement.arena_bytes


@dataclass
class TuneResult:
    baseline: Plan
    best: Plan
    budget_ticks: int
    evaluated: int
    measured: int
    timed_out: bool
    out_dir: Path
    log: list = field(default_factory=list)


class Clock:
    def __init__(self, limit: float):
        self.start = time.monotonic()
        self.limit = limit

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.limit - self.elapsed()


def _default_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def compile_scheme(lowered, scheme: Sequence[Cut], board: Board, name: str, method: str = SEARCH_SCHEDULE,
                   placement: str = "greedy", time_limit: float = 5.0) -> Compiled:
    """Split ``lowered`` by ``scheme``, schedule, share and place it (no import, no lowering)."""
    graph = split(lowered, tuple(scheme)) if scheme else lowered
    sched = schedule(graph, method, time_limit, board.alignment)
    lives = lifetimes(graph, sched.order, board.alignment)
    placed = place(lives, areas(board), placement, board.alignment, time_limit)
    return Compiled(name, board, graph, sched, lives, placed)


def original_name(piece: str) -> str:
    """The operator a piece was cut from (partition names pieces ``<node>#...``)."""
    return piece.split("#", 1)[0]


def peak_nodes(compiled: Compiled) -> frozenset:
    """Original names of the operators that write or read a buffer live at the peak step."""
    lives = compiled.lifetimes
    live = lives.live_bytes()  # index 0 is step -1
    step = max(range(len(live)), key=live.__getitem__) - 1
    tensors = set()
    for b in lives.buffers:
        if b.first <= step <= b.last:
            tensors.update(b.tensors)
    names = set()
    for i, node in enumerate(compiled.order):
        if i == step or tensors & set(node.inputs) or tensors & set(node.outputs):
            names.add(original_name(node.name))
    return frozenset(names)


class Tuner:
    """One tuning run. ``measure(compiled) -> ticks`` times a plan on the board (injectable for tests)."""

    def __init__(self, model, board, out_dir, max_overhead: float = 0.05, time_limit: float = 600.0,
                 port: Optional[str] = None, cache: Optional[TimingCache] = None,
                 measure: Optional[Callable[[Compiled], int]] = None,
                 progress: Callable[[str], None] = _default_progress, input_shapes=None,
                 pieces: Sequence[int] = space.PIECES, max_segment: Optional[int] = None,
                 top_segments: int = TOP_SEGMENTS):
        if not max_overhead >= 0:
            raise MCUDeployError(f"--max-overhead must be 0 or more, not {max_overhead}")
        if not time_limit > 0:
            raise MCUDeployError(f"--time-limit must be positive, not {time_limit}")
        self.model = os.fspath(model)
        self.board = load_board(board) if isinstance(board, str) else board
        if self.board.kind == "host":
            raise MCUDeployError("tune measures on a Cortex-M board (emulated or real); the host board has no timer")
        if self.board.kind != "qemu" and measure is None:
            raise MCUDeployError(f"tune times every candidate plan with its own firmware, which needs an emulated "
                                 f"board for now; {self.board.name} would have to be flashed for each one")
        self.out = Path(out_dir)
        self.max_overhead = max_overhead
        self.clock = Clock(time_limit)
        self.port = port
        self.cache = cache if cache is not None else TimingCache(self.board.name)
        self._measure = measure or self._measure_on_board
        self.progress = progress
        self.pieces = tuple(pieces)
        self.max_segment = max_segment
        self.top_segments = top_segments
        self.lowered = lower(import_onnx(self.model, input_shapes))
        self.state = TuneState(self.out, {"model": model_digest(self.model), "board": self.board.name,
                                          "max_overhead": max_overhead})
        self.measured = 0

    # ------------------------------------------------------------------ helpers
    def say(self, message: str) -> None:
        self.progress(f"[{self.clock.elapsed():6.1f}s] {message}")

    def _measure_on_board(self, compiled: Compiled) -> int:
        from mcudeploy.device.measure import measure_model

        result = measure_model(compiled, port=self.port, repeat=3, cache=self.cache)
        return result.total_ticks

    def compile(self, scheme, **kw) -> Compiled:
        return compile_scheme(self.lowered, scheme, self.board, self.model, **kw)

    def time(self, plan: Plan, key: str) -> int:
        """Measured ticks of a plan, from the state file when this scheme was timed before."""
        known = self.state.candidates.get(key, {}).get("ticks")
        if known is not None:
            plan.ticks = int(known)
            return plan.ticks
        plan.ticks = int(self._measure(plan.compiled))
        self.measured += 1
        self.state.record(key, ticks=plan.ticks)
        return plan.ticks

    def estimate(self, compiled: Compiled) -> Optional[float]:
        try:
            from mcudeploy.simulate.simulate import simulate
        except ImportError:  # pragma: no cover - the simulator ships with the search
            return None
        return float(simulate(compiled, self.cache).ticks)

    # ------------------------------------------------------------------ the search
    def baseline(self) -> Plan:
        plan = Plan((), self.compile((), method="auto", placement="exact"))
        self.say(f"baseline: {len(self.lowered.nodes)} operators, arena {plan.arena:,} B; timing it on "
                 f"{self.board.name}")
        ticks = self.time(plan, "unsplit")
        self.state.baseline = {"ticks": ticks, "arena_bytes": plan.arena}
        self.state.save()
        self.say(f"baseline: {ticks:,} ticks")
        return plan

    def run(self) -> TuneResult:
        if self.state.resumed:
            self.say(f"resuming from {self.state.path} ({len(self.state.candidates)} schemes already evaluated)")
        base = self.baseline()
        budget = int(base.ticks * (1 + self.max_overhead))
        self.say(f"budget: {budget:,} ticks (+{self.max_overhead:.0%})")
        segs = space.segments(self.lowered, self.max_segment)
        self.say(f"{len(segs)} segments in {len({s.component for s in segs})} axis components")
        scheme = tuple(space.cut_from_dict(d) for d in self.state.accepted)
        best = base
        if scheme:
            best = Plan(scheme, self.compile(scheme))
            self.time(best, space.scheme_key(scheme))
            self.say(f"resumed scheme {space.short(scheme)}: arena {best.arena:,} B, {best.ticks:,} ticks")
        evaluated = 0
        timed_out = False
        while True:
            if self.clock.left() <= 0:
                timed_out = True
                break
            taken = frozenset(n for cut in scheme for n, _ in cut.axes)
            cuts = space.candidate_cuts(self.lowered, segs, taken, peak_nodes(best.compiled), self.pieces,
                                        top=self.top_segments)
            if not cuts:
                break
            self.say(f"round {len(scheme) + 1}: {len(cuts)} candidate cuts near the peak")
            ranked = []
            for i, cut in enumerate(cuts):
                if self.clock.left() <= 0:
                    timed_out = True
                    break
                trial = scheme + (cut,)
                key = space.scheme_key(trial)
                known = self.state.candidates.get(key)
                if known is not None and "arena" in known:
                    arena = known["arena"]
                else:
                    try:
                        arena = self.compile(trial).placement.arena_bytes
                    except MCUDeployError as exc:
                        self.state.record(key, status=f"invalid: {exc}")
                        continue
                    self.state.record(key, arena=arena)
                    evaluated += 1
                ranked.append((arena, key, trial))
                if (i + 1) % 20 == 0:
                    self.say(f"  compiled {i + 1}/{len(cuts)}; least arena so far {min(ranked)[0]:,} B")
            ranked.sort(key=lambda r: (r[0], len(r[1])))
            accepted = None
            for arena, key, trial in ranked:
                if arena >= best.arena or self.clock.left() <= 0:
                    break
                entry = self.state.candidates.get(key, {})
                if entry.get("status") == "over budget":
                    continue
                plan = Plan(trial, self.compile(trial))
                est = self.estimate(plan.compiled)
                if est is not None:
                    self.state.record(key, estimate=est)
                    if est > budget * ESTIMATE_SLACK and "ticks" not in entry:
                        self.state.record(key, status="estimate over budget")
                        self.say(f"  skip {space.short(trial)}: arena {arena:,} B, estimated {est:,.0f} ticks")
                        continue
                self.say(f"  timing {space.short(trial)}: arena {arena:,} B" + (f", estimated {est:,.0f} ticks" if est else ""))
                ticks = self.time(plan, key)
                ok = ticks <= budget
                self.state.record(key, status="within budget" if ok else "over budget")
                self.say(f"  {'kept' if ok else 'over budget'}: {ticks:,} ticks ({ticks / base.ticks - 1:+.1%})")
                if ok:
                    accepted = plan
                    break
            if accepted is None:
                break
            scheme, best = accepted.scheme, accepted
            self.state.accepted = [space.cut_to_dict(c) for c in scheme]
            self.state.save()
        final = self.finish(best, budget)
        return TuneResult(base, final, budget, evaluated, self.measured, timed_out, self.out)

    def finish(self, best: Plan, budget: int) -> Plan:
        """Every schedule method with exact placement on the kept scheme: the least arena within budget."""
        if not best.scheme:
            return best
        options = []
        for method in FINAL_SCHEDULES:
            try:
                options.append(Plan(best.scheme, self.compile(best.scheme, method=method, placement="exact")))
            except MCUDeployError as exc:
                self.say(f"final: schedule {method} failed: {exc}")
        key = space.scheme_key(best.scheme)
        for plan in sorted(options, key=lambda p: p.arena):
            if plan.arena >= best.arena:
                break
            ticks = self.time(plan, f"{key} @ {plan.compiled.schedule_method}/exact")
            if ticks <= budget:
                self.say(f"final: schedule {plan.compiled.schedule_method}, arena {plan.arena:,} B, {ticks:,} ticks")
                return plan
        self.say(f"final: schedule {best.compiled.schedule_method}, arena {best.arena:,} B, {best.ticks:,} ticks")
        return best


def write_result(result: TuneResult) -> Path:
    """The C project and plan.json of the best plan, with the scheme, the saving and the latency."""
    from mcudeploy.codegen import write_project
    from mcudeploy.plan import plan_dict

    best, base = result.best, result.baseline
    out = write_project(best.compiled, result.out_dir)
    scheme = describe(base.compiled.graph, best.compiled.graph, best.scheme) if best.scheme else []
    source = f"measured on {best.compiled.board.name}"
    latency = {"ticks": best.ticks, "baseline_ticks": base.ticks, "source": source,
               "budget_ticks": result.budget_ticks}
    plan = plan_dict(best.compiled, scheme=scheme, latency=latency)
    plan["split"] = {"arena_bytes_unsplit": base.arena, "arena_bytes": best.arena,
                     "saved_bytes": base.arena - best.arena, "ratio": round(best.arena / base.arena, 4)}
    (out / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    return out
