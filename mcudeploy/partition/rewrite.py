"""The split rewrite of one cut: every node of the segment becomes its count of nodes of the same
operator on slices of its inputs, except one cut along a reduction axis (``CutFacts.partial``),
whose pieces add their rows to a running sum and a finish makes its output (``_accumulate``).

- Output ranges: with halo "keep", the last nodes' pieces tile their axis in balanced ranges and
  every producer's piece ends where the consumer pieces mapped to it stop reading (``_streamed``). With
  "recompute", a node whose outputs are read only inside the segment computes, for piece j, the
  hull of what its consumers' pieces mapped to j read (walking the segment backwards), so a
  windowed consumer's halo is computed again by its producer; an output also needed whole (read
  outside the segment, or a graph output) is produced as tiling pieces. Counts differ by a
  multiple along an edge (Cut.counts): a producer m times coarser computes the hull of m consumer
  pieces' reads, one m times finer splits a consumer piece's read in m balanced ranges.
- Inputs: a piece reads a Slice of a tensor from outside the segment; of a tensor cut in the
  segment, a Slice of the piece that holds its rows, or, when they span several pieces (a halo
  kept in the neighbours), a Concat of Slices of those pieces (a copy of the rows, no MACs).
  Constants indexed by the axis (weights, bias, per-channel scales of a channel cut) are sliced
  into new constants.
- Outputs needed whole are reassembled by a Concat of the tiling pieces; memory/alias.py lets the
  pieces write straight into it when that does not raise the peak.

Names: node N's pieces are "N#p<j>", tensor T's pieces "T#p<j>", a slice of T "T@<dim>:<lo>:<hi>"
(a gathered range too, its node "...#gather"), a reassembled T keeps its name. The names are for
people; what a node or tensor is of the graph before the split is data: ``Node.piece`` (piece j
of N, or a Slice or Concat added for N) and ``Tensor.rows`` (rows [lo, hi) of T along a dimension).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node, Piece, Quant, Rows, Tensor, verify
from mcudeploy.ops import registry
from mcudeploy.ops.concat import MAX_INPUTS
from mcudeploy.partition.ranges import balanced, cover, hull
from mcudeploy.partition.cut import CutFacts, SplitError, tiling


def sliced_quant(q: Optional[Quant], rank: int, dim: int, lo: int, hi: int) -> Optional[Quant]:
    """The quantization of rows [lo, hi) of dimension `dim`: per-channel along it is sliced."""
    if q is None or q.axis is None or len(q.scale) <= 1 or q.axis % rank != dim:
        return q
    return Quant(q.scale[lo:hi], q.zero_point[lo:hi], q.axis)


def _fresh(name: str, taken) -> str:
    if name not in taken:
        return name
    k = 1
    while f"{name}~{k}" in taken:
        k += 1
    return f"{name}~{k}"


class _Builder:
    """The new graph's tensors and nodes, and the slices made so far (made once, by key)."""

    def __init__(self, graph: Graph):
        self.g = graph
        self.tensors = dict(graph.tensors)
        self.nodes: list[Node] = []
        self.node_names = {n.name for n in graph.nodes}
        self.made: dict[tuple, str] = {}

    def tensor(self, name: str, like: Tensor, dim: int, lo: int, hi: int) -> str:
        """A new activation holding rows [lo, hi) of `like` along `dim`."""
        name = _fresh(name, self.tensors)
        shape = like.shape[:dim] + (hi - lo,) + like.shape[dim + 1:]
        quant = sliced_quant(like.quant, len(like.shape), dim, lo, hi)
        self.tensors[name] = Tensor(name, shape, like.dtype, "activation", quant, rows=_rows(like, dim, lo, hi))
        return name

    def node(self, name: str, op: str, inputs, outputs, attrs, piece: Piece) -> Node:
        node = Node(_fresh(name, self.node_names), op, tuple(inputs), tuple(outputs), attrs, piece)
        self.node_names.add(node.name)
        self.nodes.append(node)
        return node

    def slice(self, src: str, dim: int, lo: int, hi: int, of: str) -> str:
        """`src` itself when [lo, hi) is all of it, else its rows [lo, hi) along `dim` (for node `of`'s pieces)."""
        t = self.tensors[src]
        if (lo, hi) == (0, t.shape[dim]):
            return src
        key = ("slice", src, dim, lo, hi)
        if key not in self.made:
            if t.is_const:
                name = _fresh(f"{src}@{dim}:{lo}:{hi}", self.tensors)
                index = tuple(slice(lo, hi) if i == dim else slice(None) for i in range(len(t.shape)))
                data = np.ascontiguousarray(t.data[index])
                self.tensors[name] = Tensor(name, data.shape, t.dtype, "constant",
                                            sliced_quant(t.quant, len(t.shape), dim, lo, hi), data)
            else:
                name = self.tensor(f"{src}@{dim}:{lo}:{hi}", t, dim, lo, hi)
                self.node(f"{name}#slice", "Slice", (src,), (name,), {"starts": (lo,), "ends": (hi,), "axes": (dim,)},
                          Piece(of))
            self.made[key] = name
        return self.made[key]

    def concat(self, parts: list[str], dim: int, out: str, node: str, of: str) -> None:
        """`out` = `parts` side by side along `dim`, as a tree when they exceed one Concat's inputs."""
        while len(parts) > MAX_INPUTS:
            groups = [parts[i:i + MAX_INPUTS] for i in range(0, len(parts), MAX_INPUTS)]
            parts = [self._group(g, dim, f"{out}#cat{k}", f"{node}{k}", of) if len(g) > 1 else g[0]
                     for k, g in enumerate(groups)]
        self.node(node, "Concat", parts, (out,), {"axis": dim}, Piece(of))

    def _group(self, parts: list[str], dim: int, name: str, node: str, of: str) -> str:
        first, last = self.tensors[parts[0]].rows, self.tensors[parts[-1]].rows
        if first is not None and last is not None and first.of == last.of and first.dim == last.dim == dim:
            name = self.tensor(name, self.tensors[first.of], dim, first.lo, last.hi)
        else:
            like = self.tensors[parts[0]]
            name = self.tensor(name, like, dim, 0, sum(self.tensors[p].shape[dim] for p in parts))
        self.node(node, "Concat", parts, (name,), {"axis": dim}, Piece(of))
        return name


