"""A TFLite model's reductions, scans, int16 pools and integer resizes: each numpy reference against a
literal transcription of TFLite Micro's reference kernel (Python integers, C's truncating division and
wrapping int32, float32 where TFLite computes in float), each C kernel against the reference on strided
views, and the cuts their tensor expressions allow."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.ir import Graph, Node, Quant, Tensor, verify
from mcudeploy.ops import registry
from mcudeploy.ops.requant import QRANGE
from mcudeploy.ops.resize import tflite_nearest
from mcudeploy.partition import Cut, check_cut, split
from mcudeploy.reference import evaluate, run_reference

from .kernel_harness import Place, needs_gcc, run_kernel

F32 = np.float32


# ---------------------------------------------------------------- TFLite's integer helpers, literally


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def _quantize_multiplier(d: float) -> tuple[int, int]:
    """QuantizeMultiplier: (q, exponent)."""
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    q_fixed = math.floor(q * 2**31 + 0.5)  # TfLiteRound, q > 0
    if q_fixed == 2**31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def _srdhm(a: int, b: int) -> int:
    if a == b == -2**31:
        return 2**31 - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return _c_div(ab + nudge, 1 << 31)


def _rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if (x & mask) > threshold else 0)


def _mbqm(x: int, q: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier(int32 x, q, shift) (double rounding)."""
    left, right = max(shift, 0), max(-shift, 0)
    return _rdbpot(_srdhm(_wrap32(x * (1 << left)), q), right)


def _tflite_mean_or_sum(row: list[int], zx: int, sx: float, zy: int, sy: float, dtype: str, mean: bool) -> int:
    """QuantizedMeanOrSum for one output, as reference/reduce.h writes it."""
    q, shift = _quantize_multiplier(float(sx) / float(sy))
    total = 0
    for v in row:
        total = _wrap32(total + v)
    n = len(row)
    if mean:
        s = min(n.bit_length() - 1, 32, 31 + shift)
        q = _wrap32(_c_div(q << s, n))
        shift -= s
    out = _mbqm(_wrap32(total - zx * n), q, shift) + zy
    lo, hi = QRANGE[dtype]
    return min(max(out, lo), hi)


# ---------------------------------------------------------------- graphs


def _tensor(name, shape, dtype, q=None, kind="activation"):
    return Tensor(name, tuple(shape), dtype, kind, None if q is None else Quant((float(q[0]),), (int(q[1]),)))


def _graph(op: str, shape, xtype: str, xq=None, yq=None, **attrs) -> Graph:
    """One TFLite-arithmetic node reading input x (of type xtype) and writing output y."""
    x = _tensor("x", shape, xtype, xq, "input")
    node = Node("n", op, ("x",), ("y",), attrs)
    (yshape, ydtype), = registry.get(op).infer(Graph("s", {"x": x}, (), (), (), arithmetic="tflite"), node)
    y = _tensor("y", yshape, ydtype, yq, "output")
    return verify(Graph("g", {"x": x, "y": y}, (node,), ("x",), ("y",), arithmetic="tflite"))


def _codes(rng, shape, dtype):
    lo, hi = QRANGE[dtype]
    return rng.integers(lo, hi + 1, shape).astype(dtype)


SCALES = st.floats(min_value=1e-4, max_value=1.0).map(lambda s: float(F32(s)))


@given(st.sampled_from(["int8", "int16"]), st.booleans(), st.integers(1, 40), SCALES, SCALES,
       st.integers(-100, 100), st.integers(-100, 100), st.integers(0, 2**31))
@settings(max_examples=150, deadline=None)
def test_mean_and_sum_match_tflites_quantized_mean_or_sum(dtype, mean, n, sx, sy, zx, zy, seed):
    graph = _graph("ReduceMean" if mean else "ReduceSum", (3, n), dtype, (sx, zx), (sy, zy), axes=(1,), keepdims=0)
    x = _codes(np.random.default_rng(seed), (3, n), dtype)
    try:
        got = run_reference(graph, [x])[0]
    except Exception as exc:  # a multiplier TFLite cannot hold either (s_x / s_y of 2^31 and more)
        assert sx / sy >= 2**30, exc
        return
    want = [_tflite_mean_or_sum([int(v) for v in row], zx, sx, zy, sy, dtype, mean) for row in x]
    assert got.tolist() == want


