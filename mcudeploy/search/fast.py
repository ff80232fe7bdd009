"""``tune --fast-memory``: the plan of least latency whose fast region fits a budget, of cuts, swaps
and recomputes together.

The search (search/tune.py) keeps schemes of cuts that lower the arena within the latency
overhead, and stops once a kept scheme's fast region fits the budget on its own (more cuts would
only add time). Each scheme it kept, and the unsplit model, is then compiled under the budget
(offload.place_within: swaps, recomputes and buffers kept in the slow region where the cuts did not
suffice) and run whole on the board; its latency is the run's ticks plus what the run cannot show of
a modelled slow memory (Offload.unseen_ticks). The least latency wins (ties: fewer cuts). When no
scheme meets the budget, the refusal names the least fast arena any of them reached."""
from __future__ import annotations

from typing import Optional, Sequence

from mcudeploy.errors import MCUDeployError
from mcudeploy.memory import areas
from mcudeploy.search import space
from mcudeploy.search.timing import TimedScheme


def fast_arena(compiled) -> int:
    return compiled.placement.arenas.get(areas(compiled.board)[0].name, 0)


def latency(plan: TimedScheme) -> int:
    """A whole run's ticks, plus what the run cannot show of a modelled slow memory."""
    offload = plan.compiled.offload
    return round(plan.run_ticks + (offload.unseen_ticks if offload is not None else 0))


def fastest_within(tuner, schemes: Sequence[tuple], budget: int) -> TimedScheme:
    """Of ``schemes`` (the unsplit one first), compiled under the fast-memory ``budget`` and run whole
    on the board, the one of least latency (TimedScheme.ticks is set to it)."""
    best: Optional[TimedScheme] = None
    reached = []
    for scheme in dict.fromkeys(schemes):
        try:
            compiled = tuner.compile(scheme, schedule_method="auto", placement_method="exact", fast_memory=budget)
        except MCUDeployError as exc:
            reached.append((scheme, str(exc)))
            continue
        plan = TimedScheme(scheme, compiled)
        tuner.timer.run_whole(plan, f"{space.scheme_key(scheme)} @ fast {budget}")
        tuner.work.whole_runs += 1
        plan.ticks = latency(plan)
        tuner.progress.say(f"fast memory {budget:,} B: {len(scheme)} cut(s), {plan.ticks:,} ticks "
                           f"({offload_line(plan)})")
        if best is None or plan.ticks < best.ticks:
            best = plan
    if best is None:
        least = min((least_budget(tuner, s) for s, _ in reached), default=None)
        raise MCUDeployError(f"a fast-memory budget of {budget:,} B cannot be met on {tuner.board.name}"
                             + (f": the least that can is {least:,} B" if least else f" ({reached[0][1]})"))
    return best


def least_budget(tuner, scheme) -> int:
    """The least fast-memory budget a plan of ``scheme`` meets, to 1% of its unconstrained fast arena
    (by bisection: each try a compile under the budget, with the greedy placement, which an exact one
    only improves on)."""
    low, high = 0, fast_arena(tuner.compile(scheme, schedule_method="auto", placement_method="greedy"))
    while high - low > max(1, high // 100):  # to 1% of the arena
        mid = (low + high) // 2
        try:
            tuner.compile(scheme, schedule_method="auto", placement_method="greedy", fast_memory=mid)
            high = mid
        except MCUDeployError:
            low = mid
    return high


def offload_line(plan: TimedScheme) -> str:
    o = plan.compiled.offload
    if o is None:
        return f"fast arena {fast_arena(plan.compiled):,} B, nothing moved"
    return (f"fast arena {fast_arena(plan.compiled):,} B of {o.budget_bytes:,}; {len(o.swaps)} swap(s), "
            f"{len(o.recomputes)} recompute(s), {len(o.residents)} buffer(s) kept in {o.slow_region}; "
            f"{o.bytes_moved:,} B moved; {o.added_ticks:,.0f} ticks added ({'modelled' if o.modelled else 'measured'})")
