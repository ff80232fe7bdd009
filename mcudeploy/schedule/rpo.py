"""Reverse post-order: a depth-first walk from the graph's first nodes along their consumers;
each node is finished after all its consumers, so reversing the finishing order is topological.
Memory plays no part: this is the baseline every memory-aware method should beat."""
from __future__ import annotations

from mcudeploy.schedule.problem import Problem


def rpo(problem: Problem) -> tuple[int, ...]:
    seen = [False] * problem.size
    post: list[int] = []
    for root in range(problem.size):
        if seen[root] or problem.preds[root]:
            continue
        seen[root] = True
        stack = [(root, iter(problem.succs[root]))]
        while stack:  # iterative: graphs of thousands of nodes overflow Python's recursion
            v, it = stack[-1]
            nxt = next((s for s in it if not seen[s]), None)
            if nxt is None:
                post.append(v)
                stack.pop()
            else:
                seen[nxt] = True
                stack.append((nxt, iter(problem.succs[nxt])))
    return tuple(reversed(post))