def test_mean_of_a_long_row_with_a_tiny_multiplier_clamps_its_shift_as_tflite():
    """s_x / s_y = 2^-24 leaves TFLite's folded shift 31 - 24 + 1 = 8 bits, fewer than log2(count)."""
    n, sx, sy = 3000, 2.0**-30, 2.0**-6
    graph = _graph("ReduceMean", (2, n), "int16", (sx, 5), (sy, -3), axes=(1,), keepdims=1)
    x = _codes(np.random.default_rng(3), (2, n), "int16")
    got = run_reference(graph, [x])[0].ravel().tolist()
    assert got == [_tflite_mean_or_sum([int(v) for v in row], 5, sx, -3, sy, "int16", True) for row in x]


def _tflite_bilinear(x: np.ndarray, out_h: int, out_w: int, align: bool, half: bool) -> np.ndarray:
    """ResizeBilinearInteger on an NCHW int8 array, pixel by pixel, as reference/resize_bilinear.h."""
    n, c, in_h, in_w = x.shape

    def scale_of(i, o):
        s = ((1 << 10) * i + o // 2) // o
        if align and o > 1:
            s = ((1 << 10) * (i - 1) + (o - 1) // 2) // (o - 1)
        return s

    def interp(v, s, size):
        scaled = v * s + s // 2 - (1 << 9) if half else v * s
        return scaled, max(_c_div(scaled, 1 << 10), 0), min(_c_div(scaled + (1 << 10) - 1, 1 << 10), size - 1)

    y = np.zeros((n, c, out_h, out_w), np.int8)
    sh, sw = scale_of(in_h, out_h), scale_of(in_w, out_w)
    for b in range(n):
        for oy in range(out_h):
            iy, y0, y1 = interp(oy, sh, in_h)
            for ox in range(out_w):
                ix, x0, x1 = interp(ox, sw, in_w)
                dy, dx = iy - (1 << 10) * y0, ix - (1 << 10) * x0
                for ch in range(c):
                    v = (int(x[b, ch, y0, x0]) * ((1 << 10) - dy) * ((1 << 10) - dx)
                         + int(x[b, ch, y1, x0]) * dy * ((1 << 10) - dx)
                         + int(x[b, ch, y0, x1]) * ((1 << 10) - dy) * dx
                         + int(x[b, ch, y1, x1]) * dy * dx)
                    rounding = (1 << 19) if v > 0 else -(1 << 19)
                    y[b, ch, oy, ox] = np.array(_c_div(v + rounding, 1 << 20)).astype(np.int8)
    return y


def _resize_graph(mode, shape, size, dtype, coord, q=(0.05, 3)):
    nearest = "round_prefer_ceil" if coord == "align_corners" else "floor"
    return _graph("Resize", shape, dtype, q, q, mode=mode, antialias=0, coordinate_transformation_mode=coord,
                  nearest_mode=nearest, scales=None, sizes=tuple(shape[:2]) + tuple(size), axes=None,
                  keep_aspect_ratio_policy="stretch")


COORDS = {(False, False): "asymmetric", (True, False): "align_corners", (False, True): "half_pixel"}


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 23), st.integers(1, 23),
       st.sampled_from(sorted(COORDS)), st.integers(0, 2**31))
@settings(max_examples=80, deadline=None)
def test_int8_bilinear_matches_tflites_resize_bilinear_integer(in_h, in_w, out_h, out_w, flags, seed):
    x = _codes(np.random.default_rng(seed), (1, 2, in_h, in_w), "int8")
    try:
        graph = _resize_graph("linear", x.shape, (out_h, out_w), "int8", COORDS[flags])
    except Exception as exc:  # the rounded scale would read past the input: TFLite would too
        assert "reads past the input" in str(exc)
        return
    np.testing.assert_array_equal(run_reference(graph, [x])[0], _tflite_bilinear(x, out_h, out_w, *flags))


