"""Helpers passes use to build new graphs: dead-code removal and rewiring."""
from __future__ import annotations

from mcudeploy.ir import Graph


def eliminate_dead(graph: Graph) -> Graph:
    """Drop nodes whose outputs nobody reads and tensors nothing refers to."""
    needed = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(o in needed for o in node.outputs):
            kept.append(node)
            needed.update(i for i in node.inputs if i)
    kept.reverse()
    used = needed | set(graph.inputs) | {o for n in kept for o in n.outputs}
    return graph.replace(nodes=tuple(kept), tensors={k: t for k, t in graph.tensors.items() if k in used})
