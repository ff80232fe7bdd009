"""The scheduling problem as plain integer tables, which every method reads instead of the Graph.

A node is an index into ``graph.nodes``. A buffer is a group of tensors that share storage
whatever the order: a view's output and its input. As in :mod:`mcudeploy.memory.lifetimes`, a
buffer lives from the step of its producer (step -1 for a graph input) to the last step that
reads one of its tensors (the last step for a graph output); a buffer nobody reads lives at its
producer's step only.

In-place reuse depends on the order, so it is kept apart: a node that may write its output over
its input's buffer does so when it is that buffer's last reader; the two buffers, of equal
size, are then counted once at that step (``InPlace.saving``), and as one buffer the rest of
the time they are live one after the other anyway.

Slice sharing is optional, and lifetimes() takes it only where the peak of the order does not
rise: a Concat whose inputs are written into their slices of its output (those that are not
windows of another tensor: it copies those), a Split whose outputs are slices of its input
(``Share``; the operators say which, ``Op.slices``, as they do to memory/alias.py). Taken, one buffer the size of the whole holds them all, live from the first write
of any of them to the last read. The fast simulation leaves it out (so its peak is never below
the yardstick's); the exact solver and the lower bound let it be chosen freely (so their bounds
are never above it).
"""
from __future__ import annotations

from dataclasses import dataclass

from mcudeploy.ir import Graph, Node
from mcudeploy.memory.lifetimes import align_up
from mcudeploy.ops import registry


@dataclass(frozen=True)
class Buffer:
    size: int  # bytes, aligned
    producer: int  # node writing its first tensor; -1 for a graph input
    readers: tuple[int, ...]  # nodes reading one of its tensors, ascending
    to_end: bool  # holds a graph output
    tensors: tuple[str, ...]


@dataclass(frozen=True)
class InPlace:
    node: int
    src: int  # the buffer the node's output may take over
    dst: int  # the buffer of the node's output
    saving: int  # bytes counted once instead of twice at the node's step


@dataclass(frozen=True)
class Share:
    node: int  # the Concat or Split
    whole: int  # the buffer of its output (Concat) or input (Split)
    parts: tuple[int, ...]  # the buffers of its inputs (Concat) or outputs (Split)
    producers: tuple[int, ...]  # the nodes whose steps may start the shared buffer (-1: before the first)
    readers: tuple[int, ...]  # every reader of the whole and the parts
    to_end: bool
    size: int


@dataclass(frozen=True)
class Problem:
    graph: Graph
    alignment: int
    preds: tuple[tuple[int, ...], ...]  # per node: the nodes producing its inputs, ascending
    succs: tuple[tuple[int, ...], ...]
    buffers: tuple[Buffer, ...]
    inplace: tuple[InPlace, ...]
    shares: tuple[Share, ...]
    sound: bool  # False when some sharing falls outside this model: then no method claims a proof

    @property
    def size(self) -> int:
        return len(self.preds)

    def reads(self) -> list[list[int]]:
        """Per node, the buffers it reads."""
        table: list[list[int]] = [[] for _ in self.preds]
        for b, buf in enumerate(self.buffers):
            for r in buf.readers:
                table[r].append(b)
        return table


