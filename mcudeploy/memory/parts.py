"""Buffers that take and free their bytes part by part: per byte, from its first write to its last read.

A buffer holds several tensors when they share it (a Concat's inputs written into its output,
the Slices a split reads of a whole tensor, ...). The pieces of a split write a Concat's output
band by band and read a whole input band by band, so a byte of such a buffer is live only from
the step whose kernel first writes it to the step whose kernel last reads it: the graph input of
a cut model is freed as its pieces consume it, and a gathered output is taken as its pieces
write it. The placement may put other buffers in the bytes not yet taken or already freed.

Per buffer, every tensor's footprint (its slot's offset and strides over its shape) gives each
alignment unit of the buffer the steps of the kernels that write and read it (nodes that run no
kernel, such as views, Slices and absorbed Concats, neither write nor read). A unit no kernel
touches (padding) keeps the buffer's whole lifetime. Runs of units live at the same steps are the
parts; where there are more than MAX_PARTS, units are first grouped into MAX_PARTS chunks
of equal size, each live from the first write to the last read of any of its units (a row band
of an NCHW tensor is one run per channel). Staircases of in-place sharing and buffers of one
tensor keep their one rectangle; a graph output lives to the last step (the caller reads it).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ir.tensor import itemsize
from mcudeploy.memory.alias import contiguous

MAX_PARTS = 128
UNSET_FIRST, UNSET_LAST = np.iinfo(np.int64).max, np.iinfo(np.int64).min  # a unit no kernel writes or reads (yet)


def _footprint(shape: Sequence[int], strides: Sequence[int], offset: int, size: int, unit: int):
    """The alignment units (of a buffer) a tensor's bytes touch: a slice where they are one run,
    else an array (with repeats)."""
    if contiguous(shape, strides):
        return slice(offset // unit, -(-(offset + size * math.prod(shape)) // unit))  # math.prod: cheaper than numpy's
    offs = np.array([offset], dtype=np.int64)
    for n, s in zip(shape, strides):
        offs = (offs[:, None] + np.arange(n, dtype=np.int64) * (s * size)).ravel()
    return np.concatenate([offs // unit, (offs + size - 1) // unit]) if size > 1 else offs // unit


def _runs(first: np.ndarray, last: np.ndarray, chunk: int) -> list[list[int]]:
    """[start, units, first, last] of runs of `chunk` units, neighbours live at the same steps merged."""
    starts = np.arange(0, len(first), chunk)
    f, z = np.minimum.reduceat(first, starts), np.maximum.reduceat(last, starts)
    cuts = np.flatnonzero((f[1:] != f[:-1]) | (z[1:] != z[:-1])) + 1
    edges = np.concatenate([[0], cuts, [len(starts)]])
    return [[int(starts[a]), int(min(starts[b - 1] + chunk, len(first)) - starts[a]), int(f[a]), int(z[a])]
            for a, b in zip(edges[:-1], edges[1:])]


def _steps(graph: Graph, order: Sequence[Node], elided) -> tuple[dict, dict]:
    """Tensor -> first step a kernel writes it (graph inputs: -1), and last step a kernel reads it
    (graph outputs: the last step)."""
    writes: dict[str, int] = {t: -1 for t in graph.stored_inputs()}
    reads: dict[str, int] = {}
    for step, node in enumerate(order):
        if node.name in elided:
            continue
        for t in node.inputs:
            if t:
                reads[t] = step
        for t in node.outputs:
            writes.setdefault(t, step)
    for t in graph.outputs:  # the caller reads them after the last step (a state's next value is copied in
        reads[t] = len(order) - 1  # earlier: by_parts clips every part to its buffer's own last step)
    return writes, reads


def by_parts(graph: Graph, order: Sequence[Node], buffers: Sequence, slots: Mapping, elided,
             alignment: int) -> list:
    """`buffers` (memory.lifetimes.Buffer) with ``parts`` where their bytes are taken or freed at
    different steps."""
    unit = max(alignment, 1)
    writes, reads = _steps(graph, order, elided)
    out = []
    for b in buffers:
        units = b.size // unit
        if b.parts or len(b.tensors) < 2 or units < 2:
            out.append(b)
            continue
        first = np.full(units, UNSET_FIRST, dtype=np.int64)
        last = np.full(units, UNSET_LAST, dtype=np.int64)
        for t in b.tensors:
            w, r = writes.get(t), reads.get(t)
            if w is None and r is None:
                continue
            tensor, slot = graph[t], slots[t]
            at = _footprint(tensor.shape, slot.strides, slot.offset, itemsize(tensor.dtype), unit)
            if isinstance(at, slice):
                if w is not None:
                    np.minimum(first[at], w, out=first[at])
                if r is not None:
                    np.maximum(last[at], r, out=last[at])
                continue
            at = at[at < units]
            if w is not None:
                np.minimum.at(first, at, w)
            if r is not None:
                np.maximum.at(last, at, r)
        untouched = (first == UNSET_FIRST) & (last == UNSET_LAST)
        first = np.where(first == UNSET_FIRST, b.first, first)
        last = np.where(untouched, b.last, np.maximum(last, first))
        first, last = np.maximum(first, b.first), np.minimum(last, b.last)
        parts = _runs(first, last, 1)
        if len(parts) > MAX_PARTS:
            parts = _runs(first, last, -(-units // MAX_PARTS))
        if len(parts) == 1:
            out.append(b)
            continue
        rects = tuple((s * unit, n * unit, a, e) for s, n, a, e in parts)
        out.append(dataclasses.replace(b, first=min(r[2] for r in rects), last=max(r[3] for r in rects),
                                       parts=rects))
    return out
