"""Which tensors share storage, decided before placement.

Every non-constant tensor gets a *slot*: the buffer that holds it (named after the tensor that
owns the buffer), a byte offset inside that buffer and strides in elements. Kernels take strided
views, so a tensor needs no copy to sit inside a larger buffer. Five kinds of sharing:

- view: a Reshape-like operator's output is its input's bytes (always: the operator has no
  kernel). Tensors joined by views form a *view group*; a group of several tensors, or one holding
  a graph input or output, must stay contiguous.
- concat: each input of a Concat (an operator declaring ``Op.slices = "inputs"``) is written by its producer straight into its slice of the
  output, and the Concat runs no kernel. Each must be produced by a kernel (not a constant or
  graph input), appear once, carry the output's dtype and quantization (no requantization), and
  have no other place yet. With "partial", when only some inputs qualify, those are written into
  the output and the Concat copies the others (its kernel skips an input already in its slice):
  the gather of a split's kept halo then copies the neighbours' rows, not its own piece.
- split: each output of a Split (``Op.slices = "outputs"``) is a slice of its input, and the Split runs no kernel.
- slice: a Slice's output (``Op.subview``) is always a window of its input's slot (an offset, the
  input's strides): the operator has no kernel. A TransposeView is one too, with the input's
  strides permuted (an NHWC graph input read as NCHW). Slices compose (a Slice of a Slice, of a tensor
  placed in a Concat's output). A Slice whose view group must stay contiguous (it is reshaped, or
  is a graph output) is refused unless the window is contiguous, and a tensor such a window hangs
  from is not moved into a Concat later, which would change its strides.
- in place: an operator that declares an in-place input (``Op.inplace``) writes its output over
  that input's buffer when the input fills the whole buffer, nothing in the buffer is read after
  this step or is a graph output, and no other input of the operator reads that buffer. With
  "resize", also where the output is bigger or smaller than the input: the buffer is then a
  staircase, the input's size up to the step and the output's after it (``Span.steps``). Not where
  a rewrite put the input and the output in different regions (Tensor.region).

One layout, "bands": a tensor of a split graph cut along a dimension below the channels (a piece,
a gathered range, a whole tensor reassembled or read by pieces) that owns its buffer alone, and is
not reshaped, in place or a graph input or output, has that dimension outermost after the batch
(NHCW for a row cut of NCHW). Its row bands are then runs, so the bytes its pieces free as they are
read (mcudeploy/memory/parts.py) are holes other pieces fit in, where NCHW frees one short run
per channel. Kernels take the strides as they take a slice's.

Concat and Split sharing can cost memory (a Concat's buffer is live from its first input's
producer on; a Split's input lives until its last slice is read), so each is kept only when the
live-bytes peak of the order (with in-place sharing applied) does not rise. Slices come first
(they are not optional), then Concats are decided from the last to the first (an outer Concat
fixes where an inner one's output goes), then Splits in order, then in-place sharing in order,
which only merges whole buffers and so never moves a decided slice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate
from typing import Mapping, Optional, Sequence

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ir.graph import per_node
from mcudeploy.ir.tensor import itemsize, row_major
from mcudeploy.ops import registry

# views are not optional (a view op has no kernel); "partial" writes the inputs of a Concat that qualify into
# its output and copies the rest; "resize" lets an in-place output differ in size from its input; "bands"
# lays the tensors of a split out band by band (_banded)
SHARING = frozenset({"concat", "partial", "split", "inplace", "resize", "parts", "bands"})


@dataclass(frozen=True)
class Slot:
    buffer: str  # the buffer's name: the tensor that owns it
    offset: int  # bytes from the start of the buffer
    strides: tuple[int, ...]  # in elements


@dataclass(frozen=True)
class Span:
    """A buffer's lifetime, as the placement sees it."""

    name: str
    tensors: tuple[str, ...]
    nbytes: int  # unaligned
    first: int
    last: int
    io: bool  # holds a graph input or output
    steps: tuple[tuple[int, int, int], ...] = ()  # (first, last, bytes) when its size changes (in place)


