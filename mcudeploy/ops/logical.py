"""TFLite's logic on bool tensors (LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT) and SELECT_V2 (a condition choosing
between two tensors), with numpy broadcasting (firmware/kernels/logical.c). A bool is one byte, 0 or 1.

SELECT_V2 copies the chosen element as it is stored, as TFLite Micro does (select.cc): a quantized x and
y keep their codes whatever the output's quantization. These operators come from .tflite files only.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import itemsize
from mcudeploy.ops.base import Call, Op, Struct, elementwise_expr, require
from mcudeploy.ops.registry import register, register_kinds
from mcudeploy.ops.util import broadcast_shape, same_shape_input

MAX_RANK = 6
CODES = {"and": 0, "or": 1}  # MCUD_LOGICAL_* in mcud_logical.h


def _shape(graph, node):
    shape = broadcast_shape([graph[i].shape for i in node.inputs], node.op)
    require(len(shape) <= MAX_RANK, f"{node.op} output of rank {len(shape)} exceeds {MAX_RANK}")
    return shape


class _Logical(Op):
    kind = ""  # a key of CODES, or "not"

    def infer(self, graph, node):
        require(len(node.inputs) == (1 if self.kind == "not" else 2),
                f"{node.op} takes {1 if self.kind == 'not' else 2} inputs")
        for name in node.inputs:
            require(graph[name].dtype == "bool", f"{node.op} of {graph[name].dtype} is not supported")
        return [(_shape(graph, node), "bool")]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def reference(self, graph, node, inputs):
        if self.kind == "not":
            y = np.logical_not(inputs[0])
        else:
            y = (np.logical_and if self.kind == "and" else np.logical_or)(inputs[0], inputs[1])
        return [np.broadcast_to(y, graph[node.outputs[0]].shape).copy()]

    def kernel(self, graph, node):
        views = tuple(node.inputs) + (node.outputs[0],)
        if self.kind == "not":
            return Call("mcud_logical_not", views)
        return Call("mcud_logical", views, Struct.of("mcud_logical_params", op=CODES[self.kind]))


register_kinds(_Logical, {
    "And": {"kind": "and", "onnx_types": ()},
    "Or": {"kind": "or", "onnx_types": ()},
    "Not": {"kind": "not", "onnx_types": ()},
})


@register
class Where(Op):
    """TFLite's SELECT_V2: condition ? x : y, element by element, the three broadcast together."""

    name = "Where"

    def infer(self, graph, node):
        require(len(node.inputs) == 3, "Where takes 3 inputs (a condition, x and y)")
        cond, x, y = (graph[n] for n in node.inputs)
        require(cond.dtype == "bool", f"Where with a {cond.dtype} condition is not supported")
        require(x.dtype == y.dtype, f"Where of mixed {x.dtype} and {y.dtype} is not supported")
        require(itemsize(x.dtype) in (1, 2, 4, 8), f"Where of {x.dtype} is not supported")
        return [(_shape(graph, node), x.dtype)]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def accepts_int8(self, graph, node) -> bool:
        return True  # the codes are copied, whatever the quantization (TFLite does so)

    def reference(self, graph, node, inputs):
        cond, x, y = inputs
        return [np.broadcast_to(np.where(cond, x, y), graph[node.outputs[0]].shape).astype(x.dtype)]

    def kernel(self, graph, node):
        bits = 8 * itemsize(graph[node.inputs[1]].dtype)
        return Call(f"mcud_where_{bits}", tuple(node.inputs) + (node.outputs[0],))
