"""The check of a plan on several cores, step by step and byte by byte.

- Order: every kernel step comes after the kernels it reads from, in an earlier phase when they ran on
  another core.
- Memory: within a phase, no byte one core writes is read or written by another core (each step's bytes:
  every element of every view it reads or writes, at its buffer's placed offset and its slot's strides, and
  its scratch buffer).

``check`` raises PlanRace with one sentence naming the phase, the cores and the steps.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from mcudeploy.cores.plan import NO_CORE, CorePlan, sources
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.ir.tensor import itemsize
from mcudeploy.memory.lifetimes import SCRATCH, Lifetimes
from mcudeploy.memory.place import Placement


class PlanRace(MCUDeployError):
    """Two cores of a plan touch the same bytes at once, or a step runs before what it reads is made."""


def _bytes(graph: Graph, tensor: str, lives: Lifetimes, placement: Placement) -> Optional[tuple[str, np.ndarray]]:
    """(region, every byte offset in its arena) of a tensor's elements; None for a tensor outside the arenas."""
    slot = lives.slots.get(tensor)
    if slot is None or slot.buffer not in placement.offsets:
        return None
    t = graph[tensor]
    size = itemsize(t.dtype)
    at = np.zeros((), dtype=np.int64)
    for extent, stride in zip(t.shape, slot.strides):
        at = np.add.outer(at, np.arange(extent, dtype=np.int64) * stride * size)
    start = placement.offsets[slot.buffer] + slot.offset
    return str(placement.regions.get(slot.buffer)), np.add.outer(start + at.ravel(), np.arange(size)).ravel()


def _touched(graph: Graph, node: Node, lives: Lifetimes, placement: Placement) -> tuple[list, list]:
    """(reads, writes) of a kernel step: lists of (region, byte offsets)."""
    reads = [_bytes(graph, t, lives, placement) for t in node.inputs if t and not graph.is_const(t)]
    writes = [_bytes(graph, t, lives, placement) for t in node.outputs if t]
    scratch = node.name + SCRATCH
    if scratch in placement.offsets:
        size = next(b.size for b in lives.buffers if b.name == scratch)
        writes.append((str(placement.regions.get(scratch)), placement.offsets[scratch] + np.arange(size)))
    return [r for r in reads if r is not None], [w for w in writes if w is not None]


def check_order(graph: Graph, order: Sequence[Node], plan: CorePlan, elided: frozenset) -> None:
    known: dict[str, frozenset] = {}
    where = {node.name: (plan.phase[k], plan.core[k], k) for k, node in enumerate(order)}
    for node in order:
        waits = sources(graph, node, elided, known)
        known[node.name] = waits
        if node.name in elided:
            continue
        phase, core, step = where[node.name]
        if core == NO_CORE:
            raise PlanRace(f"step {step} ({node.name}) runs a kernel but is given no core")
        for s in waits:
            p, c, k = where[s]
            if not (p < phase or (p == phase and c == core and k < step)):
                raise PlanRace(f"step {step} ({node.name}, core {core}, phase {phase}) reads what step {k} ({s}, "
                               f"core {c}, phase {p}) makes without a barrier between them")


def check(graph: Graph, order: Sequence[Node], plan: CorePlan, lives: Lifetimes, placement: Placement) -> None:
    """Raise PlanRace if the plan's steps may run before their inputs or touch another core's bytes at once."""
    check_order(graph, order, plan, lives.elided)
    for phase in range(plan.phase_count):
        spans: dict[tuple[int, str], tuple[list, list, list]] = {}  # (core, region) -> reads, writes, steps
        for core in range(plan.cores):
            for k in plan.steps(phase, core):
                if order[k].name in lives.elided:
                    continue
                reads, writes = _touched(graph, order[k], lives, placement)
                for kind, touched in ((0, reads), (1, writes)):
                    for region, at in touched:
                        entry = spans.setdefault((core, region), ([], [], []))
                        entry[kind].append(at)
                        entry[2].append(k)
        for (core, region), (_, writes, steps) in spans.items():
            written = np.unique(np.concatenate(writes)) if writes else np.zeros(0, np.int64)
            for (other, region2), (reads2, writes2, steps2) in spans.items():
                if other == core or region2 != region:
                    continue
                clash = np.intersect1d(written, np.concatenate(reads2 + writes2), assume_unique=False)
                if clash.size:
                    raise PlanRace(f"in phase {phase}, core {core} writes byte {int(clash[0])} of region {region} "
                                   f"that core {other} also touches (core {core}'s steps {sorted(set(steps))}, core "
                                   f"{other}'s {sorted(set(steps2))})")