@dataclass(frozen=True)
class Sharing:
    slots: Mapping[str, Slot]  # every non-constant tensor
    spans: tuple[Span, ...]  # one per buffer
    elided: frozenset  # nodes that run no kernel (views, absorbed Concats, Splits as slices)
    copies: Mapping[str, int] = field(default_factory=dict)  # state -> the step after which it takes its next value


def contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a view is dense row-major (mcud_is_contiguous in firmware/include/mcud.h)."""
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


@dataclass(frozen=True)
class _Link:
    """The view group of `member` sits in `parent` at index `starts` (one start per dimension),
    with the parent's strides."""

    member: str
    parent: str
    starts: tuple[int, ...]
    perm: Optional[tuple[int, ...]] = None  # a permuted view (TransposeView): the parent's strides in this order

    @staticmethod
    def along(member: str, parent: str, rank: int, axis: int, start: int) -> "_Link":
        return _Link(member, parent, tuple(start if i == axis else 0 for i in range(rank)))


@per_node
def _inplace_input(graph: Graph, node: Node) -> Optional[int]:
    """The input an operator may write its output over (Op.inplace), once per graph and node: share() asks for
    every node of every order a search tries."""
    return registry.get(node.op).inplace(graph, node)


class _Facts:
    """What the decisions read about a scheduled graph, computed once."""

    def __init__(self, graph: Graph, order: Sequence[Node], alignment: int, sharing: frozenset = frozenset()):
        self.graph = graph
        self.order = tuple(order)
        self.alignment = alignment
        self.steps = len(order)
        self.outputs = frozenset(graph.outputs)
        self.inputs = frozenset(graph.stored_inputs())
        self.states = frozenset(graph.states)  # their buffers take no operator's output in place (memory/state.py)
        born: dict[str, int] = {name: -1 for name in graph.stored_inputs()}  # in order: slots are listed so
        dies: dict[str, int] = {}
        for i, n in enumerate(order):
            for t in n.inputs:
                if t and not graph[t].is_const:
                    dies[t] = i
            for t in n.outputs:
                born[t] = i
        for name in graph.model_outputs():  # the caller reads them after the last step; a state's next value
            dies[name] = len(order) - 1     # lives until it is copied into the state (_hold_next_values)
        self.born = born
        self.dies = {t: dies.get(t, b) for t, b in born.items()}
        self.nbytes = {t: graph[t].nbytes for t in born}
        self.base: dict[str, str] = {t: t for t in born}  # view group of each tensor, by its base
        self.view_nodes = set()
        for n in order:
            src = n.inputs[0] if n.inputs else ""
            if registry.get(n.op).view and src and not graph[src].is_const:
                self.base[n.outputs[0]] = self.base[src]
                self.view_nodes.add(n.name)
        self.members: dict[str, list[str]] = {}
        for t in born:
            self.members.setdefault(self.base[t], []).append(t)
        self.pinned = {b for b, ms in self.members.items()
                       if len(ms) > 1 or any(m in self.inputs or m in self.outputs for m in ms)}
        self.banded = _banded(graph, self.pinned, self.base) if "bands" in sharing else {}
        # per view group: (first write, last read, holds graph I/O, holds a graph output)
        self.group: dict[str, tuple[int, int, bool, bool]] = {
            b: (min(born[m] for m in ms), max(self.dies[m] for m in ms),
                any(m in self.inputs or m in self.outputs for m in ms), any(m in self.outputs for m in ms))
            for b, ms in self.members.items()}
        # in-place candidates: (step, src, out, the node's other non-constant inputs)
        self.inplace: list[tuple[int, str, str, tuple[str, ...]]] = []
        # a permuted view (TransposeView) fills its buffer in another order than a dense output would
        permuted = {n.outputs[0] for n in order if hasattr(registry.get(n.op), "view_perm")}
        for i, n in enumerate(order):
            k = _inplace_input(graph, n) if n.outputs else None
            if k is None or not n.inputs[k] or graph[n.inputs[k]].is_const:
                continue
            src, out = n.inputs[k], n.outputs[0]
            if self.base[out] != out or graph[src].dtype != graph[out].dtype or src in permuted:
                continue
            if self.base[src] in self.banded or out in self.banded:
                continue  # in-place kernels write over their input in row-major order
            if (graph[src].region or graph[self.base[src]].region) != graph[out].region:
                continue  # put in different regions (mcudeploy/offload): one buffer cannot hold both
            others = tuple(x for j, x in enumerate(n.inputs) if j != k and x and not graph[x].is_const)
            self.inplace.append((i, src, out, others))


    def strides(self, t: str) -> tuple[int, ...]:
        """Strides of a buffer's own tensor: row-major, or band-major (see _banded)."""
        shape = self.graph[t].shape
        dim = self.banded.get(t)
        if dim is None:
            return row_major(shape)
        order = (0, dim) + tuple(d for d in range(1, len(shape)) if d != dim)  # outer to inner
        strides, acc = [0] * len(shape), 1
        for d in reversed(order):
            strides[d] = acc
            acc *= shape[d]
        return tuple(strides)