@given(st.integers(1, 40), st.integers(1, 80), st.sampled_from(sorted(COORDS)))
@settings(max_examples=200, deadline=None)
def test_nearest_indices_are_tflites_get_nearest_neighbor(n_in, n_out, flags):
    align, half = flags
    scale = F32(n_in - 1) / F32(n_out - 1) if align and n_out > 1 else F32(n_in) / F32(n_out)
    want = []
    for v in range(n_out):
        c = F32(F32(v) + F32(0.5 if half else 0.0)) * scale
        i = int(np.sign(c) * np.floor(np.abs(c) + F32(0.5))) if align else int(np.floor(c))
        i = min(i, n_in - 1)
        want.append(max(i, 0) if half else i)
    assert tflite_nearest(n_in, n_out, align, half).tolist() == want


def _tflite_cumsum_int8(row: list[int], zx: int, sx: float, zy: int, sy: float, exclusive: bool,
                        reverse: bool) -> list[int]:
    """reference/cumsum.h's int8 CumSum of one row (with its accumulator starting at the input offset)."""
    twice = 2 * float(sx)
    qi, si = _quantize_multiplier(float(sx) / twice)
    qo, so = _quantize_multiplier(twice / ((1 << 20) * float(sy)))
    acc = _rdbpot(_srdhm(_wrap32(-zx * (1 << 20)), qi), -si)
    out = [0] * len(row)
    for k in range(len(row)):
        i = len(row) - 1 - k if reverse else k
        scaled = _rdbpot(_srdhm(_wrap32((row[i] - zx) * (1 << 20)), qi), -si)
        if exclusive:
            value, acc = acc, _wrap32(acc + scaled)
        else:
            acc = _wrap32(acc + scaled)
            value = acc
        out[i] = min(max(_rdbpot(_srdhm(value, qo), -so) + zy, -128), 127)
    return out


@given(st.integers(1, 40), SCALES, SCALES, st.integers(-128, 127), st.integers(-128, 127), st.booleans(),
       st.booleans(), st.integers(0, 2**31))
@settings(max_examples=120, deadline=None)
def test_int8_cumsum_matches_tflites(n, sx, sy, zx, zy, exclusive, reverse, seed):
    graph = _graph("CumSum", (2, n), "int8", (sx, zx), (sy, zy), axis=1, exclusive=int(exclusive),
                   reverse=int(reverse))
    x = _codes(np.random.default_rng(seed), (2, n), "int8")
    got = run_reference(graph, [x])[0]
    for row, out in zip(x, got):
        assert out.tolist() == _tflite_cumsum_int8([int(v) for v in row], zx, sx, zy, sy, exclusive, reverse)


def test_arg_max_keeps_the_first_of_equal_values():
    x = np.array([[3, 7, 7, -1], [-5, -5, -9, -9]], np.int8)
    for op, want in (("ArgMax", [1, 0]), ("ArgMin", [3, 2])):
        graph = _graph(op, x.shape, "int8", (0.1, 0), None, axis=1, dtype="int32")
        assert run_reference(graph, [x])[0].tolist() == want


# ---------------------------------------------------------------- the C kernels on strided views

STRIDED = {"x": Place(pad=1, step=2), "y": Place(pad=1, order=None)}


