"""Piece-major order: the pieces of a split graph one after the other, as a tiled loop runs them.

A split graph (mcudeploy/partition) marks piece j of node N (Node.piece). This order is a list
schedule over the ready nodes that always takes the one of the lowest piece index, then the one
first in the graph: piece j of every cut node runs before piece j + 1 of any, so a chain's pieces
go depth-first and each piece's working rows are freed before the next piece's are made. A node
that is no piece (a slice, a halo's gather, a reassembling Concat, an operator not cut) takes the
lowest index among the nodes that read its outputs, so it runs just before the first piece that
needs it. On a graph with no pieces this is the graph's own order. Memory plays no other part;
the refined heuristic starts from it (mcudeploy/schedule/auto.py STARTS).
"""
from __future__ import annotations

import heapq

from mcudeploy.schedule.problem import Problem

NONE = 1 << 30  # the index of a node that neither is a piece nor feeds one


def pieces(problem: Problem) -> tuple[int, ...]:
    nodes = problem.graph.nodes
    key = [NONE if n.piece_index is None else n.piece_index for n in nodes]
    for v in reversed(range(problem.size)):  # graph order is topological: consumers come later
        if key[v] == NONE and problem.succs[v]:
            key[v] = min(key[s] for s in problem.succs[v])
    waiting = [len(ps) for ps in problem.preds]
    ready = [(key[v], v) for v in range(problem.size) if not waiting[v]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for s in problem.succs[v]:
            waiting[s] -= 1
            if not waiting[s]:
                heapq.heappush(ready, (key[s], s))
    return tuple(order)
