"""``mcudeploy tune``: the least-memory plan whose latency, measured on the board, stays within budget.

1. The unsplit model is compiled and timed on the board: its ticks are the baseline, and the
   latency budget is ``baseline * (1 + max_overhead)``. Plans are compiled by
   pipeline.compile_graph, the path of ``mcudeploy compile``; while searching, every kernel keeps
   its scratch (SEARCH_SCRATCH), so the baseline is the fastest unsplit plan.
2. The scheme grows one cut at a time (a new cut may also take the place of a cut whose operators
   it holds: a longer segment, or the same one cut again). Each round finds the current plan's
   peak (mcudeploy/search/peak.py) and ranks the segments that cross it by what their cut would
   leave of it (mcudeploy/search/space.py: forecast, from the bytes live there that it cuts).
   Segments come in batches: each is probed with its most pieces and kept halos, and the few
   with the least arena among those the simulator (kernel timings this run has taken, pieces
   scaled from the baseline's operators) does not put clearly over budget get more piece counts
   and the other halo mode; all compiled with fast settings, memory first, no board needed. From
   the smallest arena up, a candidate clearly over budget is dropped unmeasured, others are
   timed on the board, which is asked only for kernel signatures the timing cache lacks. The
   first candidate within budget is kept and the next round starts from it; the next batch only
   comes while none is.
3. The search stops when no cut helps ("converged"), or when it has evaluated its budget of
   candidates ("budget", mcudeploy/search/budget.py: work, not seconds). Then the kept scheme is
   compiled with every schedule method, exact placement and both scratch policies ("fit" drops
   the scratch of kernels at the peak for slower scratch-free ones). From the smallest arena up,
   the first within budget whose whole run on the board (its own firmware, against the unsplit
   plan's whole run) also stays within the overhead is written: the C project and plan.json (with
   the scheme, the split's saving, both latencies, and what the search explored;
   mcudeploy/search/write.py).

The board is asked through mcudeploy/search/timing.py (BoardTimer), and what the search says as it
goes is built in mcudeploy/search/progress.py.

Nothing in this depends on the wall clock: the candidates' arenas come from compiles whose
solvers count their effort (mcudeploy/effort.py), their ticks from the board (under QEMU
-icount, instruction counts), their estimates from the timings this run took (not from whatever
else the board's timing cache holds), and the search stops on counts. So the same model, board
and options give the same plan on an idle machine and on a loaded one. ``time_limit`` is an outer
bound on the wall clock only: when it stops the search first (FINISH_SHARE of it is kept for the
final compiles) or the final compiles, the result says so ("time-limit") and is not the
reproducible one.

A candidate's estimate is made again whenever the search comes back to it after the board has
timed more kernels (a later round, or just before it is timed): the first estimate of a cut knows
nothing of its halo copies' cost, which the first plan timed with such copies teaches (measured on
MobileNetV2-128: a 14-operator cut of 128 to 16 pieces estimated at +4.1% with the copies' default
ran at +1.8%; the pace rule had put it behind a cut of 12% more memory).

Every verdict is saved to ``DIR/tune-state.json`` as it is reached (mcudeploy/search/state.py),
with each kept scheme the work spent up to it, and with each timed one the kernels known after it,
so a run that is interrupted resumes from the last kept scheme, re-reads that round's candidates
from the file (counting them again, as the uninterrupted run counted them, and estimating from what
it knew), and reaches the same plan without timing a kernel twice; it compiles a candidate again
only to estimate it again.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, Union

from mcudeploy.boards import Board, load_board
from mcudeploy.device.pool import BoardPool
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.partition import HALOS, Cut, split
from mcudeploy.objective import MEMORY, Objective
from mcudeploy.plan import CompileOptions
from mcudeploy.offload.swap import parse_budget, regions_for_swap
from mcudeploy.compile import Compiled, compile_graph, fast_memory_bytes, lower
from mcudeploy.search import budget as budgets
from mcudeploy.search import space
from mcudeploy.search.budget import EFFORT, Clock, Work
from mcudeploy.search.fast import fast_arena, fastest_within
from mcudeploy.search.fastest import fastest_plan
from mcudeploy.search.peak import find_peak
from mcudeploy.search.progress import Progress, to_stderr
from mcudeploy.search.state import TuneState, model_digest
from mcudeploy.search.timing import BoardTimer, TimedScheme
from mcudeploy.search.workers import Compiles
from mcudeploy.simulate.simulate import PlanWork, cost, plan_work, reference_costs
from mcudeploy.simulate.timing_cache import TimingCache


SEARCH_SCHEDULE = "refine"  # fast and good on graphs of hundreds of pieces
# A candidate is compiled with each of these and keeps the least arena: the heuristics are not
# monotone in the scheme (measured: a second cut made refine order the first cut's pieces 16 KB
# worse, where demand, a tenth of refine's time, did not).
SEARCH_SCHEDULES = (SEARCH_SCHEDULE, "demand")
# Kernels keep their scratch while the search runs and for the baseline: the scratch-free variants
# fit_scratch picks cost 2x on a convolution, far more than any split saves in time, so the
# baseline is the fastest unsplit plan; finish() then also tries "fit" on the kept scheme.
SEARCH_SCRATCH = "keep"
FINAL_SCHEDULES = ("auto", "refine", "demand", "dfs", "rpo")
FINAL_SCRATCH = ("keep", "fit")
# The final compiles (every schedule method, exact placement, both scratch policies: each several
# times a search compile) and whole runs keep this share of the time limit (measured on MobileNetV2
# 128: 170-190 s of ten compiles and three runs).
FINISH_SHARE = 0.3
ESTIMATE_SLACK = 1.1  # a candidate estimated above budget * slack is not worth a board run (pieces scaled from
# the baseline's operators came within 2% of their measured ticks on MobileNetV2)
TOP_SEGMENTS = 10  # segments probed per batch, in the order of space.ranked_segments
SWEEP = 3  # of a batch's probed segments, those compiled with every piece count and halo mode
PACE = 0.75  # share of the overhead left that a candidate may spend before those that spend less are timed
PROBE_HALO = "keep"  # a probe adds no work (recomputed halos rarely stay within 5% on long segments)


@dataclass(frozen=True)
class Trial:
    arena: int
    key: str
    scheme: tuple
    estimate: float  # simulated ticks
    budget: int  # the run's budget in ticks

    @property
    def plausible(self) -> bool:
        """The simulator does not put it over budget * ESTIMATE_SLACK: worth a board run."""
        return self.estimate <= self.budget * ESTIMATE_SLACK


@dataclass
class TuneResult:
    """What a tuning run found: the unsplit plan, the plan kept and what the search spent
    (search/write.py writes it)."""

    baseline: TimedScheme
    best: TimedScheme
    budget_ticks: int
    out_dir: Path
    budget: int = budgets.CANDIDATES  # candidates the search could evaluate
    work: Work = field(default_factory=Work)  # what it spent
    stopped_by: str = budgets.CONVERGED  # budget.STOPS
    time_limit: Optional[float] = None  # the outer bound in seconds
    seconds: float = 0.0  # wall-clock seconds the run took (informative only)
    effort: float = EFFORT  # effort seconds of each compile's solvers

    @property
    def timed_out(self) -> bool:
        """The wall clock cut the search short: not the reproducible result of the budget."""
        return self.stopped_by == budgets.TIMED_OUT


# How the search compiles a candidate (Tuner.compile changes some fields): its schedule, greedy placement,
# kernels keeping their scratch, EFFORT seconds of each solver
SEARCH_OPTIONS = CompileOptions(schedule_method=SEARCH_SCHEDULE, placement_method="greedy", placement_time_limit=EFFORT,
                                schedule_time_limit=EFFORT, scratch=SEARCH_SCRATCH)


def compile_scheme(lowered, scheme: Sequence[Cut], board: Board, name: str,
                   options: CompileOptions = SEARCH_OPTIONS) -> Compiled:
    """Split ``lowered`` by ``scheme`` and compile it through compile.compile_graph, the path of
    ``mcudeploy compile``, so the arena and kernels tune times are those of the project it writes
    (``options``: compile_graph's, its int8_input and stream_input those ``lowered`` was lowered with;
    the scheme recorded is ``scheme``)."""
    graph = split(lowered, tuple(scheme)) if scheme else lowered
    return compile_graph(graph, board, name, replace(options, scheme=tuple(scheme)))


@dataclass(frozen=True)
class TuneOptions:
    """What decides a tune's result besides the model and the board (the collaborators that time the
    plans, the pool and the progress are the Tuner's own arguments). ``budget``: candidates the search
    may evaluate; ``time_limit``: the outer bound, in seconds; ``effort``: the effort seconds of every
    compile's schedule and placement (part of the options that decide the plan, like the budget).
    ``fast_memory``: a budget for the board's fast region (bytes, or "N%" of the unsplit plan's): the
    least latency that fits it (search/fast.py)."""

    max_overhead: float = 0.05
    time_limit: float = budgets.TIME_LIMIT
    budget: int = budgets.CANDIDATES
    effort: float = EFFORT
    input_shapes: Optional[Mapping[str, tuple[int, ...]]] = None  # --input-shape
    int8_input: bool = False
    stream_input: bool = False
    fast_memory: Union[int, str, None] = None
    objective: Objective = MEMORY
    pieces: Sequence[int] = space.PIECES
    max_segment: Optional[int] = None
    top_segments: int = TOP_SEGMENTS
    sweep: int = SWEEP


class Tuner:
    """One tuning run. ``measure(compiled) -> ticks`` times a plan on the board, kernel by kernel
    through the timing cache; ``run(compiled) -> ticks`` times one whole run of the plan's own
    firmware, the final check (both injectable for tests; ``run`` defaults to ``measure`` then; see
    search/timing.py). ``progress`` receives each line the search says (search/progress.py).
    ``options``: what decides the result (TuneOptions)."""

    def __init__(self, model, board, out_dir, options: TuneOptions = TuneOptions(), port: Optional[str] = None,
                 cache: Optional[TimingCache] = None, measure: Optional[Callable[[Compiled], int]] = None,
                 run: Optional[Callable[[Compiled], int]] = None, progress: Callable[[str], None] = to_stderr,
                 boards: int = 1, ports: Sequence[str] = (), pool: Optional[BoardPool] = None):
        o = self.options = options
        max_overhead, time_limit, budget, effort = o.max_overhead, o.time_limit, o.budget, o.effort
        input_shapes, int8_input, stream_input, fast_memory = o.input_shapes, o.int8_input, o.stream_input, o.fast_memory
        objective = o.objective
        if not max_overhead >= 0:
            raise MCUDeployError(f"--max-overhead must be 0 or more, not {max_overhead}")
        if not time_limit > 0:
            raise MCUDeployError(f"--time-limit must be positive, not {time_limit}")
        if not (isinstance(budget, int) and budget >= 0):
            raise MCUDeployError(f"--budget must be a whole number of candidates, 0 or more, not {budget}")
        if not effort > 0:
            raise MCUDeployError(f"the compile effort must be positive, not {effort}")
        self.model = os.fspath(model)
        self.board = load_board(board) if isinstance(board, str) else board
        if self.board.kind == "host":
            raise MCUDeployError("tune measures on a Cortex-M board (emulated or real); the host board has no timer")
        if self.board.kind != "qemu" and measure is None:
            raise MCUDeployError(f"tune times every candidate plan with its own firmware, which needs an emulated "
                                 f"board for now; {self.board.name} would have to be flashed for each one")
        self.out = Path(out_dir)
        self.max_overhead = max_overhead
        self.time_limit = time_limit
        self.budget = budget
        self.effort = effort
        self.clock = Clock(time_limit, time_limit * FINISH_SHARE)
        self.pieces = tuple(o.pieces)
        self.max_segment = o.max_segment
        self.top_segments = o.top_segments
        self.sweep = o.sweep
        self._compiled: dict = {}  # this round's compiled candidates, by scheme key
        self._work_of: dict = {}  # what the simulator needs of every candidate compiled (plan_work), by scheme key
        self.int8_input = int8_input
        self.stream_input = stream_input
        self.fast_memory = fast_memory
        self.objective = objective  # latency or balanced: search/fastest.py instead of the cuts
        if fast_memory is not None and objective.name != "memory":
            raise MCUDeployError(f"--fast-memory is the memory objective's budget (met by swapping): with "
                                 f"--objective {objective.name} give --memory-budget")
        self.fast_budget: Optional[int] = None  # fast_memory in bytes, once the unsplit plan is known
        if fast_memory is not None:
            parse_budget(fast_memory)  # a malformed budget is refused before any work
            regions_for_swap(self.board)
        self.lowered = lower(import_model(self.model, input_shapes), int8_input=int8_input, stream_input=stream_input)
        self.state = TuneState(self.out, {"model": model_digest(self.model), "board": self.board.name,
                                          "max_overhead": max_overhead, "effort": effort,
                                          **({"fast_memory": str(fast_memory)} if fast_memory is not None else {}),
                                          **({"int8_input": True} if int8_input else {}),
                                          **({"stream_input": True} if stream_input else {}),
                                          **({"objective": objective.as_plan()} if objective.name != "memory"
                                             else {}),
                                          # --input-shape: the shapes every candidate was compiled at
                                          **({"input_shapes": {k: list(v) for k, v in sorted(input_shapes.items())}}
                                             if input_shapes else {})})
        self.work = Work(kernels_measured=self.state.kernels_measured)
        self.progress = Progress(progress, self.clock, self.work, budget)
        self.pool = pool or BoardPool.of(self.board, boards, list(ports) or ([port] if port else []))
        self.pool.say = self.progress.pool_status
        self.timer = BoardTimer(self.board, self.state, self.work,
                                cache if cache is not None else TimingCache(self.board.name), port, measure, run,
                                self.pool)
        # several boards: the candidates' compiles run in as many worker processes (search/workers.py)
        self.compiles = Compiles(self, self.pool.size) if self.pool.size > 1 else None
        self._ready: dict = {}  # compiled by the workers ahead of trial(), by scheme key
        self.compiled_now = 0  # candidates compiled by this process (not read from the state file)
        self.stopped_by: Optional[str] = None
        self.segments: list = []
        self.reference: dict = {}  # the baseline's operator costs (simulate.reference_costs)

    # ------------------------------------------------------------------ compiles and estimates
    def compile(self, scheme, **changes) -> Compiled:
        """``scheme`` compiled as the search compiles (SEARCH_OPTIONS at this tune's effort and inputs), with
        ``changes`` to those CompileOptions."""
        options = replace(SEARCH_OPTIONS, placement_time_limit=self.effort, schedule_time_limit=self.effort,
                          int8_input=self.int8_input, stream_input=self.stream_input)
        return compile_scheme(self.lowered, scheme, self.board, self.model, replace(options, **changes))

    def search_compile(self, scheme) -> Compiled:
        """The least arena of the search's schedule methods (SEARCH_SCHEDULES), the first on a tie."""
        best = None
        for method in SEARCH_SCHEDULES:
            compiled = self.compile(scheme, schedule_method=method)
            if best is None or compiled.placement.arena_bytes < best.placement.arena_bytes:
                best = compiled
        return best

    def prepare(self, scheme: tuple, cuts: Sequence[Cut]) -> None:
        """With several boards: compile, all at once, the candidates ``cuts`` grown into ``scheme`` make
        that the state file does not know yet; trial() takes them in its order (the same decisions)."""
        if self.compiles is None:
            return
        todo = {}
        for cut in cuts:
            grown = space.grow(scheme, cut)
            key = space.scheme_key(grown)
            known = self.state.candidates.get(key, {})
            if key not in self._ready and not known.get("status", "").startswith("invalid") and not self.estimable(key):
                todo[key] = grown
        if len(todo) > 1:
            self.progress.compiling(len(todo), self.compiles.workers)
            self._ready.update(zip(todo, self.compiles.run(list(todo.values()))))

    def ahead(self, scheme: tuple, cuts: Sequence[Cut]) -> list:
        """The first ``cuts`` the budget leaves room for, as many as there are boards (prepare)."""
        room = max(self.budget - self.work.candidates, 0)
        return list(cuts)[:min(room, self.pool.size)]

    def estimate(self, plan: PlanWork) -> float:
        """Simulated ticks: kernels as this run has timed them (BoardTimer.taken), pieces scaled
        from the baseline's operators."""
        return float(cost(plan, self.timer.taken(), self.reference).ticks)

    def estimable(self, key: str) -> bool:
        """A candidate evaluated before can be estimated without compiling it: its estimate was made
        with the kernels known now, or its plan_work is kept (then it is estimated again)."""
        known = self.state.candidates.get(key, {})
        if "arena" not in known or "estimate" not in known:
            return False
        return not self.stale(known) or key in self._work_of

    def stale(self, entry: dict) -> bool:
        """A candidate's recorded estimate was made with fewer kernels timed than the run knows now."""
        return entry.get("known_kernels", len(self.timer.known)) != len(self.timer.known)

    def out_of_work(self) -> Optional[str]:
        """What stops the search now, if anything: the outer time limit, or the budget spent."""
        if self.clock.left() <= 0:
            return budgets.TIMED_OUT
        if self.work.candidates >= self.budget:
            return budgets.BUDGET
        return None

    # ------------------------------------------------------------------ the search
    def baseline(self) -> TimedScheme:
        plan = TimedScheme((), self.compile((), schedule_method="auto", placement_method="exact"))
        self.progress.baseline(len(self.lowered.nodes), plan.arena, self.board.name)
        ticks = self.timer.time(plan, "unsplit")
        self.state.baseline = {"ticks": ticks, "arena_bytes": plan.arena}
        self.reference = reference_costs(plan.compiled, self.timer.cache)
        self.state.save()
        self.progress.baseline_timed(ticks)
        return plan

    def trial(self, scheme: tuple, cut: Cut, budget: int) -> Optional[Trial]:
        """``cut`` grown into ``scheme`` (space.grow), compiled with the search's settings and
        estimated by the simulator, or read from the state file; None if the split is invalid.
        Either way it is one candidate of the budget."""
        self.work.candidates += 1
        trial = space.grow(scheme, cut)
        key = space.scheme_key(trial)
        known = self.state.candidates.get(key, {})
        if known.get("status", "").startswith("invalid"):
            return None
        if self.estimable(key):
            est = known["estimate"]
            if self.stale(known):
                # estimated before the board timed the kernels it has since: again, from them (the
                # copies of a cut's halos have no timing until a cut is timed; then they fit)
                est = self.estimate(self._work_of[key])
                self.state.record(key, estimate=est, known_kernels=len(self.timer.known))
            return Trial(known["arena"], key, trial, est, budget)
        try:
            compiled = self._ready.pop(key, None) or self.search_compile(trial)
            if isinstance(compiled, MCUDeployError):
                raise compiled
        except MCUDeployError as exc:
            self.state.record(key, status=f"invalid: {exc}")
            return None
        self._work_of[key] = plan_work(compiled)
        est = self.estimate(self._work_of[key])
        self.state.record(key, arena=compiled.placement.arena_bytes, estimate=est,
                          known_kernels=len(self.timer.known))
        self.compiled_now += 1
        self._compiled[key] = compiled
        return Trial(compiled.placement.arena_bytes, key, trial, est, budget)

    def round(self, scheme: tuple, best: TimedScheme, budget: int, base: TimedScheme) -> tuple[Optional[TimedScheme], Optional[str]]:
        """One cut more (or one cut grown longer or cut again): (the plan kept, or None; what cut
        the round short, if anything: budget.BUDGET or budget.TIMED_OUT).

        The segments that cross the peak come ranked by the arena forecast after their cut
        (space.ranked_segments), in batches of ``top_segments``. Each of a batch is probed with
        its most pieces and kept halos (PROBE_HALO: no extra work; more pieces, less memory, so
        a probe that does not lower the arena rules its segment out); the ``sweep`` with the
        least arena below the current one get their other cuts, first among probes the
        simulator does not put clearly over budget, then among those it does (their most pieces
        cost the most calls and copies: fewer may fit, as on KWS's cut ending in its average):
        per halo mode, from the most pieces down to the first the simulator puts within budget
        (fewer pieces run faster but hold more memory), and on while fewer pieces keep its arena
        (measured on MobileNetV2-128: 64-...-32 pieces kept where 32 gave the same arena faster). The
        batch's candidates that lower the arena are then timed from the least arena up, and the
        first within budget is kept; the next batch only comes if none is. A round cut short
        still times what it evaluated."""
        peak = find_peak(best.compiled)
        cuts = [frozenset(n for n, _ in c.axes) for c in scheme]
        ranked = space.ranked_segments(self.lowered, self.segments, frozenset(), peak.nodes, peak.tensors, cuts,
                                        peak.bytes, self.pieces)
        self._compiled, self._ready = {}, {}
        self.work.rounds += 1
        self.progress.round(peak, len(ranked))
        for start in range(0, len(ranked), self.top_segments):
            batch = ranked[start:start + self.top_segments]
            probes: list[tuple[bool, int, int, space.Segment]] = []
            trials: list[Trial] = []
            room = max(self.budget - self.work.candidates, 0)
            self.prepare(scheme, [space.cut_for(seg, counts[-1], PROBE_HALO) for seg in batch[:room]
                                  if (counts := space.piece_counts(seg, self.pieces))])
            for i, seg in enumerate(batch):
                stop = self.out_of_work()
                if stop:
                    return self.accept(trials, best, budget, base), stop
                counts = space.piece_counts(seg, self.pieces)
                t = self.trial(scheme, space.cut_for(seg, counts[-1], PROBE_HALO), budget) if counts else None
                if t is not None:
                    trials.append(t)
                    probes.append((not t.plausible, t.arena, i, seg))
            probes.sort(key=lambda p: p[:3])
            self.progress.probed(start + 1, len(batch), probes[0][1] if probes and not probes[0][0] else None)
            swept = [p for p in probes if p[1] < best.arena][:self.sweep]
            for _, arena, _, seg in swept:
                self.progress.sweeping(seg, arena)
                cuts_here = space.segment_cuts(self.lowered, seg, self.pieces)
                for halo in HALOS:
                    ranked_cuts = sorted((c for c in cuts_here if c.halo == halo), key=lambda c: -c.pieces)
                    within = None  # the arena of the first count estimated within budget
                    for k, cut in enumerate(ranked_cuts):
                        stop = self.out_of_work()
                        if stop:
                            return self.accept(trials, best, budget, base), stop
                        self.prepare(scheme, self.ahead(scheme, ranked_cuts[k:]))  # a few ahead: fewer may do
                        t = self.trial(scheme, cut, budget)
                        if t is None:
                            continue
                        trials.append(t)
                        if within is not None and t.arena > within:
                            break  # fewer pieces: faster, but more memory
                        if within is None and t.estimate <= budget:
                            within = t.arena  # fewer pieces that keep this arena are faster still
            timed = self.work.timed
            kept = self.accept(trials, best, budget, base)
            if kept is None and self.work.timed > timed:
                kept = self.accept(self.resweep(scheme, [seg for *_, seg in swept], budget), best, budget, base)
            if kept is not None:
                return kept, None
            stop = self.out_of_work()
            if stop:
                return None, stop
        return None, None

    def resweep(self, scheme: tuple, segments: list, budget: int) -> list:
        """The swept segments' cuts again, once the board has timed some of them over budget: per
        halo mode from the most pieces down to the first the simulator now puts within budget,
        each estimated from what the board has timed since (simulate.py, rule 0: a piece's fixed
        cost per call, which the first estimate of a cut, its operators' share, leaves out), past
        the ones timed already. On KWS's reduction cut the 16 pieces first put at +2.9% ran at
        +20%, and the sweep had stopped there; fewer pieces fit."""
        trials = []
        for seg in segments:
            for halo in HALOS:
                cuts = sorted((c for c in space.segment_cuts(self.lowered, seg, self.pieces) if c.halo == halo),
                              key=lambda c: -c.pieces)
                for cut in cuts:
                    if self.out_of_work():
                        return trials
                    key = space.scheme_key(space.grow(scheme, cut))
                    status = self.state.candidates.get(key, {}).get("status", "")
                    if status in ("over budget", "within budget") or status.startswith("invalid"):
                        continue
                    if key in self._compiled:
                        t = Trial(self._work_of[key].arena_bytes, key, space.grow(scheme, cut),
                                  self.estimate(self._work_of[key]), budget)
                    else:
                        t = self.trial(scheme, cut, budget)
                    if t is None:
                        continue
                    trials.append(t)
                    if t.estimate <= budget:
                        break  # fewer pieces: faster, but more memory
        return trials

    def accept(self, trials: list, best: TimedScheme, budget: int, base: TimedScheme) -> Optional[TimedScheme]:
        """From the least arena below ``best``'s up: the first candidate whose ticks, measured on the
        board, are within budget (one estimated clearly over budget is skipped unmeasured).

        Of equal arenas the one estimated fastest comes first. Candidates the simulator puts within
        PACE of the overhead ``best`` has left come first:
        a cut that spends the whole budget at once leaves none for the cuts after it (measured
        on VWW: a recomputed first stage at +4.5% for 42,656 B, and then no cut at all). A candidate
        is estimated again before it is timed, from the kernels the board has timed by then."""
        pace = best.ticks + PACE * (budget - best.ticks)
        ordered = sorted({t.key: t for t in trials}.values(), key=lambda t: (t.arena, t.estimate, len(t.key)))
        ordered = [t for t in ordered if t.arena < best.arena]
        ordered = [t for t in ordered if t.estimate <= pace] + [t for t in ordered if t.estimate > pace]
        for t in ordered:
            if self.clock.left() <= 0:
                self.stopped_by = budgets.TIMED_OUT
                break
            entry = self.state.candidates.get(t.key, {})
            if entry.get("status") == "over budget":
                # timed before: in an earlier round, or in this one before an interruption (then the
                # uninterrupted run counted it here, and came to know its kernels)
                self.work.timed += entry.get("round") == self.work.rounds
                self.timer.replay(t.key)
                continue
            if entry.get("status") == "estimate over budget":
                continue
            if "ticks" not in entry and self.stale(entry):
                # again, with what the board has timed since it was estimated: the pieces of a cut timed
                # just before fit their kernels' fixed cost (simulate.py, rule 0); a resumed run compiles
                # it again to estimate it as the uninterrupted run did
                if t.key not in self._work_of:
                    self._compiled[t.key] = self.search_compile(t.scheme)
                    self._work_of[t.key] = plan_work(self._compiled[t.key])
                t = replace(t, estimate=self.estimate(self._work_of[t.key]))
            if not t.plausible and "ticks" not in entry:
                self.state.record(t.key, status="estimate over budget")
                continue
            compiled = self._compiled.get(t.key) or self.search_compile(t.scheme)
            plan = TimedScheme(t.scheme, compiled)
            self.progress.timing(t.scheme, t.arena, t.estimate)
            ticks = self.timer.time(plan, t.key)
            self.work.timed += 1
            ok = ticks <= budget
            self.state.record(t.key, status="within budget" if ok else "over budget", round=self.work.rounds)
            self.progress.verdict(ok, ticks, base.ticks)
            if ok:
                return plan
        return None

    def run(self) -> TuneResult:
        try:
            return self._run()
        finally:
            if self.compiles is not None:
                self.compiles.close()

    def _run(self) -> TuneResult:
        if self.state.set_aside:
            self.progress.say(self.state.set_aside)
        if self.state.resumed:
            self.progress.resuming(self.state.path, len(self.state.candidates))
        if self.objective.name != "memory":
            base, best = fastest_plan(self, self.objective)
            self.stopped_by = budgets.CONVERGED
            return TuneResult(base, best, base.ticks, self.out, self.budget, self.work, self.stopped_by,
                              self.time_limit, self.clock.elapsed(), self.effort)
        base = self.baseline()
        if self.fast_memory is not None:
            self.fast_budget = fast_memory_bytes(str(self.fast_memory), lambda: base.compiled)
        kept = [()]  # the schemes kept, for --fast-memory
        budget = int(base.ticks * (1 + self.max_overhead))
        self.progress.latency_budget(budget, self.max_overhead, self.budget)
        segs = self.segments = space.segments(self.lowered, self.max_segment)
        self.progress.segments(segs)
        scheme = tuple(space.cut_from_dict(d) for d in self.state.accepted)
        best = base
        if scheme:
            # the work spent up to the kept scheme, as the run that kept it counted it
            self.work.resume(self.state.progress)
            self.timer.replay(space.scheme_key(scheme))  # what the run that kept it knew once it was timed
            best = TimedScheme(scheme, self.search_compile(scheme))
            self.timer.time(best, space.scheme_key(scheme))
            self.progress.resumed_scheme(scheme, best.arena, best.ticks)
        while True:
            stop = self.out_of_work()
            if stop:
                break
            if self.fast_budget is not None and fast_arena(best.compiled) <= self.fast_budget:
                break  # the cuts alone fit: more would only add time
            accepted, stop = self.round(scheme, best, budget, base)
            if accepted is not None:
                scheme, best = accepted.scheme, accepted
                kept.append(scheme)
                if stop is None:  # a round cut short is not where an uninterrupted run with more budget goes on
                    self.state.accepted = [space.cut_to_dict(c) for c in scheme]
                    self.state.progress = {k: v for k, v in self.work.as_dict().items() if k != "kernels_measured"}
                    self.state.save()
            if accepted is None or stop:
                break
        self.stopped_by = self.stopped_by or stop or budgets.CONVERGED
        self.progress.stopped(self.stopped_by)
        if self.fast_budget is not None:
            final = fastest_within(self, kept, self.fast_budget)
        else:
            final = self.finish(best, budget, base)
        return TuneResult(base, final, budget, self.out, self.budget, self.work, self.stopped_by, self.time_limit,
                          self.clock.elapsed(), self.effort)

    def finish(self, best: TimedScheme, budget: int, base: TimedScheme) -> TimedScheme:
        """Every schedule method with exact placement and each scratch policy on the kept scheme:
        the least arena within budget, confirmed by whole runs of its firmware and the baseline's
        (within the same overhead); else the next, down to the plan the search kept."""
        if not best.scheme:
            return best
        options = []
        combos = [(m, sc) for m in FINAL_SCHEDULES for sc in FINAL_SCRATCH]
        ready = {}
        if self.compiles is not None:  # several boards: all at once, in worker processes
            self.progress.compiling(len(combos), self.compiles.workers)
            ready = dict(zip(combos, self.compiles.run(
                [best.scheme] * len(combos), search=False,
                options=[{"schedule_method": m, "placement_method": "exact", "scratch": sc} for m, sc in combos])))
        for method, scratch in combos:
            if options and not ready and self.clock.left_in_all() <= 0:
                self.progress.final_out_of_time(method, scratch)
                self.stopped_by = budgets.TIMED_OUT
                break
            try:
                compiled = ready.get((method, scratch)) or self.compile(best.scheme, schedule_method=method,
                                                                       placement_method="exact", scratch=scratch)
                if isinstance(compiled, MCUDeployError):
                    raise compiled
            except MCUDeployError as exc:
                self.progress.final_failed(method, scratch, exc)
                continue
            options.append((TimedScheme(best.scheme, compiled), scratch))
        key = space.scheme_key(best.scheme)
        ranked = sorted(options, key=lambda o: (o[0].arena, FINAL_SCRATCH.index(o[1])))
        ranked = [(p, f"{key} @ {p.compiled.schedule_method}/exact/{s}", s) for p, s in ranked if p.arena < best.arena]
        ranked.append((best, key, SEARCH_SCRATCH))
        base_run = None
        for plan, plan_key, scratch in ranked:
            ticks = self.timer.time(plan, plan_key)
            self.work.timed += 1
            if ticks > budget:
                self.progress.final_over_budget(plan, scratch, ticks)
                continue
            if base_run is None:
                base_run = self.timer.run_whole(base, "unsplit")
                self.work.whole_runs += 1
            run = self.timer.run_whole(plan, plan_key)
            self.work.whole_runs += 1
            if run <= base_run * (1 + self.max_overhead):
                self.progress.final_kept(plan, scratch, ticks, run, base_run)
                return plan
            self.progress.final_run_over(plan, scratch, ticks, run, base_run, self.max_overhead)
        self.progress.final_unsplit()
        return base
