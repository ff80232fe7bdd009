"""Resize (opset 10+) and Upsample: nearest and (bi)linear on the last two dims, float32 and int8.

Everything geometric happens here at compile time: for every output row and column the source
index (nearest) or the two source indices and their weights (linear) are computed with
onnxruntime's float32 arithmetic and passed to the kernel as constant arrays, so the kernel is
a plain gather. Dims before the last two must map to themselves.

int8: nearest copies (or requantizes when the quantization changes); linear uses Q11 weights
(w0 + w1 = 2048 per dim), accumulates (x - zx) * wy * wx in int32 (at most 255 * 2^22) and
requantizes by s_x / (s_y * 2^22).

A TFLite model (``Graph.arithmetic == "tflite"``; its flags align_corners and half_pixel_centers arrive as
coordinate modes "align_corners", "half_pixel" / "tf_half_pixel_for_nn" and "asymmetric") computes as
TFLite Micro does: nearest takes TFLite's GetNearestNeighbor (float32 scale, floor or, with
align_corners, round half away from zero) and copies the codes, whatever the quantization, at int8 and
int16; int8 bilinear is ResizeBilinearInteger (``tflite_linear``): the scale in 1/1024 steps rounded to
nearest, per output row and column two sources and their integer weights (summing to 1024; the first
one above 1024 and the second negative where half-pixel centres fall before the first pixel, both
sources then being that pixel), the codes times both weights added (at most 2^29 in magnitude, so int32
holds them) and divided by 2^20 rounding half away from zero.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mcudeploy.ir import MAX_TENSOR_BYTES, Graph, Node, itemsize
from mcudeploy.ops import requant
from mcudeploy.ops.base import Array, Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import ints, norm_axis

COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
QBITS = 11  # fixed-point weights of int8 linear resizing
F32 = np.float32
SUFFIX = {"float32": "f32", "int8": "s8", "int16": "s16"}


@dataclass(frozen=True)
class _DimMap:
    """How one output dim reads its input dim."""

    index0: np.ndarray  # int64 per output coordinate
    index1: np.ndarray  # second source (linear); equal to index0 for nearest
    weight0: np.ndarray  # float32 weights of index0 and index1 (linear)
    weight1: np.ndarray

    def is_identity(self) -> bool:
        reads_one = (self.weight1 == 0) | (self.index1 == self.index0)
        return bool(np.all(self.index0 == np.arange(len(self.index0))) and np.all(reads_one))


def _original(x: np.ndarray, scale: np.float32, resized: int, original: int, mode: str) -> np.ndarray:
    """onnxruntime's get_original_coordinate, in float32."""
    x = x.astype(F32)
    half = F32(0.5)
    if mode == "half_pixel":
        return (x + half) / scale - half
    if mode == "half_pixel_symmetric":
        adjustment = F32(resized) / (scale * F32(original))
        offset = F32(original) / F32(2) * (F32(1) - adjustment)
        return offset + (x + half) / scale - half
    if mode == "pytorch_half_pixel":
        return (x + half) / scale - half if resized > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return np.zeros_like(x) if resized == 1 else x * F32(original - 1) / F32(resized - 1)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / scale
    raise AssertionError(mode)


def _nearest(c: np.ndarray, mode: str, downsampling: bool) -> np.ndarray:
    trunc = np.trunc(c)
    away = np.where(c >= 0, np.floor(c + F32(0.5)), np.ceil(c - F32(0.5)))  # std::round
    if mode == "round_prefer_floor":
        return np.where(c == trunc + F32(0.5), trunc, away)
    if mode == "round_prefer_ceil":
        return away
    if mode == "floor":
        return np.floor(c)
    if mode == "ceil":
        return np.ceil(c)
    return np.ceil(c) if downsampling else trunc  # "simple": Upsample and Resize-10


def tflite_flags(node: Node) -> tuple[bool, bool]:
    """(align_corners, half_pixel_centers) of a TFLite resize, from its coordinate mode."""
    coord = node.attr("coordinate_transformation_mode")
    return coord == "align_corners", coord in ("half_pixel", "tf_half_pixel_for_nn")


