"""Buffers of a scheduled graph: which tensors share storage, how big, and when they live.

Sharing (views, Concat inputs written into the output, Split outputs as slices, in place) is
decided in mcudeploy/memory/alias.py. A buffer lives from the step that writes its first tensor
to the step that last reads any of its tensors; graph inputs live from step -1, graph outputs to
the last step, a state's next value until it is copied into the state; the states' buffers are not the
arena's (mcudeploy/memory/state.py). Its size is its owner's bytes rounded up to the alignment. A kernel's
scratch memory (``Op.scratch``) is a buffer of its own, "<node>#scratch", with no tensors, live at the
kernel's step only.

``lifetimes(graph, order, alignment).lower_bound()`` -- the largest sum of bytes live at one
step -- is the objective every scheduling method is judged by.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from mcudeploy.ir import Graph, Node
from mcudeploy.ir.graph import per_node
from mcudeploy.memory.alias import SHARING, Slot, share
from mcudeploy.memory.parts import by_parts
from mcudeploy.memory.state import split_states
from mcudeploy.ops import registry


def align_up(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class Buffer:
    name: str  # the tensor that owns it
    tensors: tuple[str, ...]
    size: int  # bytes, aligned
    first: int  # step index of first write (-1: before the first step)
    last: int  # step index of last read
    region: Optional[str] = None
    io: bool = False  # holds a graph input or output (the caller reads or writes it)
    # (bytes from the buffer's start, size, first step, last step) per part of the buffer that is live
    # on its own; empty: the whole buffer from first to last. A buffer whose tensor an operator writes
    # over a bigger or smaller input (in place) is a staircase of such rectangles at offset 0.
    parts: tuple[tuple[int, int, int, int], ...] = ()

    def rects(self) -> tuple[tuple[int, int, int, int], ...]:
        """(offset, size, first, last) of every rectangle the buffer takes in time x bytes."""
        return self.parts or ((0, self.size, self.first, self.last),)


@dataclass(frozen=True)
class Lifetimes:
    buffers: tuple[Buffer, ...]
    buffer_of: Mapping  # tensor name -> buffer name
    steps: int
    slots: Mapping = field(default_factory=dict)  # tensor name -> Slot(buffer, byte offset, strides)
    elided: frozenset = frozenset()  # nodes that run no kernel: their work is done by sharing
    sharing: frozenset = frozenset()  # the kinds of sharing these lifetimes were made with (alias.SHARING)
    # the states' buffers (Graph.states), outside the arena, in the order of the states (memory/state.py),
    # per state whether its next value is written in place, and else the step after which model.c copies it in
    # (the first after which nothing reads the state: memory/alias.py's _hold_next_values)
    state: tuple[Buffer, ...] = ()
    in_place: Mapping = field(default_factory=dict)
    copies: Mapping = field(default_factory=dict)

    def live_bytes(self) -> list[int]:
        diff = [0] * (self.steps + 2)  # index 0 is step -1
        for b in self.buffers:
            for _, size, first, last in b.rects():
                diff[first + 1] += size
                diff[last + 2] -= size
        live, acc = [], 0
        for d in diff[:-1]:
            acc += d
            live.append(acc)
        return live

    def lower_bound(self) -> int:
        return max(self.live_bytes(), default=0)


SCRATCH = "#scratch"


@per_node
def _scratch(graph: Graph, node: Node) -> int:
    """A kernel's working memory, once per graph and node: every order a search tries asks for all of them."""
    return registry.get(node.op).scratch(graph, node)


def scratch_buffers(graph: Graph, order: Sequence[Node], alignment: int = 4, elided=frozenset()) -> list[Buffer]:
    """A buffer "<node>#scratch" (no tensors) for every kernel that needs working memory, live at its step only."""
    out = []
    for step, node in enumerate(order):
        if node.name in elided:
            continue
        size = _scratch(graph, node)
        if size > 0:
            out.append(Buffer(node.name + SCRATCH, (), align_up(size, alignment), step, step))
    return out


def lifetimes(graph: Graph, order: Sequence[Node], alignment: int = 4, sharing: frozenset = SHARING) -> Lifetimes:
    s = share(graph, order, alignment, frozenset(sharing))
    slots, spans, states, in_place = split_states(graph, s.slots, s.spans, alignment)
    buffers = [Buffer(sp.name, sp.tensors, align_up(sp.nbytes, alignment), sp.first, sp.last, io=sp.io,
                      parts=tuple((0, align_up(n, alignment), a, z) for a, z, n in sp.steps))
               for sp in spans]
    state = tuple(Buffer(sp.name, sp.tensors, align_up(sp.nbytes, alignment), -1, len(order) - 1, io=True)
                  for sp in states)
    if "parts" in sharing:
        buffers = by_parts(graph, order, buffers, slots, s.elided, alignment)
    buffers += scratch_buffers(graph, order, alignment, s.elided)
    buffers.sort(key=lambda b: (b.first, b.name))
    copies = {name: step for name, step in s.copies.items() if not in_place.get(name)}
    return Lifetimes(tuple(buffers), {t: sl.buffer for t, sl in slots.items()}, len(order), slots, s.elided,
                     frozenset(sharing), state, in_place, copies)


__all__ = ["SCRATCH", "Buffer", "Lifetimes", "Slot", "align_up", "lifetimes", "scratch_buffers"]