def _banded(graph: Graph, pinned, base) -> dict[str, int]:
    """Tensors of a split graph cut along a dimension below the channels (Tensor.rows: a piece, a
    gathered range; or a whole tensor whose rows other tensors hold: reassembled, or read by
    pieces) that own their buffer alone: tensor -> that dimension. Laid out with it outermost
    after the batch, a band of rows is one run, so the bytes a band frees are one hole, where
    row-major NCHW frees one short run per channel."""
    cut = {t.rows.of: t.rows.dim for t in graph.tensors.values() if t.rows is not None}
    out = {}
    for name, t in graph.tensors.items():
        dim = t.rows.dim if t.rows is not None else cut.get(name)
        if (dim is None or dim < 2 or t.is_const or len(t.shape) < 3 or t.shape[0] != 1 or t.shape[1] == 1
                or base.get(name) != name or name in pinned):
            continue
        out[name] = dim
    return out


class _State:
    """Concat and Split decisions: links between view groups, and the root group of each group."""

    def __init__(self, facts: _Facts):
        self.f = facts
        self.links: dict[str, _Link] = {}  # group base -> its link
        self.up: dict[str, str] = {}  # union-find over group bases: a linked group -> a group nearer its root
        self.agg = dict(facts.group)  # root group -> aggregate of every tensor under it
        self.fixed: set[str] = set()  # groups whose strides a contiguous-only Slice window relies on

    def find(self, b: str) -> str:
        up = self.up
        r = b
        while r in up:
            r = up[r]
        while b in up and up[b] != r:
            up[b], b = r, up[b]
        return r

    def root(self, tensor: str) -> str:
        """Base of the root view group holding `tensor` (before in-place sharing)."""
        return self.find(self.f.base[tensor])

    def slot(self, tensor: str, memo: dict) -> Slot:
        """Slot of `tensor` in its root group's buffer (before in-place sharing)."""
        f = self.f
        pending, t = [], tensor
        while t not in memo:
            b = f.base[t]
            if b not in self.links:
                memo[t] = Slot(b, 0, f.strides(t))
                break
            pending.append(t)
            t = self.links[b].parent
        for t in reversed(pending):
            link = self.links[f.base[t]]
            ps = memo[link.parent]
            elements = sum(a * s for a, s in zip(link.starts, ps.strides))
            offset = ps.offset + elements * itemsize(f.graph[link.member].dtype)
            strides = ps.strides if link.perm is None else tuple(ps.strides[p] for p in link.perm)
            memo[t] = Slot(ps.buffer, offset, strides if t == link.member else row_major(f.graph[t].shape))
        return memo[tensor]

    def trial(self, links: Sequence[_Link]) -> tuple[dict, dict]:
        """(root group -> its new root, changed aggregates) if `links` were added."""
        into = self.root(links[0].parent)
        moved = {self.f.base[link.member]: into for link in links}
        firsts, lasts, ios, outs = zip(*(self.agg[r] for r in (into, *moved)))
        return moved, {into: (min(firsts), max(lasts), any(ios), any(outs))}

    def snapshot(self) -> tuple:
        return dict(self.links), dict(self.up), dict(self.agg), set(self.fixed)

    def restore(self, saved: tuple) -> None:
        self.links, self.up, self.agg, self.fixed = (type(x)(x) for x in saved)

    def commit(self, links: Sequence[_Link]) -> None:
        moved, agg = self.trial(links)
        for link in links:
            self.links[self.f.base[link.member]] = link
        for r, into in moved.items():
            self.up[r] = into
            del self.agg[r]
        self.agg.update(agg)


def _axis(node: Node, rank: int) -> int:
    axis = int(node.attr("axis", 0))
    return axis + rank if axis < 0 else axis


def _slices(state: _State, whole: str, parts: Sequence[str], axis: int, written: bool,
            partial: bool = False) -> Optional[list[_Link]]:
    """Links putting each of `parts` in `whole` as consecutive slices along `axis`, or None.

    written: the parts are written by their producers (Concat inputs), else read (Split outputs).
    partial (written only): link the parts that qualify and leave the others to the Concat's copy;
    None unless some, but not all, qualify."""
    f, g = state.f, state.f.graph
    w = g[whole]
    if not parts or w.size == 0 or any(p not in g.tensors for p in parts if p):
        return None
    if sum(g[p].shape[axis] if p else 0 for p in parts) != w.shape[axis]:
        return None
    strides = state.slot(whole, {}).strides
    counts = {p: parts.count(p) for p in parts}
    bases = [f.base.get(p) for p in parts]
    links, start = [], 0
    for p, b in zip(parts, bases):
        t = g.tensors.get(p) if p else None
        ok = (t is not None and not t.is_const and p in f.born and counts[p] == 1 and bases.count(b) == 1
              and t.dtype == w.dtype and t.quant == w.quant and len(t.shape) == len(w.shape)
              and b not in state.links and not (b in f.pinned and not contiguous(t.shape, strides)))
        if ok and written:
            ok = f.born[b] >= 0 and state.root(whole) != b and b not in state.fixed
        if ok and not written:
            ok = b == p
        if ok:
            links.append(_Link.along(p, whole, len(w.shape), axis, start))
        elif not partial:
            return None
        start += t.shape[axis] if t is not None else 0
    if partial and (not links or len(links) == len(parts)):
        return None
    return links


def _concat_links(state: _State, node: Node, partial: bool = False) -> Optional[list[_Link]]:
    out = node.outputs[0]
    return _slices(state, out, node.inputs, _axis(node, len(state.f.graph[out].shape)), written=True,
                   partial=partial)


def _split_links(state: _State, node: Node) -> Optional[list[_Link]]:
    src = node.inputs[0] if node.inputs else ""
    if not src or state.f.graph[src].is_const:
        return None
    return _slices(state, src, node.outputs, _axis(node, len(state.f.graph[src].shape)), written=False)


def _slice_link(state: _State, node: Node) -> _Link:
    """The window a Slice's output takes in its input's slot (see the module's docstring)."""
    f = state.f
    src, out = node.inputs[0], node.outputs[0]
    if f.graph[src].is_const:
        raise UnsupportedError(f"Slice {node.name} reads constant {src}, which has no place in the arena")
    op = registry.get(node.op)
    begin = op.bounds(f.graph, node)[0]
    perm = op.view_perm(f.graph, node) if hasattr(op, "view_perm") else None
    link = _Link(out, src, begin, perm)
    if f.base[out] in f.pinned:
        strides = state.slot(src, {}).strides
        strides = strides if perm is None else tuple(strides[p] for p in perm)
        if not contiguous(f.graph[out].shape, strides):
            raise UnsupportedError(f"the output of Slice {node.name} is reshaped or is a graph input or output, "
                                   f"but its window of {src} is not contiguous")
        t = src
        while True:  # pin the strides of every group above the window
            b = f.base[t]
            state.fixed.add(b)
            if b not in state.links:
                break
            t = state.links[b].parent
    return link


