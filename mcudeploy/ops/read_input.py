"""ReadInput: a box of a streamed graph input, written into the arena by the application's callback
(not an ONNX operator; what ``--stream-input`` puts in front of a graph input, passes/stream_input.py).

A streamed input has no bytes in the arena: ReadInput() -> y asks the model's ``<name>_read_input``
(model.h) for the elements of the box ``starts`` .. ``starts + shape`` of input ``input`` (an index
into the graph's inputs), one contiguous run of the input's own row-major order at a time
(firmware/kernels/stream.c). Unsplit, the box is the whole input; cut along a dimension
(mcudeploy/partition), each piece reads its rows only, so a camera's or a sensor's rows can come
in as the first layers consume them and the whole input never sits in memory.
Attributes: "input", "starts", "shape", "dtype", and "layout" (the input's image layout as the pass
found it, for model.h: analysis/io.py)."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir.tensor import itemsize
from mcudeploy.ops.base import Axis, Call, Dim, Op, Struct, Symbol, TensorExpr
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS

READ_INPUT = "ReadInput"


def streamed_input(graph, node) -> str:
    """The graph input a ReadInput node reads."""
    return graph.inputs[int(node.attr("input"))]


def _padded(values, fill: int) -> tuple[int, ...]:
    return (fill,) * (MAX_DIMS - len(values)) + tuple(int(v) for v in values)


@register
class ReadInput(Op):
    name = READ_INPUT
    onnx_types = ()
    source = True

    def infer(self, graph, node):
        return [(tuple(node.attr("shape")), node.attr("dtype"))]

    def expr(self, graph, node):
        axes = tuple(Axis(f"d{i}", int(n)) for i, n in enumerate(node.attr("shape")))
        return TensorExpr(axes, (), (tuple(Dim.identity(a.name) for a in axes),))

    def accepts_int8(self, graph, node):
        return True

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        """``inputs``: the whole streamed input (reference.evaluate passes it)."""
        box = tuple(slice(s, s + n) for s, n in zip(node.attr("starts"), node.attr("shape")))
        return [np.array(inputs[0][box], copy=True)]

    def piece(self, graph, node, axis, rows, pads):
        dim = int(axis[1:])
        starts, shape = list(node.attr("starts")), list(node.attr("shape"))
        starts[dim] += rows[0]
        shape[dim] = rows[1] - rows[0]
        return {**node.attrs, "starts": tuple(starts), "shape": tuple(shape)}

    def kernel(self, graph, node):
        whole = graph[streamed_input(graph, node)]
        return Call("mcud_read_input", (node.outputs[0],), Struct.of(
            "mcud_read_input_params", read=Symbol("read_input"), input=int(node.attr("input")),
            starts=_padded(node.attr("starts"), 0), shape=_padded(whole.shape, 1),
            itemsize=itemsize(whole.dtype)))
