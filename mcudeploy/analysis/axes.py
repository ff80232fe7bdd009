"""The axis connection graph (ACG): which loop axes of different operators index the same data.

One vertex per (operator, loop axis) of every operator's tensor expression (``Op.expr``). An edge
joins producer P's axis a to consumer C's axis b when P writes dimension i of a tensor with
``identity(a)`` and C reads that dimension with ``identity(b)`` or ``window(b, k, ...)``; a window
edge records the kernel axis, its extent, stride, dilation, padding and the halo (how many input
rows two neighbouring pieces share). ``broadcast`` and ``full`` dimensions connect nothing, and
neither do graph inputs and constants (they have no producer).

Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) are operators like any other here: their
expression (``shape.reshape_expr``) keeps a dimension ``identity`` on both sides when the reshape
leaves it alone, so such a dimension passes the connection through (with the view's axis as one
more member), while merged or split dimensions are ``full`` and break it. Flatten of NCHW to
(N, C*H*W) therefore cuts the spatial chain of a CNN at the classifier.

A component is a connected set of axes: cutting any one of them into pieces means cutting every
operator it crosses the same way. ``segments`` lists the parts of a component the split can cut.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from mcudeploy.ir import Graph
from mcudeploy.ops import registry

GROWN_PER_STEP = 400  # segments one step of segments()' growth keeps (see _thinned)


@dataclass(frozen=True)
class AxisRef:
    """One loop axis of one operator."""

    node: str
    axis: str
    extent: int
    kind: str  # "spatial" | "reduction"


@dataclass(frozen=True)
class Edge:
    """Dimension ``dim`` of ``tensor`` is written by ``producer``'s axis and read by ``consumer``'s.

    ``window`` is None for an identity read; for a windowed read it holds ``kernel`` (the
    consumer's kernel axis), ``size`` (its extent), ``stride``, ``dilation``, ``pad`` (leading
    padding) and ``halo`` = max(0, (size - 1) * dilation + 1 - stride): the input rows two
    neighbouring output pieces both read.
    """

    producer: AxisRef
    consumer: AxisRef
    tensor: str
    dim: int
    window: Optional[dict] = field(default=None, hash=False)


@dataclass(frozen=True)
class Component:
    """A connected set of axes; members in topological order of their nodes (then axis order)."""

    index: int
    members: tuple[AxisRef, ...]
    edges: tuple[Edge, ...]

    @cached_property
    def nodes(self) -> tuple[str, ...]:
        """The operators the component crosses, in topological order, each once."""
        return tuple(dict.fromkeys(m.node for m in self.members))

    @property
    def crosses_reduction(self) -> bool:
        """Whether cutting it cuts a reduction axis somewhere (partial sums must be accumulated)."""
        return any(m.kind == "reduction" for m in self.members)


def halo(size: int, stride: int, dilation: int) -> int:
    return max(0, (size - 1) * dilation + 1 - stride)


def _exprs(graph: Graph) -> dict:
    return {n.name: registry.get(n.op).expr(graph, n) for n in graph.nodes}


def _build(graph: Graph):
    exprs = _exprs(graph)
    refs: dict[tuple[str, str], AxisRef] = {}
    for n in graph.nodes:
        for a in exprs[n.name].axes:
            refs[(n.name, a.name)] = AxisRef(n.name, a.name, int(a.extent), a.kind)
    edges: list[Edge] = []
    seen = set()
    for c in graph.nodes:
        c_expr = exprs[c.name]
        for j, tensor in enumerate(c.inputs):
            p = graph.producer(tensor) if tensor else None
            if p is None or j >= len(c_expr.inputs) or c_expr.inputs[j] is None:
                continue
            out_dims = exprs[p.name].outputs[p.outputs.index(tensor)]
            for i, (pd, cd) in enumerate(zip(out_dims, c_expr.inputs[j])):
                if pd.kind != "identity" or cd.kind not in ("identity", "window"):
                    continue
                window = None
                if cd.kind == "window":
                    size = c_expr.axis(cd.kernel).extent
                    window = {"kernel": cd.kernel, "size": int(size), "stride": cd.stride, "dilation": cd.dilation,
                              "pad": cd.pad, "halo": halo(size, cd.stride, cd.dilation)}
                edge = Edge(refs[(p.name, pd.axis)], refs[(c.name, cd.axis)], tensor, i, window)
                if edge not in seen:  # Add(x, x) reads the same dims twice
                    seen.add(edge)
                    edges.append(edge)
    return tuple(refs.values()), tuple(edges)


def axis_graph(graph: Graph) -> tuple[tuple[AxisRef, ...], tuple[Edge, ...]]:
    """Every (operator, axis) in topological order of the operators, and every edge, ordered by
    consumer (topologically), then input, then dimension."""
    return _build(graph)


def components(graph: Graph) -> tuple[Component, ...]:
    """Connected components of the ACG, indexed in order of their first member (topological
    order of nodes, then the axis order of the node's expression). Every axis belongs to exactly
    one component; an axis no edge touches is a component of its own."""
    refs, edges = _build(graph)
    parent = {r: r for r in refs}

    def find(r):
        while parent[r] is not r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    for e in edges:
        a, b = find(e.producer), find(e.consumer)
        if a is not b:
            parent[b] = a
    groups: dict[AxisRef, list[AxisRef]] = {}
    for r in refs:  # refs are in topological order, so each group is too
        groups.setdefault(find(r), []).append(r)
    by_root: dict[AxisRef, list[Edge]] = {}
    for e in edges:
        by_root.setdefault(find(e.producer), []).append(e)
    return tuple(Component(i, tuple(members), tuple(by_root.get(root, ())))
                 for i, (root, members) in enumerate(groups.items()))


def crossing(graph: Graph) -> tuple[Component, ...]:
    """The components that cross more than one operator (what ``plan --show-axes`` prints)."""
    return tuple(c for c in components(graph) if len(c.nodes) > 1)


def cuttable(graph: Graph, member: AxisRef) -> bool:
    """Whether a cut may follow ``member``: a spatial axis of extent 2 or more, or a reduction axis
    of extent 2 or more along which the operator's pieces can accumulate (``Op.partial``)."""
    if member.extent < 2:
        return False
    if member.kind == "spatial":
        return True
    node = graph.node(member.node)
    return registry.get(node.op).partial(graph, node, member.axis) is not None


def segments(graph: Graph, component: Component, max_len: Optional[int] = None) -> list[tuple[AxisRef, ...]]:
    """The parts of ``component`` that the split can cut together, for the search to enumerate.

    Only *cuttable* members count: spatial axes of extent 2 or more, and a reduction axis of
    extent 2 or more along which the operator's pieces can accumulate (an average of whole maps
    along its rows), which can only end a segment (its output does not follow the axis). Among
    them, with the
    component's edges directed producer -> consumer, a segment is a set of at least two members
    that is

    - connected: linked by edges between its own members (ignoring direction);
    - convex: every cuttable member on a directed path between two of its members is in it too,
      so no piece of work outside the segment sits between two of its operators (for a residual
      block, a segment holding the block's input and its Add also holds the branch between);
    - one axis per operator: an operator is cut along one axis;
    - it neither starts nor ends at a view (Reshape, Identity, ...): a view shares its input's
      bytes and runs no kernel, so cutting one at the edge of a segment saves nothing; inside a
      segment it is a member like any other (it carries the axis between its neighbours).

    At most ``max_len`` members each when given. Each segment lists its members in topological
    order; segments are ordered by first member, then length, then members.
    """
    members = [m for m in component.members if cuttable(graph, m)]
    position = {m: i for i, m in enumerate(component.members)}
    keep = set(members)
    succ: dict[AxisRef, set] = {m: set() for m in members}
    pred: dict[AxisRef, set] = {m: set() for m in members}
    for e in component.edges:
        if e.producer in keep and e.consumer in keep and e.producer != e.consumer:
            succ[e.producer].add(e.consumer)
            pred[e.consumer].add(e.producer)
    down = {m: _reach(m, succ) for m in members}
    up = {m: _reach(m, pred) for m in members}

    def closure(s: frozenset) -> Optional[frozenset]:
        below = set().union(*(down[m] for m in s))
        above = set().union(*(up[m] for m in s))
        full = frozenset(s | (below & above))
        if max_len is not None and len(full) > max_len:
            return None
        nodes = [m.node for m in full]
        return full if len(nodes) == len(set(nodes)) else None

    found: set[frozenset] = set()
    frontier = [frozenset([m]) for m in members]
    while frontier:
        grown = []
        for s in frontier:
            for m in s:
                for n in succ[m] | pred[m]:
                    if n in s:
                        continue
                    c = closure(s | {n})
                    if c is not None and c not in found:
                        found.add(c)
                        grown.append(c)
        frontier = _thinned(grown, position, found)
    view = {n.name: registry.get(n.op).view for n in graph.nodes}
    out = [seg for seg in (tuple(sorted(s, key=position.get)) for s in found)
           if not view[seg[0].node] and not view[seg[-1].node]]
    out.sort(key=lambda seg: (position[seg[0]], len(seg), [position[m] for m in seg]))
    return out


def _thinned(grown: list, position: dict, found: set) -> list:
    """The segments one growth step found, at most GROWN_PER_STEP of them: where there are more (a
    densely wired component: a randomly wired or NAS-found network has exponentially many connected
    convex sets), an even sample in a fixed order (by members' positions), so every start and
    length still has segments and the result is reproducible; the rest are dropped from ``found``
    too, so the search ranks a bounded number. Chains and residual blocks never come near it."""
    if len(grown) <= GROWN_PER_STEP:
        return grown
    ordered = sorted(grown, key=lambda s: sorted(position[m] for m in s))
    kept = [ordered[i * len(ordered) // GROWN_PER_STEP] for i in range(GROWN_PER_STEP)]
    found.difference_update(set(grown) - set(kept))
    return kept


def _reach(start, step: dict) -> set:
    """Members reachable from ``start`` along ``step`` (``start`` included)."""
    seen, todo = {start}, [start]
    while todo:
        for n in step[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen
