"""Demand order: a depth-first walk from the graph's outputs back along each node's inputs, in
the order the node lists them; a node runs as soon as everything it reads has run.

On a split graph this is the piece-by-piece order: the Concat that reassembles a tensor lists its
pieces first to last, so the walk computes piece 0 through the whole chain (and only the
neighbours its halo needs) before it starts piece 1. Memory plays no part in the walk itself;
the schedulers that weigh memory take it as one more starting point."""
from __future__ import annotations

from mcudeploy.schedule.problem import Problem


def demand(problem: Problem) -> tuple[int, ...]:
    graph = problem.graph
    index = {n.name: i for i, n in enumerate(graph.nodes)}
    producer = {t: index[n.name] for t, n in graph.producers.items()}
    inputs = [[producer[t] for t in n.inputs if t in producer] for n in graph.nodes]
    seen = [False] * problem.size
    post: list[int] = []
    sinks = [v for v in range(problem.size) if not problem.succs[v]]
    for root in sinks + list(range(problem.size)):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(inputs[root]))]
        while stack:  # iterative: graphs of thousands of nodes overflow Python's recursion
            v, it = stack[-1]
            nxt = next((p for p in it if not seen[p]), None)
            if nxt is None:
                post.append(v)
                stack.pop()
            else:
                seen[nxt] = True
                stack.append((nxt, iter(inputs[nxt])))
    return tuple(post)
