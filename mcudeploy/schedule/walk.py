"""The memory state after a prefix of an order, advanced one node at a time.

The constructive heuristics (bfs, dfs) grow an order node by node; a ``Walk`` tells them what
running a node next would cost — the live bytes during its step and after it — in time
proportional to the node's degree. It follows the rules of :mod:`mcudeploy.schedule.problem`.
"""
from __future__ import annotations

from dataclasses import dataclass

from mcudeploy.schedule.problem import Problem


@dataclass(frozen=True)
class Tables:
    """Per node: bytes it creates, the buffers it reads, its possible in-place saving."""

    creates: tuple[int, ...]  # bytes of the buffers the node produces
    dead: tuple[int, ...]  # bytes of those nobody reads (freed right after the step)
    reads: tuple[tuple[int, ...], ...]
    saving: tuple[tuple[int, int], ...]  # (source buffer, bytes) or (-1, 0)
    sizes: tuple[int, ...]  # per buffer; 0 for a graph output (never freed)
    readers: tuple[int, ...]  # per buffer: how many nodes read it
    start: int  # bytes live before the first step
    kept: int  # of those, bytes still live after it


def tables(problem: Problem) -> Tables:
    n = problem.size
    creates, dead = [0] * n, [0] * n
    for b in problem.buffers:
        if b.producer >= 0:
            creates[b.producer] += b.size
            if not b.readers and not b.to_end:
                dead[b.producer] += b.size
    saving = [(-1, 0)] * n
    for ip in problem.inplace:
        saving[ip.node] = (ip.src, ip.saving)
    inputs = [b for b in problem.buffers if b.producer < 0]
    return Tables(tuple(creates), tuple(dead), tuple(tuple(r) for r in problem.reads()), tuple(saving),
                  tuple(0 if b.to_end else b.size for b in problem.buffers),
                  tuple(len(b.readers) for b in problem.buffers),
                  sum(b.size for b in inputs), sum(b.size for b in inputs if b.readers or b.to_end))


class Walk:
    def __init__(self, problem: Problem, t: Tables):
        self.problem, self.t = problem, t
        self.left = list(t.readers)  # readers still to run, per buffer
        self.waiting = [len(p) for p in problem.preds]  # predecessors still to run, per node
        self.live = t.kept
        self.peak = t.start
        self.order: list[int] = []
        self.ready = {v for v in range(problem.size) if not self.waiting[v]}
        self._undo: list[tuple[int, int, list[int]]] = []  # (live, peak, woken) before each run

    def cost(self, v: int) -> tuple[int, int]:
        """Live bytes during v's step and after it, were v to run next."""
        t, left = self.t, self.left
        src, saving = t.saving[v]
        during = self.live + t.creates[v] - (saving if src >= 0 and left[src] == 1 else 0)
        freed = t.dead[v] + sum(t.sizes[b] for b in t.reads[v] if left[b] == 1)
        return during, self.live + t.creates[v] - freed

    def run(self, v: int) -> list[int]:
        """Run v; return the nodes it made ready."""
        during, after = self.cost(v)
        before = (self.live, self.peak)
        self.peak = max(self.peak, during)
        self.live = after
        for b in self.t.reads[v]:
            self.left[b] -= 1
        self.order.append(v)
        self.ready.discard(v)
        woken = []
        for s in self.problem.succs[v]:
            self.waiting[s] -= 1
            if not self.waiting[s]:
                self.ready.add(s)
                woken.append(s)
        self._undo.append((*before, woken))
        return woken

    def undo(self) -> None:
        """Take back the last run."""
        live, peak, woken = self._undo.pop()
        v = self.order.pop()
        for s in self.problem.succs[v]:
            self.waiting[s] += 1
        self.ready.difference_update(woken)
        self.ready.add(v)
        for b in self.t.reads[v]:
            self.left[b] += 1
        self.live, self.peak = live, peak
