"""Slice: output = input[start:end] along some axes. A view with no kernel (an ONNX Slice with steps other
than 1 becomes a StridedSlice before anything places it: mcudeploy/passes/slices.py).
StridedSlice: output = input[begin::step] per dimension, any non-zero step: a strided copy.

mcudeploy/memory/alias.py always places the output inside its input's buffer (an offset and the
input's strides); kernels read it through a strided view, so a slice costs no bytes and no time.
The partition (mcudeploy/partition) reads every piece's input range through one; an ONNX Slice
with constant starts, ends and axes and unit steps imports as the same operator.

Attributes: ``starts``, ``ends`` and ``axes`` as ONNX gives them (negative values count from the
end, ends are clamped); ``bounds()`` resolves them against the input's shape.

Tensor expression: one loop axis per output dimension; a sliced input dimension is a window of
one tap shifted by the start (pad = -start), any other is identity.

StridedSlice (firmware/kernels/shape.c, mcud_strided_slice_*) copies what a view cannot hold: a step other
than 1 (TFLite's STRIDED_SLICE, REVERSE_V2), or a window that must be contiguous where it is not
(mcudeploy/passes/slices.py turns such a Slice into one). Attributes ``begin``, ``step`` and ``size``, one
per input dimension, resolved: output index i of dimension d reads input index begin[d] + i * step[d].
A dimension read forwards is a window of one tap with stride ``step`` (pad = -begin), one read backwards
is ``full`` (a piece cannot be cut along it).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS, kernel_suffix, same_quant
from mcudeploy.ops.util import ints, norm_axis


def stepped(graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(begin, step, count) of the slice in every dimension of the input, resolved and clamped as ONNX
    does (a negative step reads backwards from a start clamped to [0, n - 1] to an end in [-1, n - 1])."""
    shape = graph[node.inputs[0]].shape
    starts, ends = tuple(node.attr("starts")), tuple(node.attr("ends"))
    axes = node.attr("axes")
    axes = tuple(range(len(starts))) if axes is None else tuple(axes)
    steps = node.attr("steps")
    steps = (1,) * len(starts) if steps is None else tuple(steps)
    require(len(starts) == len(ends) == len(axes) == len(steps), "Slice starts, ends, axes and steps differ in length")
    begin, step, count = [0] * len(shape), [1] * len(shape), list(shape)
    seen = set()
    for a, s, e, k in zip(axes, starts, ends, steps):
        a = norm_axis(a, len(shape), "Slice")
        require(a not in seen, f"Slice names axis {a} twice")
        require_valid(k != 0, f"has step 0 along axis {a}")
        seen.add(a)
        n = shape[a]
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        if k > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
        else:
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
        begin[a], step[a], count[a] = s, k, max(0, -((s - e) // k))  # ceil((e - s) / k)
    return tuple(begin), tuple(step), tuple(count)


def bounds(graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(begin, end) of a Slice of unit steps in every dimension of the input, resolved and clamped."""
    begin, step, count = stepped(graph, node)
    require(all(k == 1 for k in step), f"Slice {node.name} with steps other than 1 is no view")
    return begin, tuple(b + c for b, c in zip(begin, count))


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
        big = 2**31 - 1  # ONNX writes "to the end" as INT64_MAX
        attrs = {"starts": tuple(max(min(v, big), -big) for v in ints(starts)),
                 "ends": tuple(max(min(v, big), -big) for v in ints(ends))}
        if axes is not None:
            attrs["axes"] = ints(axes)
        if steps is not None and any(k != 1 for k in ints(steps)):  # no view: a StridedSlice (passes/slices.py)
            attrs["steps"] = ints(steps)
        return onnx.inputs[:1], attrs

    def bounds(self, graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return bounds(graph, node)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        return [(stepped(graph, node)[2], x.dtype)]

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
        begin, step, count = stepped(graph, node)
        return [np.ascontiguousarray(inputs[0][np.ix_(*(b + k * np.arange(c) for b, k, c in zip(begin, step, count)))]
                                     if count else inputs[0])]

    def kernel(self, graph, node):
        raise NotImplementedError(f"Slice {node.name} has no kernel: mcudeploy/memory/alias.py places it as a view")


@register
class StridedSlice(Op):
    name = "StridedSlice"

    def _params(self, graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        shape = graph[node.inputs[0]].shape
        begin, step, size = (tuple(int(v) for v in node.attr(k)) for k in ("begin", "step", "size"))
        require(len(begin) == len(step) == len(size) == len(shape),
                f"StridedSlice of a rank-{len(shape)} input with {len(begin)} begins, steps and sizes")
        for d, (n, b, s, k) in enumerate(zip(shape, begin, step, size)):
            require_valid(s != 0, f"has step 0 along dimension {d}")
            require_valid(k >= 0 and (k == 0 or (0 <= b < n and 0 <= b + (k - 1) * s < n)),
                          f"reads outside dimension {d} of extent {n} (begin {b}, step {s}, {k} elements)")
        return begin, step, size

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        _, _, size = self._params(graph, node)
        require(len(x.shape) <= MAX_DIMS, f"StridedSlice of a {len(x.shape)}-D tensor (at most {MAX_DIMS})")
        kernel_suffix(x.dtype, "StridedSlice")
        return [(size, x.dtype)]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node)

    def expr(self, graph, node):
        begin, step, size = self._params(graph, node)
        shape = graph[node.inputs[0]].shape
        axes = [Axis(f"d{i}", k) for i, k in enumerate(size)]
        dims = []
        for i, (n, b, s, k) in enumerate(zip(shape, begin, step, size)):
            if (b, s, k) == (0, 1, n):
                dims.append(Dim.identity(f"d{i}"))
            elif s > 0:
                axes.append(Axis(f"k{i}", 1, "reduction"))
                dims.append(Dim.window(f"d{i}", f"k{i}", s, 1, -b))
            else:
                dims.append(Dim.full())
        return TensorExpr(tuple(axes), (tuple(dims),), (tuple(Dim.identity(f"d{i}") for i in range(len(size))),))

    def piece(self, graph, node, axis, rows, pads):
        """Along an output dimension the piece reads its own rows of the input (the partition slices them
        out: rows begin + lo * step .. for a window), from their first: begin 0 there, hi - lo of them."""
        if pads not in (None, (0, 0)):
            return None
        d = [a.name for a in self.expr(graph, node).axes].index(axis)
        begin, _, size = (list(node.attr(k)) for k in ("begin", "step", "size"))
        begin[d], size[d] = 0, rows[1] - rows[0]
        return {**node.attrs, "begin": tuple(begin), "size": tuple(size)}

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        begin, step, size = self._params(graph, node)
        index = np.ix_(*(b + s * np.arange(k) for b, s, k in zip(begin, step, size)))
        return [np.ascontiguousarray(inputs[0][index] if size else inputs[0])]

    def kernel(self, graph, node):
        begin, step, _ = self._params(graph, node)
        pad = (0,) * (MAX_DIMS - len(begin))
        suffix = kernel_suffix(graph[node.inputs[0]].dtype, "StridedSlice")
        return Call(f"mcud_strided_slice_{suffix}", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_strided_slice_params", begin=begin + pad, step=step + (1,) * len(pad)))
