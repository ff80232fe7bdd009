"""Conv: 1-D and 2-D convolution over NCHW, float32, int8 and 16x8, any group count.

A 1-D convolution (N, C, W) is handled everywhere as a 2-D one with H = 1; only the tensor
expression keeps the caller's rank. The int8 form takes a per-tensor quantized input and
output, int8 weights quantized per output channel (or per tensor) with zero point 0, and an
int32 bias in scale s_x * s_w[c]; each output channel is requantized with its own multiplier.
Padded input positions hold the input zero point, so they contribute nothing to the sum.

The 16x8 form takes int16 input and output with zero point 0 and int8 weights. In a TFLite model its
accumulator is the "accumulator" attribute (TFLite's choice: "int64" with an int64 bias or none, "int32"
with an int32 bias, or none and the operator's quantized_bias_type int32). An int64 sum is requantized by
TFLite's 64-bit MultiplyByQuantizedMultiplier (a 16-bit multiplier, requant.tflite_requantize64), an int32
sum wraps as TFLite Micro's does and takes the int8 rounding. An ONNX model's (int16 QDQ) always sums in
int64 (its bias int64) and takes the same kernels with QuantizeLinear's multiplier, as many of its bits as
the sum leaves room for (requant.wide_multipliers): one rounding, within one step of onnxruntime.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ir.graph import per_node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Array, Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import ints

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
DW_BUF = 528  # MCUD_DW_BUF in firmware/include/mcud_conv_dw.h: bytes of the depthwise kernel's stack buffer
PIXELS = 4  # output pixels per block of mcud_conv_s8_fast: its scratch is PIXELS columns of kpad int16


@dataclass(frozen=True)
class Geometry:
    """Everything a Conv computes with, resolved against the input shape (always 2-D)."""

    spatial: int  # 1 or 2: the rank the model uses
    n: int
    cin: int
    cout: int
    group: int
    in_hw: tuple[int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad_begin: tuple[int, int]
    pad_end: tuple[int, int]
    out_hw: tuple[int, int]

    @property
    def cin_per_group(self) -> int:
        return self.cin // self.group

    @property
    def cout_per_group(self) -> int:
        return self.cout // self.group

    @property
    def depthwise(self) -> bool:
        """Each output channel reads exactly the input channel of the same index."""
        return self.group == self.cin == self.cout and self.group > 1


def _pads_1d(auto_pad: str, size: int, k: int, s: int, d: int, begin: int, end: int) -> tuple[int, int, int]:
    """(pad_begin, pad_end, output size) along one spatial axis, as ONNX defines them."""
    span = d * (k - 1) + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = -(-size // s)
        total = max(0, (out - 1) * s + span - size)
        small, large = total // 2, total - total // 2
        begin, end = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
        return begin, end, out
    if auto_pad == "VALID":
        begin = end = 0
    return begin, end, (size + begin + end - span) // s + 1


@per_node
def geometry(graph: Graph, node: Node) -> Geometry:
    xs, ws = graph[node.inputs[0]].shape, graph[node.inputs[1]].shape
    require(len(xs) in (3, 4), f"Conv supports 1-D and 2-D convolutions, not an input of rank {len(xs)}")
    require(len(ws) == len(xs), f"Conv weights of rank {len(ws)} do not match an input of rank {len(xs)}")
    spatial = len(xs) - 2
    group = int(node.attr("group", 1))
    n, cin = xs[0], xs[1]
    cout = ws[0]
    require(group >= 1 and cin % group == 0 and cout % group == 0,
            f"Conv group {group} does not divide {cin} input and {cout} output channels")
    require(ws[1] * group == cin, f"Conv weights have {ws[1]} input channels per group; the input has {cin} "
                                  f"channels in {group} groups")
    kernel = tuple(ws[2:])
    given = node.attr("kernel_shape")
    require(given is None or tuple(given) == kernel, f"Conv kernel_shape {given} differs from the weights' {kernel}")
    strides = tuple(node.attr("strides") or (1,) * spatial)
    dilations = tuple(node.attr("dilations") or (1,) * spatial)
    pads = tuple(node.attr("pads") or (0,) * (2 * spatial))
    require(len(strides) == spatial and len(dilations) == spatial and len(pads) == 2 * spatial,
            "Conv strides, dilations or pads do not match the spatial rank")
    require(all(s >= 1 for s in strides) and all(d >= 1 for d in dilations), "Conv strides and dilations must be >= 1")
    require(all(p >= 0 for p in pads), "Conv with negative pads is not supported")
    auto_pad = node.attr("auto_pad", "NOTSET")
    require(auto_pad in AUTO_PADS, f"Conv auto_pad {auto_pad} is not supported")
    resolved = [_pads_1d(auto_pad, xs[2 + i], kernel[i], strides[i], dilations[i], pads[i], pads[spatial + i])
                for i in range(spatial)]
    begin, end, out = (list(v) for v in zip(*resolved))
    require(all(o >= 1 for o in out), f"Conv output would be empty (output extent {out})")
    if spatial == 1:  # view as H = 1
        return Geometry(1, n, cin, cout, group, (1, xs[2]), (1, kernel[0]), (1, strides[0]), (1, dilations[0]),
                        (0, begin[0]), (0, end[0]), (1, out[0]))
    return Geometry(2, n, cin, cout, group, tuple(xs[2:]), kernel, strides, dilations, tuple(begin), tuple(end),
                    tuple(out))


def _bias(node: Node) -> str:
    """The bias input's name, or "" when there is none."""
    return node.inputs[2] if len(node.inputs) > 2 else ""


def weights_constant(graph: Graph, name: str) -> bool:
    """Constant weights, or a DequantizeLinear of constant ones (before QDQ lowering)."""
    if graph.is_const(name):
        return True
    producer = graph.producer(name)
    return producer is not None and producer.op == "DequantizeLinear" and graph.is_const(producer.inputs[0])


def _windows(x: np.ndarray, g: Geometry, pad_value) -> list[tuple[int, int, np.ndarray]]:
    """(kh, kw, x[:, :, oh*s + kh*d - p, ow*s + kw*d - p]) for every kernel tap, as (N, C, OH, OW)."""
    (ph, pw), (eh, ew) = g.pad_begin, g.pad_end
    xp = np.pad(x, ((0, 0), (0, 0), (ph, eh), (pw, ew)), constant_values=pad_value)
    (sh, sw), (dh, dw), (oh, ow) = g.stride, g.dilation, g.out_hw
    taps = []
    for kh in range(g.kernel[0]):
        for kw in range(g.kernel[1]):
            h0, w0 = kh * dh, kw * dw
            taps.append((kh, kw, xp[:, :, h0:h0 + sh * (oh - 1) + 1:sh, w0:w0 + sw * (ow - 1) + 1:sw]))
    return taps


