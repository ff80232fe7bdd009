"""ConvTranspose: the transposed 1-D and 2-D convolution over NCHW (ONNX's ConvTranspose, TFLite's TRANSPOSE_CONV,
Keras' Conv2DTranspose and Conv1DTranspose), float32, and for a TFLite model int8 and 16x8.

Input x (N, C_in, H, W), weights w (C_in, C_out / group, KH, KW) as ONNX lays them out, optional bias
(C_out). Input pixel i meets tap k at output pixel o = i * stride + k * dilation - pad_begin; what falls
outside [0, out) is dropped, where out = stride * (in - 1) + output_padding + dilation * (k - 1) + 1
- pad_begin - pad_end. TFLite Micro scatters every input pixel into an int32 (int64 at 16x8) scratch of
the output; the kernels here gather instead, each output pixel summing the taps that reach it, so a
piece of the output (a batch, a range of output channels) needs only its own inputs and weights and no
scratch. Integer sums are the same in any order (the int8 one wraps in 32 bits as TFLite Micro's
does); a float one differs by rounding only.

Quantized forms as TFLite's: int8 input and output per tensor, int8 weights with zero point 0 per
output channel or per tensor, an int32 bias, each output channel requantized with its own multiplier
(s_x s_w[c] / s_y); 16x8 (int16 input and output with zero point 0) sums in int64 and takes TFLite's
64-bit requantization. A 1-D convolution (N, C, W) is handled as a 2-D one with H = 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Array, Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require
from mcudeploy.ops.conv import weights_constant
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import ints

ACC64_LIMIT = 1 << 47  # TFLite's 64-bit requantization takes |acc| < 2^47
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides")


@dataclass(frozen=True)
class Geometry:
    """A ConvTranspose resolved against its input's shape (always 2-D: a 1-D one has H = 1)."""

    spatial: int
    n: int
    cin: int
    cout: int
    group: int
    in_hw: tuple[int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int]  # begin padding: output pixel o = i * stride + k * dilation - pad
    out_hw: tuple[int, int]

    @property
    def cin_per_group(self) -> int:
        return self.cin // self.group

    @property
    def cout_per_group(self) -> int:
        return self.cout // self.group


def geometry(graph: Graph, node: Node) -> Geometry:
    """The begin pads and output size as ONNX resolves them: from pads and output_padding; or, where
    output_shape is given or auto_pad is SAME_* (output = input * stride), from the total padding that size
    leaves, split with the odd pixel at the end for SAME_UPPER and at the begin otherwise."""
    xs, ws = graph[node.inputs[0]].shape, graph[node.inputs[1]].shape
    require(len(xs) in (3, 4), f"ConvTranspose supports 1-D and 2-D inputs, not rank {len(xs)}")
    require(len(ws) == len(xs), f"ConvTranspose weights of rank {len(ws)} do not match an input of rank {len(xs)}")
    spatial = len(xs) - 2
    group = int(node.attr("group", 1))
    n, cin = xs[0], xs[1]
    require(group >= 1 and cin % group == 0 and ws[0] == cin,
            f"ConvTranspose weights for {ws[0]} input channels in {group} groups do not match {cin} input channels")
    cout = ws[1] * group
    kernel = tuple(ws[2:])
    given = node.attr("kernel_shape")
    require(given is None or tuple(given) == kernel, f"ConvTranspose kernel_shape {given} differs from the "
                                                     f"weights' {kernel}")
    strides = tuple(node.attr("strides") or (1,) * spatial)
    dilations = tuple(node.attr("dilations") or (1,) * spatial)
    auto_pad = node.attr("auto_pad", "NOTSET")
    require(auto_pad in AUTO_PADS, f"ConvTranspose auto_pad {auto_pad} is not supported")
    pads = node.attr("pads")
    pads = tuple(pads) if pads and auto_pad == "NOTSET" else None
    extra = tuple(node.attr("output_padding") or (0,) * spatial)
    require(len(strides) == spatial and len(dilations) == spatial and len(extra) == spatial
            and (pads is None or len(pads) == 2 * spatial),
            "ConvTranspose strides, dilations, pads or output_padding do not match the spatial rank")
    require(all(s >= 1 for s in strides) and all(d >= 1 for d in dilations),
            "ConvTranspose strides and dilations must be >= 1")
    require(all(e >= 0 for e in extra) and all(p >= 0 for p in pads or ()),
            "ConvTranspose with negative pads or output_padding is not supported")
    natural = [strides[i] * (xs[2 + i] - 1) + extra[i] + dilations[i] * (kernel[i] - 1) + 1 for i in range(spatial)]
    shape = node.attr("output_shape")
    if shape is not None:
        out = list(shape)[-spatial:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER") and pads is None:
        out = [xs[2 + i] * strides[i] for i in range(spatial)]
    else:
        pads = pads or (0,) * (2 * spatial)
        out = [natural[i] - pads[i] - pads[spatial + i] for i in range(spatial)]
    if pads is not None:
        begin = list(pads[:spatial])
    else:
        total = [natural[i] - out[i] for i in range(spatial)]
        begin = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]
    require(all(o >= 1 for o in out), f"ConvTranspose output would be empty (output extent {tuple(out)})")
    if spatial == 1:
        return Geometry(1, n, cin, cout, group, (1, xs[2]), (1, kernel[0]), (1, strides[0]), (1, dilations[0]),
                        (0, begin[0]), (1, out[0]))
    return Geometry(2, n, cin, cout, group, tuple(xs[2:]), kernel, strides, dilations, tuple(begin), tuple(out))


def _bias(node: Node) -> str:
    return node.inputs[2] if len(node.inputs) > 2 else ""


def _scatter(x: np.ndarray, w: np.ndarray, g: Geometry, acc_dtype) -> np.ndarray:
    """sum over (ic, kh, kw) of x * w placed at o = i * s + k * d - pad: x (N, C_in, H, W), w (C_in, C_out/g,
    KH, KW) -> (N, C_out, OH, OW) in acc_dtype."""
    (oh, ow), (h, wd) = g.out_hw, g.in_hw
    xg = x.astype(acc_dtype).reshape(g.n, g.group, g.cin_per_group, h, wd)
    wg = w.astype(acc_dtype).reshape(g.group, g.cin_per_group, g.cout_per_group, *g.kernel)
    acc = np.zeros((g.n, g.group, g.cout_per_group, oh, ow), dtype=acc_dtype)
    for kh in range(g.kernel[0]):
        rows = np.arange(h) * g.stride[0] + kh * g.dilation[0] - g.pad[0]
        rin = (rows >= 0) & (rows < oh)
        for kw in range(g.kernel[1]):
            cols = np.arange(wd) * g.stride[1] + kw * g.dilation[1] - g.pad[1]
            cin = (cols >= 0) & (cols < ow)
            part = np.einsum("ngchw,gck->ngkhw", xg[:, :, :, rin][:, :, :, :, cin], wg[:, :, :, kh, kw])
            acc[:, :, :, rows[rin][:, None], cols[cin][None, :]] += part
    return acc.reshape(g.n, g.cout, oh, ow)


