"""What a kernel reads and writes of each tensor it touches, in bytes: ``kernel_bytes``.

A buffer kept in a slow region for its whole life (a resident, X-CUBE-AI's whole activation pools
in external RAM) is not read once per use at the speed of a copy: its producer's kernel writes it
there and every consumer's kernel reads it there, element by element, as often as its loop nest
asks. The count comes from the operator's tensor expression (mcudeploy/ops): an input is read once
per point of the loops that index it, so a windowed dimension is read once per output position and
kernel tap (a 3x3 convolution reads its input about nine times, an elementwise operator once), and
loops that do not index it (a convolution's output channels over its input) are taken as reused
from registers or scratch in fast memory. That is a lower bound on a kernel's traffic, so whole
buffers in slow memory are priced no dearer than they are. An output is written once.

``slow_access_ticks`` prices that traffic with the region's speed (one transfer's latency per
kernel call on top of the bytes), the same speed that prices a swap's copies.
"""
from __future__ import annotations

from math import prod
from typing import Iterable, Sequence

from mcudeploy.ir import Graph, Node, itemsize
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim, TensorExpr


def _reads(expr: TensorExpr, dims: Sequence[Dim], shape: Sequence[int]) -> int:
    """Elements of one input a loop nest reads: per dimension, its extent, or for a window the output
    positions times the kernel taps."""
    counts = []
    for dim, n in zip(dims, shape):
        if dim.kind == "window":
            counts.append(expr.axis(dim.axis).extent * expr.axis(dim.kernel).extent)
        elif dim.kind == "broadcast":
            counts.append(1)
        else:  # identity, full
            counts.append(n)
    return prod(counts)


def kernel_bytes(graph: Graph, node: Node) -> tuple[dict[str, int], dict[str, int]]:
    """(bytes read per input tensor, bytes written per output tensor) of ``node``'s kernel; a view
    (no kernel) touches nothing."""
    op = registry.get(node.op)
    if op.view or op.subview:
        return {}, {}
    expr = op.expr(graph, node)
    reads: dict[str, int] = {}
    for k, name in enumerate(node.inputs):
        if not name or graph[name].is_const:
            continue
        t = graph[name]
        dims = expr.inputs[k] if k < len(expr.inputs) else None
        elements = t.size if dims is None or len(dims) != len(t.shape) else _reads(expr, dims, t.shape)
        reads[name] = reads.get(name, 0) + elements * itemsize(t.dtype)
    writes = {o: graph[o].nbytes for o in node.outputs if o}
    return reads, writes


def slow_access_ticks(graph: Graph, order: Iterable[Node], tensors: Iterable[str], speed) -> float:
    """Ticks the kernels of ``order`` spend on ``tensors`` (a buffer's) held in a slow region of
    ``speed``: every byte each kernel reads or writes of them at the region's speed, and one
    transfer's latency per kernel that touches them."""
    held = set(tensors)
    ticks = 0.0
    for node in order:
        reads, writes = kernel_bytes(graph, node)
        read = sum(b for t, b in reads.items() if t in held)
        written = sum(b for t, b in writes.items() if t in held)
        if read:
            ticks += speed.copy_ticks(read, out=False)
        if written:
            ticks += speed.copy_ticks(written, out=True)
    return ticks
