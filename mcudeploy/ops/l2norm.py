"""L2Normalization: x / sqrt(sum of x^2) over one axis (TFLite's L2_NORMALIZATION: the last one).

float32 as TensorFlow Lite Micro computes it: the sum of squares in order, its square root floored at
1e-6, one division per element. int8 as its reference_integer_ops::L2Normalization: the squared
differences from the zero point in int32, TFLite's fixed-point 1 / sqrt of the sum as a multiplier
(mcudeploy/ops/fixedpoint.py ``inv_sqrt``; mcud_fx_inv_sqrt in C), each difference requantized by it
into an output of scale 1/128 and zero point 0 (TFLite Micro writes that, whatever the output says).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ops import fixedpoint as fx
from mcudeploy.ops import requant
from mcudeploy.ops.base import Call, Struct, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.softmax import Softmax, reduced_dims

EPSILON = np.float32(1e-6)


@register
class L2Normalization(Softmax):
    """Shares Softmax's axis attribute, its loop axes (the normalised ones are reductions) and in place."""

    name = "L2Normalization"
    onnx_types = ()

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype in ("float32", "int8"), f"L2Normalization of {x.dtype} is not supported")
        reduced_dims(graph, node)
        return [(x.shape, x.dtype)]

    def accepts_int8(self, graph, node):
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        return bool(x.dtype == y.dtype == "int8" and x.quant is not None and y.quant is not None
                    and len(x.quant.scale) == 1 and requant.arithmetic(graph) == "tflite"
                    and node.attr("tflite_kernel"))

    def reference(self, graph, node, inputs):
        x = inputs[0]
        a0, a1 = reduced_dims(graph, node)
        axes = tuple(range(a0, a1))
        if x.dtype == np.float32:
            norm = np.maximum(np.sqrt((x * x).sum(axis=axes, keepdims=True, dtype=np.float32)), EPSILON)
            return [(x / norm).astype(np.float32)]
        require(self.accepts_int8(graph, node), "an int8 L2Normalization is TFLite's kernel (the importer's): it "
                                                "needs per-tensor quantized int8 input and output")
        zp = graph[node.inputs[0]].quant.single()[1]
        d = x.astype(np.int64) - zp
        total = fx.wrap32((d * d).sum(axis=axes, keepdims=True))
        pairs = [fx.inv_sqrt(int(v)) for v in total.ravel()]
        mult = np.array([m for m, _ in pairs], dtype=np.int64).reshape(total.shape)
        exponent = np.array([e for _, e in pairs], dtype=np.int64).reshape(total.shape)
        return [np.clip(fx.mbqm(d, mult, exponent + 7), -128, 127).astype(np.int8)]

    def kernel(self, graph, node):
        a0, a1 = reduced_dims(graph, node)
        views = (node.inputs[0], node.outputs[0])
        if graph[node.inputs[0]].dtype == "float32":
            return Call("mcud_l2norm_f32", views, Struct.of("mcud_l2norm_params", axis=a0, axis_end=a1, zero_point=0))
        require(self.accepts_int8(graph, node), "an int8 L2Normalization is TFLite's kernel (the importer's): it "
                                                "needs per-tensor quantized int8 input and output")
        zp = graph[node.inputs[0]].quant.single()[1]
        return Call("mcud_l2norm_s8_tfl", views, Struct.of("mcud_l2norm_params", axis=a0, axis_end=a1, zero_point=zp))
