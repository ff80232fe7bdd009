"""A cut read against a graph: which dimension of each tensor follows the cut axis, and whether
the cut is valid (``analyse`` returns the facts, or raises SplitError with the one-sentence
reason it is not)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim, Partial, TensorExpr
from mcudeploy.partition.ranges import Read, balanced, window_read

HALOS = ("keep", "recompute")


class SplitError(MCUDeployError):
    """A split scheme that cannot be applied to the graph, explained in one sentence."""


@dataclass(frozen=True)
class Cut:
    """Cut each named node along its loop axis into `pieces` balanced ranges.

    axes: (node name, loop-axis name from Op.expr) for every node cut, a set of nodes of one axis
    component; halo: how a windowed consumer gets the rows its neighbours produce, "keep" (read
    them from the neighbouring pieces, kept alive) or "recompute" (each producer piece computes
    every row its consumer piece reads); counts: each node's own piece count, aligned with
    `axes` (None: `pieces` for every node), so that the large maps at the start of a chain with
    strides are cut finely and the small ones at its end coarsely. `pieces` is then the largest
    of them, and along every edge of the segment one count is a multiple of the other. shares: the
    pieces' sizes in proportion (None: balanced), for a cut of one node, so that pieces run on cores
    of different speeds, or of uneven work along the axis, finish together (mcudeploy/cores)."""

    axes: tuple[tuple[str, str], ...]
    pieces: int
    halo: str = "keep"
    counts: Optional[tuple[int, ...]] = None
    shares: Optional[tuple[int, ...]] = None

    @classmethod
    def per_node(cls, axes, counts, halo: str = "keep") -> "Cut":
        """A cut whose nodes take their own counts (`pieces` their largest); uniform counts give a plain cut."""
        counts = tuple(counts)
        return cls(tuple(axes), max(counts), halo, None if len(set(counts)) == 1 else counts)

    def count(self, name: str) -> int:
        """How many pieces node `name` of the cut becomes."""
        if self.counts is None:
            return self.pieces
        return self.counts[[n for n, _ in self.axes].index(name)]


Scheme = tuple[Cut, ...]


def cut_to_dict(cut: Cut) -> dict:
    """A cut as plain data (plan.json, the tune state): "counts" only when its nodes differ."""
    d = {"axes": [list(p) for p in cut.axes], "pieces": cut.pieces, "halo": cut.halo}
    if cut.counts is not None:
        d["counts"] = list(cut.counts)
    if cut.shares is not None:
        d["shares"] = list(cut.shares)
    return d


def cut_from_dict(d: dict) -> Cut:
    """The cut of `cut_to_dict` (a dict written before per-node counts has none)."""
    counts, shares = d.get("counts"), d.get("shares")
    return Cut(tuple((n, a) for n, a in d["axes"]), int(d["pieces"]), d["halo"],
               None if counts is None else tuple(int(k) for k in counts),
               None if shares is None else tuple(int(k) for k in shares))


def tiling(cut: Cut, name: str, extent: int) -> list[tuple[int, int]]:
    """The output ranges node `name` of `cut` is cut into, before halos: balanced, or by the cut's shares."""
    return balanced(extent, cut.count(name), cut.shares)


@dataclass(frozen=True)
class CutFacts:
    """The facts of a valid cut, per node of the segment (by name)."""

    graph: Graph
    cut: Cut
    nodes: Mapping[str, Node]  # in graph order
    axis: Mapping[str, str]
    expr: Mapping[str, TensorExpr]
    extent: Mapping[str, int]  # of the node's cut axis
    out_dim: Mapping[str, tuple[int, ...]]  # per output: the dimension the axis indexes
    in_dim: Mapping[str, tuple[Optional[tuple[int, Dim]], ...]]  # per input: (dimension, how), or None
    cut_tensors: Mapping[str, int]  # tensor produced by the segment -> its cut dimension
    whole: frozenset  # cut tensors also needed in one piece: graph outputs, read outside the segment
    partial: Mapping[str, Partial]  # nodes cut along a reduction axis: their pieces accumulate (Op.partial)

    def read(self, node: Node, index: int, rows: tuple[int, int]) -> Read:
        """What output rows `rows` of `node` read of its input `index` along the cut dimension."""
        d, dim = self.in_dim[node.name][index]
        lo, hi = rows
        if dim.kind == "identity":
            return Read(lo, hi)
        size = self.graph[node.inputs[index]].shape[d]
        kernel = self.expr[node.name].axis(dim.kernel).extent
        return window_read(lo, hi, size, dim.stride, dim.dilation, dim.pad, kernel)


