"""Sum, Mean, Max and Min of any number of inputs with numpy broadcasting
(firmware/kernels/variadic.c).

The kernel takes its inputs as one array of views, so there is no cap on their number: it walks
the output in rows (the trailing dimensions every operand steps through with one stride) and
chunks of MCUD_VARIADIC_CHUNK elements, and folds the inputs into an accumulator one after the
other: one pass over the output, each input read once.

float32 folds left to right (x0 + x1 + ...; Mean divides the sum by the count), as the numpy
reference does, so the two agree to the bit.

int8 (per-tensor quantization everywhere) uses the weighted sum of Add (binary.py): input i
contributes (x_i - z_i) * m_i with m_i = round(s_i / s_y * 2^k) (Mean: s_i / (n s_y)) and one
shift k for all; Sum and Mean add the terms in 64 bits, Max and Min keep the largest or smallest
term (the real values, compared on one scale), and the result is rounded half to even once,
+ z_y. Integers without quantization (Max and Min, as ONNX defines them on int8 ... int64) compare
plainly.

A TFLite model's int8 Sum is its ADD_N, as TFLite Micro computes it (add_n.cc, add_n.h): every input of one
quantization (s, z); each input's (x - z) << 20 times TFLite's multiplier of 1/2, summed in 32 bits from the
scaled value of code 0 ((-z) << 20: add_n.h starts its sum there), the sum times 2 s / (2^20 s_y), + z_y.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Array, Call, OnnxNode, Op, Struct, elementwise_expr, require
from mcudeploy.ops.registry import register_kinds
from mcudeploy.ops.util import broadcast_shape, same_shape_input

MAX_RANK = 6
CODES = {"sum": 0, "max": 1, "min": 2}  # MCUD_VARIADIC_* in mcud_variadic.h
PLAIN_INTS = ("int8", "uint8", "int16", "int32", "int64")


def weighted_plan(graph: Graph, node: Node, divisor: int = 1) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(zero points, multipliers, shift k) of the int8 terms: m_i = round(s_i / (divisor * s_y) * 2^k),
    the largest in [2^29, 2^30]; k such that n terms of 255 steps, shifted by k, stay within int32."""
    s_y, _ = requant.qparams(graph, node.outputs[0]).single()
    zeros, ratios = [], []
    for name in node.inputs:
        s, z = requant.qparams(graph, name).single()
        zeros.append(z)
        ratios.append(s / s_y / divisor)
    require(all(math.isfinite(r) and r > 0 for r in ratios), f"int8 {node.op} has a non-positive scale")
    _, exp = math.frexp(max(ratios))  # top = f * 2^exp with f in [0.5, 1)
    k = min(62, 30 - exp)
    require(len(ratios) * 255 * 2.0 ** (30 - k) < 2.0 ** 31,
            f"int8 {node.op} of {len(ratios)} inputs: an input's scale is too large against the output's")
    return tuple(zeros), tuple(int(round(r * 2.0 ** k)) for r in ratios), k


TFL_ADD_N_SHIFT = 20


def tfl_add_n_plan(graph: Graph, node: Node) -> dict:
    """TFLite's int8 ADD_N: its input multiplier (of s / 2s), the scaled value its sum starts from, and the
    output multiplier."""
    quants = {requant.qparams(graph, n).single() for n in node.inputs}
    require(len(quants) == 1, f"int8 {node.op} of a TFLite model needs one quantization for every input")
    (s, z), = quants
    s_y, z_y = requant.qparams(graph, node.outputs[0]).single()
    mult, shift = requant.tflite_multiplier(s / (2 * s))
    y_mult, y_shift = requant.tflite_multiplier(2 * s / ((1 << TFL_ADD_N_SHIFT) * s_y))
    require(y_shift >= 31, f"int8 {node.op} has a scale ratio TFLite cannot take")
    base = int(requant.tflite_requantize(-z << TFL_ADD_N_SHIFT, mult, shift))
    return dict(zero=z, mult=mult, shift=shift, base=base, y_zero=z_y, y_mult=y_mult, y_shift=y_shift)


def round_half_even_shift(acc: np.ndarray, k: int) -> np.ndarray:
    k = np.int64(k)
    return (acc + (np.int64(1) << (k - 1)) - 1 + ((acc >> k) & 1)) >> k