def _buffers(state: _State, sharing: frozenset, moved: Optional[dict] = None, changed: Optional[dict] = None):
    """In-place sharing over the root groups (with a trial's `moved` and `changed` applied).

    Returns (root group -> the buffer it went into, for the merged ones; buffer -> (first write,
    last read, holds graph I/O, holds a graph output); buffer -> its (first, last, bytes) steps, for
    the buffers whose size changes at an in-place step: an operator may write an output bigger or
    smaller than the input it takes over, so the buffer is the input's size up to that step, the
    larger of the two at it, and the output's after it)."""
    f = state.f
    moved = moved or {}
    agg = dict(state.agg)
    for r in moved:
        agg.pop(r, None)
    agg.update(changed or {})

    def root(t: str) -> str:
        r = state.root(t)
        return moved.get(r, r)

    merged: dict[str, str] = {}
    steps: dict[str, list[tuple[int, int, int]]] = {}

    def find(r: str) -> str:
        while r in merged:
            r = merged[r]
        return r

    if "inplace" in sharing:
        linked = state.links
        for step, src, out, others in f.inplace:
            if out in linked or out in moved:
                continue
            r = find(root(src))
            if r in f.states:
                continue
            first, last, io, outs = agg[r]
            now = steps[r][-1][2] if r in steps else f.nbytes[r]
            if last > step or outs or now != f.nbytes[src] or r == out or out not in agg:
                continue
            if any(find(root(x)) == r for x in others):
                continue
            grown = f.nbytes[out]
            if grown != now and "resize" not in sharing:
                continue
            o_first, o_last, o_io, o_outs = agg.pop(out)
            merged[out] = r
            agg[r] = (min(first, o_first), max(last, o_last), io or o_io, outs or o_outs)
            if r in steps or grown != now:
                before = steps.pop(r, [(first, last, now)])
                before[-1] = (before[-1][0], step, max(now, grown))
                if before[-1][0] < step:  # the input alone, up to the step before
                    before[-1:] = [(before[-1][0], step - 1, now), (step, step, max(now, grown))]
                after = [(step + 1, o_last, grown)] if o_last > step else []
                if after and before[-1][2] == grown:  # the same size on: one step
                    before[-1], after = (before[-1][0], o_last, grown), []
                steps[r] = before + after
    return {r: find(r) for r in merged}, agg, steps


def _peak(f: _Facts, agg: dict, steps: Optional[dict] = None) -> int:
    """The live-bytes peak, in plain Python: item by item, numpy's scalar access costs more than the sums."""
    live = [0] * (f.steps + 2)
    a = f.alignment
    steps = steps or {}
    for r, (first, last, _, _) in agg.items():
        for s0, s1, n in steps.get(r, ((first, last, f.nbytes[r]),)):
            size = (n + a - 1) // a * a
            live[s0 + 1] += size
            live[s1 + 2] -= size
    return max(0, *accumulate(live))


def _width(f: _Facts, r: str, steps: dict) -> int:
    """Bytes of a buffer: its widest step."""
    return max((n for _, _, n in steps[r]), default=f.nbytes[r]) if r in steps else f.nbytes[r]


def _take(state: _State, sharing: frozenset, links: Sequence[_Link], best: int) -> Optional[int]:
    """Commit ``links`` if the live-bytes peak with them stays at most ``best``: the new peak, or None."""
    peak = _peak(state.f, *_buffers(state, sharing, *state.trial(links))[1:])
    if peak > best:
        return None
    state.commit(links)
    return peak


