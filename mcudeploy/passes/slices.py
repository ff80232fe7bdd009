"""A Slice (or TransposeView) that cannot be a view becomes a copy.

A Slice with steps other than 1 (ONNX) is no window of its input: it becomes a StridedSlice.

A Slice is a window of its input with no kernel (mcudeploy/memory/alias.py places it at an offset, with
the input's strides). Where its output must be contiguous (it is a graph output, or is reshaped: a
Reshape-like operator's output is its input's bytes) and the window is not, no view can hold it: such a
Slice becomes a StridedSlice of the same window (a strided copy, mcudeploy/ops/slice.py), and such a
TransposeView a Transpose. Everywhere else the view stays, and costs nothing.

The input's strides are those alias.py gives it before any Concat or in-place sharing: row-major, or
its own window's when it is itself a Slice or TransposeView of something (alias.py then keeps them).
"""
from __future__ import annotations

from mcudeploy.ir import Graph, Node
from mcudeploy.ir.tensor import row_major
from mcudeploy.ops import registry
from mcudeploy.ops.slice import stepped


def _contiguous(shape, strides) -> bool:
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _strides(graph: Graph, tensor: str, memo: dict) -> tuple[int, ...]:
    """Strides of ``tensor`` in its slot, as far as windows decide them."""
    if tensor not in memo:
        node = graph.producer(tensor)
        op = registry.get(node.op) if node is not None else None
        if op is not None and op.subview and not graph[node.inputs[0]].is_const:
            parent = _strides(graph, node.inputs[0], memo)
            memo[tensor] = tuple(parent[p] for p in op.view_perm(graph, node)) if hasattr(op, "view_perm") else parent
        else:
            memo[tensor] = row_major(graph[tensor].shape)
    return memo[tensor]


def _pinned(graph: Graph, tensor: str) -> bool:
    """The tensor's bytes must be dense: a graph output, or read by a Reshape-like view."""
    return tensor in graph.outputs or any(registry.get(u.op).view for u in graph.users(tensor))


def _copy(graph: Graph, node: Node) -> Node:
    op = registry.get(node.op)
    if hasattr(op, "view_perm"):
        return node.with_(op="Transpose", attrs={"perm": tuple(op.view_perm(graph, node))})
    begin, step, count = stepped(graph, node)
    return node.with_(op="StridedSlice", attrs={"begin": begin, "step": step, "size": count})


def _stepped(node: Node) -> bool:
    return node.op == "Slice" and any(k != 1 for k in (node.attr("steps") or ()))


def materialize_slices(graph: Graph) -> Graph:
    memo: dict = {}
    nodes, changed = [], False
    for node in graph.nodes:
        op = registry.get(node.op)
        src = node.inputs[0] if node.inputs else ""
        if _stepped(node):
            node, changed = _copy(graph, node), True
            memo[node.outputs[0]] = row_major(graph[node.outputs[0]].shape)
        elif op.subview and src and not graph[src].is_const and _pinned(graph, node.outputs[0]):
            strides = _strides(graph, src, memo)
            if hasattr(op, "view_perm"):
                strides = tuple(strides[p] for p in op.view_perm(graph, node))
            if not _contiguous(graph[node.outputs[0]].shape, strides):
                node, changed = _copy(graph, node), True
                memo[node.outputs[0]] = row_major(graph[node.outputs[0]].shape)  # a buffer of its own now
        nodes.append(node)
    return graph.replace(nodes=tuple(nodes)) if changed else graph
