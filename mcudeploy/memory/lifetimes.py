"""Buffers of a scheduled graph: which tensors share storage, how big, and when they live.

Aliasing is decided here, before placement:
- a view operator (Reshape-like) produces no buffer: its output is its input's bytes;
- an operator that declares an in-place input writes its output over that input's buffer
  when the input is last read there and is the same size.
A buffer lives from the step that produces its first tensor to the step that last reads any
of its tensors; graph inputs live from step -1, graph outputs to the last step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import registry


def align_up(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class Buffer:
    name: str  # the first tensor that owns it
    tensors: tuple[str, ...]
    size: int  # bytes, aligned
    first: int  # step index of first write (-1: before the first step)
    last: int  # step index of last read
    region: Optional[str] = None

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class Lifetimes:
    buffers: tuple[Buffer, ...]
    buffer_of: dict  # tensor name -> buffer name
    steps: int

    def live_bytes(self) -> list[int]:
        live = [0] * (self.steps + 1)  # index 0 is step -1
        for b in self.buffers:
            for t in range(b.first, b.last + 1):
                live[t + 1] += b.size
        return live

    def lower_bound(self) -> int:
        return max(self.live_bytes(), default=0)


def lifetimes(graph: Graph, order: Sequence[Node], alignment: int = 4) -> Lifetimes:
    step_of = {n.name: i for i, n in enumerate(order)}
    last = len(order) - 1
    root: dict[str, str] = {}  # tensor -> tensor owning its buffer

    def find(t: str) -> str:
        while root[t] != t:
            t = root[t]
        return t

    last_read: dict[str, int] = {}
    for n in order:
        for i in n.inputs:
            if i and not graph[i].is_const:
                last_read[i] = step_of[n.name]
    for name in graph.outputs:
        last_read[name] = last

    for name in graph.inputs:
        root[name] = name
    for n in order:
        op = registry.get(n.op)
        for out in n.outputs:
            root[out] = out
        src = n.inputs[0] if n.inputs else ""
        if op.view and src and not graph[src].is_const:
            root[n.outputs[0]] = find(src)
            continue
        k = op.inplace(graph, n)
        if k is not None and n.inputs[k] and not graph[n.inputs[k]].is_const:
            src = n.inputs[k]
            owner = find(src)
            members_end = max((last_read.get(t, -1) for t in root if find(t) == owner), default=-1)
            if (members_end == step_of[n.name] and graph[src].nbytes == graph[n.outputs[0]].nbytes
                    and src not in graph.outputs and n.inputs.count(src) == 1):
                root[n.outputs[0]] = owner

    groups: dict[str, list[str]] = {}
    for t in root:
        groups.setdefault(find(t), []).append(t)
    buffers = []
    for owner, members in groups.items():
        starts = [step_of[graph.producer(t).name] if graph.producer(t) else -1 for t in members]
        ends = [last_read.get(t, s) for t, s in zip(members, starts)]
        size = align_up(max(graph[t].nbytes for t in members), alignment)
        buffers.append(Buffer(owner, tuple(members), size, min(starts), max(ends)))
    buffer_of = {t: find(t) for t in root}
    buffers.sort(key=lambda b: (b.first, b.name))
    return Lifetimes(tuple(buffers), buffer_of, len(order))
