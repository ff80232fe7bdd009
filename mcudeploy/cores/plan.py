"""The phases of a core assignment, and the order sorted by them.

A step runs a kernel, or none (``elided``: a view, a Concat whose inputs were written into its output):
a step that runs none is passed through, so a step waits on the kernels that made what it reads
(``sources``). A kernel step on core c is in the first phase after every source on another core and not
before any source on its own core; a step that runs no kernel is in its latest source's phase, on that
source's core (it needs no barrier of its own).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from mcudeploy.ir import Graph, Node

NO_CORE = -1  # a step that runs no kernel


@dataclass(frozen=True)
class CorePlan:
    """Per step of the order (sorted_order's): the core that runs it (NO_CORE: no kernel) and its phase."""

    cores: int
    core: tuple[int, ...]
    phase: tuple[int, ...]

    @property
    def phase_count(self) -> int:
        return max(self.phase, default=-1) + 1

    def steps(self, phase: int, core: int) -> tuple[int, ...]:
        """The steps core ``core`` runs in ``phase``, in order."""
        return tuple(k for k, (c, p) in enumerate(zip(self.core, self.phase)) if c == core and p == phase)

    def bounds(self) -> list[tuple[int, int]]:
        """Per phase, its first and last step (the order is sorted by phase; an empty phase is (k, k - 1))."""
        out, at = [], 0
        for p in range(self.phase_count):
            end = at
            while end < len(self.phase) and self.phase[end] == p:
                end += 1
            out.append((at, end - 1))
            at = end
        return out

    def critical_path(self, ticks: Sequence[float], barrier: float = 0.0) -> float:
        """The longest core of each phase, summed, and one barrier between phases: with ``ticks`` per step."""
        total = 0.0
        for p in range(self.phase_count):
            total += max(sum(ticks[k] for k in self.steps(p, c)) for c in range(self.cores))
        return total + barrier * max(0, self.phase_count - 1)


def sources(graph: Graph, node: Node, elided: frozenset, known: Mapping[str, frozenset]) -> frozenset:
    """The kernel steps ``node`` waits on: the producers of its inputs, through steps that run no kernel
    (``known``: the sources of the nodes before it)."""
    out: set = set()
    for tensor in node.inputs:
        producer = graph.producer(tensor) if tensor else None
        if producer is None:
            continue
        out |= known[producer.name] if producer.name in elided else {producer.name}
    return frozenset(out)


def phases(graph: Graph, order: Sequence[Node], core_of: Mapping[str, int], elided: frozenset,
           cores: int = 2, phase_of: Optional[Mapping[str, int]] = None
           ) -> tuple[dict[str, int], dict[str, int], dict[str, frozenset]]:
    """(phase, core, sources) per node name of the topological ``order``, for kernel steps placed by
    ``core_of``: each in the first phase it may run in, or in its ``phase_of`` where that is later (the
    assignment may hold a step back to run beside another core's)."""
    phase_of = phase_of or {}
    phase: dict[str, int] = {}
    core: dict[str, int] = {}
    known: dict[str, frozenset] = {}
    for node in order:
        waits = sources(graph, node, elided, known)
        known[node.name] = waits
        if node.name in elided:
            latest = max(((phase[s], core[s]) for s in waits), default=(0, 0))
            phase[node.name], core[node.name] = latest[0], NO_CORE
            continue
        c = core_of[node.name]
        if not 0 <= c < cores:
            raise ValueError(f"node {node.name} is given core {c}, not one of 0..{cores - 1}")
        core[node.name] = c
        phase[node.name] = max([phase[s] + (core[s] != c) for s in waits] + [phase_of.get(node.name, 0)])
    return phase, core, known


def sorted_order(graph: Graph, order: Sequence[Node], core_of: Mapping[str, int], elided: frozenset,
                 cores: int = 2, phase_of: Optional[Mapping[str, int]] = None) -> tuple[tuple[Node, ...], CorePlan]:
    """``order`` sorted by phase, then core (a step that runs no kernel sits with its latest source), then its
    place in ``order``: a topological order again, and the plan of its steps."""
    phase, core, known = phases(graph, order, core_of, elided, cores, phase_of)
    key = {}
    for k, node in enumerate(order):
        c = core[node.name]
        if c == NO_CORE:  # with its latest source: after it, before any later step of that core
            waits = [s for s in known[node.name] if phase[s] == phase[node.name]]
            c = max((core[s] for s in waits), default=0)
        key[node.name] = (phase[node.name], c, k)
    ordered = tuple(sorted(order, key=lambda n: key[n.name]))
    return ordered, CorePlan(cores, tuple(core[n.name] for n in ordered), tuple(phase[n.name] for n in ordered))