def _correlate(x: np.ndarray, w: np.ndarray, g: Geometry, pad_value, acc_dtype) -> np.ndarray:
    """sum over (ic, kh, kw) of x * w, grouped; x (N, C, H, W), w (OC, C/g, KH, KW) -> (N, OC, OH, OW)."""
    n, (oh, ow) = g.n, g.out_hw
    wg = w.astype(acc_dtype).reshape(g.group, g.cout_per_group, g.cin_per_group, *g.kernel)
    acc = np.zeros((n, g.group, g.cout_per_group, oh, ow), dtype=acc_dtype)
    for kh, kw, tap in _windows(x.astype(acc_dtype), g, pad_value):
        tap = tap.reshape(n, g.group, g.cin_per_group, oh, ow)
        acc += np.einsum("ngchw,gkc->ngkhw", tap, wg[:, :, :, kh, kw])
    return acc.reshape(n, g.cout, oh, ow)


@register
class Conv(Op):
    name = "Conv"
    onnx_types = ("Conv",)
    fuses_activation = True

    def from_onnx(self, onnx: OnnxNode):
        require(len(onnx.inputs) >= 2 and onnx.inputs[1], "Conv needs weights")
        bias = onnx.inputs[2] if len(onnx.inputs) > 2 else ""
        attrs = {"group": int(onnx.attrs.get("group", 1)), "auto_pad": str(onnx.attrs.get("auto_pad", "NOTSET"))}
        for key in ("kernel_shape", "strides", "dilations", "pads"):
            if key in onnx.attrs:
                attrs[key] = ints(onnx.attrs[key])
        unknown = set(onnx.attrs) - set(attrs)
        require(not unknown, f"Conv attribute {', '.join(sorted(unknown))} is not supported")
        return (onnx.inputs[0], onnx.inputs[1], bias), attrs

    # ------------------------------------------------------------------ shape, expression
    def infer(self, graph, node):
        g = geometry(graph, node)
        x, w = graph[node.inputs[0]], graph[node.inputs[1]]
        require(weights_constant(graph, node.inputs[1]), "Conv needs constant weights (they are compiled into flash)")
        bias = _bias(node)
        if bias:
            require(graph[bias].shape == (g.cout,), f"Conv bias of shape {graph[bias].shape} does not match "
                                                    f"{g.cout} output channels")
        if x.dtype == "float32":
            require(w.dtype == "float32" and (not bias or graph[bias].dtype == "float32"),
                    "a float32 Conv needs float32 weights and bias")
        elif x.dtype == "int16":
            require(w.dtype == "int8", f"Conv of int16 input and {w.dtype} weights is not supported")
            require(not bias or graph[bias].dtype in ("int32", "int64"), "a 16x8 Conv needs an int32 or int64 bias")
        else:
            require(x.dtype == "int8" and w.dtype == "int8", f"Conv of {x.dtype} input and {w.dtype} weights "
                                                             f"is not supported")
            require(not bias or graph[bias].dtype == "int32", "an int8 Conv needs an int32 bias")
        out = (g.n, g.cout, g.out_hw[1]) if g.spatial == 1 else (g.n, g.cout, *g.out_hw)
        return [(out, x.dtype)]

    def expr(self, graph, node):
        g = geometry(graph, node)
        axes = [Axis("n", g.n), Axis("oc", g.cout)]
        spatial = ["oh", "ow"][2 - g.spatial:]
        kernel = ["kh", "kw"][2 - g.spatial:]
        first = 2 - g.spatial  # index into the 2-D geometry of the first real spatial axis
        axes += [Axis(a, g.out_hw[first + i]) for i, a in enumerate(spatial)]
        axes += [Axis("ic", g.cin_per_group, "reduction")]
        axes += [Axis(k, g.kernel[first + i], "reduction") for i, k in enumerate(kernel)]
        if g.group == 1:
            channel = Dim.identity("ic")
        elif g.depthwise:
            channel = Dim.identity("oc")
        else:  # input channel = (oc // (C_out/g)) * (C_in/g) + ic: not one axis
            channel = Dim.full()
        x_dims = (Dim.identity("n"), channel) + tuple(
            Dim.window(a, k, g.stride[first + i], g.dilation[first + i], g.pad_begin[first + i])
            for i, (a, k) in enumerate(zip(spatial, kernel)))
        w_dims = (Dim.identity("oc"), Dim.identity("ic")) + tuple(Dim.identity(k) for k in kernel)
        bias = _bias(node)
        inputs = (x_dims, w_dims, (Dim.identity("oc"),) if bias else None)
        outputs = ((Dim.identity("n"), Dim.identity("oc")) + tuple(Dim.identity(a) for a in spatial),)
        return TensorExpr(tuple(axes), inputs, outputs)

    def inplace(self, graph, node):
        # The output is written from the input's first byte (mcudeploy/memory/alias.py); each case
        # below keeps every write behind the reads still to come:
        # - a 1x1, stride-1, unpadded convolution: conv.c reads each output's one input element, at
        #   the output's own position, before writing it (per channel: same shape only), and
        #   mcud_conv_s8_fast copies a block of pixels, every channel, into its scratch before it writes
        #   those pixels; out(c, p) then lands on in(c, p), already copied, or past the input. Another
        #   number of output channels is fine for one image (the planes keep their size).
        # - an int8 depthwise convolution on mcud_conv_s8_dw's fast path (_dw_inplace_safe).
        # A wider window in the other kernels reads neighbours an in-place write would already have replaced.
        g = geometry(graph, node)
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if x.dtype != y.dtype:
            return None
        if x.dtype == "int8" and g.depthwise and _dw_fast(g) and _dw_inplace_safe(g):
            return 0
        pointwise = g.kernel == (1, 1) and g.stride == (1, 1) and not any(g.pad_begin + g.pad_end)
        if not pointwise:
            return None
        if x.shape == y.shape and g.group == g.cin == g.cout:
            return 0
        if _fast(graph, node, g) and _uses_scratch(node) and (x.shape == y.shape or g.n == 1):
            return 0
        return None

    def macs(self, graph, node):
        g = geometry(graph, node)
        return g.n * g.cout * g.out_hw[0] * g.out_hw[1] * g.cin_per_group * g.kernel[0] * g.kernel[1]

    def piece(self, graph, node, axis, rows, pads):
        """A piece along n, along output channels (plain or depthwise: the weights, bias and
        per-channel scales are sliced by the partition), or along a spatial axis with the pads
        the partition gives; a grouped convolution's channels are not one axis."""
        g = geometry(graph, node)
        attrs = dict(node.attrs)
        spatial = ["oh", "ow"][2 - g.spatial:]
        if axis == "n":
            return attrs
        if axis == "oc":
            if g.group == 1:
                return attrs
            return {**attrs, "group": rows[1] - rows[0]} if g.depthwise else None
        if axis not in spatial or pads is None:
            return None
        first = 2 - g.spatial
        begin, end = list(g.pad_begin[first:]), list(g.pad_end[first:])
        i = spatial.index(axis)
        begin[i], end[i] = pads
        return {**attrs, "pads": tuple(begin + end), "auto_pad": "NOTSET"}

    # ------------------------------------------------------------------ int8 acceptance
    def accepts_int8(self, graph, node) -> bool:
        x, w, y = graph[node.inputs[0]], graph[node.inputs[1]], graph[node.outputs[0]]
        if x.dtype == "int16":
            return _accepts_16x8(self, graph, node)
        if x.dtype != "int8" or w.dtype != "int8" or y.dtype != "int8" or not w.is_const:
            return False
        if x.quant is None or w.quant is None or y.quant is None:
            return False
        if len(x.quant.scale) != 1 or len(y.quant.scale) != 1:
            return False
        if any(z != 0 for z in w.quant.zero_point):
            return False  # asymmetric weights would need a per-window input sum
        if len(w.quant.scale) != 1 and (len(w.quant.scale) != w.shape[0] or (w.quant.axis or 0) % len(w.shape) != 0):
            return False  # only per output channel (axis 0) or per tensor
        bias = _bias(node)
        if bias:
            b = graph[bias]
            if b.dtype != "int32":
                return False
            if b.quant is not None:
                expect = x.quant.scale_array() * w.quant.scale_array()
                if not np.allclose(np.broadcast_to(b.quant.scale_array(), (w.shape[0],)),
                                   np.broadcast_to(expect, (w.shape[0],)), rtol=1e-5, atol=0):
                    return False
        try:
            self._requant(graph, node)
        except UnsupportedError:  # a multiplier out of range
            return False
        # The C kernel accumulates in int32: keep the worst case |x - z_x| <= 255 inside it.
        worst = np.abs(w.data.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1) * 255
        if bias:
            if not graph.is_const(bias):
                return False
            worst = worst + np.abs(graph[bias].data.astype(np.int64))
        return bool(np.all(worst < 2**31))

    def _requant(self, graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray]:
        x, w, y = graph[node.inputs[0]], graph[node.inputs[1]], graph[node.outputs[0]]
        sx, _ = requant.qparams(graph, x.name).single()
        sy, _ = requant.qparams(graph, y.name).single()
        sw = np.broadcast_to(requant.qparams(graph, w.name).scale_array(), (w.shape[0],))
        return requant.multipliers(graph, sx * sw / sy)

    # ------------------------------------------------------------------ reference
    def reference(self, graph, node, inputs):
        g = geometry(graph, node)
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        x4 = x.reshape(g.n, g.cin, *g.in_hw)
        w4 = w.reshape(g.cout, g.cin_per_group, *g.kernel)
        out_shape = graph[node.outputs[0]].shape
        if x.dtype == np.float32:
            acc = _correlate(x4, w4, g, 0.0, np.float64)
            if bias is not None:
                acc += bias.astype(np.float64).reshape(1, -1, 1, 1)
            lo, hi = requant.float_clip(node)
            y = np.clip(acc.astype(np.float32), np.float32(lo), np.float32(hi))
            return [y.reshape(out_shape)]
        if x.dtype == np.int16:
            acc = _correlate(x4.astype(np.int64), w4, g, 0, np.int64)
            if bias is not None:
                acc += bias.astype(np.int64).reshape(1, -1, 1, 1)
            mult, shift = (v.reshape(1, -1, 1, 1) for v in _requant16(self, graph, node))
            q = (requant.requantize_wide(acc, mult, shift) if wide_accumulator(graph, node)
                 else requant.tflite_requantize(requant.wrap32(acc), mult, shift))
            lo, hi = requant.clip_range(node, graph[node.outputs[0]])
            return [np.clip(q, lo, hi).astype(np.int16).reshape(out_shape)]
        _, zx = requant.qparams(graph, node.inputs[0]).single()
        _, zy = requant.qparams(graph, node.outputs[0]).single()
        acc = _correlate(x4.astype(np.int64) - zx, w4, g, 0, np.int64)
        if bias is not None:
            acc += bias.astype(np.int64).reshape(1, -1, 1, 1)
        mult, shift = self._requant(graph, node)
        q = requant.requantize_as(graph, acc, mult.reshape(1, -1, 1, 1), shift.reshape(1, -1, 1, 1)) + zy
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return [np.clip(q, lo, hi).astype(np.int8).reshape(out_shape)]

    # ------------------------------------------------------------------ kernel
    def kernel(self, graph, node):
        g = geometry(graph, node)
        require(graph.is_const(node.inputs[1]), "Conv needs constant weights (they are compiled into flash)")
        bias = _bias(node)
        views = (node.inputs[0], node.inputs[1], bias, node.outputs[0])
        common = dict(group=g.group, stride=g.stride, dilation=g.dilation, pad=g.pad_begin)
        if graph[node.inputs[0]].dtype == "float32":
            lo, hi = requant.float_clip(node)
            return Call("mcud_conv_f32", views, Struct.of("mcud_conv_f32_params", **common, act_min=lo, act_max=hi))
        if graph[node.inputs[0]].dtype == "int16":
            return _kernel_16x8(self, graph, node, g, views, common)
        _, zx = requant.qparams(graph, node.inputs[0]).single()
        _, zy = requant.qparams(graph, node.outputs[0]).single()
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        mult, shift = self._requant(graph, node)
        mults, shifts = Array("int32_t", tuple(int(m) for m in mult)), Array("int32_t", tuple(int(s) for s in shift))
        if _fast(graph, node, g):
            return self._fast_call(graph, node, g, views, zx, zy, lo, hi, mults, shifts, _uses_scratch(node))
        fn = "mcud_conv_s8_dw" if g.depthwise else "mcud_conv_s8"
        if requant.arithmetic(graph) == "tflite":
            fn += "_tfl"
        doubled = requant.arithmetic(graph) == "tflite" and bool(node.attr("dsp", 0))  # offload.dsp_packings
        fast_dw = g.depthwise and _dw_fast(g)
        table = _dw_channels(graph, node, zx, (mult, shift, zy) if doubled else None) if fast_dw else None
        quiet = _quiet_channels(graph, node) if fast_dw else Live(())
        return Call(fn, views, Struct.of(
            "mcud_conv_s8_params", **common, in_zero_point=zx, out_zero_point=zy, act_min=lo, act_max=hi,
            mult=mults, shift=shifts, **({"dw": Array("int32_t", table)} if table is not None else {}),
            **quiet.dead_fields()))

    def scratch(self, graph, node):
        dtype = graph[node.inputs[0]].dtype
        if dtype == "int16":
            g = geometry(graph, node)
            return 2 * _kpad16(g) if _uses_scratch(node) and _fast16(g) and not _pointwise16(g) else 0
        if dtype != "int8" or int(node.attr("group", 1)) != 1 or not _uses_scratch(node):
            return 0  # cheap answers first: the planner asks for every node of every order it tries
        g = geometry(graph, node)
        return _scratch_bytes(g) * _blocks(graph, node, g) if _fast(graph, node, g) else 0

    def unread_constants(self, graph, node, call, features):
        """mcud_conv_s8_fast reads its weights and bias from its parameters only (the model's tensors give the
        shapes): on an MVE core its int8 weights (p->w, mcud_conv_mve.h), elsewhere the int16 copy where there is one
        (p->w16), else p->w."""
        if call.fn != "mcud_conv_s8_fast":
            return frozenset()
        fields = dict(call.params.fields)
        other = "w16" if "mve" in features else ("w" if isinstance(fields.get("w16"), Array) else None)
        return frozenset(filter(None, (node.inputs[1], _bias(node), other)))

    def scratch_pays(self, graph, node, features):
        """On an MVE core mcud_conv_s8_direct is mcud_conv_s8_fast with its columns on the stack (mcud_conv_mve.h's
        mcud_conv_s8_direct_mve): where four columns fit there (_mve_direct_columns), the scratch buys nothing, and
        without the weights' permuted order (no p->hwc) the direct kernel is the faster (fewer stores per column)."""
        if "mve" not in features or graph[node.inputs[0]].dtype != "int8" or int(node.attr("group", 1)) != 1:
            return True
        g = geometry(graph, node)
        return not (_fast(graph, node, g) and _mve_direct_columns(g) >= PIXELS)

    def _fast_call(self, graph, node, g, views, zx, zy, lo, hi, mults, shifts, scratch: bool) -> Call:
        """mcud_conv_s8_fast (firmware/include/mcud_conv_fast.h): repacked weights, zero point in the
        bias; or, for a node whose "scratch" attribute is 0, mcud_conv_s8_direct (same params, no
        working memory, slower: it is chosen where the scratch would raise the arena's peak)."""
        w4 = graph[node.inputs[1]].data.astype(np.int64).reshape(g.cout, g.cin, *g.kernel)
        bias = _bias(node)
        b = graph[bias].data.astype(np.int64) if bias else np.zeros(g.cout, np.int64)
        read = _channels_read(graph, node, g) if scratch else None
        kpad = _kpad(g)
        if read is not None:  # the other input channels are one value each: their products go into the bias
            values = constant_channels(graph, node.inputs[0])
            const = [c for c in range(g.cin) if c in values]
            b = b + (w4[:, const, 0, 0] * (np.array([values[c] for c in const], np.int64) - zx)).sum(axis=1)
            kpad = -(-len(read) // 4) * 4  # the last channel read again up to it, its weight 0 there: no tail
            w4 = np.concatenate([w4[:, list(read)], np.zeros((g.cout, kpad - len(read), 1, 1), np.int64)], axis=1)
            read = read + (read[-1],) * (kpad - len(read))
        live = _live(graph, node, w4, b, mults.values, shifts.values, zy, lo, hi)
        if live.dead:
            keep = np.array(live.live)
            w4, b = w4[keep], b[keep]
            mults = Array("int32_t", tuple(mults.values[i] for i in live.live))
            shifts = Array("int32_t", tuple(shifts.values[i] for i in live.live))
        cout = w4.shape[0]
        hwc = g.cin % 4 == 0 and g.kernel != (1, 1)  # the scratch's tap order (mcud_conv_fast_col)
        w = (w4.transpose(0, 2, 3, 1) if hwc else w4).reshape(cout, -1)
        padded = np.zeros((cout, kpad), np.int64)
        padded[:, :w.shape[1]] = w
        packed = padded.reshape(cout, kpad // 4, 4)[:, :, [0, 2, 1, 3]].reshape(-1)
        folded = b - zx * w.sum(axis=1)
        require(bool(np.all(np.abs(folded) < 2**31)), "the Conv bias with the input zero point folded in "
                                                      "overflows int32")
        rq = _fast_rq(graph, folded, mults.values, shifts.values, zy)
        rq2, twice = _fast_rq2(graph, b, folded, w, mults.values, shifts.values, zy) if _wide(node) else (0, 1)
        return Call("mcud_conv_s8_fast" if scratch else "mcud_conv_s8_direct", views, Struct.of(
            "mcud_conv_s8_fast_params", stride=g.stride, dilation=g.dilation, pad=g.pad_begin,
            inside=int(_inside(g)), hwc=int(hwc), in_zero_point=zx, out_zero_point=zy, act_min=lo, act_max=hi,
            kpad=kpad, hi_shift=_route(graph, shifts.values),
            w=Array("int8_t", tuple(int(v) for v in packed)), bias=Array("int32_t", tuple(int(v) for v in folded)),
            bias_raw=0 if scratch else Array("int32_t", tuple(int(v) for v in b)),
            w3=0 if scratch or not _row3(g) else Array("int8_t", tuple(int(v) for v in np.pad(
                w4.reshape(-1, 3), ((0, 0), (0, 1))).reshape(-1))),
            mult=mults, shift=shifts, rq=rq, rq2=rq2, rq2_off=int(rq2 != 0 and 0 in rq2.values[1::FAST_RQ]),
            w16=Array("int16_t", _w16(padded * twice)) if _wide(node) else 0,
            **({"blocks": _blocks(graph, node, g)} if scratch and _blocks(graph, node, g) > 1 else {}),
            **({"in_live": Array("int32_t", read), "in_live_n": len(read)} if read is not None else {}),
            **live.fields()), scratch=_scratch_bytes(g) * _blocks(graph, node, g) if scratch else 0)


def _channels_read(graph: Graph, node: Node, g: Geometry) -> Optional[tuple[int, ...]]:
    """The input channels a pointwise convolution's block kernels read (mcud_conv_s8_fast_params.in_live), where some
    others hold one value at every pixel (constant_channels: VWW's depthwise outputs after channels of weights 0, 14 to
    176 a layer): their products are constants, folded into the bias, exactly, the window reading no padding. Only
    the block kernels' pointwise columns on a core without MVE ("dsp": mcud_conv_fast_col) and without tiles read the
    list; None elsewhere, or where no channel or every channel is of one value."""
    if g.kernel != (1, 1) or g.group != 1 or not _inside(g) or not node.attr("dsp", 0) or node.attr("tile", 1) > 1:
        return None
    values = constant_channels(graph, node.inputs[0])
    read = tuple(c for c in range(g.cin) if c not in values)
    return read if values and read else None


@dataclass(frozen=True)
class Live:
    """The output channels a convolution's block kernels compute (``live``, in order) and the others (``dead``),
    whose weights are all 0, with the one value each writes at every pixel (``dead_y``)."""
    live: tuple[int, ...]
    dead: tuple[int, ...] = ()
    dead_y: tuple[int, ...] = ()

    def fields(self) -> dict:
        """mcud_conv_s8_fast_params' live, live_n, dead, dead_y and dead_n; none where every channel is live."""
        if not self.dead:
            return {}
        return dict(live=Array("int32_t", self.live), live_n=len(self.live), **self.dead_fields())

    def dead_fields(self) -> dict:
        """dead, dead_y and dead_n (also mcud_conv_s8_params': a depthwise convolution's, _quiet_channels)."""
        if not self.dead:
            return {}
        return dict(dead=Array("int32_t", self.dead), dead_y=Array("int8_t", self.dead_y), dead_n=len(self.dead))


def _live(graph: Graph, node: Node, w4: np.ndarray, b: np.ndarray, mults, shifts, zy: int, lo: int, hi: int) -> Live:
    """A channel whose weights are all 0 sums its bias alone, whatever the input: its output is one value, TFLite's
    (or ONNX's) requantization of the bias, clipped, which mcud_conv_fast_dead writes at every pixel, and the block
    kernels leave it out (Keras models carry many: VWW's later pointwise layers have 21 to 234 of 128 or 256): the
    block kernels of the int16 weights (p->w16) and an MVE core's kernels (p->w, firmware/include/mcud_conv_mve.h),
    where the node keeps its int16 copy (_zero_channels) and some channel stays live."""
    every = tuple(range(w4.shape[0]))
    zero = _zero_channels(node, w4)
    if not zero.any():
        return Live(every)
    dead = np.flatnonzero(zero)
    values = _bias_alone(graph, b[dead], np.asarray(mults, np.int64)[dead], np.asarray(shifts, np.int64)[dead], zy,
                         lo, hi)
    return Live(tuple(int(i) for i in np.flatnonzero(~zero)), tuple(int(i) for i in dead),
                tuple(int(v) for v in values))


def constant_channels(graph: Graph, tensor: str) -> dict[int, int]:
    """The channels of an int8 tensor that hold one value at every pixel, known from the plan alone, channel -> value:
    those of a Conv output whose weights are all 0, and those of a depthwise Conv output whose input channel is the
    input's zero point at every pixel (every tap, padded or not, then adds 0): the bias alone, requantized and
    clipped, in both. Through the views of a split graph too: a Slice keeps the channels of its window (any window
    of a channel of one value holds that value), and a Concat along the channels of inputs quantized as its output
    (the pieces of a convolution cut along its channels) holds those of each input at its offset. Kept per graph
    and tensor: a depthwise convolution asks for its input's, down the whole network."""
    key = ("mcudeploy.ops.conv.constant_channels", tensor)
    memo = graph.memo
    if key not in memo:
        memo[key] = tuple(sorted(_constant_channels(graph, tensor).items()))
    return dict(memo[key])


def _same_per_tensor(graph: Graph, a: str, b: str) -> bool:
    qa, qb = graph[a].quant, graph[b].quant
    return (qa is not None and qb is not None and len(qa.scale) == len(qb.scale) == 1
            and qa.single() == qb.single() and graph[a].dtype == graph[b].dtype)


def _constant_channels(graph: Graph, tensor: str) -> dict[int, int]:
    node = graph.producer(tensor)
    if node is None or graph[tensor].dtype != "int8" or len(graph[tensor].shape) < 2:
        return {}
    if node.op == "Slice":
        from mcudeploy.ops.slice import stepped
        begin, step, count = stepped(graph, node)
        if step[1] != 1:
            return {}
        lo, hi = begin[1], begin[1] + count[1]
        return {c - lo: v for c, v in constant_channels(graph, node.inputs[0]).items() if lo <= c < hi}
    if node.op == "Concat":
        rank = len(graph[tensor].shape)
        if node.attr("axis", 0) % rank != 1 or not all(_same_per_tensor(graph, t, tensor) for t in node.inputs):
            return {}
        out, at = {}, 0
        for t in node.inputs:
            out.update({at + c: v for c, v in constant_channels(graph, t).items()})
            at += graph[t].shape[1]
        return out
    if node.op != "Conv" or not graph.is_const(node.inputs[1]) or graph[node.inputs[0]].dtype != "int8":
        return {}
    w = graph[node.inputs[1]].data
    if w.shape[0] != graph[tensor].shape[1]:
        return {}
    const = set(np.flatnonzero(np.all(w.reshape(w.shape[0], -1) == 0, axis=1)).tolist())
    g = geometry(graph, node)
    if g.depthwise:
        _, zx = requant.qparams(graph, node.inputs[0]).single()
        const |= {c for c, v in constant_channels(graph, node.inputs[0]).items() if v == zx}
    if not const:
        return {}
    chans = sorted(const)
    bias = _bias(node)
    b = graph[bias].data.astype(np.int64).reshape(-1)[chans] if bias else np.zeros(len(chans), np.int64)
    mult, shift = Conv()._requant(graph, node)
    _, zy = requant.qparams(graph, tensor).single()
    values = _bias_alone(graph, b, mult[chans].astype(np.int64), shift[chans].astype(np.int64), zy,
                         *requant.clip_range(node, graph[tensor]))
    return {int(c): int(v) for c, v in zip(chans, values)}


def _bias_alone(graph: Graph, b: np.ndarray, mult: np.ndarray, shift: np.ndarray, zy: int, lo: int, hi: int):
    """The output of channels whose sum is their bias ``b`` alone: requantized (the model's rounding), clipped."""
    return np.clip(requant.requantize_as(graph, b, mult, shift) + zy, lo, hi)


def _quiet_channels(graph: Graph, node: Node) -> Live:
    """The channels a depthwise convolution on mcud_conv_s8_dw's fast path writes as one value without reading them
    (``dead``, with ``dead_y``): its output channels of one value (constant_channels), those of weights 0 and those
    whose input plane is the input's zero point at every pixel (a pointwise layer's channel of weights 0 through a
    Relu, as VWW's later layers have by the dozen)."""
    values = constant_channels(graph, node.outputs[0])
    quiet = sorted(values)
    return Live((), tuple(quiet), tuple(values[c] for c in quiet)) if quiet else Live(())


def _zero_channels(node: Node, w: np.ndarray) -> np.ndarray:
    """Which output channels (axis 0 of ``w``) the block kernels leave out (_live): those whose weights are all 0,
    where the node has its weights widened to int16 (the kernels of the int8 copy alone compute every channel); none
    where every channel is such."""
    zero = ~np.any(w.reshape(w.shape[0], -1), axis=1)
    if not _wide(node) or zero.all():
        return np.zeros_like(zero)
    return zero


def _w16(padded: np.ndarray) -> tuple[int, ...]:
    """mcud_conv_s8_fast_params.w16: the (OC, kpad) weights as int16 in the block kernels' order: output
    channels in pairs, per pair and group of four taps the first channel's four then the second's; the last
    channel of an odd count alone."""
    oc, kpad = padded.shape
    even = oc - oc % 2
    pairs = padded[:even].reshape(even // 2, 2, kpad // 4, 4).transpose(0, 2, 1, 3).reshape(-1)
    return tuple(int(v) for v in np.concatenate([pairs, padded[even:].reshape(-1)]))


FAST_RQ = 4  # MCUD_FAST_RQ in firmware/include/mcud_conv_fast.h


def _fast_rq(graph: Graph, bias, mults, shifts, zy: int):
    """mcud_conv_s8_fast_params.rq: per output channel (bias, mult, k, r1) for mcud_requant_tfl_k, the output
    zero point folded into k (k_hi + zy * 2^r1: the result's high word grows by zy * 2^r1, which the shift by r1
    turns into exactly + zy), or 0 (NULL) off that route or where the high word could leave int32: it is below
    2^30 + 2^(r1-1) + 1 in magnitude before the fold."""
    if _route(graph, shifts) != 3:
        return 0
    out = []
    for b, m, s in zip(bias, mults, shifts):
        r1 = int(s) - 32
        k = (1 << (r1 - 1)) + zy * (1 << r1)
        if (1 << 30) + abs(k) + 1 >= 1 << 31:
            return 0
        out += [int(b), int(m), k, r1]
    return Array("int32_t", tuple(out))


def _fast_rq2(graph: Graph, bias: np.ndarray, folded, w: np.ndarray, mults, shifts, zy: int):
    """mcud_conv_s8_fast_params.rq2 for a TFLite model's block kernels of w16, and each output channel's factor on its
    w16 weights (a column). Per channel (2 bias, mult, c, rs) for mcud_requant_tfl_2 on twice the weights, from
    requant.doubled_route with the accumulator bounded by |bias| + 255 sum |w| (no tap is further than 255 from the
    input zero point); a channel off that route (a shift of 31 or 32, a huge bias) (bias, 0, mult, shift) and its
    weights as they are, which the kernels requantize as TFLite does (mcud_conv_fast_out_any). (0, 1) for an ONNX
    model, or where every shift is in [33, 62] (without rq2 every channel takes one SMLAL, rq) and more than half of
    the pairs of channels (the block kernels' unit) hold such a channel. Measured on VWW's layers (NUCLEO-L4R5ZI and
    NUCLEO-F746ZG estimates): a layer with a shift outside [33, 62] takes TFLite's general requantization for every
    channel without rq2, and runs faster with it however many channels are off (6x6x128: 2.23 -> 2.00 ms on the
    F746ZG); a layer of 256 channels with 234 off ran 2.8% slower with rq2 on the L4R5ZI, one with 21 of 128 off 5%
    faster."""
    if requant.arithmetic(graph) != "tflite":
        return 0, 1
    bound = np.abs(bias) + 255 * np.abs(w).sum(axis=1)
    out, twice = [], []
    for b, m, s, most in zip(folded, mults, shifts, bound):
        route = requant.doubled_route(int(most), int(m), int(s), zy)
        if route is None:
            out += [int(b), 0, int(m), int(s)]
            twice.append(1)
            continue
        out += [(2 * int(b) + 2**31) % 2**32 - 2**31, *route]
        twice.append(2)
    pairs = [twice[i:i + 2] for i in range(0, len(twice), 2)]
    general = not all(33 <= int(s) <= 62 for s in shifts)  # the layer's route without rq2 (_route): 2, not 3
    if not general and 2 * sum(1 in pair for pair in pairs) > len(pairs):
        return 0, 1  # a pair with a channel off the route takes a branch and its constants output by output
    return Array("int32_t", tuple(out)), np.array(twice, np.int64)[:, None]


def _route(graph: Graph, shifts) -> int:
    """mcud_conv_fast_out's requantization (its "hi_shift" field, a constant once inlined): 0 the
    64-bit mcud_requant, 1 mcud_requant_hi (every shift in [33, 62]); for a TFLite model 2 the
    general mcud_requant_tfl, 3 mcud_requant_tfl_r (every shift in [33, 62])."""
    if requant.arithmetic(graph) == "tflite":
        return 3 if all(33 <= s <= 62 for s in shifts) else 2
    return int(all(33 <= s <= 62 for s in shifts))


def _fast(graph: Graph, node: Node, g: Geometry) -> bool:
    """Whether the int8 Conv runs as im2col + SMLAD product (group 1; weights of any shape)."""
    return g.group == 1 and graph[node.inputs[0]].dtype == "int8"


def _dw_row_bytes(g: Geometry) -> int:
    """Bytes of one buffered row in mcud_conv_s8_dw (its rw)."""
    return ((g.out_hw[1] - 1) * g.stride[1] + 4 + 3) & ~3


DW_FIELDS = 9  # MCUD_DW_FIELDS in firmware/include/mcud_conv_dw.h


def _pack16(lo: int, hi: int) -> int:
    """mcud_pack16 (mcud_dsp.h) as the int32_t a C array holds it."""
    v = (lo & 0xFFFF) | ((hi & 0xFFFF) << 16)
    return v - (1 << 32) if v >= 1 << 31 else v


def _dw_channels(graph: Graph, node: Node, zx: int, doubled=None) -> Optional[tuple[int, ...]]:
    """Per channel of a depthwise convolution on mcud_conv_s8_dw's fast path, what the kernel would
    otherwise work out from the weights at every call: the bias with the input zero point folded in
    (b - zx * sum w) and the weights packed in pairs (w[kh][0], w[kh][2]) per row, (w[0][1], w[1][1])
    and (w[2][1], 0). A cut's pieces call the kernel once each, so this is their fixed cost per
    channel; None when a folded bias would leave int32 (the kernel then computes as before). Then (mult, c, rs) of
    mcud_requant_tfl_2 where ``doubled`` ((mult, shift, zy) of a TFLite model on a core without MVE:
    offload.dsp_packings) gives the channel requant.doubled_route, its bias and weights then twice theirs (the sum
    twice the accumulator: five instructions an output where TFLite's general route takes seven); else (0, 0, 0)."""
    w = graph[node.inputs[1]].data.astype(np.int64)
    bias = _bias(node)
    b = graph[bias].data.astype(np.int64).reshape(-1) if bias else np.zeros(w.shape[0], np.int64)
    out = []
    for c in range(w.shape[0]):
        k = w[c, 0]
        folded = int(b[c]) - zx * int(k.sum())
        if not -(1 << 31) <= folded < 1 << 31:
            return None
        route = None
        if doubled is not None:  # the sum is b + sum (x - zx) w, no tap further than 255 from the zero point
            mult, shift, zy = doubled
            route = requant.doubled_route(abs(int(b[c])) + 255 * int(np.abs(k).sum()), int(mult[c]), int(shift[c]),
                                          zy)
        twice = 2 if route is not None else 1
        k, folded = twice * k, twice * folded
        out += [folded, *(_pack16(int(k[kh, 0]), int(k[kh, 2])) for kh in range(3)),
                _pack16(int(k[0, 1]), int(k[1, 1])), _pack16(int(k[2, 1]), 0), *(route or (0, 0, 0))]
    assert len(out) == DW_FIELDS * w.shape[0]
    return tuple(out)


def _dw_fast(g: Geometry) -> bool:
    """Whether mcud_conv_s8_dw takes its 3x3 fast path (the test at its top), whose channel table (_dw_channels) and
    order of reads and writes (_dw_inplace_safe) the callers rely on, rather than mcud_dw_lines or mcud_conv_s8."""
    return (g.spatial == 2 and g.kernel == (3, 3) and g.dilation == (1, 1) and g.stride[1] <= 2
            and 4 * _dw_row_bytes(g) <= DW_BUF)


def _dw_inplace_safe(g: Geometry) -> bool:
    """Whether mcud_conv_s8_dw may write its output from its input's first byte (both dense NCHW).

    The kernel works plane by plane (channel, then image): it copies the whole padded plane to its
    stack buffer first, or a ring of rows, where output row oh is written once input rows up to
    oh * stride - pad + 2 are copied. So the output rows written must end at or before the first
    input row not copied yet: in plane 0 that is (oh + 1) * W_out <= copied * W_in for every row;
    later planes hold no more output than input, so they follow. Images are interleaved by the
    channel loop, so a different shape is safe for one image only."""
    (hi, wi), (ho, wo) = g.in_hw, g.out_hw
    if ho * wo > hi * wi or ((ho, wo) != (hi, wi) and g.n != 1):
        return False
    plane_rows = (ho - 1) * g.stride[0] + 3
    if plane_rows * _dw_row_bytes(g) <= DW_BUF:
        return True
    return all((oh + 1) * wo <= min(oh * g.stride[0] - g.pad_begin[0] + 3, hi) * wi for oh in range(ho))


def _wide(node: Node) -> bool:
    """False where offload.fit_wide_weights set the node's "wide" attribute to 0 (the board's flash cannot hold
    the widened copy): its weights stay int8 only. Without the attribute (no board limits) the copy is made."""
    return bool(node.attr("wide", 1))


def wide_weight_bytes(graph: Graph, node: Node) -> int:
    """The flash a Conv's weights widened to int16 (mcud_conv_s8_fast_params.w16) take beside its int8 ones: its
    channels less those the block kernels leave out (_zero_channels: their weights all 0); 0 for a node that has no
    such copy."""
    if node.op != "Conv" or not graph.is_const(node.inputs[1]):
        return 0
    g = geometry(graph, node)
    return 2 * _live_count(graph, node, g) * _kpad(g) if _fast(graph, node, g) else 0


def _live_count(graph: Graph, node: Node, g: Geometry) -> int:
    """The output channels the block kernels of a Conv with constant weights compute (_live: all but those of weights
    0, where it leaves those out)."""
    return g.cout - int(_zero_channels(node, graph[node.inputs[1]].data).sum())


def tile_weight_bytes(graph: Graph, node: Node) -> Optional[tuple[int, int, int]]:
    """(the bytes of constants a Conv's kernel reads from flash per pass over its output channels: the int16 weights
    and each channel's requantization constants; those of one pair of its output channels' weights; its output
    pixels per image) where its kernel can take its scratch in tiles (mcud_conv_fast_tile: int8, group 1, constant
    weights, an even count of the output channels it computes, _live_count); else None."""
    if node.op != "Conv" or graph[node.inputs[0]].dtype != "int8" or int(node.attr("group", 1)) != 1 \
            or not graph.is_const(node.inputs[1]):
        return None
    g = geometry(graph, node)
    if not _fast(graph, node, g):
        return None
    live = _live_count(graph, node, g)
    if live % 2:
        return None
    return 2 * live * _kpad(g) + 4 * FAST_RQ * live, 4 * _kpad(g), int(np.prod(g.out_hw))


def _blocks(graph: Graph, node: Node, g: Geometry) -> int:
    """Blocks of PIXELS columns in mcud_conv_s8_fast's scratch: the node's "tile" (offload.tile_convolutions)
    where its kernel takes tiles (int16 weights, an even count of the output channels it computes: mcud_conv_fast_blocks
    tiles only then), else 1."""
    tile = int(node.attr("tile", 1))
    return tile if tile > 1 and _wide(node) and _live_count(graph, node, g) % 2 == 0 else 1


def _uses_scratch(node: Node) -> bool:
    """False where offload.fit_scratch set the node's "scratch" attribute to 0."""
    return bool(node.attr("scratch", 1))


def _kpad(g: Geometry) -> int:
    """Taps per output (C * KH * KW) rounded up to a multiple of 4: one SMLAD pair of pairs per step."""
    return -(-g.cin * g.kernel[0] * g.kernel[1] // 4) * 4


def _scratch_bytes(g: Geometry) -> int:
    """PIXELS columns of kpad int16 (the arena's alignment, at least 4, is all LDRD needs)."""
    return PIXELS * 2 * _kpad(g)


MVE_COLS = 592  # MCUD_MVE_COLS in firmware/include/mcud_conv_mve.h: mcud_conv_s8_direct_mve's stack columns, in bytes


def _mve_direct_columns(g: Geometry) -> int:
    """Output pixels mcud_conv_s8_direct_mve takes at a time (its `per`, at most PIXELS): the columns of
    mcud_conv_s8_fast (kpad taps) where p->hwc, else the model's C * KH * KW taps, in MCUD_MVE_COLS bytes less 16
    of slack; 0 where not one fits (the scalar direct kernel runs)."""
    hwc = g.cin % 4 == 0 and tuple(g.kernel) != (1, 1)  # as _fast_call's p->hwc
    k = _kpad(g) if hwc else g.cin * g.kernel[0] * g.kernel[1]
    return min(PIXELS, (MVE_COLS - 16) // k) if k > 0 else 0


def _row3(g: Geometry) -> bool:
    """mcud_conv_s8_direct's pair-packed path: a kernel 3 wide, stride and dilation 1 along W."""
    return g.kernel[1] == 3 and g.stride[1] == 1 and g.dilation[1] == 1


def _inside(g: Geometry) -> bool:
    """No window reaches outside the input, so the im2col needs no bounds checks."""
    return not any(g.pad_begin) and all((o - 1) * s + (k - 1) * d <= n - 1 for o, s, k, d, n in
                                        zip(g.out_hw, g.stride, g.kernel, g.dilation, g.in_hw))


# ---------------------------------------------------------------------------------------------- 16x8

ACC64_LIMIT = 1 << 47  # TFLite's 64-bit requantization takes |acc| < 2^47


def wide_accumulator(graph: Graph, node: Node) -> bool:
    """Whether a 16x8 Conv sums in int64 (else int32, wrapping as TFLite Micro's int32 sum does)."""
    if requant.arithmetic(graph) != "tflite":
        return True
    given = node.attr("accumulator")
    if given is not None:
        return given == "int64"
    bias = _bias(node)
    return not bias or graph[bias].dtype == "int64"


def _accepts_16x8(op: "Conv", graph: Graph, node: Node) -> bool:
    """TFLite's 16x8 convolution: int16 input and output with zero point 0, int8 weights with zero point 0
    per output channel or per tensor, a constant bias of the accumulator's type, an int64 sum that stays
    inside TFLite's requantization's range."""
    x, w, y = graph[node.inputs[0]], graph[node.inputs[1]], graph[node.outputs[0]]
    if y.dtype != "int16" or w.dtype != "int8" or not w.is_const:
        return False
    if x.quant is None or w.quant is None or y.quant is None or len(x.quant.scale) != 1 or len(y.quant.scale) != 1:
        return False
    if any(z != 0 for z in x.quant.zero_point + y.quant.zero_point + w.quant.zero_point):
        return False
    if len(w.quant.scale) != 1 and (len(w.quant.scale) != w.shape[0] or (w.quant.axis or 0) % len(w.shape) != 0):
        return False
    wide = wide_accumulator(graph, node)
    bias = _bias(node)
    if bias and (not graph.is_const(bias) or graph[bias].dtype != ("int64" if wide else "int32")):
        return False
    try:
        if requant.arithmetic(graph) != "tflite":
            _requant16(op, graph, node)
            return True
        _, shift = op._requant(graph, node)
    except UnsupportedError:
        return False
    if not wide:
        return True
    return bool(np.all(_bound16(graph, node) < ACC64_LIMIT) and np.all(shift >= 17))


def _bound16(graph: Graph, node: Node) -> np.ndarray:
    """Per output channel, the largest magnitude of a 16x8 sum: every input at -32768, the bias added."""
    w = graph[node.inputs[1]]
    worst = np.abs(w.data.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1) * 32768
    bias = _bias(node)
    return worst + np.abs(graph[bias].data.astype(np.int64)) if bias else worst


def _requant16(op: "Conv", graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray]:
    """The (mult, shift) per channel the 16x8 kernels take: TFLite's (reduced for an int64 sum), or an ONNX
    model's wide multipliers."""
    if requant.arithmetic(graph) != "tflite":
        x, y = requant.qparams(graph, node.inputs[0]), requant.qparams(graph, node.outputs[0])
        sw = np.broadcast_to(requant.qparams(graph, node.inputs[1]).scale_array(), (graph[node.inputs[1]].shape[0],))
        return requant.wide_multipliers(x.single()[0] * sw / y.single()[0], _bound16(graph, node))
    mult, shift = op._requant(graph, node)
    return requant.tflite_reduced(mult, shift) if wide_accumulator(graph, node) else (mult, shift)


def _kpad16(g: Geometry) -> int:
    """Taps of one group's receptive field (C/g x KH x KW) rounded up to 4: mcud_conv_s16_fast's column."""
    return -(-g.cin_per_group * g.kernel[0] * g.kernel[1] // 4) * 4


FAST16_MACS = 64  # multiply-accumulates per column below which mcud_conv_s16 is the faster (a depthwise 3x3)


def _fast16(g: Geometry) -> bool:
    """Whether mcud_conv_s16_fast pays: its column costs about 350 instructions a pixel before the products
    (benchmarks/int16_bench.py on qemu-m4: 3.5 instructions per MAC for a 3x3 16 -> 16 against mcud_conv_s16's
    14.7, but 52 against 24 for a depthwise 3x3, which mcud_conv_s16_dw does in 12), so a group's output
    channels must make enough of it."""
    return g.cout_per_group * _kpad16(g) >= FAST16_MACS


def _kernel_16x8(op: "Conv", graph: Graph, node: Node, g: Geometry, views, common) -> Call:
    """mcud_conv_s16_pw for a pointwise convolution, whatever its "scratch" attribute (it needs none); else
    mcud_conv_s16_fast (firmware/kernels/conv.c: a column of the receptive field in its scratch, the weights
    packed for dual multiply-accumulates) where that pays; else mcud_conv_s16_dw where each group reads one
    input channel (rows of pairs of taps, no working memory), mcud_conv_s16 otherwise (or for a node whose
    "scratch" attribute is 0); per channel the reduced multiplier of an int64 sum, or the int8 kernels' (mult, shift) of
    a wrapping int32 one."""
    lo, hi = requant.clip_range(node, graph[node.outputs[0]])
    mult, shift = _requant16(op, graph, node)
    wide = wide_accumulator(graph, node)
    quant = dict(acc64=int(wide), act_min=lo, act_max=hi, mult=Array("int32_t", tuple(int(m) for m in mult)),
                 shift=Array("int32_t", tuple(int(v) for v in shift)))
    x, _, b, y = views
    if _pointwise16(g):  # no working memory: channels are rows of pixels
        kpad, packed = _packed16_pairs(graph, node, g)
        return Call("mcud_conv_s16_pw", (x, "", b, y), Struct.of(
            "mcud_conv_s16_pw_params", kpad=kpad, **quant, w=Array("int8_t", packed)))
    fast = _uses_scratch(node) and _fast16(g)
    if g.cin_per_group == 1 and not fast:  # depthwise: rows of int16 pairs, no working memory
        kw2 = g.kernel[1] + g.kernel[1] % 2
        w = np.zeros((g.cout, g.kernel[0], kw2), np.int64)
        w[:, :, :g.kernel[1]] = graph[node.inputs[1]].data.reshape(g.cout, *g.kernel)
        return Call("mcud_conv_s16_dw", (x, "", b, y), Struct.of(
            "mcud_conv_s16_dw_params", multiplier=g.cout_per_group, kernel=g.kernel, kw2=kw2, stride=g.stride,
            dilation=g.dilation, pad=g.pad_begin, **quant, w=Array("int16_t", tuple(int(v) for v in w.reshape(-1)))))
    if not fast:
        return Call("mcud_conv_s16", views, Struct.of("mcud_conv_s16_params", **common, **quant))
    kpad = _kpad16(g)
    m32 = _smmlar_multipliers(graph, node, g, mult, shift) if wide else ()
    return Call("mcud_conv_s16_fast", (x, "", b, y), Struct.of(
        "mcud_conv_s16_fast_params", group=g.group, kernel=g.kernel, stride=g.stride, dilation=g.dilation,
        pad=g.pad_begin, kpad=kpad, **quant, w=Array("int8_t", _packed16(graph, node, g)),
        m32=Array("int32_t", m32) if any(m32) else 0), scratch=2 * kpad)


def _smmlar_multipliers(graph: Graph, node: Node, g: Geometry, mult, shift) -> tuple[int, ...]:
    """Per output channel of an int64 sum, the multiplier mcud_conv_s16_fast requantizes with one SMMLAR, or 0: where
    the channel's products (each at most 2^22 in magnitude) and its bias sum within int32 and its shift is 16 to 32,
    (t m + 2^(s-1)) >> s equals (t m 2^(32-s) + 2^31) >> 32, SMMLAR's rounded high word, if m 2^(32-s) fits int32."""
    taps = g.cin_per_group * g.kernel[0] * g.kernel[1]
    room = 2**31 - 1 - taps * 2**22
    bias = (graph[node.inputs[2]].data.astype(np.int64).reshape(-1) if len(node.inputs) > 2 and node.inputs[2]
            else np.zeros(g.cout, np.int64))
    out = []
    for oc in range(g.cout):
        m, s, b = int(mult[oc]), int(shift[oc]), int(bias[oc])
        m32 = m << (32 - s) if 16 <= s <= 32 else 0
        out.append(m32 if abs(b) <= room and -2**31 <= m32 < 2**31 else 0)
    return tuple(out)


def _packed16(graph: Graph, node: Node, g: Geometry) -> tuple[int, ...]:
    """The weights as mcud_conv_s16_fast takes them: per output channel its taps, zeros up to
    _kpad16, each four as (k0, k2, k1, k3), so that SXTB16 and SXTB16 ROR 8 give the pairs (k0, k1) and (k2, k3)."""
    kpad = _kpad16(g)
    w = graph[node.inputs[1]].data.astype(np.int64).reshape(g.cout, -1)
    packed = np.zeros((g.cout, kpad), np.int64)
    packed[:, :w.shape[1]] = w
    return tuple(int(v) for v in packed.reshape(g.cout, kpad // 4, 4)[:, :, [0, 2, 1, 3]].reshape(-1))


def _packed16_pairs(graph: Graph, node: Node, g: Geometry) -> tuple[int, tuple[int, ...]]:
    """The weights as mcud_conv_s16_pw takes them, and kpad: per pair of output channels (a last odd one padded with
    zeros), for each of kpad input channels (cin rounded up to even, zeros after) the pair's two weights, so that four
    bytes at an even channel are (w0[k], w1[k], w0[k+1], w1[k+1]) and SXTB16, SXTB16 ROR 8 give each channel's pair."""
    kpad = g.cin + g.cin % 2
    pairs = -(-g.cout // 2)
    w = np.zeros((2 * pairs, kpad), np.int64)
    w[:g.cout, :g.cin] = graph[node.inputs[1]].data.astype(np.int64).reshape(g.cout, g.cin)
    return kpad, tuple(int(v) for v in w.reshape(pairs, 2, kpad).transpose(0, 2, 1).reshape(-1))


def _pointwise16(g: Geometry) -> bool:
    """A 16x8 convolution mcud_conv_s16_pw computes: 1x1, stride 1, no padding, one group."""
    return (g.group == 1 and tuple(g.kernel) == (1, 1) and tuple(g.stride) == (1, 1)
            and not any(g.pad_begin) and not any(g.pad_end))
