"""CumSum along one axis (TFLite's CUMSUM; firmware/kernels/cumsum.c): inclusive or exclusive, forward or
reverse.

float32 adds in float32 from 0 in the order of the walk (from the end when reverse), as TFLite Micro's
reference kernel does, so C and numpy agree to the bit.

int8 (a TFLite model only) is TFLite Micro's quantized CUMSUM (reference/cumsum.h): each (x - z_x),
shifted left by 20, is scaled by QuantizeMultiplierSmallerThanOneExp(1/2) (in effect times 2^19), the
scaled values are added in int32 (wrapping) onto an accumulator that starts where TFLite's starts, at
-z_x scaled the same way (not at 0: its reference kernel begins with the input offset), and each
partial sum is scaled by 2 s_x / (2^20 s_y) (TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp),
plus z_y, clamped.

Not registered for ONNX (whose CumSum takes the axis as an input): TFLite models only.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Axis, Call, Dim, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS
from mcudeploy.ops.util import norm_axis

LEFT_SHIFT = 20  # TFLite's kCumSumIntegerShift


def tflite_params(sx: float, zx: int, sy: float, zy: int) -> dict:
    """TFLite Micro's CUMSUM int8 parameters (cumsum.cc CalculateOpData), in requant's (mult, shift)."""
    twice = 2.0 * sx
    in_mult, in_shift = requant.tflite_multiplier(sx / twice)
    out_mult, out_shift = requant.tflite_multiplier(twice / ((1 << LEFT_SHIFT) * sy))
    require(in_shift >= 31 and out_shift >= 31, "CumSum's output scale is so much finer than its input's that "
                                                "TFLite's multiplier would exceed 1")
    return dict(in_zero_point=zx, out_zero_point=zy, in_mult=in_mult, in_shift=in_shift, out_mult=out_mult,
                out_shift=out_shift)


@register
class CumSum(Op):
    name = "CumSum"
    onnx_types = ()

    def _axis(self, graph: Graph, node: Node) -> int:
        return norm_axis(int(node.attr("axis")), len(graph[node.inputs[0]].shape), self.name)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype == "float32" or (x.dtype == "int8" and requant.arithmetic(graph) == "tflite"),
                f"{self.name} of {x.dtype} is not supported")
        require(1 <= len(x.shape) <= MAX_DIMS, f"{self.name} of a {len(x.shape)}-D tensor (1 to {MAX_DIMS})")
        self._axis(graph, node)
        return [(x.shape, x.dtype)]

    def accepts_int8(self, graph, node) -> bool:
        ts = [graph[node.inputs[0]], graph[node.outputs[0]]]
        if any(t.dtype != "int8" or t.quant is None or len(t.quant.scale) != 1 for t in ts):
            return False
        try:
            self._params(graph, node)
        except Exception:  # a multiplier out of range
            return False
        return True

    def _params(self, graph, node) -> dict:
        (sx, zx), (sy, zy) = graph[node.inputs[0]].quant.single(), graph[node.outputs[0]].quant.single()
        return tflite_params(float(sx), int(zx), float(sy), int(zy))

    def expr(self, graph, node):
        """Every dimension but the axis is one to one; along the axis an output reads all inputs before it
        (after it, when reverse), so that axis cannot be cut."""
        shape = graph[node.inputs[0]].shape
        axis = self._axis(graph, node)
        loop = tuple(Axis(f"d{d}", n) for d, n in enumerate(shape))
        ins = tuple(Dim.full() if d == axis else Dim.identity(a.name) for d, a in enumerate(loop))
        return TensorExpr(loop, (ins,), (tuple(Dim.identity(a.name) for a in loop),))

    def inplace(self, graph, node):
        return 0  # each element is read before its output is written

    def reference(self, graph, node, inputs):
        axis = self._axis(graph, node)
        x = np.moveaxis(inputs[0], axis, -1)
        exclusive, reverse = bool(node.attr("exclusive", 0)), bool(node.attr("reverse", 0))
        order = range(x.shape[-1] - 1, -1, -1) if reverse else range(x.shape[-1])
        y = np.empty_like(x)
        if x.dtype == np.float32:
            acc = np.zeros(x.shape[:-1], np.float32)
            for i in order:
                before = acc
                acc = (acc + x[..., i]).astype(np.float32)
                y[..., i] = before if exclusive else acc
            return [np.moveaxis(y, -1, axis)]
        p = self._params(graph, node)

        def scaled(d):  # TFLite's input stage: (x - z_x) << 20, times QuantizeMultiplier(1/2)
            return requant.tflite_requantize(requant.wrap32(np.asarray(d, np.int64) << LEFT_SHIFT), p["in_mult"],
                                             p["in_shift"])

        acc = np.broadcast_to(scaled(-p["in_zero_point"]), x.shape[:-1]).astype(np.int64)
        for i in order:
            before = acc
            acc = requant.wrap32(acc + scaled(x[..., i].astype(np.int64) - p["in_zero_point"]))
            q = requant.tflite_requantize(before if exclusive else acc, p["out_mult"], p["out_shift"])
            y[..., i] = np.clip(q + p["out_zero_point"], -128, 127)
        return [np.moveaxis(y, -1, axis)]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        fields = dict(axis=self._axis(graph, node), exclusive=int(node.attr("exclusive", 0)),
                      reverse=int(node.attr("reverse", 0)))
        if x.dtype == "float32":
            return Call("mcud_cumsum_f32", (node.inputs[0], node.outputs[0]), Struct.of("mcud_cumsum_params", **fields))
        require(self.accepts_int8(graph, node), "int8 CumSum needs per-tensor quantization")
        return Call("mcud_cumsum_s8_tfl", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_cumsum_tfl_params", **fields, **self._params(graph, node)))
