"""A lower bound on the peak of every order, from the graph's dependencies alone.

While node v runs, these buffers are live whatever the order: the ones v reads and writes, and
every buffer produced by an ancestor of v (or a graph input) that a descendant of v still reads
(or that is a graph output). Where slice sharing may put a part inside its whole and both are
surely live, only the whole is counted; where v may work in place, its saving is taken off.
Their bytes at v bound the peak from below; so do the graph inputs before the first step.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.schedule.order import ancestors, descendants
from mcudeploy.schedule.problem import Problem


def _bits(mask: int, n: int) -> np.ndarray:
    raw = np.frombuffer(mask.to_bytes((n + 7) // 8 or 1, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool)


def lower_bound(problem: Problem) -> int:
    n = problem.size
    start = sum(b.size for b in problem.buffers if b.producer < 0)
    if n == 0:
        return start
    anc, desc = ancestors(problem), descendants(problem)
    everyone = (1 << n) - 1
    sure = []  # per buffer: the nodes at whose step it is surely live, as a bit set
    for b in problem.buffers:
        made = everyone if b.producer < 0 else desc[b.producer] | 1 << b.producer
        if b.to_end:
            wanted = everyone
        elif b.readers:
            wanted = 0
            for r in b.readers:
                wanted |= anc[r] | 1 << r
        else:
            wanted = 0 if b.producer < 0 else 1 << b.producer
        sure.append(made & wanted)
    live = np.zeros(n, dtype=np.int64)
    for b, mask in zip(problem.buffers, sure):
        live[_bits(mask, n)] += b.size
    inside = [0] * len(problem.buffers)  # per part: where its whole is surely live too
    for sh in problem.shares:
        for b in sh.parts:
            inside[b] |= sure[b] & sure[sh.whole]
    for b, mask in enumerate(inside):
        live[_bits(mask, n)] -= problem.buffers[b].size
    for ip in problem.inplace:
        others = [r for r in problem.buffers[ip.src].readers if r != ip.node]
        if all(anc[ip.node] >> r & 1 for r in others):
            live[ip.node] -= ip.saving
    return int(max(start, live.max()))
