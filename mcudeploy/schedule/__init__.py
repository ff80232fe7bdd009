"""Execution orders: ``schedule(graph, method, time_limit) -> Schedule``.

``time_limit`` is in effort seconds (mcudeploy/effort.py): work counted by the methods themselves,
about a second each on an idle machine, so that an order does not depend on how busy the machine
is; ``Schedule.effort_s`` says what was spent.

Methods: ``model`` (the model's own order), ``rpo`` (reverse post-order), ``demand`` (depth-first from the
outputs, inputs in order: piece by piece on a split graph), ``bfs``
(lifetime-aware breadth-first), ``dfs`` (memory-aware depth-first over windows), ``pieces`` (a split
graph's pieces one after the other, mcudeploy/schedule/pieces.py), ``refine`` (the
heuristics refined around the peak, the best kept), ``exact`` (CP-SAT, seeded with ``refine``;
says whether it proved the order optimal) and ``auto`` (``exact`` where the limit allows it for a
graph of this size, else ``refine``). Every method is judged by the same yardstick,
``lifetimes(graph, order, alignment).lower_bound()``, and reports it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from mcudeploy.effort import Effort
from mcudeploy.choices import SCHEDULE_METHODS
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.memory.lifetimes import lifetimes
from mcudeploy.schedule import auto as _auto
from mcudeploy.schedule.bfs import bfs
from mcudeploy.schedule.bound import lower_bound
from mcudeploy.schedule.demand import demand
from mcudeploy.schedule.dfs import dfs
from mcudeploy.schedule.order import is_topological, model_order
from mcudeploy.schedule.pieces import pieces
from mcudeploy.schedule.problem import build
from mcudeploy.schedule.rpo import rpo

METHODS = SCHEDULE_METHODS


@dataclass(frozen=True)
class Schedule:
    order: tuple[Node, ...]
    method: str  # the method asked for
    used: str  # the method that produced the order (auto: exact or refine(...))
    peak_bytes: int  # lifetimes(graph, order, alignment).lower_bound()
    bound_bytes: int  # no order of the graph peaks lower (static bound, or the solver's)
    proven_optimal: bool  # peak_bytes meets bound_bytes: no order peaks lower
    time_s: float  # wall-clock seconds (informative: the machine's load changes it, not the order)
    effort_s: float = 0.0  # effort seconds spent (mcudeploy/effort.py): the same on any load
    limit_s: Optional[float] = None  # the effort limit it was given


PLAIN = {"bfs": bfs, "dfs": dfs, "rpo": rpo, "demand": demand, "model": model_order, "pieces": pieces}


def schedule(graph: Graph, method: str = "auto", time_limit: float = 10.0, alignment: int = 4) -> Schedule:
    if method not in METHODS:
        raise MCUDeployError(f"unknown schedule method '{method}'; choose one of {', '.join(METHODS)}")
    if not time_limit > 0:
        raise MCUDeployError(f"the schedule time limit must be positive, not {time_limit}")
    start = time.perf_counter()
    problem = build(graph, alignment)

    measured: dict[tuple[int, ...], int] = {}  # the methods ask again for orders they weighed (the kept one)

    def measure(order) -> int:
        key = tuple(int(v) for v in order)
        if key not in measured:
            measured[key] = lifetimes(graph, [graph.nodes[v] for v in key], alignment).lower_bound()
        return measured[key]

    effort = Effort(float(time_limit))
    if method == "auto":
        found = _auto.auto(problem, effort, measure)
    elif method == "exact":
        found = _auto.exact(problem, effort, measure)
    elif method == "refine":
        found = _auto.heuristic(problem, effort, measure=measure)
    else:
        found = _auto.Found(PLAIN[method](problem), method, lower_bound(problem))
    assert is_topological(problem, found.order), f"{found.used} returned an order that is not topological"
    peak = measure(found.order)
    return Schedule(tuple(graph.nodes[v] for v in found.order), method, found.used, peak, found.bound,
                    problem.sound and peak <= found.bound, time.perf_counter() - start, effort.spent, effort.limit)