@register
class ConvTranspose(Op):
    name = "ConvTranspose"
    onnx_types = ("ConvTranspose",)
    fuses_activation = True

    def from_onnx(self, onnx: OnnxNode):
        require(len(onnx.inputs) >= 2 and onnx.inputs[1], "ConvTranspose needs weights")
        unknown = set(onnx.attrs) - set(ATTRS)
        require(not unknown, f"ConvTranspose attribute {', '.join(sorted(unknown))} is not supported")
        attrs = {"group": int(onnx.attrs.get("group", 1)), "auto_pad": str(onnx.attrs.get("auto_pad", "NOTSET"))}
        for key in ATTRS[1:]:
            if key in onnx.attrs and key != "group":
                attrs[key] = ints(onnx.attrs[key])
        bias = onnx.inputs[2] if len(onnx.inputs) > 2 else ""
        return (onnx.inputs[0], onnx.inputs[1], bias), attrs

    # ------------------------------------------------------------------ shape, expression
    def infer(self, graph, node):
        g = geometry(graph, node)
        x, w = graph[node.inputs[0]], graph[node.inputs[1]]
        require(weights_constant(graph, node.inputs[1]),
                "ConvTranspose needs constant weights (they are compiled into flash)")
        bias = _bias(node)
        if bias:
            require(graph[bias].shape == (g.cout,), f"ConvTranspose bias of shape {graph[bias].shape} does not match "
                                                    f"{g.cout} output channels")
        if x.dtype == "float32":
            require(w.dtype == "float32" and (not bias or graph[bias].dtype == "float32"),
                    "a float32 ConvTranspose needs float32 weights and bias")
        else:
            require(x.dtype in ("int8", "int16") and w.dtype == "int8",
                    f"ConvTranspose of {x.dtype} input and {w.dtype} weights is not supported")
            want = "int32" if x.dtype == "int8" else "int64"
            require(not bias or graph[bias].dtype == want, f"a {x.dtype} ConvTranspose needs an {want} bias")
        out = (g.n, g.cout, g.out_hw[1]) if g.spatial == 1 else (g.n, g.cout, *g.out_hw)
        return [(out, x.dtype)]

    def expr(self, graph, node):
        """Output channels are one axis where there is one group (the weights' second dimension follows
        it); the spatial axes are not windows of the input (a stride skips taps), so the input is read
        whole along them."""
        g = geometry(graph, node)
        first = 2 - g.spatial
        spatial, kernel = ["oh", "ow"][first:], ["kh", "kw"][first:]
        axes = [Axis("n", g.n), Axis("oc", g.cout)]
        axes += [Axis(a, g.out_hw[first + i]) for i, a in enumerate(spatial)]
        axes += [Axis("ic", g.cin_per_group, "reduction")]
        axes += [Axis(k, g.kernel[first + i], "reduction") for i, k in enumerate(kernel)]
        one = g.group == 1
        x_dims = (Dim.identity("n"), Dim.identity("ic") if one else Dim.full()) + tuple(Dim.full() for _ in spatial)
        w_dims = ((Dim.identity("ic"), Dim.identity("oc")) if one else (Dim.full(), Dim.full())) + tuple(
            Dim.identity(k) for k in kernel)
        inputs = (x_dims, w_dims, (Dim.identity("oc"),) if _bias(node) else None)
        outputs = ((Dim.identity("n"), Dim.identity("oc")) + tuple(Dim.identity(a) for a in spatial),)
        return TensorExpr(tuple(axes), inputs, outputs)

    def macs(self, graph, node):
        g = geometry(graph, node)
        return g.n * g.cin * g.in_hw[0] * g.in_hw[1] * g.cout_per_group * g.kernel[0] * g.kernel[1]

    def piece(self, graph, node, axis, rows, pads):
        """A batch range, or a range of output channels of a one-group ConvTranspose (the partition slices
        its weights, bias and per-channel scales); nothing else."""
        if pads is None and (axis == "n" or (axis == "oc" and int(node.attr("group", 1)) == 1)):
            return dict(node.attrs)
        return None

    # ------------------------------------------------------------------ quantized acceptance
    def accepts_int8(self, graph, node) -> bool:
        """TFLite's quantized TRANSPOSE_CONV: per-tensor input and output (zero points 0 at 16x8), int8 weights
        with zero point 0 per output channel or per tensor, a constant bias. An ONNX model's 16x8 (int16 QDQ) the
        same, with its int64 bias and requant.wide_multipliers (its int8 form stays in float)."""
        x, w, y = graph[node.inputs[0]], graph[node.inputs[1]], graph[node.outputs[0]]
        tflite = requant.arithmetic(graph) == "tflite"
        if x.dtype not in (("int8", "int16") if tflite else ("int16",)) or y.dtype != x.dtype:
            return False
        if w.dtype != "int8" or not w.is_const or x.quant is None or w.quant is None or y.quant is None:
            return False
        if len(x.quant.scale) != 1 or len(y.quant.scale) != 1 or any(w.quant.zero_point):
            return False
        if len(w.quant.scale) != 1 and (len(w.quant.scale) != w.shape[1] or (w.quant.axis or 0) % len(w.shape) != 1):
            return False
        if x.dtype == "int16" and (x.quant.zero_point[0] or y.quant.zero_point[0]):
            return False
        bias = _bias(node)
        if bias and not graph.is_const(bias):
            return False
        if bias and not tflite and graph[bias].dtype != "int64":
            return False
        try:
            _, shift = self._requant(graph, node)
            if not tflite:
                self._requant16(graph, node)
                return True
        except UnsupportedError:
            return False
        if x.dtype == "int8":
            return True
        return bool(np.all(self._bound16(graph, node) < ACC64_LIMIT) and np.all(shift >= 17))

    def _bound16(self, graph: Graph, node: Node) -> np.ndarray:
        """Per output channel, the largest magnitude of a 16x8 sum (every input at -32768, the bias added)."""
        w = graph[node.inputs[1]]
        g = geometry(graph, node)
        w5 = np.abs(w.data.astype(np.int64)).reshape(g.group, g.cin // g.group, g.cout_per_group, -1)
        worst = w5.sum(axis=(1, 3)).reshape(-1) * 32768
        bias = _bias(node)
        return worst + np.abs(graph[bias].data.astype(np.int64)) if bias else worst

    def _requant16(self, graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray]:
        """The 16x8 kernel's (mult, shift) per channel: TFLite's reduced ones, or an ONNX model's wide ones."""
        if requant.arithmetic(graph) == "tflite":
            return requant.tflite_reduced(*self._requant(graph, node))
        x, y = requant.qparams(graph, node.inputs[0]), requant.qparams(graph, node.outputs[0])
        sw = np.broadcast_to(requant.qparams(graph, node.inputs[1]).scale_array(), (geometry(graph, node).cout,))
        return requant.wide_multipliers(x.single()[0] * sw / y.single()[0], self._bound16(graph, node))

    def _requant(self, graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray]:
        """Per output channel (mult, shift) of s_x s_w[c] / s_y, the product in double as TFLite's."""
        x, w, y = graph[node.inputs[0]], graph[node.inputs[1]], graph[node.outputs[0]]
        sx, _ = requant.qparams(graph, x.name).single()
        sy, _ = requant.qparams(graph, y.name).single()
        sw = np.broadcast_to(requant.qparams(graph, w.name).scale_array(), (geometry(graph, node).cout,))
        return requant.multipliers(graph, sx * sw / sy)

    # ------------------------------------------------------------------ reference
    def reference(self, graph, node, inputs):
        g = geometry(graph, node)
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        x4 = x.reshape(g.n, g.cin, *g.in_hw)
        w4 = w.reshape(g.cin, g.cout_per_group, *g.kernel)
        out_shape = graph[node.outputs[0]].shape
        if x.dtype == np.float32:
            acc = _scatter(x4, w4, g, np.float64)
            if bias is not None:
                acc += bias.astype(np.float64).reshape(1, -1, 1, 1)
            lo, hi = requant.float_clip(node)
            return [np.clip(acc.astype(np.float32), np.float32(lo), np.float32(hi)).reshape(out_shape)]
        _, zx = requant.qparams(graph, node.inputs[0]).single()
        _, zy = requant.qparams(graph, node.outputs[0]).single()
        acc = _scatter(x4.astype(np.int64) - zx, w4, g, np.int64)
        if bias is not None:
            acc += bias.astype(np.int64).reshape(1, -1, 1, 1)
        if x.dtype == np.int16:
            mult, shift = (v.reshape(1, -1, 1, 1).astype(np.int64) for v in self._requant16(graph, node))
            q = requant.requantize_wide(acc, mult, shift)
        else:
            mult, shift = (v.reshape(1, -1, 1, 1).astype(np.int64) for v in self._requant(graph, node))
            q = requant.tflite_requantize(requant.wrap32(acc), mult, shift) + zy
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return [np.clip(q, lo, hi).astype(x.dtype).reshape(out_shape)]

    # ------------------------------------------------------------------ kernel
    def kernel(self, graph, node):
        g = geometry(graph, node)
        require(graph.is_const(node.inputs[1]), "ConvTranspose needs constant weights (they are compiled into flash)")
        views = (node.inputs[0], node.inputs[1], _bias(node), node.outputs[0])
        common = dict(group=g.group, stride=g.stride, dilation=g.dilation, pad=g.pad)
        dtype = graph[node.inputs[0]].dtype
        if dtype == "float32":
            lo, hi = requant.float_clip(node)
            return Call("mcud_conv_transpose_f32", views, Struct.of("mcud_conv_transpose_f32_params", **common,
                                                                    act_min=lo, act_max=hi))
        _, zx = requant.qparams(graph, node.inputs[0]).single()
        _, zy = requant.qparams(graph, node.outputs[0]).single()
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        mult, shift = self._requant16(graph, node) if dtype == "int16" else self._requant(graph, node)
        return Call("mcud_conv_transpose_s8_tfl" if dtype == "int8" else "mcud_conv_transpose_s16", views, Struct.of(
            "mcud_conv_transpose_q_params", **common, in_zero_point=zx, out_zero_point=zy, act_min=lo, act_max=hi,
            mult=Array("int32_t", tuple(int(m) for m in mult)), shift=Array("int32_t", tuple(int(s) for s in shift))))
