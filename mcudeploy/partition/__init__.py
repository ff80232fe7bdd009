"""The split rewrite: cut chains of operators along a loop axis they share into pieces.

A scheme is a tuple of cuts; each names nodes of one axis component (node, loop axis) and a
number of pieces. ``split`` returns an ordinary, verified Graph of smaller operators on views
(mcudeploy/ops/slice.py) that computes bit for bit what the original does, so scheduling,
placement and code generation need no special case; the pieces of a tensor are tensors of their
own, with their own lifetimes, which is what lets a depth-first order run below the per-operator
memory bound. The cuts of a scheme are applied one after the other and must name distinct nodes.
"""
from __future__ import annotations

from typing import Optional

from mcudeploy.analysis.axes import halo
from mcudeploy.ir import Graph
from mcudeploy.ops import registry
from mcudeploy.partition.rewrite import plan, split_cut
from mcudeploy.partition.cut import HALOS, Cut, Scheme, SplitError, analyse, cut_from_dict, cut_to_dict

__all__ = ["Cut", "Scheme", "SplitError", "HALOS", "split", "check_cut", "describe", "macs", "mechanisms",
           "cut_to_dict", "cut_from_dict"]


def split(graph: Graph, scheme: Scheme) -> Graph:
    """`graph` with every cut of `scheme` applied; SplitError (one sentence) if one cannot be."""
    seen: dict[str, int] = {}
    for k, cut in enumerate(scheme):
        for name in dict.fromkeys(name for name, _ in cut.axes):  # repeated in one cut: analyse says so
            if name in seen:
                raise SplitError(f"node {name} is named by cuts {seen[name]} and {k} of the scheme")
            seen[name] = k
    for cut in scheme:
        graph = split_cut(analyse(graph, cut))
    return graph


def check_cut(graph: Graph, cut: Cut) -> Optional[str]:
    """None if `cut` can be applied to `graph`, else the one-sentence reason it cannot."""
    try:
        plan(analyse(graph, cut))  # the pieces themselves: rows, reads, attributes
    except SplitError as err:
        return str(err)
    return None


def mechanisms(graph: Graph, scheme: Scheme) -> tuple[str, ...]:
    """What the cuts of a valid scheme rely on, for people, in a fixed order: "reduction" (pieces
    add to a running sum, Op.partial), "halo-keep" or "recompute" (a windowed read of a tensor cut
    in the segment overlaps the neighbouring pieces, kept alive or computed again), "strips"
    (a cut with neither: pieces that share no rows), "per-node" (its nodes take differing piece
    counts, Cut.counts), "streamed-input" (it cuts a ReadInput: a graph input comes in band by band,
    passes/stream_input.py)."""
    found = set()
    for cut in scheme:
        facts = analyse(graph, cut)
        found.update({"reduction"} if facts.partial else ())
        found.update({"per-node"} if cut.counts is not None else ())
        found.update({"streamed-input"} if any(registry.get(n.op).source for n in facts.nodes.values()) else ())
        overlap = False
        for name, node in facts.nodes.items():
            for x, spec in zip(node.inputs, facts.in_dim[name]):
                if spec is None or spec[1].kind != "window" or x not in facts.cut_tensors:
                    continue
                d = spec[1]
                overlap |= halo(facts.expr[name].axis(d.kernel).extent, d.stride, d.dilation) > 0
        found.add(("halo-keep" if cut.halo == "keep" else "recompute") if overlap else
                  "strips" if not facts.partial else "reduction")
        graph = split_cut(facts)
    return tuple(m for m in ("reduction", "halo-keep", "recompute", "strips", "per-node", "streamed-input")
                 if m in found)


def _pieces_of(split_graph: Graph, node: str) -> list:
    return [n for n in split_graph.nodes if n.piece is not None and n.piece.of == node and n.piece.index is not None]


def describe(graph: Graph, split_graph: Graph, scheme: Scheme) -> list[dict]:
    """Per original node cut: what it became, for plan.json and the report. ``macs`` is the
    node's own work, ``piece_macs`` its pieces' (more with recomputed halos; a node cut along a
    reduction has pieces of another operator, its running sums)."""
    out = []
    for cut in scheme:
        for name, axis in cut.axes:
            node = graph.node(name)
            pieces = _pieces_of(split_graph, name)
            op = registry.get(node.op)
            out.append({"node": name, "op": node.op, "axis": axis, "pieces": cut.count(name), "halo": cut.halo,
                        "piece_nodes": [p.name for p in pieces], "macs": op.macs(graph, node),
                        "piece_macs": sum(registry.get(p.op).macs(split_graph, p) for p in pieces)})
    return out


def macs(graph: Graph) -> int:
    """Total multiply-accumulates of a graph (what recomputed halos add to)."""
    return sum(registry.get(n.op).macs(graph, n) for n in graph.nodes)
