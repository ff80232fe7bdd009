"""TFLite's PRELU (Keras' PReLU layer): x where x >= 0, else x * alpha, alpha broadcast against x
(firmware/kernels/prelu.c).

float32: x >= 0 ? x : x * alpha, as TFLite Micro computes it. A quantized x (int8, or int16 with an int8
alpha) is rescaled by one of two multipliers, as reference_ops::BroadcastPrelu4DSlow does:
x - z_x >= 0 gives (x - z_x) s_x / s_y, otherwise (x - z_x)(alpha - z_alpha) s_x s_alpha / s_y, each
rounded as TFLite rounds; + z_y, clamped to the type's range. From .tflite files only (no ONNX op type).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ops import requant
from mcudeploy.ops.base import Call, Op, Struct, elementwise_expr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import broadcast_shape, same_shape_input

MAX_RANK = 6
ALPHA = {"float32": "float32", "int8": "int8", "int16": "int8"}  # alpha's type for each x's


def tfl_prelu_plan(graph, node) -> dict:
    (s_x, z_x), (s_a, z_a), (s_y, z_y) = (requant.qparams(graph, n).single() for n in (*node.inputs, node.outputs[0]))
    pos_mult, pos_shift = requant.tflite_multiplier(s_x / s_y)
    neg_mult, neg_shift = requant.tflite_multiplier(s_x * s_a / s_y)
    return dict(x_zero=z_x, alpha_zero=z_a, y_zero=z_y, pos_mult=pos_mult, pos_shift=pos_shift,
                neg_mult=neg_mult, neg_shift=neg_shift)


@register
class PRelu(Op):
    name = "PRelu"

    def infer(self, graph, node):
        require(len(node.inputs) == 2, "PRelu takes 2 inputs (x and alpha)")
        x, alpha = graph[node.inputs[0]], graph[node.inputs[1]]
        require(x.dtype in ALPHA, f"PRelu of {x.dtype} is not supported")
        require(alpha.dtype == ALPHA[x.dtype], f"PRelu of {x.dtype} with a {alpha.dtype} alpha is not supported")
        shape = broadcast_shape([x.shape, alpha.shape], node.op)
        require(len(shape) <= MAX_RANK, f"PRelu output of rank {len(shape)} exceeds {MAX_RANK}")
        return [(shape, x.dtype)]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def accepts_int8(self, graph, node) -> bool:
        names = (*node.inputs, *node.outputs)
        if not all(graph[n].quant is not None and len(graph[n].quant.scale) == 1 for n in names):
            return False
        try:
            tfl_prelu_plan(graph, node)
        except (UnsupportedError, ValueError):
            return False
        return True

    def reference(self, graph, node, inputs):
        x, alpha = inputs
        shape = graph[node.outputs[0]].shape
        if x.dtype == np.float32:
            return [np.broadcast_to(np.where(x >= 0, x, x * alpha), shape).astype(np.float32)]
        require(self.accepts_int8(graph, node), "a quantized PRelu needs per-tensor quantization of x, alpha and y")
        p = tfl_prelu_plan(graph, node)
        v = x.astype(np.int64) - p["x_zero"]
        pos = requant.tflite_requantize(v, p["pos_mult"], p["pos_shift"])
        neg = requant.tflite_requantize(requant.wrap32(v * (alpha.astype(np.int64) - p["alpha_zero"])),
                                        p["neg_mult"], p["neg_shift"])
        lo, hi = requant.QRANGE[graph[node.outputs[0]].dtype]
        y = np.clip(np.where(v >= 0, pos, neg) + p["y_zero"], lo, hi)
        return [np.broadcast_to(y, shape).astype(x.dtype)]

    def kernel(self, graph, node):
        views = tuple(node.inputs) + (node.outputs[0],)
        dtype = graph[node.inputs[0]].dtype
        if dtype == "float32":
            return Call("mcud_prelu_f32", views)
        require(self.accepts_int8(graph, node), "a quantized PRelu needs per-tensor quantization of x, alpha and y")
        return Call(f"mcud_prelu_{'s16' if dtype == 'int16' else 's8'}_tfl", views,
                    Struct.of("mcud_prelu_params", **tfl_prelu_plan(graph, node)))
