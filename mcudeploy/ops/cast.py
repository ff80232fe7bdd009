"""Cast: every element converted to another type as C converts it (TFLite's CAST, whose TFLite Micro
kernel is a static_cast; firmware/kernels/cast.c), a quantized tensor's codes as they are.

An integer narrowed keeps its low bits (two's complement), a float becomes an integer by truncation
toward zero, saturated to int32 (NaN gives 0) and then narrowed so (what a Cortex-M's VCVT and gcc do
wherever C leaves it undefined), an integer becomes the nearest float, a bool 0 or 1. uint32 (the Signal
operators' type, which TFLite Micro's CAST takes and gives) converts to and from every integer type and to float;
a float to uint32, whose out-of-range values C and the cores leave to differ, is refused. Elementwise: split along
every axis, in place where the two types have one size."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import itemsize
from mcudeploy.ops.base import Call, Op, elementwise_expr, require
from mcudeploy.ops.registry import register

IN = {"int8": "s8", "uint8": "u8", "bool": "u8", "int16": "s16", "int32": "s32", "uint32": "u32", "float32": "f32"}
OUT = {"int8": "s8", "int16": "s16", "int32": "s32", "uint32": "u32", "float32": "f32"}


def cast(x: np.ndarray, to: str) -> np.ndarray:
    if x.dtype.kind == "f" and to != "float32":
        v = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=2.0**31, neginf=-2.0**31))
        x = np.clip(v, -2.0**31, 2.0**31 - 1).astype(np.int64)
    return x.astype(np.int64 if x.dtype == np.bool_ and to != "float32" else x.dtype).astype(to)


@register
class Cast(Op):
    name = "Cast"

    def infer(self, graph, node):
        x, to = graph[node.inputs[0]], node.attr("to")
        require(x.dtype in IN and to in OUT and (x.dtype, to) != ("float32", "uint32"),
                f"Cast of {x.dtype} to {to} is not supported")
        return [(x.shape, to)]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return 0 if itemsize(graph[node.inputs[0]].dtype) == itemsize(node.attr("to")) else None

    def macs(self, graph, node):
        return graph[node.outputs[0]].size

    def reference(self, graph, node, inputs):
        return [cast(np.asarray(inputs[0]), node.attr("to"))]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        return Call(f"mcud_cast_{IN[x.dtype]}_{OUT[node.attr('to')]}", (node.inputs[0], node.outputs[0]))
