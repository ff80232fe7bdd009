"""``mcudeploy tune``: the least-memory plan whose latency, measured on the board, stays within budget.

1. The unsplit model is compiled and timed on the board: its ticks are the baseline, and the
   budget is ``baseline * (1 + max_overhead)``. Plans are compiled by pipeline.compile_graph, the
   path of ``mcudeploy compile``; while searching, every kernel keeps its scratch (SEARCH_SCRATCH),
   so the baseline is the fastest unsplit plan.
2. The scheme grows one cut at a time. Each round lists the cuts (mcudeploy/search/space.py) that
   cross the operators live at the current plan's peak, compiles each candidate scheme with fast
   settings and ranks them by arena (memory first: no board needed); segments come in batches,
   the next batch only while no cut lowers the arena. From the smallest arena up, a candidate is
   estimated by the simulator (cached kernel timings, pieces scaled from the baseline's
   operators); one clearly over budget is dropped unmeasured, others are timed on the board,
   which is asked only for kernel signatures the timing cache lacks. The first candidate within
   budget is kept, and the next round starts from it.
3. When no cut helps or the time limit is reached, the kept scheme is compiled with every
   schedule method, exact placement and both scratch policies ("fit" drops the scratch of kernels
   at the peak for slower scratch-free ones). From the smallest arena up, the first within budget
   whose whole run on the board (its own firmware, against the unsplit plan's whole run) also
   stays within the overhead is written: the C project and plan.json (with the scheme, the
   split's saving and both latencies).

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
from mcudeploy.partition import Cut, describe, split
from mcudeploy.pipeline import Compiled, compile_graph, lower
from mcudeploy.search import space
from mcudeploy.search.state import TuneState, model_digest
from mcudeploy.simulate.simulate import original_name, reference_costs, simulate
from mcudeploy.simulate.timing_cache import TimingCache

SEARCH_SCHEDULE = "refine"  # fast and good on graphs of hundreds of pieces
# Kernels keep their scratch while the search runs and for the baseline: the scratch-free variants
# fit_scratch picks cost 2x on a convolution, far more than any split saves in time, so the
# baseline is the fastest unsplit plan; finish() then also tries "fit" on the kept scheme.
SEARCH_SCRATCH = "keep"
FINAL_SCHEDULES = ("auto", "refine", "demand", "dfs", "rpo")
FINAL_SCRATCH = ("keep", "fit")
ESTIMATE_SLACK = 1.25  # a candidate estimated above budget * slack is not worth a board run
TOP_SEGMENTS = 10  # segments compiled per round, the smallest boundary bytes first (space.ranked_segments)


@dataclass
class Plan:
    scheme: tuple[Cut, ...]
    compiled: Compiled
    ticks: Optional[int] = None  # measured on the board: the sum of its kernels' timings (timing cache)
    run_ticks: Optional[int] = None  # one whole run of its own firmware (the final plan and the baseline)

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
                   placement: str = "greedy", time_limit: float = 5.0, scratch: str = SEARCH_SCRATCH) -> Compiled:
    """Split ``lowered`` by ``scheme`` and compile it through pipeline.compile_graph, the path of
    ``mcudeploy compile``, so the arena and kernels tune times are those of the project it writes
    (``scratch`` is compile_graph's kernel-scratch policy)."""
    graph = split(lowered, tuple(scheme)) if scheme else lowered
    return compile_graph(graph, board, name, schedule_method=method, placement_method=placement,
                         placement_time_limit=time_limit, schedule_time_limit=time_limit, scheme=tuple(scheme),
                         scratch=scratch)


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
    """One tuning run. ``measure(compiled) -> ticks`` times a plan on the board, kernel by kernel
    through the timing cache; ``run(compiled) -> ticks`` times one whole run of the plan's own
    firmware, the final check (both injectable for tests; ``run`` defaults to ``measure`` then)."""

    def __init__(self, model, board, out_dir, max_overhead: float = 0.05, time_limit: float = 600.0,
                 port: Optional[str] = None, cache: Optional[TimingCache] = None,
                 measure: Optional[Callable[[Compiled], int]] = None,
                 run: Optional[Callable[[Compiled], int]] = None,
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
        self._run = run or measure or self._run_on_board
        self.progress = progress
        self.pieces = tuple(pieces)
        self.max_segment = max_segment
        self.top_segments = top_segments
        self.lowered = lower(import_onnx(self.model, input_shapes))
        self.state = TuneState(self.out, {"model": model_digest(self.model), "board": self.board.name,
                                          "max_overhead": max_overhead})
        self.measured = 0
        self.evaluated = 0  # schemes compiled (not read from the state file)
        self.segments: list = []
        self.reference: dict = {}  # the baseline's operator costs (simulate.reference_costs)

    # ------------------------------------------------------------------ helpers
    def say(self, message: str) -> None:
        self.progress(f"[{self.clock.elapsed():6.1f}s] {message}")

    def _measure_on_board(self, compiled: Compiled) -> int:
        from mcudeploy.device.measure import measure_model

        result = measure_model(compiled, port=self.port, repeat=3, cache=self.cache)
        return result.total_ticks

    def _run_on_board(self, compiled: Compiled) -> int:
        """Ticks of one whole run of the plan's firmware on a seeded input. A kernel's time can
        depend on what else model.c inlines next to it (measured: the same fast convolution took
        5-18% more instructions in a firmware that also holds mcud_conv_s8_direct), which a sum of
        cached kernel timings from other firmware does not see."""
        from mcudeploy import check
        from mcudeploy.device.runner import run_on_board

        result = run_on_board(compiled, check.random_inputs(compiled.graph, 1, seed=0), port=self.port)
        return int(result.runs[0].total_ticks)

    def _recorded(self, key: str, field: str, measure: Callable[[], int]) -> tuple[int, bool]:
        """(the value of `field` for scheme `key`, from the state file if known, else measured and
        recorded; whether it was measured now)."""
        known = self.state.candidates.get(key, {}).get(field)
        if known is not None:
            return int(known), False
        value = int(measure())
        self.state.record(key, **{field: value})
        return value, True

    def run_whole(self, plan: Plan, key: str) -> int:
        """One whole run's ticks of a plan, from the state file when it was run before."""
        plan.run_ticks, _ = self._recorded(key, "run_ticks", lambda: self._run(plan.compiled))
        return plan.run_ticks

    def compile(self, scheme, **kw) -> Compiled:
        return compile_scheme(self.lowered, scheme, self.board, self.model, **kw)

    def time(self, plan: Plan, key: str) -> int:
        """Measured ticks of a plan, from the state file when this scheme was timed before."""
        plan.ticks, measured = self._recorded(key, "ticks", lambda: self._measure(plan.compiled))
        self.measured += measured
        return plan.ticks

    def estimate(self, compiled: Compiled) -> Optional[float]:
        """Simulated ticks: cached kernels as measured, pieces scaled from the baseline's operators."""
        return float(simulate(compiled, self.cache, self.reference).ticks)

    # ------------------------------------------------------------------ the search
    def baseline(self) -> Plan:
        plan = Plan((), self.compile((), method="auto", placement="exact"))
        self.say(f"baseline: {len(self.lowered.nodes)} operators, arena {plan.arena:,} B; timing it on "
                 f"{self.board.name}")
        ticks = self.time(plan, "unsplit")
        self.state.baseline = {"ticks": ticks, "arena_bytes": plan.arena}
        self.reference = reference_costs(plan.compiled, self.cache)
        self.state.save()
        self.say(f"baseline: {ticks:,} ticks")
        return plan

    def trials(self, scheme: tuple, near: frozenset, best_arena: int) -> tuple[list, bool]:
        """(arena, key, trial) for ``scheme`` plus each candidate cut near the peak (compiled, or read
        from the state file), and whether the clock ran out. Segments come in batches of
        ``top_segments``, the least boundary bytes first; those bytes are a floor, not a forecast
        (a short segment cannot be cut finely), so while no cut lowers the arena the next batch
        is compiled too."""
        taken = frozenset(n for cut in scheme for n, _ in cut.axes)
        ranked, batch = [], 0
        while True:
            cuts = space.candidate_cuts(self.lowered, self.segments, taken, near, self.pieces,
                                        top=self.top_segments, skip=batch * self.top_segments)
            if not cuts:
                return ranked, False
            self.say(f"round {len(scheme) + 1}: {len(cuts)} candidate cuts near the peak" if batch == 0 else
                     f"  no cut lowers the arena yet: {len(cuts)} cuts on the next {self.top_segments} segments")
            for i, cut in enumerate(cuts):
                if self.clock.left() <= 0:
                    return ranked, True
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
                    self.evaluated += 1
                ranked.append((arena, key, trial))
                if (i + 1) % 20 == 0:
                    self.say(f"  compiled {i + 1}/{len(cuts)}; least arena so far {min(ranked)[0]:,} B")
            if any(r[0] < best_arena for r in ranked):
                return ranked, False
            batch += 1

    def run(self) -> TuneResult:
        if self.state.resumed:
            self.say(f"resuming from {self.state.path} ({len(self.state.candidates)} schemes already evaluated)")
        base = self.baseline()
        budget = int(base.ticks * (1 + self.max_overhead))
        self.say(f"budget: {budget:,} ticks (+{self.max_overhead:.0%})")
        segs = self.segments = space.segments(self.lowered, self.max_segment)
        self.say(f"{len(segs)} segments in {len({s.component for s in segs})} axis components")
        scheme = tuple(space.cut_from_dict(d) for d in self.state.accepted)
        best = base
        if scheme:
            best = Plan(scheme, self.compile(scheme))
            self.time(best, space.scheme_key(scheme))
            self.say(f"resumed scheme {space.short(scheme)}: arena {best.arena:,} B, {best.ticks:,} ticks")
        timed_out = False
        while True:
            if self.clock.left() <= 0:
                timed_out = True
                break
            ranked, out_of_time = self.trials(scheme, peak_nodes(best.compiled), best.arena)
            timed_out = timed_out or out_of_time
            if not ranked and not out_of_time:
                break
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
        final = self.finish(best, budget, base)
        return TuneResult(base, final, budget, self.evaluated, self.measured, timed_out, self.out)

    def finish(self, best: Plan, budget: int, base: Plan) -> Plan:
        """Every schedule method with exact placement and each scratch policy on the kept scheme:
        the least arena within budget, confirmed by whole runs of its firmware and the baseline's
        (within the same overhead); else the next, down to the plan the search kept."""
        if not best.scheme:
            return best
        options = []
        for method in FINAL_SCHEDULES:
            for scratch in FINAL_SCRATCH:
                try:
                    compiled = self.compile(best.scheme, method=method, placement="exact", scratch=scratch)
                except MCUDeployError as exc:
                    self.say(f"final: schedule {method} ({scratch} scratch) failed: {exc}")
                    continue
                options.append((Plan(best.scheme, compiled), scratch))
        key = space.scheme_key(best.scheme)
        ranked = sorted(options, key=lambda o: (o[0].arena, FINAL_SCRATCH.index(o[1])))
        ranked = [(p, f"{key} @ {p.compiled.schedule_method}/exact/{s}", s) for p, s in ranked if p.arena < best.arena]
        ranked.append((best, key, SEARCH_SCRATCH))
        base_run = None
        for plan, plan_key, scratch in ranked:
            ticks = self.time(plan, plan_key)
            what = f"schedule {plan.compiled.schedule_method}, {scratch} scratch, arena {plan.arena:,} B, {ticks:,} ticks"
            if ticks > budget:
                self.say(f"final: {what}: over budget")
                continue
            if base_run is None:
                base_run = self.run_whole(base, "unsplit")
            run = self.run_whole(plan, plan_key)
            if run <= base_run * (1 + self.max_overhead):
                self.say(f"final: {what}; whole run {run:,} ticks (unsplit {base_run:,}, {run / base_run - 1:+.1%})")
                return plan
            self.say(f"final: {what}; whole run {run:,} ticks, over the unsplit run's {base_run:,} + "
                     f"{self.max_overhead:.0%}")
        self.say("final: no split plan held its budget in a whole run; keeping the unsplit plan")
        return base


def write_result(result: TuneResult) -> Path:
    """The C project and plan.json of the best plan, with the scheme, the saving and the latency."""
    from mcudeploy.codegen import write_project
    from mcudeploy.plan import plan_dict

    best, base = result.best, result.baseline
    out = write_project(best.compiled, result.out_dir)
    scheme = describe(base.compiled.graph, best.compiled.graph, best.scheme) if best.scheme else []
    source = f"measured on {best.compiled.board.name}"
    latency = {"ticks": best.ticks, "baseline_ticks": base.ticks, "source": source,
               "budget_ticks": result.budget_ticks, "run_ticks": best.run_ticks, "baseline_run_ticks": base.run_ticks}
    plan = plan_dict(best.compiled, scheme=scheme, latency=latency)
    plan["split"] = {"arena_bytes_unsplit": base.arena, "arena_bytes": best.arena,
                     "saved_bytes": base.arena - best.arena, "ratio": round(best.arena / base.arena, 4)}
    (out / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    return out
