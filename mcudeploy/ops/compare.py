"""TFLite's comparisons (EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL: a bool output) and the
larger or smaller of two (MAXIMUM, MINIMUM), with numpy broadcasting (firmware/kernels/compare.c).

As TFLite Micro computes them (comparisons.cc, maximum_minimum.cc):

- float32, int32, int64 and bool (EQUAL, NOT_EQUAL) compare their values;
- int8 comparisons compare each input's value on a common scale: (x - z) << 8 times its scale as TFLite's
  multiplier (QuantizeMultiplierSmallerThanOneExp of the scale itself), rounded as TFLite rounds;
- MAXIMUM and MINIMUM of any type compare the stored values (int8 and int16 codes) whatever the
  quantization, and give one of them: a > b ? a : b, a < b ? a : b.

These operators come from .tflite files only (no ONNX op type).
"""
from __future__ import annotations

import operator

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Call, Op, Struct, elementwise_expr, require
from mcudeploy.ops.registry import register_kinds
from mcudeploy.ops.util import broadcast_shape, same_shape_input

MAX_RANK = 6
CODES = {"equal": 0, "not_equal": 1, "greater": 2, "greater_equal": 3, "less": 4, "less_equal": 5}  # mcud_compare.h
FUNCTIONS = {"equal": operator.eq, "not_equal": operator.ne, "greater": operator.gt, "greater_equal": operator.ge,
             "less": operator.lt, "less_equal": operator.le}
SUFFIX = {"float32": "f32", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "bool": "bool"}
TFL_COMPARE_SHIFT = 8  # TFLite's int8 comparisons: inputs scaled up before their multipliers


def _infer(node: Node, graph: Graph, dtypes: tuple[str, ...], out: str = ""):
    require(len(node.inputs) == 2, f"{node.op} takes 2 inputs")
    types = {graph[i].dtype for i in node.inputs}
    require(len(types) == 1, f"{node.op} of mixed {', '.join(sorted(types))} is not supported")
    dtype = types.pop()
    require(dtype in dtypes, f"{node.op} of {dtype} is not supported")
    shape = broadcast_shape([graph[i].shape for i in node.inputs], node.op)
    require(len(shape) <= MAX_RANK, f"{node.op} output of rank {len(shape)} exceeds {MAX_RANK}")
    return [(shape, out or dtype)]


def tfl_compare_plan(graph: Graph, node: Node) -> dict:
    """TFLite's int8 comparison (ComparisonsPrepare): each input's multiplier is its scale."""
    plan = {"left_shift": TFL_COMPARE_SHIFT}
    for which, name in zip("ab", node.inputs):
        scale, zero = requant.qparams(graph, name).single()
        mult, shift = requant.tflite_multiplier(scale)
        require(shift >= 31, f"int8 {node.op} of an input scale of 1 or more is not supported (TFLite refuses it)")
        plan.update({f"{which}_zero": zero, f"{which}_mult": mult, f"{which}_shift": shift})
    return plan


def _scaled(x: np.ndarray, p: dict, which: str) -> np.ndarray:
    up = (x.astype(np.int64) - p[f"{which}_zero"]) << p["left_shift"]
    return requant.tflite_requantize(up, p[f"{which}_mult"], p[f"{which}_shift"])


class _Compare(Op):
    kind = ""  # a key of CODES

    def _quantized(self, graph: Graph, node: Node) -> bool:
        return graph[node.inputs[0]].dtype == "int8"

    def infer(self, graph, node):
        dtypes = ("float32", "int8", "int32", "int64") + (("bool",) if self.kind in ("equal", "not_equal") else ())
        return _infer(node, graph, dtypes, "bool")

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def accepts_int8(self, graph, node) -> bool:
        if not self._quantized(graph, node):
            return True
        if not all(graph[n].quant is not None and len(graph[n].quant.scale) == 1 for n in node.inputs):
            return False
        try:
            tfl_compare_plan(graph, node)
        except (UnsupportedError, ValueError):
            return False
        return True

    def reference(self, graph, node, inputs):
        a, b = inputs
        if self._quantized(graph, node):
            require(self.accepts_int8(graph, node),
                    f"quantized {node.op} of {graph[node.inputs[0]].dtype} needs per-tensor int8 inputs")
            p = tfl_compare_plan(graph, node)
            a, b = _scaled(a, p, "a"), _scaled(b, p, "b")
        y = FUNCTIONS[self.kind](a, b)
        return [np.broadcast_to(y, graph[node.outputs[0]].shape).astype(np.bool_)]

    def kernel(self, graph, node):
        views = tuple(node.inputs) + (node.outputs[0],)
        if self._quantized(graph, node):
            require(self.accepts_int8(graph, node),
                    f"quantized {node.op} of {graph[node.inputs[0]].dtype} needs per-tensor int8 inputs")
            return Call("mcud_compare_s8_tfl", views, Struct.of(
                "mcud_compare_s8_params", op=CODES[self.kind], **tfl_compare_plan(graph, node)))
        suffix = SUFFIX[graph[node.inputs[0]].dtype]
        return Call(f"mcud_compare_{suffix}", views, Struct.of("mcud_compare_params", op=CODES[self.kind]))


register_kinds(_Compare, {
    "Equal": {"kind": "equal", "onnx_types": ()},
    "NotEqual": {"kind": "not_equal", "onnx_types": ()},
    "Greater": {"kind": "greater", "onnx_types": ()},
    "GreaterOrEqual": {"kind": "greater_equal", "onnx_types": ()},
    "Less": {"kind": "less", "onnx_types": ()},
    "LessOrEqual": {"kind": "less_equal", "onnx_types": ()},
})


class _Extremum(Op):
    """MAXIMUM (larger) or MINIMUM: one of the two stored values, element by element."""

    larger = True

    def infer(self, graph, node):
        return _infer(node, graph, ("float32", "int8", "int16", "int32", "int64"))

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def accepts_int8(self, graph, node) -> bool:
        return True  # the codes are compared, whatever the quantization (TFLite does so)

    def reference(self, graph, node, inputs):
        a, b = inputs
        y = np.where(a > b, a, b) if self.larger else np.where(a < b, a, b)
        return [np.broadcast_to(y, graph[node.outputs[0]].shape).copy()]

    def kernel(self, graph, node):
        suffix = SUFFIX[graph[node.inputs[0]].dtype]
        return Call(f"mcud_extremum_{suffix}", tuple(node.inputs) + (node.outputs[0],),
                    Struct.of("mcud_extremum_params", larger=int(self.larger)))


register_kinds(_Extremum, {
    "Maximum": {"larger": True, "onnx_types": ()},
    "Minimum": {"larger": False, "onnx_types": ()},
})