def _check_counts(cut: Cut) -> None:
    """The per-node counts: one per node, each at least 1, the largest the cut's `pieces`."""
    if cut.counts is None:
        return
    if not isinstance(cut.counts, tuple) or len(cut.counts) != len(cut.axes):
        raise SplitError(f"the cut names {len(cut.axes)} nodes but gives piece counts {cut.counts!r}")
    for (name, _), k in zip(cut.axes, cut.counts):
        if not isinstance(k, int) or k < 1:
            raise SplitError(f"node {name} needs at least 1 piece, not {k!r}")
    if max(cut.counts) != cut.pieces:
        raise SplitError(f"the cut has {cut.pieces} pieces but its most finely cut node has {max(cut.counts)}")


def _check_shares(cut: Cut) -> None:
    """The shares: a cut of one node, one positive whole number per piece."""
    if cut.shares is None:
        return
    if len(cut.axes) != 1 or cut.counts is not None:
        raise SplitError(f"a cut with shares names one node and gives no per-node counts; this one names "
                         f"{len(cut.axes)} node(s){' with counts' if cut.counts is not None else ''}")
    if not isinstance(cut.shares, tuple) or len(cut.shares) != cut.pieces or \
            any(not isinstance(k, int) or k < 1 for k in cut.shares):
        raise SplitError(f"the cut of node {cut.axes[0][0]} has {cut.pieces} pieces but gives shares {cut.shares!r} "
                         f"(one whole number of at least 1 per piece)")