def tflite_nearest(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    """TFLite's GetNearestNeighbor for every output coordinate, in float32 as it computes."""
    scale = F32(n_in - 1) / F32(n_out - 1) if align and n_out > 1 else F32(n_in) / F32(n_out)
    c = (np.arange(n_out).astype(F32) + F32(0.5 if half else 0.0)) * scale
    i = (np.sign(c) * np.floor(np.abs(c) + F32(0.5)) if align else np.floor(c)).astype(np.int64)  # TfLiteRound
    i = np.minimum(i, n_in - 1)
    return np.maximum(i, 0) if half else i


def _c_div(a: np.ndarray, b: int) -> np.ndarray:
    """a / b as C divides integers (toward zero), b > 0."""
    return np.where(a >= 0, a // b, -((-a) // b))


def tflite_linear(n_in: int, n_out: int, align: bool, half: bool) -> tuple[np.ndarray, ...]:
    """TFLite's ResizeBilinearInteger along one dim: per output coordinate the two sources and their
    weights in 1/1024 (ComputeInterpolationValuesInteger)."""
    scale = ((1 << 10) * n_in + n_out // 2) // n_out
    if align and n_out > 1:
        scale = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
    v = np.arange(n_out, dtype=np.int64) * scale
    if half:
        v = v + scale // 2 - (1 << 9)
    i0 = np.maximum(_c_div(v, 1 << 10), 0)
    i1 = np.minimum(_c_div(v + (1 << 10) - 1, 1 << 10), n_in - 1)
    require(bool(np.all(i0 <= n_in - 1)), f"TFLite's integer bilinear resize from {n_in} to {n_out} reads past the "
                                          f"input (its rounded scale)")
    w1 = v - (1 << 10) * i0
    return i0, i1, (1 << 10) - w1, w1


def _dim_map(node: Node, n_in: int, n_out: int, scale: float) -> _DimMap:
    scale = F32(scale)
    if scale == 1 and n_in == n_out:  # onnxruntime copies such a dim whatever the coordinate mode
        i = np.arange(n_out)
        return _DimMap(i, i, np.ones(n_out, F32), np.zeros(n_out, F32))
    c = _original(np.arange(n_out), scale, n_out, n_in, node.attr("coordinate_transformation_mode"))
    if node.attr("mode") == "nearest":
        i = np.clip(_nearest(c, node.attr("nearest_mode"), bool(scale < 1)).astype(np.int64), 0, n_in - 1)
        one = np.ones(n_out, F32)
        return _DimMap(i, i, one, np.zeros(n_out, F32))
    c = np.clip(c, F32(0), F32(n_in - 1))
    i0 = np.minimum(c.astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    w1 = np.abs(c - i0.astype(F32))  # onnxruntime's dx1: weight of the second source
    w0 = np.abs(c - i1.astype(F32))
    same = i0 == i1
    w0 = np.where(same, F32(0.5), w0).astype(F32)
    w1 = np.where(same, F32(0.5), w1).astype(F32)
    return _DimMap(i0, i1, w0, w1)


def _plan(graph: Graph, node: Node) -> tuple[tuple[int, ...], tuple[_DimMap, ...]]:
    """Output shape and the map of each input dim."""
    shape = graph[node.inputs[0]].shape
    rank = len(shape)
    axes = node.attr("axes")
    axes = list(range(rank)) if axes is None else [norm_axis(a, rank, "Resize") for a in axes]
    require(len(set(axes)) == len(axes), "Resize axes repeat")
    scales = [1.0] * rank
    out = list(shape)
    if node.attr("scales") is not None:
        given = node.attr("scales")
        require(len(given) == len(axes), f"{len(given)} scales for {len(axes)} axes")
        for a, s in zip(axes, given):
            with np.errstate(over="ignore"):
                size = F32(s) * F32(shape[a])
            require_valid(s > 0 and np.isfinite(size), f"has scale {s:g} for axis {a}: a scale must be positive "
                                                       f"and make a finite size")
            scales[a] = float(F32(s))
            out[a] = int(size)
    else:
        sizes = node.attr("sizes")
        require(sizes is not None, "Resize needs scales or sizes")
        require(len(sizes) == len(axes), f"{len(sizes)} sizes for {len(axes)} axes")
        policy = node.attr("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            for a, s in zip(axes, sizes):
                out[a] = int(s)
                scales[a] = float(F32(s) / F32(shape[a]))
        else:
            ratios = [F32(s) / F32(shape[a]) for a, s in zip(axes, sizes)]
            r = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                scales[a] = float(r)
                out[a] = int(np.round(r * F32(shape[a])))
    require(all(o > 0 for o in out), f"Resize to an empty shape {tuple(out)}")
    nbytes = math.prod(out) * itemsize(graph[node.inputs[0]].dtype)  # before index tables as long as its dims
    require_valid(nbytes <= MAX_TENSOR_BYTES, f"resizes to shape {tuple(out)}, {nbytes:,} bytes: more than the "
                                              f"{MAX_TENSOR_BYTES:,} a tensor may take on any board")
    require(not (node.attr("antialias") and node.attr("mode") == "linear" and min(scales) < 1),
            "antialiased linear downsampling is not supported")
    maps = tuple(_dim_map(node, n, o, s) for n, o, s in zip(shape, out, scales))
    if requant.arithmetic(graph) == "tflite" and node.attr("mode") == "nearest":
        maps = maps[:-2] + tuple(_tflite_nearest_map(node, n, o) for n, o in zip(shape[-2:], out[-2:]))
    return tuple(out), maps


def _tflite_nearest_map(node: Node, n_in: int, n_out: int) -> _DimMap:
    i = tflite_nearest(n_in, n_out, *tflite_flags(node))
    return _DimMap(i, i, np.ones(n_out, F32), np.zeros(n_out, F32))


def _resize_attrs(onnx: OnnxNode, scales, sizes, axes=None) -> dict:
    a = onnx.attrs
    mode = a.get("mode", "nearest")
    mode = "linear" if mode == "bilinear" else mode
    require(mode in ("nearest", "linear"), f"mode {mode} is not supported")
    if onnx.op_type == "Upsample" or onnx.opset < 11:
        coord, nearest = "asymmetric", "simple"
    else:
        coord = a.get("coordinate_transformation_mode", "half_pixel")
        nearest = a.get("nearest_mode", "round_prefer_floor")
    require(coord in COORD_MODES, f"coordinate_transformation_mode {coord} is not supported")
    require(nearest in NEAREST_MODES, f"nearest_mode {nearest} is not supported")
    policy = a.get("keep_aspect_ratio_policy", "stretch")
    require(policy in ("stretch", "not_larger", "not_smaller"), f"keep_aspect_ratio_policy {policy} is unknown")
    return {"mode": mode, "antialias": int(a.get("antialias", 0)), "coordinate_transformation_mode": coord,
            "nearest_mode": nearest, "scales": scales, "sizes": sizes, "axes": axes, "keep_aspect_ratio_policy": policy}


def _const_input(onnx: OnnxNode, i: int, what: str):
    if len(onnx.inputs) <= i or not onnx.inputs[i]:
        return None
    v = onnx.const(onnx.inputs[i])
    require(v is not None, f"{what} must be a constant")
    return v if v.size else None


class _Resample(Op):
    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        int16 = x.dtype == "int16" and requant.arithmetic(graph) == "tflite" and node.attr("mode") == "nearest"
        require(x.dtype in ("float32", "int8") or int16, f"{self.name} of {x.dtype} is not supported")
        require(2 <= len(x.shape) <= 4, f"{self.name} of a rank-{len(x.shape)} tensor is not supported (2 to 4)")
        out, maps = _plan(graph, node)
        for d, m in enumerate(maps[:-2]):
            require(out[d] == x.shape[d] and m.is_identity(),
                    f"{self.name} only resamples the last two dims (dim {d} would change)")
        return [(out, x.dtype)]

    def accepts_int8(self, graph, node) -> bool:
        ints = ("int8", "int16") if requant.arithmetic(graph) == "tflite" else ("int8",)
        x = graph[node.inputs[0]]
        for name in (node.inputs[0], node.outputs[0]):
            t = graph[name]
            if t.dtype not in ints or t.dtype != x.dtype or t.quant is None or len(t.quant.scale) != 1:
                return False
        return True

    def expr(self, graph, node):
        out = graph[node.outputs[0]].shape
        rank = len(out)
        axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out))
        # the last two dims are gathers through index tables: any output row may read any input row
        ins = tuple(Dim.identity(f"d{i}") if i < rank - 2 else Dim.full() for i in range(rank))
        return TensorExpr(axes, (ins,), (tuple(Dim.identity(a.name) for a in axes),))

    def macs(self, graph, node):
        taps = 4 if node.attr("mode") == "linear" else 1
        return graph[node.outputs[0]].size * taps

    # ------------------------------------------------------------------ reference
    def _requant(self, graph, node) -> tuple[int, int, int, int, int]:
        """(zx, zy, flag, mult, shift) for int8 nearest: flag 0 copies (always, in a TFLite model)."""
        (sx, zx), (sy, zy) = graph[node.inputs[0]].quant.single(), graph[node.outputs[0]].quant.single()
        if (sx, zx) == (sy, zy) or requant.arithmetic(graph) == "tflite":
            return zx, zy, 0, 0, 1
        mult, shift = requant.quantize_multiplier(sx / sy)
        return zx, zy, 1, mult, shift

    def _linear_requant(self, graph, node) -> tuple[int, int, int, int]:
        (sx, zx), (sy, zy) = graph[node.inputs[0]].quant.single(), graph[node.outputs[0]].quant.single()
        mult, shift = requant.quantize_multiplier(sx / (sy * float(1 << (2 * QBITS))))
        return zx, zy, mult, shift

    @staticmethod
    def _qweights(m: _DimMap) -> tuple[np.ndarray, np.ndarray]:
        w1 = np.rint(m.weight1.astype(np.float64) * (1 << QBITS)).astype(np.int64)
        return (1 << QBITS) - w1, w1

    def _tflite_tables(self, graph, node) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """TFLite's integer bilinear sources and weights along H and along W."""
        x, y = graph[node.inputs[0]].shape, graph[node.outputs[0]].shape
        flags = tflite_flags(node)
        return tflite_linear(x[-2], y[-2], *flags), tflite_linear(x[-1], y[-1], *flags)

    def _tflite_linear_reference(self, graph, node, x):
        (h0, h1, wy0, wy1), (w0, w1, wx0, wx1) = self._tflite_tables(graph, node)
        h0, h1, wy0, wy1 = (a[:, None] for a in (h0, h1, wy0, wy1))
        xs = x.astype(np.int64)
        acc = (xs[..., h0, w0] * wy0 * wx0 + xs[..., h1, w0] * wy1 * wx0 + xs[..., h0, w1] * wy0 * wx1 +
               xs[..., h1, w1] * wy1 * wx1)
        rounded = _c_div(acc + np.where(acc > 0, 1 << 19, -(1 << 19)), 1 << 20)
        return rounded.astype(x.dtype)  # TFLite casts without clamping (the weights cannot leave the range)

    def reference(self, graph, node, inputs):
        x = inputs[0]
        out, maps = _plan(graph, node)
        lead = x.shape[:-2]
        mh, mw = maps[-2], maps[-1]
        int8 = x.dtype != np.float32
        if node.attr("mode") == "nearest":
            y = x[..., mh.index0[:, None], mw.index0[None, :]]
            if int8:
                zx, zy, flag, mult, shift = self._requant(graph, node)
                if flag:
                    y = np.clip(requant.requantize(y.astype(np.int64) - zx, mult, shift) + zy, -128, 127)
            return [np.ascontiguousarray(y, dtype=x.dtype).reshape(out)]
        h0, h1, w0, w1 = mh.index0[:, None], mh.index1[:, None], mw.index0[None, :], mw.index1[None, :]
        if not int8:
            wy0, wy1 = mh.weight0[:, None], mh.weight1[:, None]
            wx0, wx1 = mw.weight0[None, :], mw.weight1[None, :]
            top = wx0 * x[..., h0, w0] + wx1 * x[..., h0, w1]
            bottom = wx0 * x[..., h1, w0] + wx1 * x[..., h1, w1]
            y = (wy0 * top + wy1 * bottom).astype(F32)
            return [y.reshape(lead + y.shape[-2:]).reshape(out)]
        if requant.arithmetic(graph) == "tflite":
            return [self._tflite_linear_reference(graph, node, x).reshape(out)]
        zx, zy, mult, shift = self._linear_requant(graph, node)
        qy0, qy1 = (q[:, None] for q in self._qweights(mh))
        qx0, qx1 = (q[None, :] for q in self._qweights(mw))
        xs = x.astype(np.int64) - zx
        top = qx0 * xs[..., h0, w0] + qx1 * xs[..., h0, w1]
        bottom = qx0 * xs[..., h1, w0] + qx1 * xs[..., h1, w1]
        acc = qy0 * top + qy1 * bottom
        y = np.clip(requant.requantize(acc, mult, shift) + zy, -128, 127)
        return [y.astype(np.int8).reshape(out)]

    # ------------------------------------------------------------------ kernel
    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        _, maps = _plan(graph, node)
        mh, mw = maps[-2], maps[-1]
        int8 = x.dtype != "float32"
        if int8:
            require(self.accepts_int8(graph, node), f"{x.dtype} {self.name} needs per-tensor quantization")
        views = (node.inputs[0], node.outputs[0])

        def idx(*arrays):
            return Array("int32_t", tuple(int(v) for v in np.stack(arrays, axis=1).ravel()))

        if node.attr("mode") == "nearest":
            zx, zy, flag, mult, shift = self._requant(graph, node) if int8 else (0, 0, 0, 0, 1)
            params = Struct.of("mcud_resize_nearest_params", h_index=idx(mh.index0), w_index=idx(mw.index0),
                               requant=flag, in_zero_point=zx, out_zero_point=zy, mult=mult, shift=shift)
            return Call(f"mcud_resize_nearest_{SUFFIX[x.dtype]}", views, params)
        if not int8:
            def weights(m):
                return Array("float", tuple(float(v) for v in np.stack([m.weight0, m.weight1], axis=1).ravel()))

            params = Struct.of("mcud_resize_linear_f32_params", h_index=idx(mh.index0, mh.index1),
                               w_index=idx(mw.index0, mw.index1), h_weight=weights(mh), w_weight=weights(mw))
            return Call("mcud_resize_linear_f32", views, params)
        if requant.arithmetic(graph) == "tflite":
            (h0, h1, wy0, wy1), (w0, w1, wx0, wx1) = self._tflite_tables(graph, node)

            def pairs(ctype, a, b):
                return Array(ctype, tuple(int(v) for v in np.stack([a, b], axis=1).ravel()))

            params = Struct.of("mcud_resize_linear_tfl_params", h_index=pairs("int32_t", h0, h1),
                               w_index=pairs("int32_t", w0, w1), h_weight=pairs("int16_t", wy0, wy1),
                               w_weight=pairs("int16_t", wx0, wx1))
            return Call("mcud_resize_linear_s8_tfl", views, params)
        zx, zy, mult, shift = self._linear_requant(graph, node)

        def qweights(m):
            return Array("int16_t", tuple(int(v) for v in np.stack(self._qweights(m), axis=1).ravel()))

        params = Struct.of("mcud_resize_linear_s8_params", h_index=idx(mh.index0, mh.index1),
                           w_index=idx(mw.index0, mw.index1), h_weight=qweights(mh), w_weight=qweights(mw),
                           in_zero_point=zx, out_zero_point=zy, mult=mult, shift=shift)
        return Call("mcud_resize_linear_s8", views, params)


@register
class Resize(_Resample):
    name = "Resize"
    onnx_types = ("Resize",)

    def from_onnx(self, onnx: OnnxNode):
        a = onnx.attrs
        require(a.get("mode", "nearest") != "cubic", "mode cubic is not supported")
        require(a.get("coordinate_transformation_mode") != "tf_crop_and_resize",
                "coordinate_transformation_mode tf_crop_and_resize is not supported")
        if onnx.opset < 11:
            scales = _const_input(onnx, 1, "scales")
            require(scales is not None, "scales must be given")
            return onnx.inputs[:1], _resize_attrs(onnx, tuple(float(s) for s in np.ravel(scales)), None)
        scales = _const_input(onnx, 2, "scales")
        sizes = _const_input(onnx, 3, "sizes")
        require((scales is None) != (sizes is None), "exactly one of scales and sizes must be given")
        axes = ints(a["axes"]) if "axes" in a else None
        return onnx.inputs[:1], _resize_attrs(
            onnx, None if scales is None else tuple(float(s) for s in np.ravel(scales)),
            None if sizes is None else ints(sizes), axes)


@register
class Upsample(_Resample):
    name = "Upsample"
    onnx_types = ("Upsample",)

    def from_onnx(self, onnx: OnnxNode):
        if "scales" in onnx.attrs:
            scales = onnx.attrs["scales"]
        else:
            scales = _const_input(onnx, 1, "scales")
            require(scales is not None, "scales must be given")
        return onnx.inputs[:1], _resize_attrs(onnx, tuple(float(s) for s in np.ravel(scales)), None)
