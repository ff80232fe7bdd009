"""Lifetimes and placement of a scheduled graph together: ``lay_out``.

In-place sharing with a size change ("resize", mcudeploy/memory/alias.py) lowers the live-bytes
bound, but ties the input and the output of the operator to one offset: a staircase the placement
must keep whole, which can leave an arena above what two separate buffers reach. So where the
sharing makes such a staircase, the order is also placed without it, and the smaller arena wins
(ties: with it, the lower bound).
"""
from __future__ import annotations

from typing import Sequence

from mcudeploy.ir import Graph, Node
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.lifetimes import Lifetimes, lifetimes
from mcudeploy.memory.place import Placement, place
from mcudeploy.memory.regions import DEFAULT, Area


def lay_out(graph: Graph, order: Sequence[Node], regions: Sequence[Area] = DEFAULT, method: str = "greedy",
            alignment: int = 4, time_limit: float = 10.0) -> tuple[Lifetimes, Placement]:
    lives = lifetimes(graph, order, alignment, SHARING)
    placed = place(lives, regions, method, alignment, time_limit)
    if any(len(b.rects()) > 1 for b in lives.buffers) and placed.arena_bytes > placed.lower_bound_bytes:
        plain = lifetimes(graph, order, alignment, SHARING - {"resize"})
        other = place(plain, regions, method, alignment, time_limit)
        if other.arena_bytes < placed.arena_bytes:
            return plain, other
    return lives, placed
