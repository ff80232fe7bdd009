"""Memory-aware depth-first order over windows of the graph.

From the current frontier, every ready node opens a window: that node, then depth-first the
nodes it makes ready (the cheapest first: least bytes opened, least live during the step), until
the window is ``WIDTH`` nodes long or nothing it woke is ready. Each window is tried (and taken
back) on the walk; the one that adds the least memory is kept whole: the lowest peak within it
(against the peak so far), then the fewest live bytes at its end, then the longest, then the
lowest first index. Committing whole windows keeps a chain of producers and consumers together,
which is what frees memory early.
"""
from __future__ import annotations

from mcudeploy.schedule.problem import Problem
from mcudeploy.schedule.walk import Walk, tables

WIDTH = 8


def _window(walk: Walk, first: int, width: int) -> list[int]:
    """Run the window opened by ``first`` on the walk (the caller undoes it); return its nodes."""
    nodes, frontier = [first], walk.run(first)
    while frontier and len(nodes) < width:
        def key(v: int) -> tuple:
            during, after = walk.cost(v)
            return after - walk.live, during, v

        v = min((v for v in frontier if v in walk.ready), key=key, default=None)
        if v is None:
            break
        frontier = [u for u in frontier if u != v] + walk.run(v)
        nodes.append(v)
    return nodes


def dfs(problem: Problem, width: int = WIDTH) -> tuple[int, ...]:
    walk = Walk(problem, tables(problem))
    while walk.ready:
        best, best_key = None, None
        for c in sorted(walk.ready):
            nodes = _window(walk, c, width)
            key = (walk.peak, walk.live, -len(nodes), c)
            for _ in nodes:
                walk.undo()
            if best_key is None or key < best_key:
                best, best_key = nodes, key
        for v in best:
            walk.run(v)
    return tuple(walk.order)
