"""The pieces of an average over whole maps, or of a TFLite model's ReduceSum or ReduceMean, cut along its
reduction (mcudeploy/partition, ``Op.partial``).

Not ONNX operators: the split makes them. AvgPoolSum(x rows, running sum) adds the rows of each
map to the running sum left by the piece before (none for the first), row-major, in the order
the whole average sums its taps, so the last sum is bit for bit the whole one; AvgPoolFinish
divides it by the positions, quantizes and clips as the average would (mcudeploy/ops/pooling.py).
The sum is float32 for float and QDQ int8 (the taps dequantized one by one, as the average does)
and int32 for TFLite's int8 and int16 (the codes). The running sum is one value per (n, c): a few hundred
bytes where the map it stands for is kilobytes.

ReduceSumPart(x rows, running sum) and ReduceFinish do the same for a reduction cut along its outermost
reduced axis (ops/reduce.py): the running sum has the reduction's keepdims shape, float32 (added in the
whole reduction's row-major order) or int32 (TFLite's codes, wrapping as its sum does); the finish
divides (float Mean) or requantizes it as TFLite's QuantizedMeanOrSum does, into the output's shape.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ops import requant
from mcudeploy.ops.base import Call, Op, Struct, require
from mcudeploy.ops.reduce import CODES, moved, tflite_mean_multiplier
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS


SUFFIX = {"float32": "f32", "int8": "s8", "int16": "s16"}


def _acc_dtype(graph, x) -> str:
    return "int32" if x.dtype in ("int8", "int16") and requant.arithmetic(graph) == "tflite" else "float32"


@register
class AvgPoolSum(Op):
    name = "AvgPoolSum"
    onnx_types = ()

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        tflite = requant.arithmetic(graph) == "tflite"
        require(len(x.shape) in (3, 4) and (x.dtype in ("float32", "int8") or (tflite and x.dtype == "int16")),
                f"AvgPoolSum takes float32 or int8 NCL/NCHW rows, not {x.dtype}{x.shape}")
        shape = x.shape[:2] + (1,) * (len(x.shape) - 2)
        acc = _acc_dtype(graph, x)
        if len(node.inputs) > 1 and node.inputs[1]:
            before = graph[node.inputs[1]]
            require(before.shape == shape and before.dtype == acc,
                    f"AvgPoolSum's running sum is {before.dtype}{before.shape}, not {acc}{shape}")
        return [(shape, acc)]

    def inplace(self, graph, node):
        return 1 if len(node.inputs) > 1 and node.inputs[1] else None

    def macs(self, graph, node):
        return graph[node.inputs[0]].size

    def reference(self, graph, node, inputs):
        x = inputs[0]
        t = graph[node.inputs[0]]
        acc = inputs[1] if len(inputs) > 1 and inputs[1] is not None else None
        flat = x.reshape(x.shape[:2] + (-1,))
        if _acc_dtype(graph, t) == "int32":
            s = flat.astype(np.int64).sum(axis=-1) + (0 if acc is None else acc.reshape(x.shape[:2]))
            return [s.astype(np.int32).reshape(x.shape[:2] + (1,) * (x.ndim - 2))]
        if t.dtype == "int8":
            sx, zx = t.quant.single()
            flat = (flat.astype(np.int32) - zx).astype(np.float32) * np.float32(sx)
        s = np.zeros(x.shape[:2], np.float32) if acc is None else acc.reshape(x.shape[:2]).astype(np.float32)
        for k in range(flat.shape[-1]):  # the kernel's order: row-major over the rows it is given
            s = s + flat[..., k]
        return [s.reshape(x.shape[:2] + (1,) * (x.ndim - 2))]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        before = node.inputs[1] if len(node.inputs) > 1 else ""
        zp, scale = (x.quant.single()[1], x.quant.single()[0]) if x.dtype != "float32" else (0, 1.0)
        suffix = SUFFIX[x.dtype] + ("_tfl" if _acc_dtype(graph, x) == "int32" else "")
        return Call(f"mcud_avgpool_sum_{suffix}", (node.inputs[0], before, node.outputs[0]),
                    Struct.of("mcud_avgpool_sum_params", in_zero_point=int(zp), in_scale=float(scale)))


@register
class AvgPoolFinish(Op):
    name = "AvgPoolFinish"
    onnx_types = ()

    def infer(self, graph, node):
        acc = graph[node.inputs[0]]
        dtype = node.attr("dtype")
        known = dtype in ("float32", "int8") or (dtype == "int16" and acc.dtype == "int32")
        require(acc.dtype in ("float32", "int32") and known and int(node.attr("count", 0)) >= 1,
                f"AvgPoolFinish of a {acc.dtype} sum into {dtype} over {node.attr('count')} positions is not valid")
        return [(acc.shape, dtype)]

    def macs(self, graph, node):
        return graph[node.outputs[0]].size

    def reference(self, graph, node, inputs):
        s, y = inputs[0], graph[node.outputs[0]]
        count = int(node.attr("count"))
        if y.dtype == "float32":
            lo, hi = requant.float_clip(node)
            return [np.clip(s / np.float32(count), np.float32(lo), np.float32(hi)).astype(np.float32)]
        lo, hi = requant.clip_range(node, y)
        if s.dtype == np.int32:  # TFLite: divide rounding half away from zero
            a, half = s.astype(np.int64), count // 2
            q = np.where(a > 0, (a + half) // count, -((-(a - half)) // count))
            return [np.clip(q, lo, hi).astype(y.dtype)]
        sy, zy = y.quant.single()
        q = np.rint((s / np.float32(count)) / np.float32(sy)).astype(np.int64) + zy
        return [np.clip(q, lo, hi).astype(np.int8)]

    def kernel(self, graph, node):
        acc, y = graph[node.inputs[0]], graph[node.outputs[0]]
        fields = {"count": int(node.attr("count")), "out_zero_point": 0, "out_scale": 1.0,
                  "act_min": -128, "act_max": 127}
        lo_f, hi_f = requant.float_clip(node)
        fields.update(clip_min=lo_f, clip_max=hi_f)
        if y.dtype != "float32":
            scale, zp = y.quant.single()
            lo, hi = requant.clip_range(node, y)
            fields.update(out_zero_point=int(zp), out_scale=float(scale), act_min=lo, act_max=hi)
        suffix = SUFFIX[y.dtype] + ("_tfl" if acc.dtype == "int32" else "")
        return Call(f"mcud_avgpool_finish_{suffix}", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_avgpool_finish_params", **fields))


def _flags(rank: int, axes) -> tuple[int, ...]:
    return tuple(int(d in axes) for d in range(rank)) + (0,) * (MAX_DIMS - rank)


@register
class ReduceSumPart(Op):
    name = "ReduceSumPart"
    onnx_types = ()

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        axes = tuple(node.attr("axes"))
        require(x.dtype in SUFFIX and (x.dtype == "float32" or requant.arithmetic(graph) == "tflite"),
                f"ReduceSumPart takes float32 or a TFLite model's int8 and int16, not {x.dtype}")
        shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        acc = _acc_dtype(graph, x)
        if len(node.inputs) > 1 and node.inputs[1]:
            before = graph[node.inputs[1]]
            require(before.shape == shape and before.dtype == acc,
                    f"ReduceSumPart's running sum is {before.dtype}{before.shape}, not {acc}{shape}")
        return [(shape, acc)]

    def inplace(self, graph, node):
        return 1 if len(node.inputs) > 1 and node.inputs[1] else None

    def macs(self, graph, node):
        return graph[node.inputs[0]].size

    def reference(self, graph, node, inputs):
        x = inputs[0]
        axes = tuple(node.attr("axes"))
        shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        r = moved(x, axes)
        before = inputs[1] if len(inputs) > 1 and inputs[1] is not None else None
        if x.dtype != np.float32:
            total = r.astype(np.int64).sum(axis=-1) + (0 if before is None else before.reshape(r.shape[:-1]))
            return [requant.wrap32(total).astype(np.int32).reshape(shape)]
        acc = np.zeros(r.shape[:-1], np.float32) if before is None else before.reshape(r.shape[:-1])
        for j in range(r.shape[-1]):  # the kernel's order: row-major over the reduced dims
            acc = acc + r[..., j]
        return [acc.astype(np.float32).reshape(shape)]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        before = node.inputs[1] if len(node.inputs) > 1 else ""
        return Call(f"mcud_reduce_part_{SUFFIX[x.dtype]}", (node.inputs[0], before, node.outputs[0]),
                    Struct.of("mcud_reduce_part_params", reduced=_flags(len(x.shape), node.attr("axes"))))


@register
class ReduceFinish(Op):
    """attrs: kind ("sum" or "mean"), count (the values summed per output), shape and dtype of the output,
    in_scale and in_zero_point (the reduction's input's quantization, for integers)."""

    name = "ReduceFinish"
    onnx_types = ()

    def infer(self, graph, node):
        acc = graph[node.inputs[0]]
        shape, dtype = tuple(node.attr("shape")), node.attr("dtype")
        require(node.attr("kind") in ("sum", "mean") and int(node.attr("count", 0)) >= 1 and
                acc.dtype == ("float32" if dtype == "float32" else "int32") and acc.size == int(np.prod(shape)),
                f"ReduceFinish of a {acc.dtype}{acc.shape} sum into {dtype}{shape} is not valid")
        return [(shape, dtype)]

    def macs(self, graph, node):
        return graph[node.outputs[0]].size

    def _params(self, graph, node) -> dict:
        y = graph[node.outputs[0]]
        fields = {"op": CODES[node.attr("kind")], "count": int(node.attr("count")), "in_zero_point": 0,
                  "out_zero_point": 0, "act_min": 0, "act_max": 0, "mult": 0, "shift": 31}
        if y.dtype != "float32":
            sy, zy = y.quant.single()
            mult, shift = requant.tflite_multiplier(float(node.attr("in_scale")) / float(sy))
            if node.attr("kind") == "mean":
                mult, shift = tflite_mean_multiplier(mult, shift, fields["count"])
            lo, hi = requant.QRANGE[y.dtype]
            fields.update(in_zero_point=int(node.attr("in_zero_point")), out_zero_point=zy, act_min=lo, act_max=hi,
                          mult=mult, shift=shift)
        return fields

    def reference(self, graph, node, inputs):
        s, y = inputs[0], graph[node.outputs[0]]
        p = self._params(graph, node)
        if y.dtype == "float32":
            out = s / np.float32(p["count"]) if node.attr("kind") == "mean" else s
            return [out.astype(np.float32).reshape(y.shape)]
        shifted = requant.wrap32(s.astype(np.int64) - p["in_zero_point"] * p["count"])
        q = requant.tflite_requantize(shifted, p["mult"], p["shift"]) + p["out_zero_point"]
        return [np.clip(q, p["act_min"], p["act_max"]).astype(y.dtype).reshape(y.shape)]

    def kernel(self, graph, node):
        y = graph[node.outputs[0]]
        suffix = "f32" if y.dtype == "float32" else f"{SUFFIX[y.dtype]}_tfl"
        return Call(f"mcud_reduce_finish_{suffix}", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_reduce_finish_params", **self._params(graph, node)))
