"""Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceL2 over any set of axes
(firmware/kernels/reduce.c).

Axes come from the attribute (opset < 18; ReduceSum < 13) or a constant second input; none
given reduces every axis, unless noop_with_empty_axes, which reduces none (ReduceL2 then gives
|x|, as ONNX's reference does). keepdims keeps the reduced dimensions with extent 1.

float32 accumulates in float32 in row-major order of the reduced dimensions (the numpy
reference does the same additions in the same order, so C and numpy agree to the bit); the mean
divides the sum by the count, L2 takes sqrtf of the sum of squares.

int8 (per-tensor input and output, the QDQ form DequantizeLinear -> Reduce -> QuantizeLinear):

- Sum and Mean: S = sum of (x - z_x), exact in int32, requantized once by s_x / s_y (Mean:
  s_x / (count * s_y)) and rounded half to even, + z_y.
- Max and Min: the extreme code, requantized by s_x / s_y unless both quantizations agree
  (monotonic, so exact).
- L2: SS = sum of (x - z_x)^2 in int64; y = rint(sqrtf((float)SS) * (float)(s_x / s_y)) + z_y
  in float32, the same operations in C and numpy.

A TFLite model (``Graph.arithmetic == "tflite"``: MEAN, SUM, REDUCE_MAX, REDUCE_MIN) computes int8 and
int16 as TFLite Micro's reference kernels do (reduce_common.cc, reference/reduce.h QuantizedMeanOrSum):

- Sum and Mean: S = the codes summed in int32 (wrapping), S - z_x * count (wrapping), then TFLite's
  MultiplyByQuantizedMultiplier by QuantizeMultiplier(s_x / s_y) (requant.tflite_requantize), + z_y,
  clamped to the type. Mean first folds 1/count into that multiplier in integers
  (``tflite_mean_multiplier``: m * 2^k // count with 2^k the largest power of two up to count, k at most
  32 and at most 31 + the exponent), which is not the same as requantizing by s_x / (count * s_y).
- Max and Min (int8 only; TFLite Micro requires one quantization for input and output): the extreme code.

ReduceMean over the trailing axes (H and W of NCHW) is global average pooling: the kernel sums
one contiguous run per output (four bytes per load in int8), which takes fewer instructions than
mcud_avgpool's window walk, so it is not rewritten into GlobalAveragePool (whose int8 form follows
onnxruntime's float arithmetic tap by tap, benchmarks/kernel_bench.py has both).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Axis, Call, Dim, OnnxNode, Op, Partial, Struct, TensorExpr, require
from mcudeploy.ops.registry import register_kinds
from mcudeploy.ops.shape import MAX_DIMS
from mcudeploy.ops.util import ints, norm_axis

CODES = {"sum": 0, "mean": 1, "max": 2, "min": 3, "l2": 4}  # MCUD_REDUCE_* in mcud_reduce.h
TFLITE_INTS = {"int8": "s8", "int16": "s16"}


def tflite_mean_multiplier(mult: int, shift: int, count: int) -> tuple[int, int]:
    """TFLite's QuantizedMeanOrSum folding 1/count into (mult, shift) (this module's convention, TFLite's
    exponent being 31 - shift): with k = floor(log2(count)), at most 32 and at most 31 + the exponent,
    mult * 2^k // count and the exponent lowered by k."""
    exponent = 31 - shift
    k = min(count.bit_length() - 1, 32, 31 + exponent)
    return (mult << k) // count, 31 - (exponent - k)


