"""The search: it keeps the least-memory plan within the latency budget, writes it, and a run that
is interrupted resumes without compiling a scheme or timing a kernel twice."""
from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from mcudeploy.boards import load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.partition import split
from mcudeploy.compile import compile_graph, lower
from mcudeploy.plan import CompileOptions
from mcudeploy.search import TuneOptions, Tuner, space, write_result
from mcudeploy.search.peak import find_peak
from mcudeploy.search.timing import TimedScheme
from mcudeploy.search.tune import FINAL_SCHEDULES, FINAL_SCRATCH, SEARCH_OPTIONS, compile_scheme
from mcudeploy.simulate.simulate import plan_work
from mcudeploy.simulate.timing_cache import TimingCache

EFFORT = 0.25  # effort seconds of the tests' compiles: the search is what they test, not the solvers (at 1.0 the
# small MobileNetV2's tune took 25 s, at 0.25 15 s, to the same plan)


def fake_ticks(compiled, per_call: int = 50) -> int:
    """A latency model: one tick per MAC, a fixed cost per kernel call, one tick per 4 bytes copied."""
    graph, total = compiled.graph, 0
    for node in compiled.order:
        op = registry.get(node.op)
        if op.view or node.name in compiled.lifetimes.elided:
            continue
        total += op.macs(graph, node) + per_call
    return total


def dropped_scratch(compiled) -> set:
    """Nodes whose kernel runs without its scratch (offload.fit_scratch set "scratch" to 0)."""
    return {n.name for n in compiled.graph.nodes if n.attrs.get("scratch", 1) == 0}


class Counting:
    def __init__(self, fail_after=None):
        self.calls = 0
        self.fail_after = fail_after

    def __call__(self, compiled):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt
        return fake_ticks(compiled)


