"""The refined heuristic, the exact method around the solver, and ``auto``, which picks.

Each takes an ``Effort`` (mcudeploy/effort.py): a limit in effort seconds, spent by the work
itself (orders simulated, the solver's deterministic time), never by the wall clock, so that an
order does not depend on how busy the machine is.

The refined heuristic starts from the bfs and dfs orders, the piece-major order (a split graph's
pieces one after the other), and the baselines (reverse post-order and the model's own order) so
that it is never worse than they are; it refines the most promising start first, then the others
while effort remains, and keeps the best.

The exact method seeds CP-SAT with the refined heuristic (given a tenth of the effort, at most a
second) and keeps whichever order the yardstick measures lower. It skips the solver when the
heuristic already meets the static lower bound, and leaves graphs of more than
``EXACT_MAX_NODES`` operators to the heuristic (saying so in the log and in ``Found.used``).

``auto`` decides by size: a graph of at most ``EXACT_NODES_PER_SECOND`` nodes per second of the
limit goes to the exact method, a larger one to the refined heuristic. In the benchmark
(benchmarks/schedule_bench.py) all 27 generated graphs of up to 40 operators prove optimal within
3 s each, and five of the nine of about 100 operators within 10 s.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from mcudeploy.effort import Effort
from mcudeploy.schedule.bfs import bfs
from mcudeploy.schedule.bound import lower_bound
from mcudeploy.schedule.dfs import dfs
from mcudeploy.schedule.exact import solve
from mcudeploy.schedule.order import model_order
from mcudeploy.schedule.profile import Profiler
from mcudeploy.schedule.pieces import pieces
from mcudeploy.schedule.problem import Problem
from mcudeploy.schedule.refine import refine
from mcudeploy.schedule.rpo import rpo

EXACT_NODES_PER_SECOND = 4
EXACT_MAX_NODES = 300  # the model has nodes x steps Booleans; at 300 nodes it takes seconds to build
MEASURE_MAX_NODES = 500  # up to here, the heuristic's final choice is checked with lifetimes() itself

log = logging.getLogger("mcudeploy")

STARTS: tuple[tuple[str, Callable[[Problem], tuple[int, ...]]], ...] = (
    ("bfs", bfs), ("dfs", dfs), ("rpo", rpo), ("model", model_order), ("pieces", pieces))

Measure = Callable[[Sequence[int]], int]  # the yardstick: an order's peak as lifetimes() sees it


@dataclass(frozen=True)
class Found:
    order: tuple[int, ...]
    used: str  # the method that produced the order
    bound: int  # no order peaks lower (bytes)


def heuristic(problem: Problem, effort: Effort, profiler: Optional[Profiler] = None,
              measure: Optional[Measure] = None) -> Found:
    """Refine every start on the plain model (no slice sharing: its landscape suits the local
    moves). Where slices may be shared, refine the results again on the model that shares them,
    then the raw starts too (sharing may favour what the plain model does not), while effort
    remains. Keep the best by the last model used; given ``measure`` and a graph of at most
    ``MEASURE_MAX_NODES`` nodes, compare it with the raw starts by the yardstick, so that the
    result is never worse than any of them."""
    bound = lower_bound(problem)
    plain = Profiler(problem, shares=False)
    prof = profiler or Profiler(problem)
    starts = sorted((plain.peak(o), k, name, o) for k, (name, make) in enumerate(STARTS) for o in [make(problem)])
    refined = []
    for _, k, name, o in starts:
        if refined and effort.exhausted:
            break
        refined.append((name, refine(problem, o, effort, plain)))
    refined.sort(key=lambda c: plain.peak(c[1]))
    if problem.shares:
        refined += [(name, o) for _, _, name, o in starts]
    best = None
    for name, o in refined:
        if best is not None and effort.exhausted:
            break
        r = refine(problem, o, effort, prof) if problem.shares else o
        peak = prof.peak(r)
        if best is None or peak < best[0]:
            best = (peak, r, f"refine({name})")
    order, used = best[1], best[2]
    if measure is not None and problem.size <= MEASURE_MAX_NODES:
        scored = [(measure(order), 0, order, used)]
        scored += [(measure(o), 1 + k, o, name) for _, k, name, o in starts]
        _, _, order, used = min(scored, key=lambda c: c[:2])
    return Found(order, used, bound)


def exact(problem: Problem, effort: Effort, measure: Measure, profiler: Optional[Profiler] = None) -> Found:
    prof = profiler or Profiler(problem)
    if problem.size > EXACT_MAX_NODES:
        log.warning("exact: %d operators are more than the solver's model takes (%d); using the refined "
                    "heuristic", problem.size, EXACT_MAX_NODES)
        return heuristic(problem, effort, prof, measure)
    part = effort.share(0.1, at_most=1.0)
    seed = heuristic(problem, part, prof, measure)
    effort.settle(part)
    seed_peak = measure(seed.order)
    if seed_peak <= seed.bound:
        return seed  # the heuristic meets the bound: nothing left to prove
    # the model is a relaxation of the yardstick, so the seed's measured peak bounds its optimum
    solved = solve(problem, max(0.1, effort.left()), seed.order, seed_peak, seed.bound)
    effort.spend(solved.effort)
    bound = max(seed.bound, solved.bound)
    if solved.order is not None and measure(solved.order) < seed_peak:
        return Found(solved.order, "exact", bound)
    return Found(seed.order, "exact" if solved.order is not None else seed.used, bound)


def auto(problem: Problem, effort: Effort, measure: Measure) -> Found:
    prof = Profiler(problem)
    if effort.limit is not None and problem.size <= EXACT_NODES_PER_SECOND * effort.limit:
        return exact(problem, effort, measure, prof)
    return heuristic(problem, effort, prof, measure)
