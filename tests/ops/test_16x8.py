"""TFLite's 16x8 convolutions and products, and its int8 BATCH_MATMUL: TFLite's 64-bit requantization against
a literal transcription (in numpy and in C), the numpy references against TensorFlow Lite Micro's reference
loops written out (ConvPerChannel and DepthwiseConvPerChannel with an int64 or a wrapping int32 sum,
FullyConnected, BatchMatMul), and the C kernels against the references on strided views."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry, requant
from mcudeploy.ops.conv import geometry
from mcudeploy.reference import run_reference
from mcudeploy.resources import firmware_dir

from .kernel_harness import Place, channels_last, needs_gcc, run_kernel


def _requantize64_literal(x: int, mult: int, exponent: int) -> int:
    """MultiplyByQuantizedMultiplier(int64_t x, int32_t, int shift) as TFLite writes it."""
    reduced = (mult + (1 << 15)) >> 16 if mult < 0x7FFF0000 else 0x7FFF
    total = 15 - exponent
    result = (x * reduced + (1 << (total - 1))) >> total
    return (result + 2**31) % 2**32 - 2**31  # int64 to int32_t


def _requantize32_literal(x: int, mult: int, exponent: int) -> int:
    """MultiplyByQuantizedMultiplier(int32_t, ...): gemmlowp's doubling high multiply, then a rounding shift."""
    left, right = max(exponent, 0), max(-exponent, 0)
    a = ((x << left) + 2**31) % 2**32 - 2**31
    ab = a * mult
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    n = ab + nudge
    h = n // (1 << 31) if n >= 0 else -((-n) // (1 << 31))
    mask = (1 << right) - 1
    return (h >> right) + ((h & mask) > (mask >> 1) + (1 if h < 0 else 0))


def _wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


@given(st.integers(-2**47, 2**47 - 1), st.floats(min_value=1e-9, max_value=100.0))
@settings(max_examples=500, deadline=None)
def test_64_bit_requantization_is_tflites(acc, real):
    mult, shift = requant.tflite_multiplier(real)
    got = int(requant.tflite_requantize64(np.array([acc]), mult, shift)[0])
    assert got == _requantize64_literal(acc, mult, 31 - shift)