def _graphs():
    """(id, graph, dtype of x) for every new kernel."""
    q8, q16 = (0.05, -3), (0.001, 0)
    out = []
    for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"):
        yq = q8 if op in ("ReduceMax", "ReduceMin") else (0.07, 5)
        out.append((f"{op}-s8", _graph(op, (3, 4, 9), "int8", q8, yq, axes=(0, 2), keepdims=1)))
    for op in ("ReduceMean", "ReduceSum"):
        out.append((f"{op}-s16", _graph(op, (3, 4, 9), "int16", q16, (0.003, 0), axes=(2,), keepdims=0)))
    for op in ("ArgMax", "ArgMin"):
        for dtype, q in (("float32", None), ("int8", q8)):
            for index in ("int32", "int64"):
                out.append((f"{op}-{dtype}-{index}", _graph(op, (3, 5, 4), dtype, q, None, axis=1, dtype=index)))
    for dtype, xq, yq in (("float32", None, None), ("int8", q8, (0.3, -20))):
        for exclusive, reverse in ((0, 0), (1, 1)):
            out.append((f"CumSum-{dtype}-{exclusive}{reverse}",
                        _graph("CumSum", (3, 6, 4), dtype, xq, yq, axis=1, exclusive=exclusive, reverse=reverse)))
    for coord in ("half_pixel", "align_corners", "asymmetric"):
        out.append((f"bilinear-s8-{coord}", _resize_graph("linear", (1, 3, 4, 5), (7, 3), "int8", coord)))
    out.append(("nearest-s16", _resize_graph("nearest", (1, 3, 4, 5), (7, 9), "int16", "tf_half_pixel_for_nn",
                                             q16)))
    pool = dict(kernel_shape=(3, 2), strides=(2, 1), auto_pad="NOTSET", pads=(1, 0, 1, 1))
    out.append(("maxpool-s16", _graph("MaxPool", (1, 3, 6, 5), "int16", q16, q16, **pool)))
    out.append(("avgpool-s16", _graph("AveragePool", (1, 3, 6, 5), "int16", q16, q16, count_include_pad=0, **pool)))
    return out


GRAPHS = _graphs()


@needs_gcc
@pytest.mark.parametrize("case", GRAPHS, ids=[c[0] for c in GRAPHS])
def test_kernel_on_strided_views_matches_reference(tmp_path, case):
    _, graph = case
    (node,) = graph.nodes
    x = graph["x"]
    rng = np.random.default_rng(11)
    sample = rng.standard_normal(x.shape).astype(np.float32) if x.dtype == "float32" else _codes(rng, x.shape, x.dtype)
    want = run_reference(graph, [sample])[0]
    order = tuple(reversed(range(len(graph["y"].shape))))
    got = run_kernel(tmp_path, registry.get(node.op).kernel(graph, node), graph, {"x": sample},
                     {"x": Place(pad=1, step=2), "y": Place(pad=1, order=order)})[0]
    np.testing.assert_array_equal(got, want)


@needs_gcc
def test_cumsum_in_place(tmp_path):
    graph = _graph("CumSum", (3, 6, 4), "float32", axis=2, exclusive=1, reverse=1)
    (node,) = graph.nodes
    assert registry.get("CumSum").inplace(graph, node) == 0
    sample = np.random.default_rng(12).standard_normal((3, 6, 4)).astype(np.float32)
    got = run_kernel(tmp_path, registry.get("CumSum").kernel(graph, node), graph, {"x": sample}, inplace={"y": "x"})[0]
    np.testing.assert_array_equal(got, run_reference(graph, [sample])[0])


# ---------------------------------------------------------------- cuts


@pytest.mark.parametrize("op, attrs, axis, refused", [
    ("ReduceMean", dict(axes=(2, 3), keepdims=0), "d1", "r3"),
    ("ReduceSum", dict(axes=(1, 2), keepdims=1), "d3", "r2"),
    ("ArgMax", dict(axis=3, dtype="int32"), "d2", "r3"),
    ("CumSum", dict(axis=2, exclusive=1, reverse=0), "d1", "d2"),
])
def test_cut_along_a_kept_axis_computes_the_same(op, attrs, axis, refused):
    graph = _graph(op, (2, 6, 5, 7), "int8", (0.05, 4), (0.02, -9), **attrs)
    (node,) = graph.nodes
    cut = Cut(((node.name, axis),), 3, "keep")
    assert check_cut(graph, cut) is None
    x = _codes(np.random.default_rng(13), (2, 6, 5, 7), "int8")
    np.testing.assert_array_equal(run_reference(split(graph, (cut,)), [x])[0], run_reference(graph, [x])[0])
    assert check_cut(graph, Cut(((node.name, refused),), 2, "keep")) is not None


