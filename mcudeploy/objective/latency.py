"""The latency and balanced objectives' plan of one order: the fastest within the budget (latency_plan;
the package's docstring gives the rules)."""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.memory.regions import areas
from mcudeploy.objective.spec import BALANCED_FACTOR, Objective


def first_region_bytes(placement, board) -> int:
    """The arena a placement puts in the board's first usable region."""
    return placement.arenas.get(areas(board)[0].name, placement.arena_bytes) if placement.arenas \
        else placement.arena_bytes


def _slow_bytes(placement, board) -> int:
    """The arena a placement puts in the board's slower regions (those with a speed: each access costs time)."""
    slow = {r.name for r in board.regions if r.speed is not None}
    return sum(n for name, n in placement.arenas.items() if name in slow)


def _without_scratch(graph) -> int:
    return sum(1 for n in graph.nodes if n.attrs.get("scratch", 1) == 0)


class OverBudget(MCUDeployError):
    """Even the memory plan of an order is over the user's --memory-budget (latency_plan)."""


def latency_plan(arrange: Callable[[Optional[int]], tuple], steps, board, objective: Objective,
                 model: str = "the model") -> tuple[tuple, Objective]:
    """The fastest plan of one order within the objective's budget (the module's docstring), and the
    objective with what it met. ``arrange(limit)`` places the order with the scratch of every step whose
    live bytes exceed ``limit`` given up (None: the memory plan's), as (graph, order, lifetimes,
    placement, offload); ``steps``: offload.scratch_steps of the order with every scratch kept.

    The memory plan is placed first: its arena is the least this order reaches, and the base of
    balanced's. Then the live bytes may reach the budget: the scratch of every step above it goes (in
    the live-bytes count no other set fits, and no smaller one). A plan fits when its first region's
    arena is within the budget, it puts no more bytes in a slower region than the memory plan (swapped
    or kept there, where each access costs time) and, for balanced, its whole arena is within
    BALANCED_FACTOR times the memory plan's. Where it does not (the placement leaves gaps), the limit
    goes down by the bytes over, at least to the next step with scratch, until a plan fits or the limit
    reaches the memory plan's set. If even the memory plan is over a --memory-budget, that is said in
    one sentence; over the board's own region, the memory plan is returned and the fit check
    (mcudeploy/fit.py) says by how much."""
    memory = arrange(None)
    memory_first, memory_slow = first_region_bytes(memory[3], board), _slow_bytes(memory[3], board)
    capacity = areas(board)[0].capacity - memory[3].state_bytes
    # a --memory-budget above the board's region is the region: the plan must fit the board too
    given = objective.budget_bytes is not None and objective.budget_bytes <= capacity
    limit, source = (objective.budget_bytes, "--memory-budget") if given else (capacity, "board")
    cap = int(memory[3].arena_bytes * BALANCED_FACTOR) if objective.name == "balanced" else None
    met = dataclasses.replace(objective, limit_bytes=limit, limit_from=source, arena_limit_bytes=cap,
                              memory_arena_bytes=memory[3].arena_bytes,
                              memory_without_scratch=_without_scratch(memory[0]))
    if memory_first > limit and source == "--memory-budget":
        raise OverBudget(f"no plan of {model} fits --memory-budget {limit:,} B: even the memory objective's "
                             f"arena needs {memory_first:,} B in {areas(board)[0].name} "
                             f"({memory_first - limit:,} B over)")
    # live bytes may reach the budget, plus what the memory plan holds in the board's other regions
    target = limit + memory[3].arena_bytes - memory_first
    target = min(target, cap) if cap is not None else target
    while memory_first <= limit:
        if steps.above(target) >= steps.above(0):
            break  # the memory plan's set: that plan
        plan = arrange(target)
        first = first_region_bytes(plan[3], board)
        over = max(first - limit, plan[3].arena_bytes - cap if cap is not None else 0)
        if over <= 0 and _slow_bytes(plan[3], board) <= memory_slow:
            return plan, dataclasses.replace(met, without_scratch=_without_scratch(plan[0]))
        lower = steps.next_below(target)
        if lower is None:
            break
        target = min(lower, target - max(over, 1))
    return memory, dataclasses.replace(met, without_scratch=met.memory_without_scratch)
