"""Concat along any axis (firmware/kernels/concat.c).

float32 and integer inputs with the output's quantization are copied into their slice of the
output. An int8/uint8 (or an ONNX model's int16) input quantized differently is requantized to
the output's scale and zero point: y = clamp(z_o + requantize(x - z_i, M_i), lo, hi) with
M_i = s_i / s_o, within one step of onnxruntime's DequantizeLinear -> Concat -> QuantizeLinear
(both round half to even; M_i is s_i / s_o to 31 bits). A TFLite model's CONCATENATION has its
inputs quantized as its output (the converter writes a QUANTIZE before any other): a copy.

Tensor expression: one loop axis per output dimension; the concat axis is `full` in every input
and in the output (a piece cannot be cut along it), every other dimension is `identity`.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Array, Axis, Call, Dim, Op, Struct, TensorExpr, require
from mcudeploy.ops.requant import QRANGE, arithmetic, quantize_multiplier, requantize
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS, kernel_suffix
from mcudeploy.ops.util import norm_axis

MAX_INPUTS = 8  # MCUD_CONCAT_MAX_INPUTS in mcud_concat.h


def _requant_table(graph: Graph, node: Node):
    """Per input (zero point, mult, shift), shift 0 meaning "same quantization: copy"; None when
    the op is a plain copy (float, or every input quantized as the output)."""
    out = graph[node.outputs[0]]
    if out.dtype not in ("int8", "uint8", "int16") or out.quant is None:
        return None
    s_o, _ = out.quant.single()
    table, needed = [], False
    for name in node.inputs:
        q = graph[name].quant
        if q == out.quant:
            table.append((0, 0, 0))
            continue
        s_i, z_i = q.single()
        mult, shift = quantize_multiplier(s_i / s_o)
        table.append((z_i, mult, shift))
        needed = True
    return table if needed else None


@register
class Concat(Op):
    name = "Concat"
    onnx_types = ("Concat",)
    slices = "inputs"

    def _axis(self, graph: Graph, node: Node) -> int:
        return norm_axis(node.attr("axis", 0), len(graph[node.inputs[0]].shape), "Concat")

    def infer(self, graph, node):
        require(len(node.inputs) <= MAX_INPUTS, f"Concat of {len(node.inputs)} inputs (at most {MAX_INPUTS})")
        require(all(node.inputs), "Concat with an empty input name")
        first = graph[node.inputs[0]]
        require(len(first.shape) <= MAX_DIMS, f"Concat of {len(first.shape)}-D tensors (at most {MAX_DIMS})")
        axis = self._axis(graph, node)
        extent = 0
        for name in node.inputs:
            t = graph[name]
            require(t.dtype == first.dtype, f"Concat of {first.dtype} and {t.dtype} inputs")
            require(len(t.shape) == len(first.shape) and all(
                a == b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis),
                f"Concat of shapes {first.shape} and {t.shape} along axis {axis}")
            extent += t.shape[axis]
        kernel_suffix(first.dtype, "Concat")
        return [(first.shape[:axis] + (extent,) + first.shape[axis + 1:], first.dtype)]

    def accepts_int8(self, graph, node):
        tensors = [graph[n] for n in node.inputs] + [graph[node.outputs[0]]]
        if any(t.dtype not in ("int8", "uint8", "int16") for t in tensors):
            return all(t.quant == tensors[0].quant for t in tensors)  # other integers: copy only
        if any(t.quant is None or len(t.quant.scale) != 1 for t in tensors):
            return False
        try:
            table = _requant_table(graph, node)
        except Exception:  # a multiplier out of range
            return False
        return table is None or arithmetic(graph) != "tflite"  # TFLite's CONCATENATION keeps one quantization

    def expr(self, graph, node):
        axis = self._axis(graph, node)
        out = graph[node.outputs[0]].shape
        axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out))
        dims = tuple(Dim.full() if i == axis else Dim.identity(a.name) for i, a in enumerate(axes))
        return TensorExpr(axes, tuple(dims for _ in node.inputs), (dims,))

    def reference(self, graph, node, inputs):
        out = graph[node.outputs[0]]
        table = _requant_table(graph, node)
        if table is None:
            return [np.concatenate(inputs, axis=self._axis(graph, node))]
        lo, hi = QRANGE[out.dtype]
        _, z_o = out.quant.single()
        parts = []
        for x, (z_i, mult, shift) in zip(inputs, table):
            if shift == 0:
                parts.append(x)
            else:
                y = requantize(x.astype(np.int64) - z_i, mult, shift) + z_o
                parts.append(np.clip(y, lo, hi).astype(out.dtype))
        return [np.concatenate(parts, axis=self._axis(graph, node))]

    def macs(self, graph, node):
        return 0

    def kernel(self, graph, node):
        out = graph[node.outputs[0]]
        suffix = kernel_suffix(out.dtype, "Concat")
        views = tuple(node.inputs) + ("",) * (MAX_INPUTS - len(node.inputs)) + (node.outputs[0],)
        fields = {"axis": self._axis(graph, node), "count": len(node.inputs)}
        table = _requant_table(graph, node)
        if table is not None:
            lo, hi = QRANGE[out.dtype]
            fields.update(out_zp=out.quant.single()[1], lo=lo, hi=hi,
                          in_zp=Array("int32_t", tuple(int(t[0]) for t in table)),
                          mult=Array("int32_t", tuple(int(t[1]) for t in table)),
                          shift=Array("int32_t", tuple(int(t[2]) for t in table)))
        return Call(f"mcud_concat_{suffix}", views, Struct.of("mcud_concat_params", **fields))
