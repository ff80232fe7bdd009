"""Run a plan in byte arenas with the numpy references: the oracle for sharing and placement.

Every tensor is read and written through its slot (region arena + buffer offset + offset in the
buffer, strides), exactly where the generated C would; nodes that run no kernel (views, absorbed
Concats, Splits as slices) do nothing. The arenas start filled with noise, so a tensor read
before it is written, or overwritten while still needed, shows up as a wrong output. An
operator reads all its inputs before it writes, as the in-place kernels do element by element;
so that this cannot hide a hazard, an operator's output may share bytes only with the input it
declares in place, and then only starting at the same byte (the operator's kernel guarantees its
writes stay behind its reads: mcudeploy/ops, ``Op.inplace``).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from mcudeploy.ir import DTYPES, Graph, Node
from mcudeploy.ir.tensor import itemsize
from mcudeploy.ops import registry
from mcudeploy.reference import arguments


STATE = "#state"  # the key of the states' buffer among the arenas (mcudeploy/memory/state.py)


def _where(placement, buffer: str) -> tuple:
    """(the arena a buffer is in, its offset there): its region's, or the states' buffer."""
    if buffer in placement.state_offsets:
        return STATE, placement.state_offsets[buffer]
    return placement.regions.get(buffer), placement.offsets[buffer]


def _arenas(lifetimes, placement, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    sizes: dict = {}
    for b in lifetimes.buffers + lifetimes.state:
        region, offset = _where(placement, b.name)
        sizes[region] = max(sizes.get(region, 0), offset + b.size)
    return {r: rng.integers(0, 256, size=max(n, 1), dtype=np.uint8) for r, n in sizes.items()}


def tensor_view(graph: Graph, lifetimes, placement, arenas: Mapping, name: str) -> np.ndarray:
    """A numpy view of `name` inside its region's arena (a state's buffer: the states' buffer)."""
    t = graph[name]
    slot = lifetimes.slots[name]
    size = itemsize(t.dtype)
    region, offset = _where(placement, slot.buffer)
    return np.ndarray(t.shape, DTYPES[t.dtype], buffer=arenas[region], offset=offset + slot.offset,
                      strides=[s * size for s in slot.strides])


def _addresses(graph: Graph, lifetimes, placement, name: str, axis: int = 0, start: int = 0,
               length: int = -1) -> tuple:
    """(region, every byte address) of `name`, or of its window [start, start + length) along `axis`."""
    t = graph[name]
    slot = lifetimes.slots[name]
    size = itemsize(t.dtype)
    shape = list(t.shape)
    if length >= 0:
        shape[axis] = length
    region, offset = _where(placement, slot.buffer)
    addr = np.zeros((1,), np.int64) + offset + slot.offset + start * slot.strides[axis] * size
    for n, s in zip(shape, slot.strides):
        addr = (addr[:, None] + np.arange(n, dtype=np.int64)[None, :] * s * size).ravel()
    addr = (addr[:, None] + np.arange(size, dtype=np.int64)[None, :]).ravel()
    return region, addr


def _in_its_slice(graph: Graph, node: Node, lifetimes, j: int) -> bool:
    """Whether input ``j`` of a Concat already sits in its slice of the output (same buffer, the
    slice's offset, the output's strides): "partial" sharing, mcudeploy/memory/alias.py."""
    out, x = node.outputs[0], node.inputs[j]
    so, si = lifetimes.slots[out], lifetimes.slots[x]
    rank = len(graph[out].shape)
    axis = int(node.attr("axis", 0)) % rank
    start = sum(graph[i].shape[axis] for i in node.inputs[:j])
    offset = so.offset + start * so.strides[axis] * itemsize(graph[out].dtype)
    return (si.buffer, si.offset) == (so.buffer, offset) and all(
        n == 1 or a == b for n, a, b in zip(graph[x].shape, si.strides, so.strides))


def _written(graph: Graph, node: Node, lifetimes, placement, o: str) -> tuple:
    """(region, the byte addresses of `o` that `node`'s kernel writes): all of them, except for a
    Concat, whose kernel skips the slice of an input already in it (firmware/kernels/concat.c)."""
    region, addr = _addresses(graph, lifetimes, placement, o)
    if registry.slices(node.op) != "inputs":
        return region, addr
    axis = int(node.attr("axis", 0)) % len(graph[o].shape)
    written, start = [], 0
    for j, x in enumerate(node.inputs):
        n = graph[x].shape[axis]
        if graph[x].is_const or not _in_its_slice(graph, node, lifetimes, j):
            written.append(_addresses(graph, lifetimes, placement, o, axis, start, n)[1])
        start += n
    return region, np.concatenate(written) if written else addr[:0]


def _check_writes(graph: Graph, node: Node, lifetimes, placement) -> None:
    k = registry.get(node.op).inplace(graph, node)
    outs = [(o, _written(graph, node, lifetimes, placement, o)) for o in node.outputs]
    ins = [(j, i, _addresses(graph, lifetimes, placement, i)) for j, i in enumerate(node.inputs)
           if i and not graph[i].is_const]
    for n, (o, (region, addr)) in enumerate(outs):
        for other, (r2, a2) in outs[n + 1:]:
            if region == r2 and np.intersect1d(addr, a2).size:
                raise AssertionError(f"{node.name}: outputs {o} and {other} share bytes")
        for j, i, (r2, a2) in ins:
            if region != r2 or not np.intersect1d(addr, a2).size:
                continue
            so, si = lifetimes.slots[o], lifetimes.slots[i]
            same = (so.buffer, so.offset) == (si.buffer, si.offset)  # in place: from the input's first byte
            if j != k or not same:
                raise AssertionError(f"{node.name}: output {o} overwrites input {i}, which it does not take in place")


def run_in_arena(graph: Graph, order: Sequence[Node], lifetimes, placement,
                 inputs: Mapping[str, np.ndarray], seed: int = 0) -> list[np.ndarray]:
    """Every graph output after one call (a state's next value as the call leaves it: in place, or copied
    in after the step Lifetimes.copies gives, as model.c does); a state not in ``inputs`` starts from its initial
    value."""
    arenas = _arenas(lifetimes, placement, seed)

    def view(name: str) -> np.ndarray:
        return tensor_view(graph, lifetimes, placement, arenas, name)

    inputs = {**{s: graph[s].data for s in graph.states}, **inputs}
    for name in graph.stored_inputs():
        view(name)[...] = inputs[name]
    copies = lifetimes.copies
    outputs = {}

    def take(step: int) -> None:  # the states whose next values are copied in after ``step``
        for state, value in graph.state_updates():
            if copies.get(state, len(order) - 1) == step:
                view(state)[...] = view(value).copy()
                outputs[value] = view(state).copy()

    take(-1)
    for step, node in enumerate(order):
        op = registry.get(node.op)
        if not (op.view or node.name in lifetimes.elided):
            _check_writes(graph, node, lifetimes, placement)
            args = arguments(graph, node, lambda i: graph[i].data if graph[i].is_const
                             else np.asarray(inputs[i]) if i in graph.streamed else view(i).copy())
            for out, value in zip(node.outputs, op.reference(graph, node, args)):
                view(out)[...] = value
        if step < len(order) - 1:
            take(step)
    outputs.update({name: view(name).copy() for name in graph.model_outputs()})  # read before the last states
    take(len(order) - 1)
    return [outputs[name] for name in graph.outputs]
