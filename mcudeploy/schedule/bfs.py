"""Lifetime-aware breadth-first order.

A list scheduler over the ready set (the breadth-first frontier). Each node has a window of
feasible steps: its earliest (after all its ancestors) and latest (before all its descendants).
At every step the next node is the ready one that

1. opens the least: the bytes it creates minus the bytes whose lifetimes it closes (it is their
   last reader), so short lifetimes end before new ones start;
2. then raises the live bytes least during its own step;
3. then has the tightest window (smallest latest step), then the smallest earliest step, then
   the lowest index, so that ties fall the same way every time.
"""
from __future__ import annotations

from mcudeploy.schedule.order import windows
from mcudeploy.schedule.problem import Problem
from mcudeploy.schedule.walk import Walk, tables


def bfs(problem: Problem) -> tuple[int, ...]:
    early, late = windows(problem)
    walk = Walk(problem, tables(problem))

    def key(v: int) -> tuple:
        during, after = walk.cost(v)
        return after - walk.live, during, late[v], early[v], v

    while walk.ready:
        walk.run(min(walk.ready, key=key))
    return tuple(walk.order)