def analyse(graph: Graph, cut: Cut) -> CutFacts:
    """The cut's facts; SplitError with the reason it cannot be applied (one sentence naming node and axis)."""
    if not isinstance(cut.pieces, int) or cut.pieces < 2:
        raise SplitError(f"a cut needs at least 2 pieces, not {cut.pieces!r}")
    if cut.halo not in HALOS:
        raise SplitError(f"halo must be one of {', '.join(HALOS)}, not {cut.halo!r}")
    if not cut.axes:
        raise SplitError("the cut names no node")
    _check_counts(cut)
    _check_shares(cut)
    by_name = {n.name: n for n in graph.nodes}
    wanted: dict[str, str] = {}
    for name, axis in cut.axes:
        if name not in by_name:
            raise SplitError(f"there is no node {name!r} in graph {graph.name}")
        if name in wanted:
            raise SplitError(f"node {name} appears twice in the cut")
        wanted[name] = axis
    nodes = {n.name: n for n in graph.nodes if n.name in wanted}
    exprs, extents, out_dims, in_dims, partial = {}, {}, {}, {}, {}
    for name, node in nodes.items():
        axis = wanted[name]
        op = registry.get(node.op)
        try:
            e = op.expr(graph, node)
        except MCUDeployError as err:
            raise SplitError(f"node {name} ({node.op}) has no tensor expression: {err}")
        names = [a.name for a in e.axes]
        if axis not in names:
            raise SplitError(f"node {name} ({node.op}) has no loop axis {axis!r} "
                             f"(its axes: {', '.join(names) or 'none'})")
        a = e.axis(axis)
        if a.kind != "spatial":
            partial[name] = op.partial(graph, node, axis)
            if partial[name] is None:
                raise SplitError(f"axis {axis!r} of node {name} ({node.op}) is a reduction axis its pieces "
                                 f"cannot accumulate over")
        if a.extent < cut.count(name):
            raise SplitError(f"axis {axis!r} of node {name} ({node.op}) has extent {a.extent}, "
                             f"fewer than {cut.count(name)} pieces")
        outs = []
        for o, dims in zip(node.outputs, () if name in partial else e.outputs):
            found = [d for d, dim in enumerate(dims) if dim.kind == "identity" and dim.axis == axis]
            if len(found) != 1 or any(dim.axis == axis and dim.kind != "identity" for dim in dims):
                raise SplitError(f"output {o} of node {name} ({node.op}) does not run along axis {axis!r}")
            outs.append(found[0])
        ins = []
        windowed = 0
        for x, dims in zip(node.inputs, e.inputs):
            if not x or dims is None:
                ins.append(None)
                continue
            along = [(d, dim) for d, dim in enumerate(dims) if dim.axis == axis]
            if len(along) > 1:
                raise SplitError(f"node {name} ({node.op}) reads input {x} along axis {axis!r} "
                                 f"in more than one dimension")
            if along and along[0][1].kind not in ("identity", "window"):
                raise SplitError(f"node {name} ({node.op}) reads input {x} along axis {axis!r} "
                                 f"in a way a cut cannot follow")
            windowed += bool(along) and along[0][1].kind == "window"
            ins.append(along[0] if along else None)
        if not any(ins) and not op.source:  # the axis comes from attributes (Resize's scales), not from an input
            raise SplitError(f"node {name} ({node.op}) reads no input along axis {axis!r}, "
                             f"so a piece cannot be computed alone")
        if windowed > 1:
            raise SplitError(f"node {name} ({node.op}) reads more than one input through a window "
                             f"along axis {axis!r}")
        exprs[name], extents[name], out_dims[name], in_dims[name] = e, a.extent, tuple(outs), tuple(ins)
        tiles = tiling(cut, name, a.extent)
        if cut.shares is not None and any(hi <= lo for lo, hi in tiles):
            raise SplitError(f"shares {cut.shares} leave a piece of node {name} empty: axis {axis!r} has "
                             f"{a.extent} rows")
        rows = tiles[0]
        if name not in partial and op.piece(graph, node, axis, rows, (0, 0) if windowed else None) is None:
            raise SplitError(f"node {name} ({node.op}) cannot be cut along axis {axis!r}")
    cut_tensors = {o: d for name in nodes for o, d in zip(nodes[name].outputs, out_dims[name])}
    for name in partial:
        for o in nodes[name].outputs:
            inside = [u.name for u in graph.users(o) if u.name in nodes]
            if inside:
                raise SplitError(f"node {inside[0]} reads {o} inside the cut, but node {name} ({nodes[name].op}) "
                                 f"is cut along its reduction axis {wanted[name]!r}, so {o} exists only after the cut")
    outputs = set(graph.outputs)
    whole = set()
    for t, d in cut_tensors.items():
        producer = graph.producer(t).name
        for user in graph.users(t):
            if user.name not in nodes:
                whole.add(t)
                continue
            for x, spec in zip(user.inputs, in_dims[user.name]):
                if x != t:
                    continue
                if spec is None or spec[0] != d:
                    raise SplitError(f"node {user.name} ({user.op}) does not read {t} along the dimension node {producer} "
                                           f"is cut in (axis {wanted[user.name]!r} is not connected to axis {wanted[producer]!r})")
                fewer, more = sorted((cut.count(producer), cut.count(user.name)))
                if more % fewer:
                    raise SplitError(f"node {producer} is cut into {cut.count(producer)} pieces and node {user.name}, "
                                     f"which reads it, into {cut.count(user.name)}: neither is a multiple of the other")
        if t in outputs:
            whole.add(t)
    return CutFacts(graph, cut, nodes, wanted, exprs, extents, out_dims, in_dims, cut_tensors, frozenset(whole),
                    partial)
