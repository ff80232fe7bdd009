"""Orders as tuples of node indices: the model's own, and the checks every method's result passes."""
from __future__ import annotations

from typing import Sequence

from mcudeploy.schedule.problem import Problem


def model_order(problem: Problem) -> tuple[int, ...]:
    """The order of the nodes in the graph (the importer keeps the model file's order)."""
    return tuple(range(problem.size))


def is_topological(problem: Problem, order: Sequence[int]) -> bool:
    if sorted(order) != list(range(problem.size)):
        return False
    pos = {v: i for i, v in enumerate(order)}
    return all(pos[p] < pos[v] for v in order for p in problem.preds[v])


def ancestors(problem: Problem) -> list[int]:
    """Per node, the bit set (a Python int) of its ancestors."""
    anc = [0] * problem.size
    for v in topological(problem):
        for p in problem.preds[v]:
            anc[v] |= anc[p] | (1 << p)
    return anc


def descendants(problem: Problem) -> list[int]:
    desc = [0] * problem.size
    for v in reversed(topological(problem)):
        for s in problem.succs[v]:
            desc[v] |= desc[s] | (1 << s)
    return desc


def topological(problem: Problem) -> list[int]:
    """Kahn's order, lowest index first among the ready nodes."""
    import heapq

    left = [len(p) for p in problem.preds]
    ready = [v for v in range(problem.size) if not left[v]]
    heapq.heapify(ready)
    out = []
    while ready:
        v = heapq.heappop(ready)
        out.append(v)
        for s in problem.succs[v]:
            left[s] -= 1
            if not left[s]:
                heapq.heappush(ready, s)
    return out


def windows(problem: Problem) -> tuple[list[int], list[int]]:
    """Earliest and latest step of each node in any order: its ancestors come before it, its
    descendants after it."""
    n = problem.size
    anc, desc = ancestors(problem), descendants(problem)
    return [a.bit_count() for a in anc], [n - 1 - d.bit_count() for d in desc]
