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

ReduceMean over the trailing axes (H and W of NCHW) is global average pooling: the kernel sums
one contiguous run per output (four bytes per load in int8), which takes fewer instructions than
mcud_avgpool's window walk, so it is not rewritten into GlobalAveragePool (whose int8 form follows
onnxruntime's float arithmetic tap by tap, benchmarks/kernel_bench.py has both).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register_kinds
from mcudeploy.ops.shape import MAX_DIMS
from mcudeploy.ops.util import ints, norm_axis

CODES = {"sum": 0, "mean": 1, "max": 2, "min": 3, "l2": 4}  # MCUD_REDUCE_* in mcud_reduce.h


def reduced_axes(graph: Graph, node: Node) -> tuple[int, ...]:
    """The reduced input dimensions, sorted (attribute ``axes``, resolved at import)."""
    return tuple(node.attr("axes"))


def _moved(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x with the reduced dimensions last, flattened into one: shape (kept..., count)."""
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, kept + list(axes))
    return moved.reshape(moved.shape[:len(kept)] + (-1,))


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
        require(x.dtype in ("float32", "int8"), f"{self.name} of {x.dtype} is not supported")
        require(len(x.shape) <= MAX_DIMS, f"{self.name} of a {len(x.shape)}-D tensor (at most {MAX_DIMS})")
        axes = self._resolve(graph, node)
        if node.attr("keepdims", 1):
            shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        else:
            shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return [(shape, x.dtype)]

    def accepts_int8(self, graph, node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if any(t.dtype != "int8" or t.quant is None or len(t.quant.scale) != 1 for t in (x, y)):
            return False
        try:
            self._int8(graph, node)
        except Exception:  # a multiplier out of range
            return False
        return True

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

    def reference(self, graph, node, inputs):
        x = inputs[0]
        axes = self._resolve(graph, node)
        shape = graph[node.outputs[0]].shape
        r = _moved(x, axes)
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
        return Call("mcud_reduce_s8", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_reduce_s8_params", **fields, **self._int8(graph, node)))


register_kinds(_Reduce, {
    "ReduceMean": {"kind": "mean"},
    "ReduceSum": {"kind": "sum", "axes_input_opset": 13},
    "ReduceMax": {"kind": "max"},
    "ReduceMin": {"kind": "min"},
    "ReduceL2": {"kind": "l2"},
})