def test_int16_average_of_whole_maps_cut_along_its_rows_computes_the_same():
    q = (0.001, 0)
    graph = _graph("AveragePool", (1, 3, 6, 5), "int16", q, q, kernel_shape=(6, 5), strides=(1, 1), auto_pad="NOTSET",
                   pads=(0, 0, 0, 0), count_include_pad=0)
    (node,) = graph.nodes
    cut = Cut(((node.name, "rh"),), 3, "keep")
    assert check_cut(graph, cut) is None
    pieces = split(graph, (cut,))
    assert {n.op for n in pieces.nodes} >= {"AvgPoolSum", "AvgPoolFinish"}
    x = _codes(np.random.default_rng(14), (1, 3, 6, 5), "int16")
    np.testing.assert_array_equal(run_reference(pieces, [x])[0], run_reference(graph, [x])[0])


@pytest.mark.parametrize("xtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("op, axes, keepdims", [("ReduceMean", (2, 3), 0), ("ReduceSum", (1, 3), 1),
                                                 ("ReduceMean", (1,), 1)])
def test_cut_along_the_outermost_reduced_axis_accumulates_the_same(op, axes, keepdims, xtype):
    """The pieces add their rows to a running sum (ReduceSumPart) and ReduceFinish divides or requantizes it,
    bit for bit the whole reduction; the numpy references, then each new kernel on the host."""
    qx, qy = ((0.05, 4), (0.02, -9)) if xtype == "int8" else ((0.001, 0), (0.0004, 0))
    float_ = xtype == "float32"
    graph = _graph(op, (2, 6, 5, 7), xtype, None if float_ else qx, None if float_ else qy, axes=axes,
                   keepdims=keepdims)
    (node,) = graph.nodes
    cut = Cut(((node.name, f"r{axes[0]}"),), 3, "keep")
    assert check_cut(graph, cut) is None
    pieces = split(graph, (cut,))
    assert [n.op for n in pieces.nodes].count("ReduceSumPart") == 3 and pieces.nodes[-1].op == "ReduceFinish"
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 6, 5, 7)).astype(np.float32) if float_ else _codes(rng, (2, 6, 5, 7), xtype)
    want = run_reference(graph, [x])[0]
    np.testing.assert_array_equal(run_reference(pieces, [x])[0], want)
    if len(axes) > 1:
        assert check_cut(graph, Cut(((node.name, f"r{axes[1]}"),), 2, "keep")) is not None


@needs_gcc
@pytest.mark.parametrize("xtype", ["float32", "int8", "int16"])
def test_running_sum_and_finish_kernels_match_their_references(tmp_path, xtype):
    float_ = xtype == "float32"
    qx, qy = (None, None) if float_ else ((0.05, 4), (0.03, -2))
    graph = _graph("ReduceMean", (2, 6, 5, 7), xtype, qx, qy, axes=(1, 3), keepdims=0)
    (node,) = graph.nodes
    pieces = split(graph, (Cut(((node.name, "r1"),), 2, "keep"),))
    rng = np.random.default_rng(16)
    x = rng.standard_normal((2, 6, 5, 7)).astype(np.float32) if float_ else _codes(rng, (2, 6, 5, 7), xtype)
    values = evaluate(pieces, [x])
    for n in pieces.nodes:
        if n.op not in ("ReduceSumPart", "ReduceFinish"):
            continue
        out = n.outputs[0]
        scope = {k: t.with_(kind="output" if k == out else ("input" if k in n.inputs else t.kind))
                 for k, t in pieces.tensors.items() if k in n.inputs or k == out}
        one = verify(Graph("one", scope, (n,), tuple(i for i in n.inputs if i), (out,), arithmetic="tflite"))
        place = {i: Place(pad=1, step=2) for i in n.inputs if i}
        got = run_kernel(tmp_path, registry.get(n.op).kernel(one, n), one, {i: values[i] for i in n.inputs if i},
                         {**place, out: Place(pad=1)})[0]
        np.testing.assert_array_equal(got, values[out])
