"""ArgMax and ArgMin over one axis (TFLite's ARG_MAX, ARG_MIN; firmware/kernels/argmax.c).

The index of the first extreme along ``axis``: the walk keeps the first element and replaces it only by
a strictly greater (ArgMax) or smaller (ArgMin) one, as TFLite Micro's reference kernel compares, so a
tie keeps the lower index (and a NaN never wins unless it comes first). int8 compares the codes (the
quantization, being monotonic, cannot change the answer). The reduced dimension is dropped; the
index is int32 or int64 (attribute ``dtype``).

Not registered for ONNX (whose ArgMax has keepdims and select_last_index): TFLite models only.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Axis, Call, Dim, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register_kinds
from mcudeploy.ops.shape import MAX_DIMS
from mcudeploy.ops.util import norm_axis

INPUTS = {"float32": "f32", "int8": "s8"}
INDICES = ("int32", "int64")


class _Arg(Op):
    kind = ""  # "max" or "min"

    def _axis(self, graph: Graph, node: Node) -> int:
        return norm_axis(int(node.attr("axis")), len(graph[node.inputs[0]].shape), self.name)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype in INPUTS, f"{self.name} of {x.dtype} is not supported (float32 and int8)")
        require(1 <= len(x.shape) <= MAX_DIMS, f"{self.name} of a {len(x.shape)}-D tensor (1 to {MAX_DIMS})")
        dtype = node.attr("dtype", "int32")
        require(dtype in INDICES, f"{self.name} to {dtype} is not supported (int32 and int64)")
        axis = self._axis(graph, node)
        return [(x.shape[:axis] + x.shape[axis + 1:], dtype)]

    def accepts_int8(self, graph, node) -> bool:
        return graph[node.inputs[0]].dtype in INPUTS  # codes compare as the values they stand for

    def expr(self, graph, node):
        shape = graph[node.inputs[0]].shape
        axis = self._axis(graph, node)
        loop = tuple(Axis(f"r{d}", n, "reduction") if d == axis else Axis(f"d{d}", n) for d, n in enumerate(shape))
        outs = tuple(Dim.identity(f"d{d}") for d in range(len(shape)) if d != axis)
        return TensorExpr(loop, (tuple(Dim.identity(a.name) for a in loop),), (outs,))

    def piece(self, graph, node, axis, rows, pads):
        return dict(node.attrs) if pads is None else None

    def macs(self, graph, node):
        return graph[node.inputs[0]].size

    def reference(self, graph, node, inputs):
        x = np.moveaxis(inputs[0], self._axis(graph, node), -1)
        best = x[..., 0]
        index = np.zeros(best.shape, np.int64)
        for i in range(1, x.shape[-1]):  # the kernel's walk: strictly better replaces
            v = x[..., i]
            better = v > best if self.kind == "max" else v < best
            best = np.where(better, v, best)
            index = np.where(better, i, index)
        return [index.astype(graph[node.outputs[0]].dtype)]

    def kernel(self, graph, node):
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        return Call(f"mcud_arg{self.kind}_{INPUTS[x.dtype]}", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_arg_params", axis=self._axis(graph, node), wide=int(y.dtype == "int64")))


register_kinds(_Arg, {"ArgMax": {"kind": "max", "onnx_types": ()}, "ArgMin": {"kind": "min", "onnx_types": ()}})
