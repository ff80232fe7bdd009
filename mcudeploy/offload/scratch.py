"""Kernel scratch off the peak: the fast kernels' working memory costs no arena where it would raise
the peak, because those nodes run a kernel that needs none."""
from __future__ import annotations

from typing import Sequence

from mcudeploy.ir import Graph, Node
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.lifetimes import SCRATCH, Lifetimes, lifetimes


def fit_scratch(graph: Graph, order: Sequence[Node], alignment: int = 4,
                sharing: frozenset = SHARING) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order with the attribute "scratch" = 0 on every node whose working memory
    would raise the arena's peak: those run a kernel that needs none (slower), so the scratch of
    fast kernels costs no memory. A node that writes its output over its input keeps its scratch
    (its kernel relies on it); the peak then is the highest such step, if above the others."""
    lives = lifetimes(graph, order, alignment, sharing)
    scratch = {b.first: b for b in lives.buffers if not b.tensors and b.name.endswith(SCRATCH)}
    if not scratch:
        return graph, tuple(order)
    base = Lifetimes(tuple(b for b in lives.buffers if b.tensors), lives.buffer_of, lives.steps).live_bytes()
    kept = {}
    for step, b in scratch.items():
        node = order[step]
        ins = [i for i in node.inputs if i and i in lives.buffer_of]
        kept[step] = any(lives.buffer_of[o] == lives.buffer_of[i] for o in node.outputs for i in ins)
    peak = max([max(base)] + [base[step + 1] + scratch[step].size for step in scratch if kept[step]])
    drop = {order[step].name for step, b in scratch.items() if not kept[step] and base[step + 1] + b.size > peak}
    if not drop:
        return graph, tuple(order)
    new = {n.name: n.with_(attrs={**n.attrs, "scratch": 0}) if n.name in drop else n for n in graph.nodes}
    return graph.replace(nodes=tuple(new[n.name] for n in graph.nodes)), tuple(new[n.name] for n in order)
