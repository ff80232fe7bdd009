"""Kernel scratch off the peak: the fast kernels' working memory costs no arena where it would raise
the peak, because those nodes run a kernel that needs none."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from mcudeploy.ir import Graph, Node
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.lifetimes import SCRATCH, Lifetimes, lifetimes


@dataclass(frozen=True)
class ScratchSteps:
    """The steps whose kernel has working memory, as fit_scratch sees them: ``floor`` is the peak no
    choice of kernels goes below (the live bytes without any droppable scratch, or a step whose kernel
    writes over its input and so keeps its scratch); ``levels`` the live bytes, scratch included, of
    every step whose scratch may go, by node name."""

    floor: int
    levels: tuple[tuple[str, int], ...]

    def above(self, limit: int) -> frozenset:
        """The nodes that run without scratch when the live bytes may reach ``limit`` (at least the floor)."""
        return frozenset(n for n, live in self.levels if live > max(limit, self.floor))

    def next_below(self, limit: int) -> Optional[int]:
        """The highest limit under ``limit`` that drops more scratch than ``limit`` does, or None."""
        under = [live for _, live in self.levels if self.floor < live <= limit]
        return max(under) - 1 if under else None


def scratch_steps(graph: Graph, order: Sequence[Node], alignment: int = 4,
                  sharing: frozenset = SHARING) -> ScratchSteps:
    lives = lifetimes(graph, order, alignment, sharing)
    scratch = {b.first: b for b in lives.buffers if not b.tensors and b.name.endswith(SCRATCH)}
    base = Lifetimes(tuple(b for b in lives.buffers if b.tensors), lives.buffer_of, lives.steps).live_bytes()
    if not scratch:
        return ScratchSteps(int(max(base)), ())
    kept = {}
    for step, b in scratch.items():
        node = order[step]
        ins = [i for i in node.inputs if i and i in lives.buffer_of]
        kept[step] = any(lives.buffer_of[o] == lives.buffer_of[i] for o in node.outputs for i in ins)
    floor = max([max(base)] + [base[step + 1] + scratch[step].size for step in scratch if kept[step]])
    return ScratchSteps(int(floor), tuple((order[step].name, int(base[step + 1] + b.size))
                                          for step, b in sorted(scratch.items()) if not kept[step]))


def fit_scratch(graph: Graph, order: Sequence[Node], alignment: int = 4,
                sharing: frozenset = SHARING, limit: Optional[int] = None) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order with the attribute "scratch" = 0 on every node whose working memory
    would raise the arena's peak: those run a kernel that needs none (slower), so the scratch of
    fast kernels costs no memory. A node that writes its output over its input keeps its scratch
    (its kernel relies on it); the peak then is the highest such step, if above the others.
    ``limit``: the live bytes may reach it (the latency objective, mcudeploy/objective): only the
    scratch of steps above both it and that peak goes."""
    drop = scratch_steps(graph, order, alignment, sharing).above(0 if limit is None else limit)
    if not drop:
        return graph, tuple(order)
    new = {n.name: n.with_(attrs={**n.attrs, "scratch": 0}) if n.name in drop else n for n in graph.nodes}
    return graph.replace(nodes=tuple(new[n.name] for n in graph.nodes)), tuple(new[n.name] for n in order)


def scratch_where_it_pays(graph: Graph, order: Sequence[Node], features: frozenset) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order with "scratch" = 0 on every node whose kernel declares that its scratch buys no speed
    on a core with ``features`` (Op.scratch_pays, boards.Board.features): such a node runs its kernel without
    working memory in every plan, the latency objective's too, so no arena goes to a scratch that is not faster.
    A node that may write over its input (Op.inplace) keeps its scratch, as fit_scratch keeps it there."""
    from mcudeploy.ops import registry

    drop = set()
    for n in graph.nodes:
        if n.attrs.get("scratch", 1) == 0:
            continue
        op = registry.get(n.op)
        if op.scratch(graph, n) and not op.scratch_pays(graph, n, features) and op.inplace(graph, n) is None:
            drop.add(n.name)
    if not drop:
        return graph, tuple(order)
    new = {n.name: n.with_(attrs={**n.attrs, "scratch": 0}) if n.name in drop else n for n in graph.nodes}
    return graph.replace(nodes=tuple(new[n.name] for n in graph.nodes)), tuple(new[n.name] for n in order)
