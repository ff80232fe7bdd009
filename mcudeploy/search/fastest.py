"""``mcudeploy tune --objective latency|balanced``: the least ticks, measured on the board, within the
memory budget (mcudeploy/objective).

1. The memory objective's plan (what ``mcudeploy compile`` writes by default) is compiled and timed on
   the board: the baseline, which the kept plan is never slower than.
2. The objective's plan (pipeline.latency_plan: every kernel keeps its scratch unless it must go to fit
   the budget) is compiled with each schedule method of FINAL_SCHEDULES: the orders differ in which steps
   are high, so in which kernels must give up their scratch, and in the arena.
   Beside them, the "auto" order once more with every kernel's scratch priced as on the DSP cores
   (CompileOptions.priced_scratch off): where a kernel declares its scratch buys no speed on the board's core
   (Op.scratch_pays, e.g. the MVE convolutions whose columns fit the stack), that declaration is checked by
   the board's own ticks rather than taken on trust.
3. Every plan the kernels it runs tell apart from those before is timed on the board, kernel by kernel
   through the timing cache (search/timing.py, as the memory search times its candidates); the least
   ticks is kept (ties: the least arena, then the first), confirmed by one whole run of its own
   firmware beside one of the baseline's.

What it does not search: splits (the memory search's cuts only add work; a model whose memory plan
does not fit the budget is refused in one sentence), the kernels themselves, nor layouts.
"""
from __future__ import annotations

from dataclasses import replace

from mcudeploy.errors import MCUDeployError
from mcudeploy.objective import Objective
from mcudeploy.search.timing import TimedScheme

# the schedule methods whose orders are tried (as tune.FINAL_SCHEDULES: "auto" first, the default compile's)
SCHEDULES = ("auto", "refine", "demand", "dfs", "rpo")
# (schedule method, CompileOptions.priced_scratch) of every candidate: each order with the kernels' own pricing
# of their scratch, then the default order with every scratch kept where the objective allows
CANDIDATES = tuple((m, True) for m in SCHEDULES) + (("auto", False),)
MEMORY_KEY = "memory objective @ auto"


def _kernels(compiled) -> tuple:
    """What decides a plan's ticks here: the kernels that run without their scratch (the order and the
    offsets do not change what the kernels do)."""
    return tuple(sorted(n.name for n in compiled.graph.nodes if n.attrs.get("scratch", 1) == 0))


def fastest_plan(tuner, objective: Objective):
    """(the memory objective's plan timed, the fastest plan timed): ``tuner`` is a search.tune.Tuner,
    whose compiles, board timer, state file and progress lines this uses."""
    say = tuner.progress.say
    base = TimedScheme((), tuner.compile((), schedule_method="auto", placement_method="exact", scratch="fit"))
    say(f"memory objective: arena {base.arena:,} B, {len(_kernels(base.compiled))} kernel(s) without scratch; "
        f"timing it on {tuner.board.name}")
    tuner.timer.time(base, MEMORY_KEY)
    say(f"memory objective: {base.ticks:,} ticks")
    seen = {_kernels(base.compiled): base}
    plans = []
    for method, priced in CANDIDATES:
        tuner.work.candidates += 1
        try:
            compiled = tuner.compile((), schedule_method=method, placement_method="exact", scratch="fit",
                                     objective=objective, priced_scratch=priced)
        except MCUDeployError as exc:
            if method == SCHEDULES[0] and priced:
                raise
            say(f"{objective.name} @ {method}: {exc}")
            continue
        kernels = _kernels(compiled)
        plan = TimedScheme((), compiled)
        label = method if priced else f"{method}, every scratch kept"
        if kernels in seen:
            if not priced:
                continue  # the kernels' pricing changed nothing here (every core without such kernels)
            plan.ticks = seen[kernels].ticks
            say(f"{objective.name} @ {label}: arena {plan.arena:,} B, the same kernels as a plan timed before")
        else:
            say(f"{objective.name} @ {label}: arena {plan.arena:,} B, {len(kernels)} kernel(s) without scratch; "
                f"timing it")
            tuner.timer.time(plan, f"{objective.name} @ {label}")
            tuner.work.timed += 1
            seen[kernels] = plan
            say(f"{objective.name} @ {label}: {plan.ticks:,} ticks ({plan.ticks / base.ticks - 1:+.1%} on the "
                f"memory objective's)")
        plans.append(plan)
    best = min(plans, key=lambda p: (p.ticks, p.arena))
    if best.ticks > base.ticks:  # measured slower: the memory objective's plan is the fastest, and kept
        met = replace(best.compiled.objective, without_scratch=best.compiled.objective.memory_without_scratch)
        best = TimedScheme((), replace(base.compiled, objective=met), base.ticks)
        say("the memory objective's plan is the fastest measured: kept")
    base_run = tuner.timer.run_whole(base, MEMORY_KEY)
    run = tuner.timer.run_whole(best, f"kept @ {best.compiled.schedule_method}")
    tuner.work.whole_runs += 2
    say(f"kept: schedule {best.compiled.schedule_method}, arena {best.arena:,} B, {best.ticks:,} ticks; whole runs "
        f"{run:,} ticks against the memory objective's {base_run:,}")
    return base, best
