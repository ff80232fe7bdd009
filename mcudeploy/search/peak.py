"""What sits at a plan's peak: the step, the operators a cut would have to cross to lower it, and
the bytes of each tensor live there (what a cut that holds the tensor's producer and readers
turns into pieces).

Both come from the buffers' rectangles (Buffer.rects()), not from a buffer's first and last step:
a buffer that many in-place operators write in turn (a staircase) is live through most of the
plan, but at the peak only one rectangle of it is, and only the operators that touch the buffer
while that rectangle lasts made it; the operators before and after own other rectangles, which a
cut here does not change. Names are those of the unsplit graph (Node.original, Tensor.original: a
piece of operator ``N`` and the slices and gathers that serve it count as ``N``, a piece or slice
of tensor ``T`` as ``T``), so a plan of a scheme maps back onto the lowered graph the search cuts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from mcudeploy.ops import registry


@dataclass(frozen=True)
class Peak:
    step: int  # index into the plan's order (-1: before the first step)
    bytes: int  # live bytes at that step, scratch included
    node: str  # the original name of the step's operator ("" at step -1)
    nodes: frozenset  # original names of the operators that write or read the live rectangles' tensors
    tensors: Mapping[str, int]  # original tensor name -> its bytes live at the peak


def _accesses(compiled) -> dict:
    """Tensor name -> the steps that write or read it (graph inputs at -1, outputs at the last step)."""
    graph, order = compiled.graph, compiled.order
    steps: dict[str, list[int]] = {t: [-1] for t in graph.stored_inputs()}
    for t in graph.outputs:
        steps.setdefault(t, []).append(len(order) - 1)
    for i, node in enumerate(order):
        for t in (*node.inputs, *node.outputs):
            if t and not graph.is_const(t):
                steps.setdefault(t, []).append(i)
    return steps


def find_peak(compiled) -> Peak:
    graph, order, lives = compiled.graph, compiled.order, compiled.lifetimes
    live = lives.live_bytes()  # index 0 is step -1
    step = max(range(len(live)), key=live.__getitem__) - 1
    steps = _accesses(compiled)
    writers = {t: n for n in order for t in n.outputs}
    readers: dict[str, list] = {}
    for n in order:
        for t in n.inputs:
            if t:
                readers.setdefault(t, []).append(n)
    nodes = {order[step].original} if step >= 0 else set()
    tensors: dict[str, int] = {}
    for b in lives.buffers:
        for _, size, first, last in b.rects():
            if not first <= step <= last:
                continue
            here: dict[str, int] = {}
            for t in b.tensors:
                seen = [s for s in steps.get(t, ()) if first <= s <= last]
                if not seen:
                    continue
                for node in (writers.get(t), *readers.get(t, ())):
                    if node is not None and not registry.get(node.op).view:
                        nodes.add(node.original)
                if min(steps[t]) <= step <= max(steps[t]):
                    o = graph[t].original
                    here[o] = min(size, here.get(o, 0) + graph[t].nbytes)
            for o, n in here.items():
                tensors[o] = tensors.get(o, 0) + n
    return Peak(step, live[step + 1], order[step].original if step >= 0 else "",
                frozenset(nodes), tensors)


__all__ = ["Peak", "find_peak"]