def _hold_next_values(f: _Facts, agg: dict, root, steps: Optional[dict] = None) -> dict[str, int]:
    """Make each state's next value live until model.c copies it into the state: right after the step that last
    reads the state's buffer (its views and slices included), or the step that writes the value if that is later;
    then nothing reads the state any more, and the arena need not hold the value to the end of the call (the
    window of a streaming model is its next classifier's input: it dies with that input). A value in the state's
    own buffer is copied after the last step. ``agg`` (and ``steps``, a buffer's sizes by step) are changed in
    place; returns state -> the step after which it is copied."""
    copies = {}
    for s, value in f.graph.state_updates():
        rs, rv = root(s), root(value)
        step = f.steps - 1 if rs == rv else max(agg[rs][1], f.born[value])
        first, last, io, outs = agg[rv]
        if step > last:
            agg[rv] = (first, step, io, outs)
            if steps and rv in steps:
                a, _, n = steps[rv][-1]
                steps[rv][-1] = (a, step, n)
        copies[s] = step
    return copies


def share(graph: Graph, order: Sequence[Node], alignment: int = 4, sharing: frozenset = SHARING) -> Sharing:
    """Decide every tensor's slot for this order (see the module's docstring)."""
    f = _Facts(graph, order, alignment, sharing)
    state = _State(f)
    elided = set(f.view_nodes)
    for node in f.order:
        if registry.get(node.op).subview:
            state.commit([_slice_link(state, node)])
            elided.add(node.name)
    _hold_next_values(f, state.agg, state.root)  # so that the decisions below see how long a next value lives
    best = _peak(f, *_buffers(state, sharing)[1:]) if sharing & {"concat", "split"} else 0
    candidates = []
    if "concat" in sharing:
        candidates += [(n, _concat_links) for n in reversed(f.order) if registry.slices(n.op) == "inputs"]
    if "split" in sharing:
        candidates += [(n, _split_links) for n in f.order if registry.slices(n.op) == "outputs"]
    again = []  # partial Concats refused: tried once more, first to last (see below)
    for node, links_of in candidates:
        links, whole = links_of(state, node), True
        if links is None and links_of is _concat_links and "partial" in sharing:
            links, whole = _concat_links(state, node, partial=True), False
        if links is None:
            continue
        peak = _take(state, sharing, links, best)
        if peak is not None:
            best = peak
            if whole:
                elided.add(node.name)
        elif not whole:
            again.append(node)
    # The gathers of kept halos come in a row: each raises the live bytes a little before its step
    # (its output now lives from its piece's producer on) and lowers them at it, so one at a time
    # none may be taken while all together lower the peak. Refused ones are tried together, first
    # to last, then (if that does not help) one by one in that order.
    if again:
        saved = state.snapshot()
        for node in reversed(again):
            links = _concat_links(state, node, partial=True)
            if links is not None:
                state.commit(links)
        peak = _peak(f, *_buffers(state, sharing)[1:])
        if peak <= best:
            best, again = peak, []
        else:
            state.restore(saved)
    for node in reversed(again):
        links = _concat_links(state, node, partial=True)
        peak = _take(state, sharing, links, best) if links is not None else None
        best = best if peak is None else peak
    merged, agg, steps = _buffers(state, sharing)
    # again on the buffers as decided: a Split may have made more slices of a state, read later
    copies = _hold_next_values(f, agg, lambda t: merged.get(state.root(t), state.root(t)), steps)
    slots, memo = {}, {}
    members: dict[str, list[str]] = {}
    for t in f.born:
        s = state.slot(t, memo)
        r = state.find(s.buffer)
        buffer = merged.get(r, r)
        slots[t] = Slot(buffer, s.offset, s.strides)
        members.setdefault(buffer, []).append(t)
    spans = tuple(Span(r, tuple(members[r]), _width(f, r, steps), first, last, io, tuple(steps.get(r, ())))
                  for r, (first, last, io, _) in agg.items())
    return Sharing(slots, spans, frozenset(elided), copies)