def test_c_64_bit_requantization_equals_numpy(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    rng = np.random.default_rng(3)
    acc = np.concatenate([rng.integers(-2**47, 2**47, 3000), rng.integers(-70000, 70000, 3000), [-1, 0, 1]])
    mult = rng.integers(2**30, 2**31, acc.size)
    mult[::7] = 2**31 - 1  # reduced to 0x7FFF
    shift = rng.integers(24, 63, acc.size)
    want = requant.tflite_requantize64(acc, mult, shift)
    m16, s16 = requant.tflite_reduced(mult, shift)
    src = tmp_path / "t.c"
    src.write_text('#include <stdio.h>\n#include "mcud.h"\nint main(void){long long a;long m,s;'
                   'while(scanf("%lld %ld %ld",&a,&m,&s)==3){printf("%d\\n",mcud_requant_tfl64(a,m,s));}return 0;}\n')
    exe = tmp_path / "t"
    subprocess.run(["gcc", "-O2", "-I", str(firmware_dir() / "include"), str(src), "-o", str(exe)], check=True)
    text = "\n".join(f"{a} {m} {s}" for a, m, s in zip(acc, m16, s16))
    got = np.array(subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout.split(),
                   dtype=np.int64)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------- Conv 16x8


def _conv(x_shape, cout, kernel, group=1, stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), accumulator="int64",
          bias=True, extreme=False, big_bias=False, out_scale=0.003, seed=0):
    rng = np.random.default_rng(seed)
    n, c, h, w = x_shape
    if extreme:  # every product at its largest: an int32 sum of these overflows
        x = np.full(x_shape, 32767, np.int16)
        wt = np.full((cout, c // group, *kernel), 127, np.int8)
    else:
        x = rng.integers(-32768, 32768, x_shape).astype(np.int16)
        wt = rng.integers(-127, 128, (cout, c // group, *kernel)).astype(np.int8)
    sw = tuple(float(s) for s in rng.uniform(0.002, 0.01, cout))
    sx, sy = 0.0004, out_scale
    tensors = {"x": Tensor("x", x_shape, "int16", "input", Quant((sx,), (0,))),
               "w": constant("w", wt, Quant(sw, (0,) * cout, 0))}
    if bias:
        b = rng.integers(-40000, 40000, cout)
        if big_bias:  # every other channel's too large for an int32 sum
            b[::2] = rng.integers(-2**40, 2**40, len(b[::2]))
        tensors["b"] = constant("b", b.astype(np.int64 if accumulator == "int64" else np.int32),
                                Quant(tuple(sx * s for s in sw), (0,) * cout, 0))
    attrs = {"group": group, "kernel_shape": kernel, "strides": stride, "dilations": dilation, "pads": pads,
             "accumulator": accumulator}
    node = Node("conv", "Conv", ("x", "w", "b" if bias else ""), ("y",), attrs)
    tensors["y"] = Tensor("y", (1, 1, 1, 1), "int16", "output", Quant((sy,), (0,)))
    graph = Graph("conv", tensors, [node], ["x"], ["y"], arithmetic="tflite")
    (shape, _), = registry.get("Conv").infer(graph, node)
    graph = graph.replace(tensors={**tensors, "y": Tensor("y", shape, "int16", "output", Quant((sy,), (0,)))})
    assert registry.get("Conv").accepts_int8(graph, node)
    return graph, node, {"x": x}


def _tflm_conv(graph: Graph, node: Node, x: np.ndarray) -> np.ndarray:
    """ConvPerChannel (16x8) as TFLite writes it: the group's input channels, taps outside skipped, an int64
    sum or an int32 one that wraps, the bias, MultiplyByQuantizedMultiplier of that type, the clamp."""
    g = geometry(graph, node)
    w = graph["w"].data
    b = graph["b"].data if "b" in graph.tensors else None
    wide = node.attrs["accumulator"] == "int64"
    mult, shift = registry.get("Conv")._requant(graph, node)
    lo, hi = requant.clip_range(node, graph["y"])
    out = np.zeros((g.n, g.cout, *g.out_hw), np.int64)
    for bi, oc, oy, ox in np.ndindex(out.shape):
        grp = oc // g.cout_per_group
        acc = 0
        for fy in range(g.kernel[0]):
            iy = oy * g.stride[0] - g.pad_begin[0] + g.dilation[0] * fy
            for fx in range(g.kernel[1]):
                ix = ox * g.stride[1] - g.pad_begin[1] + g.dilation[1] * fx
                if not (0 <= iy < g.in_hw[0] and 0 <= ix < g.in_hw[1]):
                    continue
                for ic in range(g.cin_per_group):
                    acc += int(w[oc, ic, fy, fx]) * int(x[bi, grp * g.cin_per_group + ic, iy, ix])
                    if not wide:
                        acc = _wrap32(acc)
        if b is not None:
            acc = acc + int(b[oc]) if wide else _wrap32(acc + int(b[oc]))
        literal = _requantize64_literal if wide else _requantize32_literal
        out[bi, oc, oy, ox] = min(max(literal(acc, int(mult[oc]), 31 - int(shift[oc])), lo), hi)
    return out.astype(np.int16)


CONVS = {
    "3x3-int64": dict(x_shape=(1, 3, 6, 7), cout=4, kernel=(3, 3), pads=(1, 1, 1, 1)),
    "3x3-int32": dict(x_shape=(1, 3, 6, 7), cout=4, kernel=(3, 3), pads=(1, 1, 1, 1), accumulator="int32"),
    # mcud_conv_s16_fast's int64 sums: SMMLAR for none (shifts past 32) or some (int64 biases) of the channels
    "3x3-shift-past-32": dict(x_shape=(1, 3, 6, 7), cout=4, kernel=(3, 3), pads=(1, 1, 1, 1), out_scale=1.2),
    "3x3-big-bias": dict(x_shape=(1, 3, 6, 7), cout=5, kernel=(3, 3), pads=(1, 1, 1, 1), big_bias=True),
    "int32-wraps": dict(x_shape=(1, 64, 4, 4), cout=2, kernel=(3, 3), pads=(1, 1, 1, 1), accumulator="int32",
                        extreme=True),
    "stride-dilation-no-bias": dict(x_shape=(2, 2, 9, 8), cout=3, kernel=(3, 2), stride=(2, 1), dilation=(1, 2),
                                    bias=False),
    "depthwise-multiplier": dict(x_shape=(1, 3, 5, 5), cout=6, kernel=(3, 3), group=3, pads=(1, 0, 1, 2)),
    "one-channel": dict(x_shape=(1, 1, 9, 8), cout=4, kernel=(5, 3), stride=(2, 1), pads=(2, 1, 2, 1),
                        accumulator="int32"),
    "depthwise-3x3-int32": dict(x_shape=(1, 4, 6, 7), cout=4, kernel=(3, 3), group=4, pads=(1, 1, 1, 1),
                                accumulator="int32"),
    "depthwise-3x3-edges": dict(x_shape=(1, 3, 5, 5), cout=3, kernel=(3, 3), group=3, pads=(1, 1, 1, 1)),
    "depthwise-3x3-stride2": dict(x_shape=(1, 2, 7, 6), cout=2, kernel=(3, 3), group=2, stride=(2, 2),
                                  pads=(1, 1, 1, 1), accumulator="int32"),
    "depthwise-dilated": dict(x_shape=(1, 4, 7, 8), cout=4, kernel=(3, 3), group=4, dilation=(2, 2),
                              pads=(2, 2, 2, 2)),
    # mcud_conv_s16_dw's 3x3 rows: two columns (a window over each edge, none inside), one column (no pair), windows
    # starting two columns out, every product at its largest, and int64 biases no int32 sum holds
    "depthwise-3x3-two-columns": dict(x_shape=(1, 2, 4, 2), cout=2, kernel=(3, 3), group=2, pads=(1, 1, 1, 1)),
    "depthwise-3x3-one-column": dict(x_shape=(1, 2, 5, 1), cout=2, kernel=(3, 3), group=2, pads=(1, 1, 1, 1)),
    "depthwise-3x3-wide-pads": dict(x_shape=(1, 2, 6, 7), cout=2, kernel=(3, 3), group=2, pads=(2, 2, 0, 3)),
    "depthwise-3x3-extreme": dict(x_shape=(1, 3, 5, 6), cout=3, kernel=(3, 3), group=3, pads=(1, 1, 1, 1),
                                  extreme=True),
    "depthwise-3x3-big-bias": dict(x_shape=(1, 3, 5, 6), cout=3, kernel=(3, 3), group=3, pads=(1, 1, 1, 1),
                                   big_bias=True),
    # reduced shifts past 32 and below 16, which the int32 sums requantize by SMLAL rather than SMMLAR (conv_s16_q)
    "depthwise-3x3-shift-past-32": dict(x_shape=(1, 2, 5, 6), cout=2, kernel=(3, 3), group=2, pads=(1, 1, 1, 1),
                                        out_scale=0.6),
    "depthwise-3x3-shift-below-16": dict(x_shape=(1, 2, 5, 6), cout=2, kernel=(3, 3), group=2, pads=(1, 1, 1, 1),
                                         out_scale=3e-6),
    "pointwise-int64": dict(x_shape=(2, 9, 3, 5), cout=5, kernel=(1, 1)),  # channels 4 + 4 + 1, odd channels
    "pointwise-int32": dict(x_shape=(1, 8, 4, 4), cout=6, kernel=(1, 1), accumulator="int32"),
    "pointwise-int32-wraps": dict(x_shape=(1, 64, 2, 3), cout=2, kernel=(1, 1), accumulator="int32", extreme=True),
    # an int64 sum over more channels than mcud_conv_s16_pw sums in 32 bits at once (CONV_S16_PW_CHUNK, 508)
    "pointwise-int64-chunks": dict(x_shape=(1, 600, 1, 3), cout=2, kernel=(1, 1), extreme=True),
    "pointwise-no-bias": dict(x_shape=(1, 3, 1, 7), cout=3, kernel=(1, 1), bias=False),
    "pointwise-big-bias": dict(x_shape=(1, 6, 3, 3), cout=3, kernel=(1, 1), big_bias=True),  # int64 sums
    "pointwise-shift-past-32": dict(x_shape=(1, 6, 3, 3), cout=3, kernel=(1, 1), out_scale=1.2),
    "pointwise-shift-below-16": dict(x_shape=(1, 6, 3, 3), cout=3, kernel=(1, 1), out_scale=3e-6),
    "grouped-fast": dict(x_shape=(1, 4, 5, 6), cout=8, kernel=(3, 3), group=2, stride=(2, 1), dilation=(2, 1),
                         pads=(2, 1, 1, 0)),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_reference_is_tflite_micros_loop(name):
    graph, node, inputs = _conv(**CONVS[name])
    if name == "int32-wraps":
        assert 64 * 9 * 32767 * 127 > 2**31
    np.testing.assert_array_equal(run_reference(graph, inputs)[0], _tflm_conv(graph, node, inputs["x"]))


@needs_gcc
@pytest.mark.parametrize("nhwc", [False, True])  # rows of W contiguous (the pairs of mcud_conv_s16_dw) or not
@pytest.mark.parametrize("scratch", [1, 0])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_kernel_on_strided_views(tmp_path, name, scratch, nhwc):
    """mcud_conv_s16_dw (one input channel a group), mcud_conv_s16_pw (1x1, no working memory whatever the
    scratch attribute), mcud_conv_s16_fast (a column in its scratch, packed weights) and mcud_conv_s16 (none)."""
    graph, node, inputs = _conv(**CONVS[name], seed=1)
    node = Node(node.name, node.op, node.inputs, node.outputs, {**node.attrs, "scratch": scratch})
    graph = graph.replace(nodes=[node])
    want = run_reference(graph, inputs)[0]
    call = registry.get("Conv").kernel(graph, node)
    # a column of too few products for its cost (conv._fast16): 3 channels of 12 taps, or 2 or 1 of 9
    depthwise = name.startswith("depthwise") or name == "one-channel"
    fast = scratch and not name.startswith("depthwise") and name != "stride-dilation-no-bias"
    want_fn = ("mcud_conv_s16_pw" if name.startswith("pointwise") else "mcud_conv_s16_fast" if fast
               else "mcud_conv_s16_dw" if depthwise else "mcud_conv_s16")
    assert call.fn == want_fn
    assert call.scratch == registry.get("Conv").scratch(graph, node)
    x_place = Place(1, channels_last(4)) if nhwc else Place(2)
    got = run_kernel(tmp_path, call, graph, inputs, {"x": x_place, "y": Place(2, step=2)})[0]
    np.testing.assert_array_equal(got, want)


@needs_gcc
@pytest.mark.parametrize("name", sorted(n for n in CONVS if n.startswith("pointwise")))
def test_pointwise_over_planes_whose_rows_follow_one_another(tmp_path, name):
    """mcud_conv_s16_pw takes a plane whose rows follow one another, input and output, as one row of H x W pixels:
    pairs of pixels across a row's end, and an odd pixel left at the plane's."""
    graph, node, inputs = _conv(**CONVS[name], seed=2)
    call = registry.get("Conv").kernel(graph, node)
    assert call.fn == "mcud_conv_s16_pw"
    got = run_kernel(tmp_path, call, graph, inputs, {"x": Place(), "y": Place()})[0]
    np.testing.assert_array_equal(got, run_reference(graph, inputs)[0])


# ---------------------------------------------------------------------------------------------- products


def _fc(m, k, n, accumulator="int64", bias=True, per_channel=True, extreme=False, seed=0):
    """A 16x8 FULLY_CONNECTED as the importer makes it: Gemm of A (M, K) and constant B (N, K), transB."""
    rng = np.random.default_rng(seed)
    a = np.full((m, k), -32768, np.int16) if extreme else rng.integers(-32768, 32768, (m, k)).astype(np.int16)
    wt = np.full((n, k), -127, np.int8) if extreme else rng.integers(-127, 128, (n, k)).astype(np.int8)
    sw = tuple(float(s) for s in rng.uniform(0.002, 0.01, n if per_channel else 1))
    sa, sy = 0.0003, 0.02
    tensors = {"a": Tensor("a", (m, k), "int16", "input", Quant((sa,), (0,))),
               "w": constant("w", wt, Quant(sw, (0,) * len(sw), 0 if per_channel else None)),
               "y": Tensor("y", (m, n), "int16", "output", Quant((sy,), (0,)))}
    if bias:
        tensors["b"] = constant("b", rng.integers(-90000, 90000, n).astype(
            np.int64 if accumulator == "int64" else np.int32))
    node = Node("fc", "Gemm", ("a", "w", "b" if bias else ""), ("y",),
                {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1, "accumulator": accumulator})
    graph = Graph("fc", tensors, [node], ["a"], ["y"], arithmetic="tflite")
    assert registry.get("Gemm").accepts_int8(graph, node)
    return graph, node, {"a": a}


def _tflm_fc(graph: Graph, node: Node, a: np.ndarray) -> np.ndarray:
    """FullyConnected(PerChannel) of int16 as TFLite writes it (BiasType int64 or int32)."""
    w = graph["w"].data
    b = graph["b"].data if "b" in graph.tensors else None
    wide = node.attrs["accumulator"] == "int64"
    sw = np.broadcast_to(graph["w"].quant.scale_array(), (w.shape[0],))
    mult, shift = requant.tflite_multipliers(graph["a"].quant.scale[0] * sw / graph["y"].quant.scale[0])
    out = np.zeros((a.shape[0], w.shape[0]), np.int64)
    for r, c in np.ndindex(out.shape):
        acc = 0
        for d in range(w.shape[1]):
            acc = acc + int(w[c, d]) * int(a[r, d])
            acc = acc if wide else _wrap32(acc)
        if b is not None:
            acc = acc + int(b[c]) if wide else _wrap32(acc + int(b[c]))
        literal = _requantize64_literal if wide else _requantize32_literal
        out[r, c] = min(max(literal(acc, int(mult[c]), 31 - int(shift[c])), -32768), 32767)
    return out.astype(np.int16)


FCS = {
    "int64": dict(m=3, k=20, n=5),
    "int64-per-tensor-no-bias": dict(m=2, k=9, n=4, bias=False, per_channel=False),
    "int32": dict(m=3, k=20, n=5, accumulator="int32"),
    "int32-wraps": dict(m=1, k=600, n=3, accumulator="int32", extreme=True),
    "odd-k-odd-n": dict(m=2, k=7, n=3),
}


@pytest.mark.parametrize("name", sorted(FCS))
def test_fully_connected_reference_is_tflite_micros_loop(name):
    graph, node, inputs = _fc(**FCS[name])
    np.testing.assert_array_equal(run_reference(graph, inputs)[0], _tflm_fc(graph, node, inputs["a"]))


@needs_gcc
@pytest.mark.parametrize("step", [1, 3])  # A's rows contiguous (the dual-MAC loop) or stepped (the plain one)
@pytest.mark.parametrize("name", sorted(FCS))
def test_fully_connected_kernel_on_strided_views(tmp_path, name, step):
    graph, node, inputs = _fc(**FCS[name], seed=2)
    want = run_reference(graph, inputs)[0]
    call = registry.get("Gemm").kernel(graph, node)
    assert call.fn == "mcud_gemm_s16" and call.views[1] == ""  # B packed into the params
    got = run_kernel(tmp_path, call, graph, inputs, {"a": Place(1, step=step), "y": Place(2, (1, 0))})[0]
    np.testing.assert_array_equal(got, want)


def _matmul(a_shape, b_shape, dtype, trans_a=0, trans_b=0, seed=0, ties=False):
    """A BATCH_MATMUL of two activations: int16 (zero points 0) or int8 (any zero points); ``ties``: scales whose
    multiplier is a power of 2, so that many sums fall exactly half way (where roundings differ)."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    z = (0, 0, 0) if dtype == "int16" else (-3, 7, 2)
    s = (0.0004, 0.0003, 0.004) if dtype == "int16" else (0.03, 0.02, 0.1)
    lo, hi = info.min, info.max + 1
    if ties:  # small values and a multiplier of 1/8: one sum in eight lies half way
        s, lo, hi = (2.0 ** -4, 2.0 ** -4, 2.0 ** -5), -6, 7
    a = (rng.integers(lo, hi, a_shape) + (z[0] if ties else 0)).astype(dtype)
    b = (rng.integers(lo, hi, b_shape) + (z[1] if ties else 0)).astype(dtype)
    tensors = {"a": Tensor("a", a_shape, dtype, "input", Quant((s[0],), (z[0],))),
               "b": Tensor("b", b_shape, dtype, "input", Quant((s[1],), (z[1],))),
               "y": Tensor("y", (1,), dtype, "output", Quant((s[2],), (z[2],)))}
    node = Node("mm", "MatMul", ("a", "b"), ("y",), {"transA": trans_a, "transB": trans_b})
    graph = Graph("mm", tensors, [node], ["a", "b"], ["y"], arithmetic="tflite")
    (shape, _), = registry.get("MatMul").infer(graph, node)
    graph = graph.replace(tensors={**tensors, "y": Tensor("y", shape, dtype, "output", tensors["y"].quant)})
    assert registry.get("MatMul").accepts_int8(graph, node)
    return graph, node, {"a": a, "b": b}


def _tflm_batch_matmul(graph: Graph, node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """BatchMatMul as TFLite Micro computes it: sum (a - z_a)(b - z_b) in int32 (int8) or int64 (int16), the
    multiplier from the scales' product in double (tests/test_tflite_products.py)."""
    qa, qb, qy = graph["a"].quant, graph["b"].quant, graph["y"].quant
    real = qa.scale[0] * qb.scale[0] / qy.scale[0]
    mult, shift = requant.tflite_multiplier(real)
    if node.attrs["transA"]:
        a = np.swapaxes(a, -1, -2)
    if node.attrs["transB"]:
        b = np.swapaxes(b, -1, -2)
    acc = np.matmul(a.astype(np.int64) - qa.zero_point[0], b.astype(np.int64) - qb.zero_point[0])
    wide = a.dtype == np.int16
    literal = _requantize64_literal if wide else _requantize32_literal
    info = np.iinfo(a.dtype)
    out = np.vectorize(lambda v: literal(int(v), mult, 31 - shift))(acc) + qy.zero_point[0]
    return np.clip(out, info.min, info.max).astype(a.dtype)


MATMULS = {
    "plain": ((2, 4, 6), (2, 6, 5), 0, 0, False),
    "adj-x-adj-y": ((2, 6, 4), (2, 5, 6), 1, 1, False),
    "broadcast": ((3, 1, 4, 6), (2, 6, 3), 0, 0, False),
    "ties": ((2, 16, 8), (2, 8, 16), 0, 0, True),
}


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("name", sorted(MATMULS))
def test_batch_matmul_reference_is_tflite_micros(name, dtype):
    a_shape, b_shape, ta, tb, ties = MATMULS[name]
    graph, node, inputs = _matmul(a_shape, b_shape, dtype, ta, tb, ties=ties)
    want = _tflm_batch_matmul(graph, node, inputs["a"], inputs["b"])
    np.testing.assert_array_equal(run_reference(graph, inputs)[0], want)


@needs_gcc
@pytest.mark.parametrize("scratch", [1, 0])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("name", sorted(MATMULS))
def test_batch_matmul_kernel_on_strided_views(tmp_path, name, dtype, scratch):
    if dtype == "int16" and not scratch:
        pytest.skip("the int16 kernel takes no scratch")
    a_shape, b_shape, ta, tb, ties = MATMULS[name]
    graph, node, inputs = _matmul(a_shape, b_shape, dtype, ta, tb, seed=4, ties=ties)
    node = Node(node.name, node.op, node.inputs, node.outputs, {**node.attrs, "scratch": scratch})
    graph = graph.replace(nodes=[node])
    call = registry.get("MatMul").kernel(graph, node)
    expect = {"int16": "mcud_matmul_s16", "int8": "mcud_matmul_s8_tfl" if scratch else "mcud_matmul_s8_direct_tfl"}
    assert call.fn == expect[dtype]
    got = run_kernel(tmp_path, call, graph, inputs, {"a": 1, "b": Place(1, step=2), "y": 2})[0]
    np.testing.assert_array_equal(got, run_reference(graph, inputs)[0])


@needs_gcc
@pytest.mark.parametrize("name", ["3x3-int64", "depthwise-3x3-int32", "one-channel"])
def test_conv_pieces_along_rows_and_channels(tmp_path, name):
    """A 16x8 Conv cut along output rows (each piece its own pads and rows of the input) and along output
    channels (weights, bias and multipliers sliced) computes the same, in numpy and in C."""
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.partition import Cut, split
    from mcudeploy.compile import compile_graph

    graph, node, inputs = _conv(**CONVS[name], seed=5)
    want = run_reference(graph, inputs)[0]
    for axis, halo in (("oh", "recompute"), ("oh", "keep"), ("oc", "keep")):
        cut = split(graph, (Cut(((node.name, axis),), 2, halo),))
        assert sum(n.op == "Conv" for n in cut.nodes) == 2
        np.testing.assert_array_equal(run_reference(cut, inputs)[0], want)
        got = run_compiled_on_host(compile_graph(cut, "host"), [inputs], tmp_path)[0][0]
        np.testing.assert_array_equal(got, want)
