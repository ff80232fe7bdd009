"""BatchNormalization in inference form: y = x * a[c] + b[c] along channel axis 1.

a = scale / sqrt(var + epsilon) and b = B - mean * a are computed in float64 from the constant
inputs and rounded to float32 once, at compile time; the kernel only multiplies and adds. Most
BatchNormalizations never reach a kernel: mcudeploy/passes/batchnorm.py folds the ones after a
float Conv into its weights. int8 is declined (the compiler keeps the op in float).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import (Array, Call, Dim, OnnxNode, Op, Struct, TensorExpr, elementwise_expr, require,
                                require_valid)
from mcudeploy.ops.registry import register


def affine(graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) per channel, in float64."""
    scale, bias, mean, var = (graph[n].data.astype(np.float64).reshape(-1) for n in node.inputs[1:5])
    a = scale / np.sqrt(var + float(node.attr("epsilon", 1e-5)))
    return a, bias - mean * a


@register
class BatchNormalization(Op):
    name = "BatchNormalization"
    onnx_types = ("BatchNormalization",)
    fuses_activation = True

    def from_onnx(self, onnx: OnnxNode):
        require(len(onnx.inputs) == 5 and all(onnx.inputs), "BatchNormalization needs scale, B, mean and var")
        require(all(onnx.const(n) is not None for n in onnx.inputs[1:]),
                "BatchNormalization needs constant scale, B, mean and var (inference form)")
        require(len(onnx.outputs) == 1 or not any(onnx.outputs[1:]),
                "BatchNormalization with running mean/var outputs (training) is not supported")
        require(not onnx.attrs.get("training_mode", 0), "BatchNormalization in training mode is not supported")
        require(onnx.attrs.get("spatial", 1) == 1, "BatchNormalization with spatial=0 is not supported")
        return onnx.inputs, {"epsilon": float(onnx.attrs.get("epsilon", 1e-5))}

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype == "float32", f"BatchNormalization of {x.dtype} is not supported")
        require(len(x.shape) >= 2, "BatchNormalization needs an input of rank 2 or more (N, C, ...)")
        channels = x.shape[1]
        for n in node.inputs[1:5]:
            require(graph.is_const(n), "BatchNormalization needs constant scale, B, mean and var")
            require(graph[n].size == channels, f"BatchNormalization parameter {n} has {graph[n].size} values for "
                                               f"{channels} channels")
            require(graph[n].dtype == "float32", f"BatchNormalization parameter {n} is {graph[n].dtype}")
        var = graph[node.inputs[4]].data.astype(np.float64) + float(node.attr("epsilon", 1e-5))
        require_valid(bool(np.all(var > 0)), f"has variance plus epsilon {var.min():g} in {node.inputs[4]}: it "
                                             f"must be positive")
        with np.errstate(all="ignore"):
            folded = np.concatenate(affine(graph, node)).astype(np.float32)
        require_valid(bool(np.isfinite(folded).all()), "folds to a scale or shift beyond what a float holds")
        return [(x.shape, x.dtype)]

    def expr(self, graph, node):
        e = elementwise_expr(graph, node.with_(inputs=node.inputs[:1]))
        per_channel = (Dim.identity("d1"),)
        return TensorExpr(e.axes, (e.inputs[0],) + (per_channel,) * 4, e.outputs)

    def inplace(self, graph, node):
        return 0

    def accepts_int8(self, graph, node) -> bool:
        return False

    def macs(self, graph, node):
        return graph[node.outputs[0]].size

    def reference(self, graph, node, inputs):
        a, b = affine(graph, node)
        x = inputs[0]
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = x * a.astype(np.float32).reshape(shape) + b.astype(np.float32).reshape(shape)
        lo, hi = requant.float_clip(node)
        return [np.clip(y, np.float32(lo), np.float32(hi)).astype(np.float32)]

    def kernel(self, graph, node):
        a, b = affine(graph, node)
        lo, hi = requant.float_clip(node)
        return Call("mcud_batchnorm_f32", (node.inputs[0], node.outputs[0]), Struct.of(
            "mcud_batchnorm_params", a=Array("float", tuple(float(v) for v in a.astype(np.float32))),
            b=Array("float", tuple(float(v) for v in b.astype(np.float32))), act_min=lo, act_max=hi))