def build(graph: Graph, alignment: int = 4) -> Problem:
    index = {n.name: i for i, n in enumerate(graph.nodes)}
    producer = {t: index[n.name] for t, n in graph.producers.items()}
    root: dict[str, str] = {}

    def find(t: str) -> str:
        while root[t] != t:
            t = root[t]
        return t

    for name in graph.stored_inputs():
        root[name] = name
    ops = [registry.get(n.op) for n in graph.nodes]
    windows = set()  # a Slice's output, and views of one: a window of another tensor's bytes
    for n, op in zip(graph.nodes, ops):
        for out in n.outputs:
            root[out] = out
        src = n.inputs[0] if n.inputs else ""
        if (op.view or op.subview) and src and not graph[src].is_const:  # a Slice is a window of its input
            root[n.outputs[0]] = find(src)
            if op.subview or src in windows:
                windows.add(n.outputs[0])

    groups: dict[str, list[str]] = {}
    for t in root:
        groups.setdefault(find(t), []).append(t)
    outputs = set(graph.outputs)
    buffer_of: dict[str, int] = {}
    buffers = []
    for owner, members in groups.items():
        readers = sorted({index[u.name] for t in members for u in graph.users(t)})
        # a state's buffer is not the arena's (memory/state.py): it costs the order nothing
        size = 0 if owner in graph.states else align_up(max(graph[t].nbytes for t in members), alignment)
        buffers.append(Buffer(size, producer.get(owner, -1), tuple(readers), any(t in outputs for t in members),
                              tuple(members)))
        for t in members:
            buffer_of[t] = len(buffers) - 1

    sound = True
    inplace = []
    for v, (n, op) in enumerate(zip(graph.nodes, ops)):
        if op.view or op.subview:
            continue
        k = op.inplace(graph, n)
        if k is None or not n.inputs[k] or graph[n.inputs[k]].is_const:
            continue
        src, out = n.inputs[k], n.outputs[0]
        if graph[src].dtype != graph[out].dtype or hasattr(registry.get(graph.producer(src).op if graph.producer(src)
                                                                         else "Identity"), "view_perm"):
            continue  # a permuted view (TransposeView) is not in the order a dense output is written
        a, b = buffer_of[src], buffer_of[out]
        if buffers[a].to_end or any(buffer_of[i] == a for j, i in enumerate(n.inputs)
                                    if j != k and i and not graph[i].is_const):
            continue  # the buffer holds a graph output, or another input reads it too
        if align_up(graph[src].nbytes, alignment) != buffers[a].size:
            sound = False  # the input is a smaller view of its buffer: lifetimes() will not share it
            continue
        # the output starts at the input's first byte: at the step they take the larger of the two
        inplace.append(InPlace(v, a, b, min(buffers[a].size, buffers[b].size)))

    shares = []
    for v, n in enumerate(graph.nodes):
        share = _share(graph, v, n, buffers, buffer_of, windows)
        if share is not None:
            shares.append(share)
    wholes = [sh.whole for sh in shares]
    if len(set(wholes)) != len(wholes):
        sound = False  # a Concat feeding a Split, both shared: one buffer this model counts twice

    for v, (n, op) in enumerate(zip(graph.nodes, ops)):
        scratch = 0 if op.view else op.scratch(graph, n)
        if scratch > 0:  # a kernel's working memory: read by nobody, so live at its step only
            buffers.append(Buffer(align_up(scratch, alignment), v, (), False, ()))

    preds = [sorted({producer[i] for i in n.inputs if i in producer}) for n in graph.nodes]
    succs: list[list[int]] = [[] for _ in graph.nodes]
    for v, ps in enumerate(preds):
        for p in ps:
            succs[p].append(v)
    return Problem(graph, alignment, tuple(map(tuple, preds)), tuple(map(tuple, succs)), tuple(buffers),
                   tuple(inplace), tuple(shares), sound)


def _share(graph: Graph, v: int, n: Node, buffers: list[Buffer], buffer_of: dict, windows: set) -> "Share | None":
    """The slice sharing lifetimes() may choose at node v, or None where it never can.

    The conditions are necessary ones of mcudeploy.memory.alias (a superset of what it shares), so
    that the solver's choice includes whatever it decides. A Concat input that is a window of
    another tensor (a Slice: the rows a split's gather takes from the piece before, its kept halo)
    is never written into the output: alias copies it ("partial"), so it is no part of the share
    and stays a buffer of its own, read by the Concat, where counting it inside the whole would
    make every halo look free to the schedulers."""
    if registry.slices(n.op) == "inputs":  # a Concat
        whole, parts = n.outputs[0], tuple(x for x in n.inputs if x not in windows)
        if not parts:
            return None
    elif registry.slices(n.op) == "outputs":  # a Split
        whole, parts = (n.inputs[0] if n.inputs else ""), n.outputs
    else:
        return None
    names = (whole, *parts)
    if not all(names) or len(set(names)) != len(names) or any(graph[t].is_const for t in names):
        return None
    if any(graph[t].dtype != graph[whole].dtype for t in parts):
        return None
    w, ps = buffer_of[whole], tuple(buffer_of[t] for t in parts)
    if len(set(ps)) != len(ps) or w in ps:
        return None
    if registry.slices(n.op) == "inputs":
        if any(buffers[b].producer < 0 for b in ps):
            return None  # a graph input is written by the caller, not into a slice
        producers = tuple(sorted({buffers[b].producer for b in ps}))
    else:
        producers = (buffers[w].producer,)
    members = (w, *ps)
    readers = tuple(sorted({r for b in members for r in buffers[b].readers}))
    return Share(v, w, ps, producers, readers, any(buffers[b].to_end for b in members), buffers[w].size)