class Timing(Counting):
    """A board that, as a real one does, leaves the timing of each kernel it runs in the timing cache
    (with its work, so that the simulator fits and scales from it): one tick per MAC and per 4 bytes
    touched, 50 a call; a plan's ticks are its kernels'."""

    def __init__(self, cache, fail_after=None):
        super().__init__(fail_after)
        self.cache = cache

    def __call__(self, compiled):
        super().__call__(compiled)
        timed = {c.signature: {"ticks": float(c.macs + 50 + c.bytes // 4), "macs": c.macs, "bytes": c.bytes,
                               "kernel": c.kernel, "operator": c.operator}
                 for c in plan_work(compiled).ops if c.signature}
        self.cache.put(timed)
        return int(sum(c.macs + 50 + c.bytes // 4 for c in plan_work(compiled).ops if c.signature))


def test_tune_keeps_the_least_memory_within_budget(small_mobilenet, tmp_path):
    lines = []
    tuner = Tuner(small_mobilenet, "qemu-m4", tmp_path / "out", measure=Counting(), progress=lines.append,
                  cache=TimingCache("qemu-m4", tmp_path / "cache"),
                  options=TuneOptions(max_overhead=0.05, time_limit=300, effort=EFFORT))
    result = tuner.run()
    assert result.best.scheme, "no scheme was kept: " + "\n".join(lines)
    assert result.best.arena < result.baseline.arena
    assert result.best.ticks <= result.budget_ticks
    assert result.best.ticks == fake_ticks(result.best.compiled)
    out = write_result(result)
    plan = json.loads((out / "plan.json").read_text())
    assert plan["arena_bytes"] == result.best.arena
    assert plan["latency"]["baseline_ticks"] == result.baseline.ticks
    assert plan["latency"]["ticks"] == result.best.ticks
    assert plan["latency"]["run_ticks"] == result.best.run_ticks == fake_ticks(result.best.compiled)
    assert plan["latency"]["baseline_run_ticks"] == result.baseline.run_ticks == result.baseline.ticks
    assert plan["split"]["saved_bytes"] == result.baseline.arena - result.best.arena
    assert plan["scheme"] and all(entry["pieces"] >= 2 for entry in plan["scheme"])
    assert any("baseline" in line for line in lines) and any("kept" in line for line in lines)
    # the baseline is the fastest unsplit plan: every kernel keeps its scratch
    assert not dropped_scratch(result.baseline.compiled)
    # the final plan is the least arena among every schedule and scratch policy on the kept scheme
    # (the fake timing is blind to scratch, so each is within budget)
    options = [tuner.compile(result.best.scheme, schedule_method=m, placement_method="exact", scratch=s)
               for m in FINAL_SCHEDULES for s in FINAL_SCRATCH]
    assert result.best.arena == min(o.placement.arena_bytes for o in options)


def test_an_interrupted_tune_resumes_without_measuring_twice(small_mobilenet, tmp_path):
    out, cache = tmp_path / "out", TimingCache("qemu-m4", tmp_path / "cache")
    first = Counting(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        Tuner(small_mobilenet, "qemu-m4", out, measure=first, progress=lambda m: None, cache=cache,
              options=TuneOptions(time_limit=300, effort=EFFORT)).run()
    assert first.calls == 3  # two plans timed, the third interrupted
    timed = {k for k, v in json.loads((out / "tune-state.json").read_text())["candidates"].items() if "ticks" in v}
    assert len(timed) == 2
    seen = []

    def second(compiled):
        seen.append(compiled)
        return fake_ticks(compiled)

    resumed = Tuner(small_mobilenet, "qemu-m4", out, measure=second, progress=lambda m: None, cache=cache,
                    options=TuneOptions(time_limit=300, effort=EFFORT))
    assert resumed.state.resumed
    result = resumed.run()
    state = json.loads((out / "tune-state.json").read_text())["candidates"]
    # nothing timed before is timed again (kernel sums and the final whole runs both count)
    assert len(seen) == sum(("ticks" in v) + ("run_ticks" in v) for v in state.values()) - 2
    again = Tuner(small_mobilenet, "qemu-m4", out, measure=second, progress=lambda m: None, cache=cache,
                  options=TuneOptions(time_limit=300, effort=EFFORT)).run()
    assert len(seen) == sum(("ticks" in v) + ("run_ticks" in v) for v in state.values()) - 2  # a finished run: none
    assert (again.best.arena, again.best.ticks) == (result.best.arena, result.best.ticks)
    fresh = Tuner(small_mobilenet, "qemu-m4", tmp_path / "fresh", measure=Counting(), progress=lambda m: None,
                  cache=TimingCache("qemu-m4", tmp_path / "cache2"), options=TuneOptions(time_limit=300,
                                                                                         effort=EFFORT)).run()
    assert (result.best.arena, result.best.ticks) == (fresh.best.arena, fresh.best.ticks)
    # the resumed runs counted the work as the uninterrupted one did
    assert result.work == again.work == fresh.work and result.stopped_by == fresh.stopped_by


def test_estimates_made_before_the_board_timed_more_are_made_again(small_mobilenet, tmp_path):
    """A candidate estimated before the board timed more kernels is estimated again when the search
    comes back to it (in a later round, from the state file), from what the board has timed since;
    one estimated with the kernels known now is read as it was."""
    cache = TimingCache("qemu-m4", tmp_path / "cache")
    tuner = Tuner(small_mobilenet, "qemu-m4", tmp_path / "out", measure=Timing(cache), progress=lambda m: None,
                  cache=cache, options=TuneOptions(effort=EFFORT))
    base = tuner.baseline()
    budget = int(base.ticks * 1.05)
    segs = tuner.segments = space.segments(tuner.lowered)
    cut = space.candidate_cuts(tuner.lowered, segs, frozenset(), find_peak(base.compiled).nodes, pieces=(4,),
                               halos=("keep",), top=1)[0]
    first = tuner.trial((), cut, budget)
    assert tuner.trial((), cut, budget).estimate == first.estimate  # nothing timed since: read as it was
    plan = tuner.search_compile(first.scheme)
    measured = tuner.timer.time(TimedScheme(first.scheme, plan), first.key)  # its every kernel, timed
    again = tuner.trial((), cut, budget)
    assert first.estimate != measured and again.estimate == measured
    assert tuner.state.candidates[first.key]["estimate"] == measured
    assert tuner.state.candidates[first.key]["known_kernels"] == len(tuner.timer.known)


def test_a_resumed_tune_estimates_from_what_the_uninterrupted_one_knew(small_mobilenet, tmp_path):
    """With a board whose timings the estimates read, a tune interrupted after timing some plans of a
    round and resumed estimates, times and keeps what one that ran through does (a resumed run
    knows the kernels timed before the round, then those of the plans it reads back)."""
    out, cache = tmp_path / "out", TimingCache("qemu-m4", tmp_path / "cache")
    first = Timing(cache, fail_after=3)  # the baseline, two plans of round one, then the interruption
    with pytest.raises(KeyboardInterrupt):
        Tuner(small_mobilenet, "qemu-m4", out, measure=first, progress=lambda m: None, cache=cache,
              options=TuneOptions(time_limit=300, effort=EFFORT)).run()
    said = {"resumed": [], "fresh": []}

    def estimates(lines):
        return lambda line: lines.append(line.split("] ", 1)[1]) if "estimated" in line or "budget:" in line or "kept:" in line else None

    resumed = Tuner(small_mobilenet, "qemu-m4", out, measure=Timing(cache), progress=estimates(said["resumed"]),
                    cache=cache, options=TuneOptions(time_limit=300, effort=EFFORT)).run()
    fresh_cache = TimingCache("qemu-m4", tmp_path / "cache2")
    fresh = Tuner(small_mobilenet, "qemu-m4", tmp_path / "fresh", measure=Timing(fresh_cache),
                  progress=estimates(said["fresh"]), cache=fresh_cache,
                  options=TuneOptions(time_limit=300, effort=EFFORT)).run()
    # the two plans timed before the interruption are read back silently; every other is estimated,
    # timed and judged as in the uninterrupted run
    assert len(said["fresh"]) > 5 and said["resumed"] == said["fresh"][:1] + said["fresh"][5:]
    assert (resumed.best.scheme, resumed.best.arena, resumed.best.ticks) == (fresh.best.scheme, fresh.best.arena,
                                                                            fresh.best.ticks)
    assert resumed.work == fresh.work


def test_tune_refuses_the_host_board_and_bad_limits(small_mobilenet, tmp_path):
    with pytest.raises(MCUDeployError, match="host board"):
        Tuner(small_mobilenet, "host", tmp_path)
    with pytest.raises(MCUDeployError, match="max-overhead"):
        Tuner(small_mobilenet, "qemu-m4", tmp_path, options=TuneOptions(max_overhead=-1))
    with pytest.raises(MCUDeployError, match="time-limit"):
        Tuner(small_mobilenet, "qemu-m4", tmp_path, options=TuneOptions(time_limit=0))


def test_tune_compiles_through_compile_graph(small_mobilenet):
    """compile_scheme is pipeline.compile_graph on the split graph: with scratch "fit" the plan is
    the one `mcudeploy compile` makes; with "keep" no kernel loses its scratch, for more memory."""
    board = load_board("qemu-m4")
    lowered = lower(import_onnx(small_mobilenet))
    base_options = replace(SEARCH_OPTIONS, schedule_method="auto", placement_method="exact", scratch="keep")
    base = compile_scheme(lowered, (), board, "m", base_options)
    segs = space.segments(lowered)
    cut = space.candidate_cuts(lowered, segs, frozenset(), find_peak(base).nodes, pieces=(4,), halos=("keep",), top=1)[0]
    fitted = compile_scheme(lowered, (cut,), board, "m", replace(SEARCH_OPTIONS, scratch="fit"))
    direct = compile_graph(split(lowered, (cut,)), board, "m",
                           options=CompileOptions(schedule_method="refine", placement_method="greedy", scheme=(cut,)))
    assert [n.name for n in fitted.order] == [n.name for n in direct.order]
    assert dropped_scratch(fitted) == dropped_scratch(direct) and fitted.scheme == (cut,)
    assert fitted.placement.arena_bytes == direct.placement.arena_bytes
    kept = compile_scheme(lowered, (cut,), board, "m", replace(SEARCH_OPTIONS, scratch="keep"))
    assert not dropped_scratch(kept)
    assert kept.placement.lower_bound_bytes >= fitted.placement.lower_bound_bytes
    unsplit_fit = compile_scheme(lowered, (), board, "m", replace(base_options, scratch="fit"))
    assert base.placement.lower_bound_bytes >= unsplit_fit.placement.lower_bound_bytes
    with pytest.raises(MCUDeployError, match="scratch must be one of"):
        compile_scheme(lowered, (), board, "m", replace(SEARCH_OPTIONS, scratch="some"))


class LeapingClock:
    """time.monotonic and time.perf_counter for a machine a thousand times slower: every reading
    is a second after the last one."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


def tune(model, out, cache, **options):
    return Tuner(model, "qemu-m4", out, measure=Counting(), progress=lambda m: None, cache=cache,
                 options=TuneOptions(effort=EFFORT, **options)).run()


def plan_without_clock(out) -> dict:
    """plan.json less the wall-clock figures, which a busier machine changes (and nothing else)."""
    plan = json.loads((out / "plan.json").read_text())
    plan["schedule"].pop("time_s")
    plan["placement"].pop("time_s")
    return plan


def test_the_plan_does_not_depend_on_time_passing(small_mobilenet, tmp_path, monkeypatch):
    """The search and its solvers count work, not seconds: with every clock reading a second after
    the last (a very slow machine), the same plan, found by the same work, is written."""
    cache = TimingCache("qemu-m4", tmp_path / "cache")
    idle = tune(small_mobilenet, tmp_path / "idle", cache, time_limit=1e9)
    write_result(idle)
    monkeypatch.setattr(time, "monotonic", LeapingClock())
    monkeypatch.setattr(time, "perf_counter", LeapingClock())
    slow = tune(small_mobilenet, tmp_path / "slow", TimingCache("qemu-m4", tmp_path / "cache2"), time_limit=1e9)
    write_result(slow)
    monkeypatch.undo()
    assert slow.best.scheme and slow.best.scheme == idle.best.scheme
    assert slow.work == idle.work and slow.stopped_by == idle.stopped_by == "converged"
    assert plan_without_clock(tmp_path / "slow") == plan_without_clock(tmp_path / "idle")
    assert (tmp_path / "slow" / "model.c").read_bytes() == (tmp_path / "idle" / "model.c").read_bytes()
    tuned = json.loads((tmp_path / "idle" / "plan.json").read_text())["tune"]
    assert tuned == {"budget": {"candidates": idle.budget}, "used": idle.work.as_dict(), "stopped_by": "converged",
                     "effort_s": EFFORT, "time_limit_s": idle.time_limit}
    assert tuned["used"]["candidates"] > 0 and tuned["used"]["timed"] > 0 and tuned["used"]["rounds"] > 0


def test_a_search_cut_short_by_the_clock_says_so_and_resumes(small_mobilenet, tmp_path, monkeypatch):
    """The time limit is an outer bound: a search it stops is marked "time-limit" in plan.json, and
    the same command run again resumes it to the plan of an uninterrupted search."""
    cache = TimingCache("qemu-m4", tmp_path / "cache")
    monkeypatch.setattr(time, "monotonic", LeapingClock())
    cut = tune(small_mobilenet, tmp_path / "out", cache, time_limit=15)  # 10 readings for the search
    monkeypatch.undo()
    assert cut.stopped_by == "time-limit" and cut.timed_out
    write_result(cut)
    assert json.loads((tmp_path / "out" / "plan.json").read_text())["tune"]["stopped_by"] == "time-limit"
    resumed = tune(small_mobilenet, tmp_path / "out", cache)
    fresh = tune(small_mobilenet, tmp_path / "fresh", TimingCache("qemu-m4", tmp_path / "cache2"))
    assert resumed.stopped_by == fresh.stopped_by == "converged"
    assert (resumed.best.scheme, resumed.best.arena, resumed.work) == (fresh.best.scheme, fresh.best.arena, fresh.work)


def test_the_budget_counts_candidates_and_a_larger_one_goes_on(small_mobilenet, tmp_path):
    """A budget of N candidates stops the search after N, whatever they cost; run again with a
    larger budget, the search goes on from where it stopped to the plan a fresh run of that budget
    keeps."""
    cache = TimingCache("qemu-m4", tmp_path / "cache")
    small = tune(small_mobilenet, tmp_path / "out", cache, budget=4)
    assert small.stopped_by == "budget" and small.work.candidates == 4
    full = tune(small_mobilenet, tmp_path / "out", cache)
    fresh = tune(small_mobilenet, tmp_path / "fresh", TimingCache("qemu-m4", tmp_path / "cache2"))
    assert full.work.candidates > 4
    assert (full.best.scheme, full.best.arena, full.work) == (fresh.best.scheme, fresh.best.arena, fresh.work)
    with pytest.raises(MCUDeployError, match="--budget"):
        Tuner(small_mobilenet, "qemu-m4", tmp_path, options=TuneOptions(budget=-1))