def _rows(like: Tensor, dim: int, lo: int, hi: int) -> Optional[Rows]:
    """Rows [lo, hi) along `dim` of `like`, as rows of the tensor before any split (None when `like`
    is itself rows along another dimension)."""
    if like.rows is None:
        return Rows(like.name, dim, lo, hi)
    if like.rows.dim != dim:
        return None
    return Rows(like.rows.of, dim, like.rows.lo + lo, like.rows.lo + hi)


def _streamed(seg: CutFacts) -> dict[str, list[tuple[int, int]]]:
    """Kept halos without a lag: the last nodes tile their axis in balanced ranges, and a node's
    piece ends at the last row the consumer pieces mapped to it read, so no consumer piece waits
    for its producers' next piece and a depth-first order keeps only the halo rows of the piece
    before. Where the halos a chain adds up would leave a piece of an early node empty, its last
    pieces keep one row each and so wait for their producers' next piece. (Balanced ranges in
    every node make each consumer piece wait for the next producer piece, so every tensor keeps
    about two pieces alive: on KWS cut in 12 pieces, 8,812 B against 6,892 B.)"""
    g, count = seg.graph, seg.cut.count
    ranges: dict[str, list[tuple[int, int]]] = {}
    for node in reversed(list(seg.nodes.values())):
        extent, k = seg.extent[node.name], count(node.name)
        ends = None
        if node.name not in seg.partial:
            for o in node.outputs:
                for user in g.users(o):
                    if user.name not in ranges:
                        continue
                    for i, x in enumerate(user.inputs):
                        if x == o:
                            reads = _read_ends(seg, user, i, ranges[user.name], k)
                            ends = reads if ends is None else [max(a, b) for a, b in zip(ends, reads)]
        if ends is None:
            ranges[node.name] = tiling(seg.cut, node.name, extent)
            continue
        ends[-1] = extent
        for j in range(k - 1):  # every piece keeps a row: the last ones wait for their producers' next piece
            ends[j] = max(min(ends[j], extent - (k - 1 - j)), ends[j - 1] + 1 if j else 1)
        ranges[node.name] = list(zip([0] + ends[:-1], ends))
    return ranges


