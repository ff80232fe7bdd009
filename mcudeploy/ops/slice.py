"""Slice: output = input[start:end] along some axes, steps 1. A view with no kernel.

mcudeploy/memory/alias.py always places the output inside its input's buffer (an offset and the
input's strides); kernels read it through a strided view, so a slice costs no bytes and no time.
The partition (mcudeploy/partition) reads every piece's input range through one; an ONNX Slice
with constant starts, ends and axes and unit steps imports as the same operator.

Attributes: ``starts``, ``ends`` and ``axes`` as ONNX gives them (negative values count from the
end, ends are clamped); ``bounds()`` resolves them against the input's shape.

Tensor expression: one loop axis per output dimension; a sliced input dimension is a window of
one tap shifted by the start (pad = -start), any other is identity.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Axis, Dim, OnnxNode, Op, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import same_quant
from mcudeploy.ops.util import ints, norm_axis


def bounds(graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(begin, end) of the slice in every dimension of the input, resolved and clamped."""
    shape = graph[node.inputs[0]].shape
    starts, ends = tuple(node.attr("starts")), tuple(node.attr("ends"))
    axes = node.attr("axes")
    axes = tuple(range(len(starts))) if axes is None else tuple(axes)
    require(len(starts) == len(ends) == len(axes), "Slice starts, ends and axes differ in length")
    begin, end = [0] * len(shape), list(shape)
    seen = set()
    for a, s, e in zip(axes, starts, ends):
        a = norm_axis(a, len(shape), "Slice")
        require(a not in seen, f"Slice names axis {a} twice")
        seen.add(a)
        n = shape[a]
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        begin[a], end[a] = min(max(s, 0), n), min(max(e, 0), n)
        end[a] = max(end[a], begin[a])
    return tuple(begin), tuple(end)


@register
class Slice(Op):
    name = "Slice"
    onnx_types = ("Slice",)
    subview = True

    def from_onnx(self, onnx: OnnxNode):
        if onnx.opset < 10:
            starts, ends, axes = onnx.attrs.get("starts"), onnx.attrs.get("ends"), onnx.attrs.get("axes")
            steps = None
        else:
            values = [onnx.const(n) if n else None for n in onnx.inputs[1:5]] + [None] * 4
            for n, v in zip(onnx.inputs[1:5], values):
                require(not n or v is not None, "Slice needs constant starts, ends, axes and steps")
            starts, ends, axes, steps = values[:4]
        require(starts is not None and ends is not None, "Slice needs starts and ends")
        require(steps is None or all(s == 1 for s in ints(steps)), "Slice with steps other than 1 is not supported")
        big = 2**31 - 1  # ONNX writes "to the end" as INT64_MAX
        attrs = {"starts": tuple(max(min(v, big), -big) for v in ints(starts)),
                 "ends": tuple(max(min(v, big), -big) for v in ints(ends))}
        if axes is not None:
            attrs["axes"] = ints(axes)
        return onnx.inputs[:1], attrs

    def bounds(self, graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return bounds(graph, node)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        begin, end = bounds(graph, node)
        return [(tuple(e - b for b, e in zip(begin, end)), x.dtype)]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node)

    def expr(self, graph, node):
        begin, end = bounds(graph, node)
        axes = [Axis(f"d{i}", e - b) for i, (b, e) in enumerate(zip(begin, end))]
        dims = []
        for i, (b, e) in enumerate(zip(begin, end)):
            if (b, e) == (0, graph[node.inputs[0]].shape[i]):
                dims.append(Dim.identity(f"d{i}"))
            else:
                axes.append(Axis(f"k{i}", 1, "reduction"))
                dims.append(Dim.window(f"d{i}", f"k{i}", 1, 1, -b))
        outs = (tuple(Dim.identity(f"d{i}") for i in range(len(begin))),)
        return TensorExpr(tuple(axes), (tuple(dims),), outs)

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        begin, end = bounds(graph, node)
        return [np.ascontiguousarray(inputs[0][tuple(slice(b, e) for b, e in zip(begin, end))])]

    def kernel(self, graph, node):
        raise NotImplementedError(f"Slice {node.name} has no kernel: mcudeploy/memory/alias.py places it as a view")
