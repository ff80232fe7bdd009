"""Lifetimes and placement of a scheduled graph together: ``lay_out``.

Two kinds of sharing lower the live-bytes bound but make bigger rigid shapes the placement must
keep whole, which can leave an arena above what separate buffers reach:

- in place with a size change ("resize", mcudeploy/memory/alias.py) ties an operator's input and
  output to one offset, a staircase;
- a Concat's inputs written into its output while it copies the others ("partial") make the
  output live from its first such input's producer on.

Buffers freed and taken part by part ("parts", mcudeploy/memory/parts.py) lower the bound too,
but a buffer whose parts interleave (a row band of an NCHW tensor is one part per channel) is a
comb the placement can seldom fill.

So where the sharing used any of these, the order is also placed without it, and the smallest
arena that fits the regions wins (ties: with it, the lower bound).

A tensor a rewrite put in a region (Tensor.region, mcudeploy/offload) keeps its buffer there.
"""
from __future__ import annotations

from typing import Optional, Sequence

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.lifetimes import Lifetimes, lifetimes
from mcudeploy.memory.place import Placement, place
from mcudeploy.memory.regions import DEFAULT, Area
from mcudeploy.ops import registry


def _partial(lives: Lifetimes, order: Sequence[Node]) -> bool:
    """Whether some Concat that still runs has an input written into its output."""
    of = lives.buffer_of
    return any(registry.slices(n.op) == "inputs" and n.name not in lives.elided and any(of.get(i) == of.get(n.outputs[0])
                                                                          for i in n.inputs)
               for n in order)


def lay_out(graph: Graph, order: Sequence[Node], regions: Sequence[Area] = DEFAULT, method: str = "greedy",
            alignment: int = 4, time_limit: float = 10.0) -> tuple[Lifetimes, Placement]:
    lives = lifetimes(graph, order, alignment, SHARING)
    best = (lives, place(lives, regions, method, alignment, time_limit, pinned(graph, lives)))
    if best[1].arena_bytes <= best[1].lower_bound_bytes:
        return best
    others = []
    if any(len(b.rects()) > 1 for b in lives.buffers):
        others.append(SHARING - {"resize"})
    if _partial(lives, order):
        others.append(SHARING - {"partial"})
    if any(len({off for off, _, _, _ in b.rects()}) > 1 for b in lives.buffers):  # staircases sit at offset 0
        others.append(SHARING - {"parts"})
    if any(t.rows is not None for t in graph.tensors.values()):  # banded tensors take no in-place output
        others.append(SHARING - {"bands"})
    for sharing in others:
        plain = lifetimes(graph, order, alignment, sharing)
        if (len(regions) == 1 or not _overflow(best[1], regions)) and plain.lower_bound() >= best[1].arena_bytes:
            continue  # no placement goes below its bound, so none of it can win (and CP-SAT's effort is saved)
        placed = place(plain, regions, method, alignment, time_limit, pinned(graph, plain))
        if (_overflow(placed, regions), placed.arena_bytes) < (_overflow(best[1], regions), best[1].arena_bytes):
            best = (plain, placed)
    return best


def pinned(graph: Graph, lives: Lifetimes) -> Optional[dict[str, tuple[str, ...]]]:
    """Buffer name -> the one region its tensors were put in (Tensor.region); None when no tensor is."""
    out: dict[str, set] = {}
    for name, buffer in lives.buffer_of.items():
        region = graph[name].region
        if region is not None:
            out.setdefault(buffer, set()).add(region)
    for buffer, regions in out.items():
        if len(regions) > 1:
            raise MCUDeployError(f"buffer {buffer} holds tensors put in different regions ({', '.join(sorted(regions))})")
    return {b: tuple(r) for b, r in out.items()} or None


def _overflow(placed: Placement, regions: Sequence[Area]) -> int:
    """Bytes by which the placement's arenas exceed their regions."""
    return sum(max(placed.arenas.get(a.name, 0) - a.capacity, 0) for a in regions)
