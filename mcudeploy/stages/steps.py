"""The model as the stage partitioner sees it: the steps of one execution order, each with its cost
on every kind of core, the weights it reads, and the tensors between steps with their bytes.

A stage is a contiguous run of steps [i, j). What crosses the cut before step c is every tensor made
before c (a model input counts as made before step 0) and read at c or later: in a chain the link
after a stage carries all of it (a tensor a later stage reads is forwarded by the stages between).
``Steps.cut_bytes[c]`` is that sum; ``Steps.live_peak(i, j)`` the most bytes live at once inside the
stage along the order (its inputs until their last read there, what it sends until its end), the
live-bytes bound its arena is placed near; ``weight_bytes(i, j)`` what its flash holds.

``reduce`` is the graph reduction: a chain of single-input single-output operators that run no
kernel (a Reshape, a Flatten, a copy done by sharing memory) is merged into the step before it where
the cut after it carries no more bytes than the cut before it (a view holds its input's bytes). Both
cuts then split the compute alike, and the later one sends no more, so merging loses no split that
is not limited by memory; the reduced steps are fewer for the dynamic program.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from mcudeploy.ir import Graph, Node


@dataclass(frozen=True)
class Steps:
    nodes: tuple[tuple[str, ...], ...]  # the operators of each step, in order
    seconds: Mapping[str, tuple[float, ...]]  # board name -> each step's time on it
    weights: tuple[frozenset[str], ...]  # constants each step reads
    const_bytes: Mapping[str, int]
    tensor_bytes: tuple[int, ...]  # non-constant tensors: bytes,
    first: tuple[int, ...]  # the step that makes it (-1: a model input),
    last: tuple[int, ...]  # the last step that reads it (n: a model output, read by the caller)
    reads: tuple[tuple[int, ...], ...]  # the steps that read it

    @property
    def n(self) -> int:
        return len(self.nodes)

    @property
    def cut_bytes(self) -> np.ndarray:
        """cut_bytes[c] for c in 0..n: the bytes crossing the cut before step c (0 at the ends)."""
        out = np.zeros(self.n + 2, dtype=np.int64)
        for nb, f, l in zip(self.tensor_bytes, self.first, self.last):
            lo, hi = f + 1, min(l, self.n - 1)  # cuts f+1 .. l, inside 1..n-1
            if lo <= hi:
                out[lo] += nb
                out[hi + 1] -= nb
        out = np.cumsum(out)[: self.n + 1]
        out[0] = 0
        return out

    def prefix(self, board: str) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(self.seconds[board])])

    def weight_bytes(self, i: int, j: int) -> int:
        consts = frozenset().union(*self.weights[i:j])
        return int(sum(self.const_bytes[c] for c in consts))

    def live_peak(self, i: int, j: int) -> int:
        first, last, nb = (np.asarray(a) for a in (self.first, self.last, self.tensor_bytes))
        lo = np.maximum(first, i)
        hi = np.where(last >= j, j - 1, last)
        keep = (first < j) & (last >= i) & (lo <= hi)
        if not keep.any():
            return 0
        diff = np.zeros(j - i + 1, dtype=np.int64)
        np.add.at(diff, lo[keep] - i, nb[keep])
        np.add.at(diff, hi[keep] - i + 1, -nb[keep])
        return int(np.cumsum(diff)[:-1].max())

    def degrees(self) -> tuple[list[int], list[int]]:
        """(in-degree, out-degree) of every step: the steps it reads from and the steps that read it."""
        ins, outs = [set() for _ in range(self.n)], [set() for _ in range(self.n)]
        for f, readers in zip(self.first, self.reads):
            for r in readers:
                if f >= 0 and r != f:
                    ins[r].add(f)
                    outs[f].add(r)
        return [len(s) for s in ins], [len(s) for s in outs]


def _step_of(order: Sequence[Node]) -> dict[str, int]:
    return {o: k for k, n in enumerate(order) for o in n.outputs}


def steps_of(graph: Graph, order: Sequence[Node], seconds: Mapping[str, Mapping[str, float]]) -> Steps:
    """The steps of ``order`` (one per operator); ``seconds``: board name -> node name -> its time."""
    order = tuple(order)
    made = _step_of(order)
    readers: dict[str, list[int]] = {}
    for k, n in enumerate(order):
        for i in n.inputs:
            if i and not graph[i].is_const:
                readers.setdefault(i, []).append(k)
    names = [t for t in graph.inputs] + [o for n in order for o in n.outputs]
    names = list(dict.fromkeys(names))
    n = len(order)
    last = [n if t in graph.outputs else max(readers.get(t, [made.get(t, -1)])) for t in names]
    return Steps(tuple((x.name,) for x in order),
                 {b: tuple(float(s.get(x.name, 0.0)) for x in order) for b, s in seconds.items()},
                 tuple(frozenset(i for i in x.inputs if i and graph[i].is_const) for x in order),
                 {t.name: t.nbytes for t in graph.tensors.values() if t.is_const},
                 tuple(graph[t].nbytes for t in names), tuple(made.get(t, -1) for t in names), tuple(last),
                 tuple(tuple(readers.get(t, ())) for t in names))


def reduce(steps: Steps) -> tuple[Steps, tuple[int, ...]]:
    """Merge every step that costs nothing everywhere, reads one step's output alone and is that step's
    only reader into the step before it. Returns the reduced steps and, for each, the index of its
    first original step (so a cut of the reduced steps maps back: ``starts[c]``)."""
    ins, outs = steps.degrees()
    edge = {}
    for f, rs in zip(steps.first, steps.reads):
        for r in rs:
            edge.setdefault(r, set()).add(f)
    free = [all(s[k] == 0.0 for s in steps.seconds.values()) for k in range(steps.n)]
    cut = steps.cut_bytes
    starts = [0]
    for k in range(1, steps.n):
        merge = (free[k] and ins[k] == 1 and edge.get(k) == {k - 1} and outs[k - 1] == 1
                 and cut[k + 1] <= cut[k])
        if not merge:
            starts.append(k)
    bounds = list(zip(starts, starts[1:] + [steps.n]))
    remap = {}
    for g, (a, b) in enumerate(bounds):
        for k in range(a, b):
            remap[k] = g
    first = tuple(-1 if f < 0 else remap[f] for f in steps.first)
    last = tuple(len(bounds) if l >= steps.n else remap[l] for l in steps.last)
    return Steps(tuple(sum(steps.nodes[a:b], ()) for a, b in bounds),
                 {name: tuple(sum(s[a:b]) for a, b in bounds) for name, s in steps.seconds.items()},
                 tuple(frozenset().union(*steps.weights[a:b]) for a, b in bounds), steps.const_bytes,
                 steps.tensor_bytes, first, last,
                 tuple(tuple(sorted({remap[r] for r in rs})) for rs in steps.reads)), tuple(starts)