def moved(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x with the reduced dimensions last, flattened into one: shape (kept..., count)."""
    kept = [d for d in range(x.ndim) if d not in axes]
    t = np.transpose(x, kept + list(axes))
    return t.reshape(t.shape[:len(kept)] + (-1,))


class _Reduce(Op):
    kind = ""  # sum, mean, max, min, l2
    axes_input_opset = 18  # from this opset the axes are the second input

    def from_onnx(self, onnx: OnnxNode):
        axes = None
        if onnx.opset >= self.axes_input_opset:
            if len(onnx.inputs) > 1 and onnx.inputs[1]:
                value = onnx.const(onnx.inputs[1])
                require(value is not None, f"{onnx.op_type} needs constant axes")
                axes = ints(value)
        elif "axes" in onnx.attrs:
            axes = ints(onnx.attrs["axes"])
        unknown = set(onnx.attrs) - {"axes", "keepdims", "noop_with_empty_axes"}
        require(not unknown, f"{onnx.op_type} attribute {', '.join(sorted(unknown))} is not supported")
        attrs = {"keepdims": int(onnx.attrs.get("keepdims", 1))}
        if not axes:
            attrs["axes"] = () if onnx.attrs.get("noop_with_empty_axes", 0) else None  # None: all, resolved below
        else:
            attrs["axes"] = axes
        return onnx.inputs[:1], attrs

    def _resolve(self, graph: Graph, node: Node) -> tuple[int, ...]:
        rank = len(graph[node.inputs[0]].shape)
        axes = node.attr("axes")
        if axes is None:
            return tuple(range(rank))
        resolved = sorted(norm_axis(a, rank, self.name) for a in axes)
        require(len(set(resolved)) == len(resolved), f"{self.name} axes {tuple(axes)} repeat")
        return tuple(resolved)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        tflite = requant.arithmetic(graph) == "tflite"
        require(x.dtype in ("float32", "int8") or (tflite and x.dtype == "int16" and self.kind in ("sum", "mean")),
                f"{self.name} of {x.dtype} is not supported")
        require(len(x.shape) <= MAX_DIMS, f"{self.name} of a {len(x.shape)}-D tensor (at most {MAX_DIMS})")
        axes = self._resolve(graph, node)
        if node.attr("keepdims", 1):
            shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        else:
            shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return [(shape, x.dtype)]

    def accepts_int8(self, graph, node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        tflite = requant.arithmetic(graph) == "tflite"
        ints = ("int8", "int16") if tflite else ("int8",)
        if any(t.dtype not in ints or t.dtype != x.dtype or t.quant is None or len(t.quant.scale) != 1
               for t in (x, y)):
            return False
        if tflite and self.kind in ("max", "min") and x.quant.single() != y.quant.single():
            return False  # TFLite Micro's REDUCE_MAX and REDUCE_MIN keep the quantization
        try:
            self._tflite(graph, node) if tflite else self._int8(graph, node)
        except Exception:  # a multiplier out of range
            return False
        return True

    def piece(self, graph, node, axis, rows, pads):
        """A piece along a kept axis computes its outputs from its rows alone, with the same attributes
        (the axes are dimensions, not values per index)."""
        return dict(node.attrs) if pads is None else None

    def expr(self, graph, node):
        x = graph[node.inputs[0]].shape
        axes = self._resolve(graph, node)
        loop = [Axis(f"r{d}" if d in axes else f"d{d}", n, "reduction" if d in axes else "spatial")
                for d, n in enumerate(x)]
        ins = tuple(Dim.identity(a.name) for a in loop)
        if node.attr("keepdims", 1):
            outs = tuple(Dim.broadcast() if d in axes else Dim.identity(f"d{d}") for d in range(len(x)))
        else:
            outs = tuple(Dim.identity(f"d{d}") for d in range(len(x)) if d not in axes)
        return TensorExpr(tuple(loop), (ins,), (outs,))

    def macs(self, graph, node):
        return graph[node.inputs[0]].size

    def partial(self, graph, node, axis):
        """A TFLite model's Sum or Mean cut along its outermost reduced axis: the pieces add their rows to
        a running sum (float32, or int32 of the codes) in the whole reduction's order, and the finish
        divides or requantizes it (ops/accumulate.py)."""
        axes = self._resolve(graph, node)
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if (requant.arithmetic(graph) != "tflite" or self.kind not in ("sum", "mean") or not axes
                or axis != f"r{axes[0]}" or (x.dtype != "float32" and not self.accepts_int8(graph, node))):
            return None
        shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        scale, zero = x.quant.single() if x.quant is not None else (1.0, 0)
        finish = {"kind": self.kind, "count": self._count(graph, node), "shape": y.shape, "dtype": y.dtype,
                  "in_scale": float(scale), "in_zero_point": int(zero)}
        return Partial("ReduceSumPart", {"axes": axes}, shape, "float32" if x.dtype == "float32" else "int32",
                       "ReduceFinish", finish)

    # ------------------------------------------------------------------ arithmetic
    def _count(self, graph: Graph, node: Node) -> int:
        shape = graph[node.inputs[0]].shape
        return int(np.prod([shape[d] for d in self._resolve(graph, node)], dtype=np.int64))

    def _int8(self, graph: Graph, node: Node) -> dict:
        """The integer parameters: zero points, the requantization and the output range."""
        sx, zx = graph[node.inputs[0]].quant.single()
        sy, zy = graph[node.outputs[0]].quant.single()
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        fields = dict(in_zero_point=zx, out_zero_point=zy, act_min=lo, act_max=hi, requant=1, mult=0, shift=1,
                      ratio=float(np.float32(sx / sy)))
        if self.kind in ("max", "min") and (sx, zx) == (sy, zy):
            fields["requant"] = 0
        elif self.kind != "l2":
            real = sx / sy / (self._count(graph, node) if self.kind == "mean" else 1)
            fields["mult"], fields["shift"] = requant.quantize_multiplier(real)
        return fields

    def _tflite(self, graph: Graph, node: Node) -> dict:
        """TFLite's integer parameters (int8, int16): zero points, (mult, shift) for Sum (s_x / s_y) and
        Mean (with 1/count folded in), the type's range."""
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        sx, zx = x.quant.single()
        sy, zy = y.quant.single()
        lo, hi = requant.QRANGE[y.dtype]
        fields = dict(in_zero_point=zx, out_zero_point=zy, act_min=lo, act_max=hi, mult=0, shift=31)
        if self.kind in ("sum", "mean"):
            mult, shift = requant.tflite_multiplier(float(sx) / float(sy))
            if self.kind == "mean":
                mult, shift = tflite_mean_multiplier(mult, shift, self._count(graph, node))
            fields.update(mult=mult, shift=shift)
        return fields

    def _tflite_reference(self, graph: Graph, node: Node, r: np.ndarray) -> np.ndarray:
        p = self._tflite(graph, node)
        if self.kind in ("max", "min"):
            return r.max(axis=-1) if self.kind == "max" else r.min(axis=-1)
        total = requant.wrap32(r.astype(np.int64).sum(axis=-1))
        shifted = requant.wrap32(total - p["in_zero_point"] * r.shape[-1])
        q = requant.tflite_requantize(shifted, p["mult"], p["shift"]) + p["out_zero_point"]
        return np.clip(q, p["act_min"], p["act_max"]).astype(r.dtype)

    def reference(self, graph, node, inputs):
        x = inputs[0]
        axes = self._resolve(graph, node)
        shape = graph[node.outputs[0]].shape
        r = moved(x, axes)
        if x.dtype != np.float32 and requant.arithmetic(graph) == "tflite":
            return [self._tflite_reference(graph, node, r).reshape(shape)]
        if x.dtype == np.float32:
            if self.kind in ("max", "min"):
                y = r.max(axis=-1) if self.kind == "max" else r.min(axis=-1)
                return [y.reshape(shape)]
            acc = np.zeros(r.shape[:-1], np.float32)
            for j in range(r.shape[-1]):  # the C kernel's order: row-major over the reduced dims
                v = r[..., j]
                acc = acc + (v * v if self.kind == "l2" else v)
            if self.kind == "mean":
                acc = acc / np.float32(r.shape[-1])
            elif self.kind == "l2":
                acc = np.sqrt(acc)
            return [acc.astype(np.float32).reshape(shape)]
        p = self._int8(graph, node)
        d = r.astype(np.int64) - p["in_zero_point"]
        if self.kind in ("max", "min"):
            m = d.max(axis=-1) if self.kind == "max" else d.min(axis=-1)
            q = requant.requantize(m, p["mult"], p["shift"]) + p["out_zero_point"] if p["requant"] else \
                m + p["in_zero_point"]
        elif self.kind == "l2":
            ss = (d * d).sum(axis=-1).astype(np.float32)
            q = np.rint(np.sqrt(ss) * np.float32(p["ratio"])).astype(np.int64) + p["out_zero_point"]
        else:
            q = requant.requantize(d.sum(axis=-1), p["mult"], p["shift"]) + p["out_zero_point"]
        return [np.clip(q, p["act_min"], p["act_max"]).astype(np.int8).reshape(shape)]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        axes = self._resolve(graph, node)
        reduced = tuple(int(d in axes) for d in range(len(x.shape))) + (0,) * (MAX_DIMS - len(x.shape))
        fields = dict(op=CODES[self.kind], reduced=reduced, keepdims=int(node.attr("keepdims", 1)))
        if x.dtype == "float32":
            return Call("mcud_reduce_f32", (node.inputs[0], node.outputs[0]),
                        Struct.of("mcud_reduce_f32_params", **fields))
        if requant.arithmetic(graph) == "tflite":
            require(self.accepts_int8(graph, node), f"{x.dtype} {self.name} needs per-tensor quantization")
            return Call(f"mcud_reduce_{TFLITE_INTS[x.dtype]}_tfl", (node.inputs[0], node.outputs[0]),
                        Struct.of("mcud_reduce_tfl_params", **fields, **self._tflite(graph, node)))
        return Call("mcud_reduce_s8", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_reduce_s8_params", **fields, **self._int8(graph, node)))


register_kinds(_Reduce, {
    "ReduceMean": {"kind": "mean"},
    "ReduceSum": {"kind": "sum", "axes_input_opset": 13},
    "ReduceMax": {"kind": "max"},
    "ReduceMin": {"kind": "min"},
    "ReduceL2": {"kind": "l2"},
})