class _Variadic(Op):
    kind = ""  # sum, mean, max, min
    fuses_activation = True
    plain_ints: tuple[str, ...] = ()  # integer types ONNX defines the op on, without quantization

    def from_onnx(self, onnx: OnnxNode):
        require(not onnx.attrs, f"{onnx.op_type} attribute {', '.join(sorted(onnx.attrs))} is not supported")
        require(len(onnx.inputs) >= 1 and all(onnx.inputs), f"{onnx.op_type} needs inputs, none of them empty")
        return tuple(onnx.inputs), {}

    def infer(self, graph, node):
        dtypes = {graph[i].dtype for i in node.inputs}
        require(len(dtypes) == 1, f"{node.op} of mixed {', '.join(sorted(dtypes))} is not supported")
        dtype = dtypes.pop()
        require(dtype in ("float32", "int8") + self.plain_ints, f"{node.op} of {dtype} is not supported")
        shape = broadcast_shape([graph[i].shape for i in node.inputs], node.op)
        require(len(shape) <= MAX_RANK, f"{node.op} output of rank {len(shape)} exceeds {MAX_RANK}")
        return [(shape, dtype)]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def _quantized(self, graph: Graph, node: Node) -> bool:
        names = (*node.inputs, *node.outputs)
        if graph[node.inputs[0]].dtype == "float32":
            return False
        if all(graph[n].quant is None for n in names):
            require(self.plain_ints and graph[node.inputs[0]].dtype in self.plain_ints,
                    f"{node.op} of integers without quantization is not supported")
            require(node.attr("clip_min") is None and node.attr("clip_max") is None,
                    f"integer {node.op} with a fused activation is not supported")
            return False
        dtypes = sorted({graph[n].dtype for n in names})
        require(dtypes == ["int8"], f"quantized {node.op} of {' and '.join(dtypes)} is not supported (int8 only)")
        require(all(graph[n].quant is not None and len(graph[n].quant.scale) == 1 for n in names),
                f"int8 {node.op} needs per-tensor quantization of every input and the output")
        return True

    def _tflite(self, graph: Graph) -> bool:
        return requant.arithmetic(graph) == "tflite"

    def accepts_int8(self, graph, node) -> bool:
        try:
            if self._quantized(graph, node) and self._tflite(graph):
                return self.kind == "sum" and bool(tfl_add_n_plan(graph, node))
            return self._quantized(graph, node) and bool(self._plan(graph, node))
        except (UnsupportedError, ValueError):
            return False

    def _plan(self, graph, node):
        return weighted_plan(graph, node, len(node.inputs) if self.kind == "mean" else 1)

    # ------------------------------------------------------------------ reference
    def reference(self, graph, node, inputs):
        shape = graph[node.outputs[0]].shape
        if inputs[0].dtype == np.float32:
            acc = np.broadcast_to(inputs[0], shape).astype(np.float32)
            for x in inputs[1:]:
                acc = self._fold(acc, x)
            if self.kind == "mean":
                acc = acc / np.float32(len(inputs))
            lo, hi = requant.float_clip(node)
            return [np.clip(acc, np.float32(lo), np.float32(hi)).astype(np.float32)]
        if not self._quantized(graph, node):
            acc = np.broadcast_to(inputs[0], shape)
            for x in inputs[1:]:
                acc = self._fold(acc, x)
            return [np.ascontiguousarray(acc)]
        if self._tflite(graph):
            return [self._tfl_add_n(graph, node, inputs)]
        zeros, mults, k = self._plan(graph, node)
        terms = [(x.astype(np.int64) - z) * m for x, z, m in zip(inputs, zeros, mults)]
        acc = np.broadcast_to(terms[0], shape)
        for t in terms[1:]:
            acc = self._fold(acc, t)
        _, z_y = requant.qparams(graph, node.outputs[0]).single()
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return [np.clip(round_half_even_shift(acc, k) + z_y, lo, hi).astype(np.int8)]

    def _tfl_add_n(self, graph, node, inputs) -> np.ndarray:
        require(self.kind == "sum", f"int8 {node.op} of a TFLite model is not supported")
        p = tfl_add_n_plan(graph, node)
        acc = np.int64(p["base"])
        for x in inputs:
            scaled = requant.tflite_requantize((x.astype(np.int64) - p["zero"]) << TFL_ADD_N_SHIFT, p["mult"],
                                               p["shift"])
            acc = requant.wrap32(acc + scaled)
        y = np.clip(requant.tflite_requantize(acc, p["y_mult"], p["y_shift"]) + p["y_zero"], -128, 127)
        return np.broadcast_to(y, graph[node.outputs[0]].shape).astype(np.int8)

    def _fold(self, acc, x):
        if self.kind == "max":
            return np.maximum(acc, x)
        if self.kind == "min":
            return np.minimum(acc, x)
        return acc + x

    # ------------------------------------------------------------------ kernel
    def kernel(self, graph, node):
        views = tuple(node.inputs) + (node.outputs[0],)
        n = len(node.inputs)
        op = CODES["sum" if self.kind == "mean" else self.kind]
        dtype = graph[node.inputs[0]].dtype
        if dtype == "float32":
            lo, hi = requant.float_clip(node)
            return Call("mcud_variadic_f32", views, Struct.of("mcud_variadic_f32_params", op=op,
                        mean=int(self.kind == "mean"), act_min=lo, act_max=hi), listed=n)
        if not self._quantized(graph, node):
            return Call(f"mcud_variadic_{dtype}", views, Struct.of("mcud_variadic_int_params", op=op), listed=n)
        if self._tflite(graph):
            require(self.kind == "sum", f"int8 {node.op} of a TFLite model is not supported")
            return Call("mcud_add_n_s8_tfl", views, Struct.of("mcud_add_n_s8_tfl_params", **tfl_add_n_plan(graph, node)),
                        listed=n)
        zeros, mults, k = self._plan(graph, node)
        _, z_y = requant.qparams(graph, node.outputs[0]).single()
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return Call("mcud_variadic_s8", views, Struct.of(
            "mcud_variadic_s8_params", op=op, zero=Array("int32_t", zeros), mult=Array("int32_t", mults), shift=k,
            y_zero=z_y, act_min=lo, act_max=hi), listed=n)


register_kinds(_Variadic, {
    "Sum": {"kind": "sum"},
    "Mean": {"kind": "mean"},
    "Max": {"kind": "max", "plain_ints": PLAIN_INTS},
    "Min": {"kind": "min", "plain_ints": PLAIN_INTS},
})
