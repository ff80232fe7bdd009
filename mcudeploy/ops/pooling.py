"""MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool on NCHW (2-D) and NCL (1-D).

The geometry follows onnxruntime: the output extent per spatial dim is
floor/ceil((in + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1, with ceil_mode dropping a
last window that would start in the end padding. An average divides by the number of window
positions inside the input (count_include_pad=0) or inside [-pad_begin, in + pad_end)
(count_include_pad=1).

int8 average follows the QDQ definition in float32, step for step: dequantize each tap
((x - zx) as float times s_x), sum the taps in window order (row-major), divide by the count,
divide by s_y, round half to even, add zy. Exact ties are frequent in an average (a sum over 64
values divided by 64 with equal scales), and an integer rounding rule resolves them differently
from the float arithmetic onnxruntime uses; the later layers amplify a 1-step difference (10+
steps at a ResNet-8 softmax). The C kernel performs the same float32 operations in the same
order (-ffp-contract=off), so numpy and C still agree bit for bit. int8 max is a plain max
when input and output quantization agree, else max then requantize (monotonic, so exact).

A TFLite model's int16 (16x8) pools are TFLite Micro's, as its int8 ones: the max of the codes, and the
average of the codes inside the input rounded half away from zero (input and output share their
quantization), clamped to the fused activation's range.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Axis, Call, Dim, OnnxNode, Op, Partial, Struct, TensorExpr, require
from mcudeploy.ops.registry import register

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")
_FLT_LOWEST = -float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class _Geometry:
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    pad_begin: tuple[int, ...]
    pad_end: tuple[int, ...]
    out: tuple[int, ...]


def _out_extent(n: int, k: int, s: int, d: int, pb: int, pe: int, ceil_mode: bool) -> int:
    num = n + pb + pe - ((k - 1) * d + 1)
    require(num >= 0, f"the pooling window ({k}, dilation {d}) is larger than the padded input ({n + pb + pe})")
    if not ceil_mode:
        return num // s + 1
    out = -(-num // s) + 1
    if (out - 1) * s >= n + pb:  # the last window must start inside the input or the begin padding
        out -= 1
    return out


def _geometry(graph: Graph, node: Node) -> _Geometry:
    shape = graph[node.inputs[0]].shape
    spatial = shape[2:]
    rank = len(spatial)
    if node.attr("global"):
        return _Geometry(spatial, (1,) * rank, (1,) * rank, (0,) * rank, (0,) * rank, (1,) * rank)
    kernel = node.attr("kernel_shape")
    stride = node.attr("strides") or (1,) * rank
    dilation = node.attr("dilations") or (1,) * rank
    pads = node.attr("pads") or (0,) * (2 * rank)
    require(len(kernel) == rank and len(stride) == rank and len(dilation) == rank and len(pads) == 2 * rank,
            f"kernel_shape/strides/dilations/pads do not match {rank} spatial dims")
    require(all(k >= 1 for k in kernel) and all(s >= 1 for s in stride) and all(d >= 1 for d in dilation),
            "kernel, strides and dilations must be positive")
    require(all(p >= 0 for p in pads), "negative pads")
    auto_pad = node.attr("auto_pad", "NOTSET")
    ceil_mode = bool(node.attr("ceil_mode", 0))
    pb, pe, out = [], [], []
    for i, n in enumerate(spatial):
        k, s, d = kernel[i], stride[i], dilation[i]
        eff = (k - 1) * d + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-n // s)
            need = max(0, (o - 1) * s + eff - n)
            b = need // 2 if auto_pad == "SAME_UPPER" else (need + 1) // 2
            pb.append(b)
            pe.append(need - b)
            out.append(o)
        else:
            b, e = (0, 0) if auto_pad == "VALID" else (pads[i], pads[i + rank])
            pb.append(b)
            pe.append(e)
            out.append(_out_extent(n, k, s, d, b, e, ceil_mode and auto_pad == "NOTSET"))
    return _Geometry(tuple(kernel), tuple(stride), tuple(dilation), tuple(pb), tuple(pe), tuple(out))


def _positions(n: int, out: int, k: int, s: int, d: int, pb: int) -> np.ndarray:
    """Input index of every (output, kernel) position along one dim, shape (out, k)."""
    return np.arange(out)[:, None] * s + np.arange(k)[None, :] * d - pb


def _windows(x: np.ndarray, g: _Geometry, fill) -> tuple[np.ndarray, np.ndarray]:
    """Windows of x as (N, C, *out, *kernel) with `fill` outside the input, and the validity mask."""
    spatial = x.shape[2:]
    pos = [_positions(n, g.out[i], g.kernel[i], g.stride[i], g.dilation[i], g.pad_begin[i])
           for i, n in enumerate(spatial)]
    valid = [(p >= 0) & (p < n) for p, n in zip(pos, spatial)]
    if len(spatial) == 1:
        idx = np.clip(pos[0], 0, spatial[0] - 1)
        w = x[:, :, idx]  # N, C, O, K
        mask = valid[0]
    else:
        ih = np.clip(pos[0], 0, spatial[0] - 1)[:, None, :, None]
        iw = np.clip(pos[1], 0, spatial[1] - 1)[None, :, None, :]
        w = x[:, :, ih, iw]  # N, C, OH, OW, KH, KW
        mask = valid[0][:, None, :, None] & valid[1][None, :, None, :]
    return np.where(mask, w, fill), mask


def _counts(graph: Graph, node: Node, g: _Geometry) -> np.ndarray:
    """Divisor of every output position, shape (*out)."""
    spatial = graph[node.inputs[0]].shape[2:]
    include = bool(node.attr("count_include_pad", 0))
    per_dim = []
    for i, n in enumerate(spatial):
        p = _positions(n, g.out[i], g.kernel[i], g.stride[i], g.dilation[i], g.pad_begin[i])
        inside = (p < n + g.pad_end[i]) if include else ((p >= 0) & (p < n))
        per_dim.append(inside.sum(axis=1))
    total = per_dim[0]
    for c in per_dim[1:]:
        total = total[..., None] * c[None, :]
    return total


def whole_map(graph: Graph, node: Node) -> bool:
    """Whether the pool reduces each whole map to one value: global, or one window covering the
    input exactly (no padding, no dilation)."""
    if node.attr("global"):
        return True
    g = _geometry(graph, node)
    spatial = graph[node.inputs[0]].shape[2:]
    return (tuple(g.kernel) == tuple(spatial) and all(o == 1 for o in g.out) and all(d == 1 for d in g.dilation)
            and not any(g.pad_begin) and not any(g.pad_end))


def _pool_attrs(onnx: OnnxNode) -> dict:
    a = onnx.attrs
    auto_pad = a.get("auto_pad", "NOTSET")
    require(auto_pad in _AUTO_PADS, f"auto_pad {auto_pad} is not supported")
    require("kernel_shape" in a, "kernel_shape is required")
    out = {"kernel_shape": tuple(a["kernel_shape"]), "auto_pad": auto_pad, "ceil_mode": int(a.get("ceil_mode", 0))}
    for key in ("strides", "dilations", "pads"):
        if key in a:
            out[key] = tuple(a[key])
    return out


class _Pool(Op):
    fuses_activation = True
    kind = ""  # "max" or "avg"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(len(x.shape) in (3, 4), f"{self.name} supports 1-D (NCL) and 2-D (NCHW) inputs, got rank "
                                        f"{len(x.shape)}")
        int16 = x.dtype == "int16" and (requant.arithmetic(graph) == "tflite" or x.quant is not None)
        require(x.dtype in ("float32", "int8") or int16, f"{self.name} of {x.dtype} is not supported")
        g = _geometry(graph, node)
        return [(x.shape[:2] + g.out, x.dtype)]

    def accepts_int8(self, graph, node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        ints = ("int8", "int16") if requant.arithmetic(graph) == "tflite" else ("int8",)
        for t in (x, y):
            if t.dtype not in ints or t.dtype != x.dtype or t.quant is None or len(t.quant.scale) != 1:
                return False
        return True

    def expr(self, graph, node):
        x = graph[node.inputs[0]].shape
        g = _geometry(graph, node)
        names = ("h", "w") if len(x) == 4 else ("l",)
        axes = [Axis("n", x[0]), Axis("c", x[1])]
        if whole_map(graph, node):
            axes += [Axis(f"r{a}", n, "reduction") for a, n in zip(names, x[2:])]
            ins = (Dim.identity("n"), Dim.identity("c")) + tuple(Dim.identity(f"r{a}") for a in names)
            outs = (Dim.identity("n"), Dim.identity("c")) + tuple(Dim.broadcast() for _ in names)
        else:
            axes += [Axis(f"o{a}", o) for a, o in zip(names, g.out)]
            axes += [Axis(f"k{a}", k, "reduction") for a, k in zip(names, g.kernel)]
            ins = (Dim.identity("n"), Dim.identity("c")) + tuple(
                Dim.window(f"o{a}", f"k{a}", g.stride[i], g.dilation[i], g.pad_begin[i]) for i, a in enumerate(names))
            outs = (Dim.identity("n"), Dim.identity("c")) + tuple(Dim.identity(f"o{a}") for a in names)
        return TensorExpr(tuple(axes), (ins,), (outs,))

    def macs(self, graph, node):
        g = _geometry(graph, node)
        return graph[node.outputs[0]].size * int(np.prod(g.kernel))

    def piece(self, graph, node, axis, rows, pads):
        """A piece along n or c keeps its attributes; along a spatial axis it takes the pads the
        partition gives. An average that counts padded positions divides by the positions in
        [-pad_begin, in + pad_end): the last piece, when its window crosses the end, keeps the
        pool's own end padding so that it counts the same (refusing when ceil_mode lets that
        window run past even the padding by more than its rows allow)."""
        attrs = dict(node.attrs)
        if pads is None:
            return attrs
        names = ("oh", "ow") if len(graph[node.inputs[0]].shape) == 4 else ("ol",)
        if node.attr("global") or axis not in names:
            return None
        i = names.index(axis)
        g = _geometry(graph, node)
        begin, end = list(g.pad_begin), list(g.pad_end)
        begin[i], end[i] = pads
        if rows[1] == g.out[i] and pads[1] > 0 and node.attr("count_include_pad", 0):
            if (rows[1] - rows[0] - 1) * g.stride[i] + g.pad_end[i] < pads[1]:
                return None  # the piece's padded rows would be fewer than one window
            end[i] = g.pad_end[i]
        ceil_mode = int(node.attr("ceil_mode", 0)) if node.attr("auto_pad", "NOTSET") == "NOTSET" else 0
        return {**attrs, "pads": tuple(begin + end), "auto_pad": "NOTSET", "ceil_mode": ceil_mode}

    # ------------------------------------------------------------------ kernel
    def _geometry_fields(self, graph, node) -> dict:
        """Geometry as 2-D (H, W) fields; a 1-D pool is a 2-D one with H = 1."""
        g = _geometry(graph, node)

        def hw(v, one):
            return (one,) + tuple(v) if len(v) == 1 else tuple(v)

        return {"kernel": hw(g.kernel, 1), "stride": hw(g.stride, 1), "dilation": hw(g.dilation, 1),
                "pad_begin": hw(g.pad_begin, 0), "pad_end": hw(g.pad_end, 0)}

    def _act_fields(self, graph, node) -> dict:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        lo_f, hi_f = requant.float_clip(node)
        fields = {"clip_min": lo_f, "clip_max": hi_f, "in_zero_point": 0, "out_zero_point": 0,
                  "act_min": -128, "act_max": 127}
        if x.dtype != "float32":
            require(self.accepts_int8(graph, node), f"{x.dtype} {self.name} needs per-tensor quantization")
            lo, hi = requant.clip_range(node, y)
            fields.update(in_zero_point=x.quant.single()[1], out_zero_point=y.quant.single()[1],
                          act_min=lo, act_max=hi)
        return fields

    @staticmethod
    def _suffix(graph, node) -> str:
        return {"int8": "s8", "int16": "s16"}.get(graph[node.inputs[0]].dtype, "f32")


class _MaxPool(_Pool):
    kind = "max"

    def accepts_int8(self, graph, node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if x.dtype == "int16" and requant.arithmetic(graph) != "tflite":  # an ONNX model's int16 QDQ: the max of
            return (x.dtype == y.dtype and x.quant is not None and x.quant == y.quant  # the codes, exact
                    and len(x.quant.scale) == 1)
        if requant.arithmetic(graph) == "tflite" and x.quant != y.quant:
            return False  # TFLite's int8 MAX_POOL_2D keeps the quantization
        return super().accepts_int8(graph, node)

    def _requant(self, graph, node) -> tuple[int, int, int]:
        """(requant flag, mult, shift): flag 0 when input and output quantization agree."""
        xq, yq = graph[node.inputs[0]].quant.single(), graph[node.outputs[0]].quant.single()
        if xq == yq:
            return 0, 0, 1
        mult, shift = requant.quantize_multiplier(xq[0] / yq[0])
        return 1, mult, shift

    def reference(self, graph, node, inputs):
        x = inputs[0]
        g = _geometry(graph, node)
        k = len(g.kernel)
        red = tuple(range(-k, 0))
        if x.dtype == np.float32:
            w, _ = _windows(x, g, np.float32(_FLT_LOWEST))
            lo, hi = requant.float_clip(node)
            y = np.clip(w.max(axis=red), np.float32(lo), np.float32(hi))
            return [y.astype(np.float32)]
        w, _ = _windows(x, g, np.iinfo(x.dtype).min)
        m = w.max(axis=red).astype(np.int64)
        flag, mult, shift = self._requant(graph, node)
        if flag:
            zx, zy = graph[node.inputs[0]].quant.single()[1], graph[node.outputs[0]].quant.single()[1]
            m = requant.requantize(m - zx, mult, shift) + zy
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return [np.clip(m, lo, hi).astype(x.dtype)]

    def kernel(self, graph, node):
        fields = {**self._geometry_fields(graph, node), **self._act_fields(graph, node)}
        del fields["pad_end"]
        flag, mult, shift = self._requant(graph, node) if graph[node.inputs[0]].dtype != "float32" else (0, 0, 1)
        fields.update(requant=flag, mult=mult, shift=shift)
        return Call(f"mcud_maxpool_{self._suffix(graph, node)}", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_maxpool_params", **fields))


class _AvgPool(_Pool):
    kind = "avg"

    def reference(self, graph, node, inputs):
        x = inputs[0]
        g = _geometry(graph, node)
        k = len(g.kernel)
        counts = _counts(graph, node, g)
        if x.dtype == np.float32:
            w, _ = _windows(x, g, np.float32(0))
            s = np.zeros(w.shape[:-k], np.float32)
            for tap in np.ndindex(*g.kernel):  # the C kernel's order (and a cut average's, ops/accumulate.py)
                s = s + w[(Ellipsis,) + tap]
            y = s / np.maximum(counts, 1).astype(np.float32)
            lo, hi = requant.float_clip(node)
            return [np.clip(y, np.float32(lo), np.float32(hi)).astype(np.float32)]
        if requant.arithmetic(graph) == "tflite":
            return [self._tflite_reference(graph, node, x, g, counts)]
        require(x.dtype == np.int8, f"{self.name} of {x.dtype} is not supported")
        sx, zx = graph[node.inputs[0]].quant.single()
        sy, zy = graph[node.outputs[0]].quant.single()
        xf = (x.astype(np.int32) - zx).astype(np.float32) * np.float32(sx)
        w, _ = _windows(xf, g, np.float32(0))  # a tap outside the input adds +0.0: no change
        acc = np.zeros(w.shape[:-k], np.float32)
        for tap in np.ndindex(*g.kernel):  # the C kernel's order: row-major over the window
            acc = acc + w[(Ellipsis,) + tap]
        avg = acc / np.maximum(counts, 1).astype(np.float32)
        y = np.rint(avg / np.float32(sy)).astype(np.int64) + zy
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return [np.clip(y, lo, hi).astype(np.int8)]

    @staticmethod
    def _tflite_reference(graph, node, x, g, counts):
        """TFLite's int8 and int16 AVERAGE_POOL_2D: the raw codes summed over the window's positions inside the
        input, divided by their count rounding half away from zero (input and output share their
        quantization)."""
        k = len(g.kernel)
        w, _ = _windows(x.astype(np.int64), g, 0)
        acc = w.sum(axis=tuple(range(-k, 0)))
        n = np.maximum(counts, 1).astype(np.int64)
        half = n // 2
        q = np.where(acc > 0, (acc + half) // n, -((-(acc - half)) // n))  # C division truncates
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return np.clip(q, lo, hi).astype(x.dtype)

    def accepts_int8(self, graph, node) -> bool:
        if requant.arithmetic(graph) == "tflite" and graph[node.inputs[0]].quant != graph[node.outputs[0]].quant:
            return False
        return super().accepts_int8(graph, node)

    def partial(self, graph, node, axis):
        """An average of whole maps cut along its outermost reduction axis (rows of a 2-D map, the
        length of a 1-D one): the pieces sum their rows into the running sum in the whole
        average's order (float32 for float and QDQ int8, int32 for TFLite's int8), and the finish
        divides by the positions and quantizes (mcudeploy/ops/accumulate.py)."""
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        names = ("rh", "rw") if len(x.shape) == 4 else ("rl",)
        if not whole_map(graph, node) or axis != names[0]:
            return None
        if x.dtype != "float32" and not self.accepts_int8(graph, node):
            return None
        acc = "int32" if x.dtype != "float32" and requant.arithmetic(graph) == "tflite" else "float32"
        count = int(np.prod(x.shape[2:]))
        finish = {k: v for k, v in node.attrs.items() if k in ("clip_min", "clip_max")}
        return Partial("AvgPoolSum", {}, y.shape, acc, "AvgPoolFinish", {**finish, "count": count, "dtype": y.dtype})

    def kernel(self, graph, node):
        if graph[node.inputs[0]].dtype != "float32" and requant.arithmetic(graph) == "tflite":
            fields = {**self._geometry_fields(graph, node), **self._act_fields(graph, node)}
            del fields["clip_min"], fields["clip_max"], fields["in_zero_point"], fields["out_zero_point"]
            return Call(f"mcud_avgpool_{self._suffix(graph, node)}_tfl", (node.inputs[0], node.outputs[0]),
                        Struct.of("mcud_avgpool_tfl_params", **fields))
        fields = {**self._geometry_fields(graph, node), "count_include_pad": int(node.attr("count_include_pad", 0)),
                  **self._act_fields(graph, node)}
        scales = (1.0, 1.0)
        if graph[node.inputs[0]].dtype == "int8":
            scales = (graph[node.inputs[0]].quant.single()[0], graph[node.outputs[0]].quant.single()[0])
        fields.update(in_scale=scales[0], out_scale=scales[1])
        return Call(f"mcud_avgpool_{self._suffix(graph, node)}", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_avgpool_params", **fields))


@register
class MaxPool(_MaxPool):
    name = "MaxPool"
    onnx_types = ("MaxPool",)

    def from_onnx(self, onnx: OnnxNode):
        require(len(onnx.outputs) == 1 or not any(onnx.outputs[1:]), "the Indices output is not supported")
        require(int(onnx.attrs.get("storage_order", 0)) in (0, 1), "bad storage_order")
        return onnx.inputs[:1], _pool_attrs(onnx)


@register
class AveragePool(_AvgPool):
    name = "AveragePool"
    onnx_types = ("AveragePool",)

    def from_onnx(self, onnx: OnnxNode):
        attrs = _pool_attrs(onnx)
        attrs["count_include_pad"] = int(onnx.attrs.get("count_include_pad", 0))
        return onnx.inputs[:1], attrs


@register
class GlobalMaxPool(_MaxPool):
    name = "GlobalMaxPool"
    onnx_types = ("GlobalMaxPool",)

    def from_onnx(self, onnx: OnnxNode):
        return onnx.inputs[:1], {"global": 1}


@register
class GlobalAveragePool(_AvgPool):
    name = "GlobalAveragePool"
    onnx_types = ("GlobalAveragePool",)

    def from_onnx(self, onnx: OnnxNode):
        return onnx.inputs[:1], {"global": 1}