def _read_ends(seg: CutFacts, user: Node, index: int, user_rows: list, k: int) -> list[int]:
    """Where each of a producer's `k` pieces must end for the pieces of `user` (input `index`)
    mapped to it: m consumer pieces to one producer piece (the last one's read), or one consumer
    piece to m producer pieces (its read's end for the last, balanced steps before)."""
    ends = [seg.read(user, index, r).hi for r in user_rows]
    c = len(ends)
    if c >= k:
        return [ends[(p + 1) * c // k - 1] for p in range(k)]
    m, out = k // c, []
    for j, end in enumerate(ends):
        start = ends[j - 1] if j else 0
        out += [start + (end - start) * (r + 1) // m for r in range(m)]
    return out


def _ranges(seg: CutFacts) -> dict[str, list[tuple[int, int]]]:
    """Output rows of every piece of every node of the segment (each node its own count)."""
    if seg.cut.halo == "keep":
        return _streamed(seg)
    g, count = seg.graph, seg.cut.count
    ranges: dict[str, list[tuple[int, int]]] = {}
    for node in reversed(list(seg.nodes.values())):
        k = count(node.name)
        tiles = tiling(seg.cut, node.name, seg.extent[node.name])
        if seg.cut.halo == "keep" or node.name in seg.partial or any(o in seg.whole for o in node.outputs):
            ranges[node.name] = tiles
            continue
        reads = [[] for _ in range(k)]
        for o in node.outputs:
            for user in g.users(o):
                for i, x in enumerate(user.inputs):
                    if x == o:
                        for j, r in _mapped_reads(seg, user, i, ranges[user.name], k):
                            reads[j].append(r)
        ranges[node.name] = [hull(r) if r else tiles[j] for j, r in enumerate(reads)]
    return ranges


def _mapped_reads(seg: CutFacts, user: Node, index: int, user_rows: list, k: int):
    """(producer piece, rows) for what the pieces of `user` read of its input `index`, mapped onto a
    producer of `k` pieces: m consumer pieces to one producer piece (it computes their hull), or one
    consumer piece's read split in m balanced ranges, one per producer piece."""
    rows = [seg.read(user, index, r) for r in user_rows]
    c = len(rows)
    for i, r in enumerate(rows):
        if r.hi <= r.lo:
            continue
        if c >= k:
            yield i * k // c, (r.lo, r.hi)
            continue
        m = k // c
        for s, (lo, hi) in enumerate(balanced(r.hi - r.lo, m)):
            if hi > lo:  # a read shorter than m: the producer piece left tiles its own rows
                yield i * m + s, (r.lo + lo, r.lo + hi)


def plan(seg: CutFacts) -> dict[str, list[tuple[tuple[int, int], list, dict]]]:
    """Per node of the segment, per piece: (output rows, what it reads of each input (a Read, or
    None for an input read whole), its attributes). SplitError if a piece cannot be made."""
    out = {}
    for name, rows in _ranges(seg).items():
        node, axis = seg.nodes[name], seg.axis[name]
        op = registry.get(node.op)
        out[name] = []
        for j, (lo, hi) in enumerate(rows):
            reads, pads = [], None
            for i, x in enumerate(node.inputs):
                if not x or seg.in_dim[name][i] is None:
                    reads.append(None)
                    continue
                r = seg.read(node, i, (lo, hi))
                if r.hi <= r.lo:
                    raise SplitError(f"piece {j} of node {name} ({node.op}) along axis {axis!r} would read "
                                     f"no row of {x}")
                pads = r.pads if r.pads is not None else pads
                reads.append(r)
            if name in seg.partial:  # a running sum: the rows it adds are all that differs
                out[name].append(((lo, hi), reads, dict(seg.partial[name].sum_attrs)))
                continue
            attrs = op.piece(seg.graph, node, axis, (lo, hi), pads)
            if attrs is None:
                raise SplitError(f"node {name} ({node.op}) cannot be cut along axis {axis!r} at rows {lo}..{hi - 1}")
            _check_shapes(seg, node, j, (lo, hi), reads, attrs)
            out[name].append(((lo, hi), reads, attrs))
    return out


def _rows_of(t: Tensor, dim: int, lo: int, hi: int) -> Tensor:
    shape = t.shape[:dim] + (hi - lo,) + t.shape[dim + 1:]
    data = None
    if t.data is not None:
        data = t.data[tuple(slice(lo, hi) if i == dim else slice(None) for i in range(len(t.shape)))]
    return Tensor(t.name, shape, t.dtype, t.kind, sliced_quant(t.quant, len(t.shape), dim, lo, hi), data)


def _check_shapes(seg: CutFacts, node: Node, j: int, rows, reads, attrs) -> None:
    """The piece's own shape rule must give its rows (else a piece hook is wrong)."""
    g = seg.graph
    scope = {}
    for i, (x, r) in enumerate(zip(node.inputs, reads)):
        if x:
            scope[x] = g[x] if r is None else _rows_of(g[x], seg.in_dim[node.name][i][0], r.lo, r.hi)
    piece = node.with_(name=f"{node.name}#p{j}", attrs=attrs)
    try:
        inferred = registry.get(node.op).infer(Graph("piece", scope, (), (), (), arithmetic=g.arithmetic), piece)
    except MCUDeployError as err:
        raise SplitError(f"piece {j} of node {node.name} ({node.op}) is not valid: {err}") from None
    for o, d, (shape, dtype) in zip(node.outputs, seg.out_dim[node.name], inferred):
        want = _rows_of(g[o], d, *rows)
        if tuple(shape) != want.shape or dtype != want.dtype:
            raise SplitError(f"piece {j} of node {node.name} ({node.op}) computes {dtype}{tuple(shape)}, "
                             f"not the {want.dtype}{want.shape} of its rows")


def _accumulate(b: _Builder, seg: CutFacts, node: Node, pieces, read, of: str) -> None:
    """A node cut along a reduction axis: each piece adds its rows to the running sum the piece
    before left, and the finish turns the last sum into the node's output (``Op.partial``)."""
    p = seg.partial[node.name]
    out = node.outputs[0]
    before = ""
    for j, ((lo, hi), reads, attrs) in enumerate(pieces):
        inputs = [x if r is None else read(x, seg.in_dim[node.name][i][0], r.lo, r.hi, j, of, len(pieces))
                  for i, (x, r) in enumerate(zip(node.inputs, reads))]
        name = _fresh(f"{out}#sum{j}", b.tensors)
        b.tensors[name] = Tensor(name, p.acc_shape, p.acc_dtype, "activation")
        b.node(f"{node.name}#p{j}", p.sum_op, inputs + ([before] if before else []), (name,), attrs, Piece(of, j))
        before = name
    b.node(f"{node.name}#finish", p.finish_op, (before,), node.outputs, dict(p.finish_attrs), Piece(of))


def split_cut(seg: CutFacts) -> Graph:
    """The graph with the segment's nodes replaced by their pieces (see the module's docstring)."""
    g = seg.graph
    b = _Builder(g)
    pieces_of = plan(seg)
    pieces: dict[str, list[tuple[str, int, int]]] = {}  # cut tensor -> its pieces (name, lo, hi)

    def read(x: str, dim: int, lo: int, hi: int, j: int, of: str, k: int) -> str:
        """Rows [lo, hi) of `x` for piece j of k of a node of `of`: from the pieces of `x` when the
        segment cut it (the one at the same place along the axis first)."""
        if x not in pieces:
            return b.slice(x, dim, lo, hi, of)
        have = pieces[x]
        parts = cover([(a, c) for _, a, c in have], lo, hi, prefer=j * len(have) // k)
        if parts is None:
            raise SplitError(f"the pieces of {x} do not hold its rows {lo}..{hi - 1}")
        names = [b.slice(have[k][0], dim, a - have[k][1], c - have[k][1], of) for k, a, c in parts]
        if len(names) == 1:
            return names[0]
        key = ("gather", x, dim, lo, hi)
        if key not in b.made:
            out = b.tensor(f"{x}@{dim}:{lo}:{hi}", g[x], dim, lo, hi)
            b.concat(names, dim, out, f"{out}#gather", of)
            b.made[key] = out
        return b.made[key]

    for node in g.nodes:
        if node.name not in seg.nodes:
            b.nodes.append(node)
            continue
        of = node.piece.of if node.piece is not None else node.name
        if node.name in seg.partial:
            _accumulate(b, seg, node, pieces_of[node.name], read, of)
            continue
        count = len(pieces_of[node.name])
        for j, ((lo, hi), reads, attrs) in enumerate(pieces_of[node.name]):
            inputs = [x if r is None else read(x, seg.in_dim[node.name][i][0], r.lo, r.hi, j, of, count)
                      for i, (x, r) in enumerate(zip(node.inputs, reads))]
            outputs = [b.tensor(f"{o}#p{j}", g[o], d, lo, hi) for o, d in zip(node.outputs, seg.out_dim[node.name])]
            b.node(f"{node.name}#p{j}", node.op, inputs, outputs, attrs, Piece(of, j))
            for o, p in zip(node.outputs, outputs):
                pieces.setdefault(o, []).append((p, lo, hi))
        for o, d in zip(node.outputs, seg.out_dim[node.name]):
            if o in seg.whole:
                b.concat([p for p, _, _ in pieces[o]], d, o, f"{node.name}#concat", of)
    used = set(g.inputs) | set(g.outputs)
    for n in b.nodes:
        used.update(x for x in (*n.inputs, *n.outputs) if x)
    tensors = {name: t for name, t in b.tensors.items() if name in used}
    return verify(g.replace(tensors=tensors, nodes=tuple(b.nodes)))
