"""The int8 depthwise kernel (firmware/include/mcud_conv_dw.h) against the numpy reference, bit for
bit: its fast 3x3 paths (stride 1 and 2, any padding, odd and tiny widths, both requantization
routes) and its fallback, on views inside garbage-filled bigger buffers, on row bands and channel
ranges of a larger convolution (as split execution passes them), and on random shapes."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry
from mcudeploy.reference import run_reference

from .kernel_harness import Place, channels_last, needs_gcc, run_kernel

CONV = registry.get("Conv")


def dw_graph(x_shape, kernel=(3, 3), attrs=None, seed=0, s_y=0.05, clip=None, bias=True):
    """An int8 depthwise Conv as QDQ lowering produces it; s_y sets the requantization shifts
    (0.05 gives shifts >= 33, 0.0001 gives shifts < 33)."""
    rng = np.random.default_rng(seed)
    c = x_shape[1]
    s_x, z_x, z_y = 0.03, -9, 4
    s_w = rng.uniform(0.002, 0.01, c)
    w = rng.integers(-127, 128, (c, 1, *kernel)).astype(np.int8)
    b = rng.integers(-5000, 5000, c).astype(np.int32)
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    tensors = [Tensor("x", tuple(x_shape), "int8", "input", Quant((s_x,), (z_x,))),
               constant("w", w, Quant(tuple(s_w), (0,) * c, 0))]
    if bias:
        tensors.append(constant("b", b, Quant(tuple(s_x * s_w), (0,) * c, 0)))
    node_attrs = {"group": c, **(attrs or {})}
    if clip is not None:
        node_attrs.update(clip_min=clip[0], clip_max=clip[1])
    node = Node("dw", "Conv", ("x", "w", "b" if bias else ""), ("y",), node_attrs)
    partial = Graph("g", {t.name: t for t in tensors}, (), ("x",), ())
    shape, dtype = CONV.infer(partial, node)[0]
    tensors.append(Tensor("y", shape, dtype, "output", Quant((s_y,), (z_y,))))
    graph = Graph("g", {t.name: t for t in tensors}, (node,), ("x",), ("y",))
    return graph, node, x


def check(tmp_path, graph, node, x, place=None):
    assert CONV.accepts_int8(graph, node)
    call = CONV.kernel(graph, node)
    assert call.fn == ("mcud_conv_s8_dw_tfl" if graph.arithmetic == "tflite" else "mcud_conv_s8_dw")
    expected = run_reference(graph, [x])[0]
    got = run_kernel(tmp_path, call, graph, {"x": x}, place or {"x": 1, "y": 2})[0]
    np.testing.assert_array_equal(got, expected)
    return call


FAST_CASES = [
    ("kws", (1, 64, 25, 5), {"pads": [1, 1, 1, 1]}),
    ("vww_small", (1, 8, 12, 12), {"pads": [1, 1, 1, 1]}),
    ("stride2", (1, 4, 12, 12), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("stride2_same_upper", (1, 5, 10, 10), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ("stride2_odd", (2, 3, 9, 7), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("valid", (1, 3, 6, 7), {}),
    ("odd_width", (2, 3, 7, 7), {"pads": [1, 1, 1, 1]}),
    ("width1", (1, 2, 5, 1), {"pads": [1, 1, 1, 1]}),
    ("width2", (1, 2, 4, 2), {"pads": [1, 1, 1, 1]}),
    ("asym_pads", (1, 3, 6, 5), {"pads": [0, 2, 2, 1]}),
    ("stride_h_only", (1, 3, 9, 6), {"pads": [1, 1, 1, 1], "strides": [2, 1]}),
    ("stride_w_only", (1, 3, 6, 9), {"pads": [1, 1, 1, 1], "strides": [1, 2]}),
    ("stride_h3", (1, 2, 11, 6), {"pads": [1, 1, 1, 1], "strides": [3, 1]}),
    ("big_pad", (1, 2, 3, 3), {"pads": [2, 2, 2, 2]}),
    # planes too big for the stack buffer: a ring of rows
    ("ring", (1, 3, 20, 40), {"pads": [1, 1, 1, 1]}),
    ("ring_odd_rows", (1, 2, 19, 40), {"pads": [1, 1, 1, 1]}),  # two rows a step, the last one alone
    ("ring_stride2", (2, 2, 30, 41), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("ring_stride_h3", (1, 2, 25, 50), {"pads": [0, 1, 2, 1], "strides": [3, 1]}),
    ("ring_stride_h5", (1, 2, 31, 60), {"pads": [1, 1, 1, 1], "strides": [5, 2]}),
]


@needs_gcc
@pytest.mark.parametrize("case", FAST_CASES, ids=[c[0] for c in FAST_CASES])
@pytest.mark.parametrize("route", ["hi_shift", "low_shift"])
def test_fast_paths_are_bit_exact(tmp_path, case, route):
    _, x_shape, attrs = case
    graph, node, x = dw_graph(x_shape, attrs=attrs, seed=3, s_y=0.05 if route == "hi_shift" else 0.0001)
    call = check(tmp_path, graph, node, x)
    shifts = np.array(dict(call.params.fields)["shift"].values)
    assert np.all(shifts >= 33) if route == "hi_shift" else np.all(shifts < 33)


@needs_gcc
@pytest.mark.parametrize("case", FAST_CASES, ids=[c[0] for c in FAST_CASES])
def test_the_doubled_route_is_bit_exact(tmp_path, case):
    """A TFLite model's depthwise convolution on a core without MVE (offload.dsp_packings: "dsp"): the channel table
    holds twice the bias and weights and mcud_requant_tfl_2's constants where requant.doubled_route takes the channel
    (route 5), the others as they were (a channel whose scale is 1 here: a shift below 32); bit for bit with TFLite's
    arithmetic in numpy."""
    from mcudeploy.ops.conv import DW_FIELDS

    _, x_shape, attrs = case
    graph, node, x = dw_graph(x_shape, attrs={**attrs, "dsp": 1}, seed=6, s_y=0.05)
    c = x_shape[1]
    tensors = dict(graph.tensors)
    w, b = tensors["w"], tensors["b"]
    s_w = np.array(w.quant.scale)
    s_w[-1] = 0.05 / 0.03 * 1.5  # one channel's multiplier above 1: off the doubled route
    tensors["w"] = constant("w", w.data, Quant(tuple(s_w), (0,) * c, 0))
    tensors["b"] = constant("b", b.data, Quant(tuple(0.03 * s_w), (0,) * c, 0))
    graph = replace(graph, tensors=tensors, arithmetic="tflite")
    call = check(tmp_path, graph, node, x)
    table = np.array(dict(call.params.fields)["dw"].values).reshape(c, DW_FIELDS)
    doubled = table[:, 6] != 0
    assert doubled[:-1].all() and not doubled[-1]
    assert np.all(table[doubled, 0] % 2 == 0)  # twice the folded bias
    plain = CONV.kernel(replace(graph, nodes=(node.with_(attrs={k: v for k, v in node.attrs.items() if k != "dsp"}),)),
                        node.with_(attrs={k: v for k, v in node.attrs.items() if k != "dsp"}))
    assert not np.any(np.array(dict(plain.params.fields)["dw"].values).reshape(c, DW_FIELDS)[:, 6])


@needs_gcc
def test_mixed_shifts_and_exact_ties(tmp_path):
    """Per-channel shifts on both sides of 33; weights of +-1 and a zero bias make exact halves."""
    graph, node, x = dw_graph((1, 6, 6, 6), attrs={"pads": [1, 1, 1, 1]}, seed=4)
    w = graph["w"]
    scales = (0.03 / 0.05 * np.array([1.0, 0.5, 2 ** -7, 2 ** -9, 0.25, 2 ** -12]))  # M = s_x s_w / s_y
    data = np.random.default_rng(5).choice(np.array([-1, 1], np.int8), w.shape)
    tensors = dict(graph.tensors)
    tensors["w"] = constant("w", data, Quant(tuple(scales * 0.05 / 0.03), (0,) * 6, 0))
    tensors["b"] = constant("b", np.zeros(6, np.int32), Quant(tuple(scales * 0.05), (0,) * 6, 0))
    graph = replace(graph, tensors=tensors)
    call = check(tmp_path, graph, node, x)
    shifts = dict(call.params.fields)["shift"].values
    assert min(shifts) < 33 <= max(shifts)


@needs_gcc
@pytest.mark.parametrize("clip", [(0.0, 6.0), (0.0, None), (-0.5, 0.5)], ids=["relu6", "relu", "narrow"])
def test_fused_activation_range(tmp_path, clip):
    lo, hi = clip[0], clip[1] if clip[1] is not None else float("inf")
    graph, node, x = dw_graph((1, 4, 7, 6), attrs={"pads": [1, 1, 1, 1]}, seed=6, clip=(lo, hi))
    check(tmp_path, graph, node, x)


@needs_gcc
def test_without_bias(tmp_path):
    graph, node, x = dw_graph((1, 3, 5, 6), attrs={"pads": [1, 1, 1, 1], "strides": [2, 2]}, seed=7, bias=False)
    check(tmp_path, graph, node, x)


@needs_gcc
@pytest.mark.parametrize("where", ["step2", "channels_last", "padded"])
def test_views_inside_bigger_buffers(tmp_path, where):
    """Innermost input stride 2, channels-last memory (innermost stride C), garbage around."""
    graph, node, x = dw_graph((2, 5, 7, 9), attrs={"pads": [1, 1, 1, 1]}, seed=8)
    place = {"step2": {"x": Place(1, step=2), "y": Place(1, step=3)},
             "channels_last": {"x": Place(1, channels_last(4)), "y": Place(2, channels_last(4))},
             "padded": {"x": 3, "y": 1}}[where]
    check(tmp_path, graph, node, x, place)


FALLBACK_CASES = [
    ("5x5", (1, 3, 8, 8), (5, 5), {"pads": [2, 2, 2, 2]}),
    ("dilated", (1, 3, 9, 9), (3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    ("stride3_w", (1, 3, 9, 10), (3, 3), {"pads": [1, 1, 1, 1], "strides": [1, 3]}),
    ("wide", (1, 2, 4, 200), (3, 3), {"pads": [1, 1, 1, 1]}),
    ("conv1d", (1, 4, 13), (3,), {"pads": [1, 1]}),
    ("3x1", (1, 3, 6, 6), (3, 1), {"pads": [1, 0, 1, 0]}),
]

LINE_CASES = [  # one column or one row of taps: mcud_dw_lines, lines widened into a stack buffer
    ("sww_5x1", (1, 8, 28, 1), (5, 1), {}),
    ("sww_15x1_one_output", (1, 6, 15, 1), (15, 1), {}),
    ("10x1_odd", (1, 5, 24, 1), (10, 1), {"pads": [3, 0, 2, 0]}),
    ("7x1_stride2_lines", (2, 3, 20, 4), (7, 1), {"pads": [3, 1, 3, 1], "strides": [2, 2]}),
    ("1x9_rows", (1, 4, 3, 30), (1, 9), {"pads": [0, 4, 0, 4]}),
    ("1x4_even_stride3", (1, 3, 5, 31), (1, 4), {"pads": [1, 2, 0, 1], "strides": [2, 3]}),
    ("5x1_dilated", (1, 4, 30, 2), (5, 1), {"pads": [4, 0, 4, 0], "dilations": [2, 1]}),
    ("1x3_dilated_stride2", (1, 3, 2, 25), (1, 3), {"pads": [0, 2, 0, 2], "dilations": [1, 3], "strides": [1, 2]}),
    ("64x1_longest", (1, 2, 70, 1), (64, 1), {"pads": [1, 0, 1, 0]}),
    ("65x1_generic", (1, 2, 70, 1), (65, 1), {}),  # past MCUD_DW_LINE_TAPS: the generic kernel
    ("3x1_past_the_buffer", (1, 2, 300, 1), (3, 1), {"pads": [1, 0, 1, 0]}),  # a line too long: the generic kernel
]


@needs_gcc
@pytest.mark.parametrize("case", LINE_CASES, ids=[c[0] for c in LINE_CASES])
@pytest.mark.parametrize("route", ["hi_shift", "low_shift"])
@pytest.mark.parametrize("arithmetic", ["onnx", "tflite"])
def test_line_kernels_are_bit_exact(tmp_path, case, route, arithmetic):
    _, x_shape, kernel, attrs = case
    graph, node, x = dw_graph(x_shape, kernel, attrs, seed=10, s_y=0.05 if route == "hi_shift" else 0.0001)
    check(tmp_path, replace(graph, arithmetic=arithmetic), node, x)


@needs_gcc
@pytest.mark.parametrize("case", FALLBACK_CASES, ids=[c[0] for c in FALLBACK_CASES])
def test_fallback_is_bit_exact(tmp_path, case):
    _, x_shape, kernel, attrs = case
    graph, node, x = dw_graph(x_shape, kernel, attrs, seed=9)
    check(tmp_path, graph, node, x)


def _piece(graph: Graph, node: Node, x: np.ndarray, rows: tuple[int, int], chans: tuple[int, int]):
    """The piece of a depthwise Conv (3x3, pad 1) that computes output rows [r0, r1) of channels
    [c0, c1): its own graph (input band with the halo it reads, begin padding adjusted) and input."""
    (r0, r1), (c0, c1) = rows, chans
    s, ph = node.attr("strides")[0], node.attr("pads")[0]
    h = graph["x"].shape[2]
    xa, xb = max(0, r0 * s - ph), min(h, (r1 - 1) * s - ph + 3)
    top = ph - r0 * s + xa
    bottom = (r1 - r0 - 1) * s + 3 - (xb - xa) - top
    pads = list(node.attr("pads"))
    attrs = dict(node.attrs, pads=[top, pads[1], bottom, pads[3]])
    band = x[:, c0:c1, xa:xb]
    w, b, y = graph["w"], graph["b"], graph["y"]
    sub = slice(c0, c1)
    tensors = {
        "x": replace(graph["x"], shape=band.shape),
        "w": constant("w", w.data[sub], Quant(w.quant.scale[sub], w.quant.zero_point[sub], 0)),
        "b": constant("b", b.data[sub], Quant(b.quant.scale[sub], b.quant.zero_point[sub], 0)),
    }
    piece = Node("dw", "Conv", node.inputs, node.outputs, {**attrs, "group": c1 - c0})
    partial = Graph("g", tensors, (), ("x",), ())
    shape, _ = CONV.infer(partial, piece)[0]
    tensors["y"] = replace(y, shape=shape)
    return Graph("g", tensors, (piece,), ("x",), ("y",)), piece, band


@needs_gcc
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("width", [11, 45], ids=["plane", "ring"])
@pytest.mark.parametrize("rows,chans", [((0, 3), (0, 8)), ((3, 7), (0, 8)), ((5, 8), (2, 7)), ((0, 8), (3, 5))],
                         ids=["top_band", "middle_band", "bottom_band_channels", "channel_range"])
def test_pieces_of_a_split_conv_equal_the_whole(tmp_path, stride, width, rows, chans):
    graph, node, x = dw_graph((1, 8, 16, width), attrs={"pads": [1, 1, 1, 1], "strides": [stride, stride]}, seed=10)
    whole = run_reference(graph, [x])[0]
    oh = graph["y"].shape[2]
    rows = (min(rows[0], oh - 1), min(rows[1], oh))
    pg, pn, band = _piece(graph, node, x, rows, chans)
    assert pg["y"].shape[2] == rows[1] - rows[0]
    call = CONV.kernel(pg, pn)
    assert call.fn == "mcud_conv_s8_dw"
    got = run_kernel(tmp_path, call, pg, {"x": band}, {"x": 2, "y": 1})[0]
    np.testing.assert_array_equal(got, whole[:, chans[0]:chans[1], rows[0]:rows[1]])


@needs_gcc
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 2), c=st.integers(2, 6), h=st.integers(1, 24), w=st.integers(1, 64),
       stride=st.sampled_from([(1, 1), (2, 2), (1, 2), (2, 1)]), pads=st.tuples(*[st.integers(0, 2)] * 4),
       s_y=st.sampled_from([0.05, 0.0001]), seed=st.integers(0, 1000))
def test_random_shapes(tmp_path, n, c, h, w, stride, pads, s_y, seed):
    if (h + pads[0] + pads[2] < 3) or (w + pads[1] + pads[3] < 3):
        return  # no output
    graph, node, x = dw_graph((n, c, h, w), attrs={"pads": list(pads), "strides": list(stride)}, seed=seed, s_y=s_y)
    check(tmp_path, graph, node, x)


def test_stack_buffer_size_matches_the_header():
    """ops/conv.py decides the kernel's paths (and so in-place safety) from MCUD_DW_BUF's value."""
    from mcudeploy.ops.conv import DW_BUF
    from mcudeploy.resources import firmware_dir

    header = (firmware_dir() / "include" / "mcud_conv_dw.h").read_text()
    assert f"#define MCUD_DW_BUF {DW_BUF}\n" in header


SAME_SHAPE = [c for c in FAST_CASES if dw_graph(c[1], attrs=c[2])[0]["y"].shape == tuple(c[1])]
SAME_SHAPE += [("ring_pad2_top", (1, 2, 20, 40), {"pads": [2, 1, 0, 1]}),
               ("ring_batch", (2, 3, 18, 44), {"pads": [1, 1, 1, 1]}),
               ("plane_pad2_top", (1, 3, 6, 5), {"pads": [2, 1, 0, 1]})]


@needs_gcc
@pytest.mark.parametrize("case", SAME_SHAPE, ids=[c[0] for c in SAME_SHAPE])
def test_in_place_on_the_fast_path_is_bit_exact(tmp_path, case):
    """Where Conv.inplace offers the depthwise kernel its input's bytes, the kernel, reading and
    writing one array, gives the reference's output."""
    _, x_shape, attrs = case
    graph, node, x = dw_graph(x_shape, attrs=attrs, seed=11)
    assert CONV.inplace(graph, node) == 0
    call = CONV.kernel(graph, node)
    got = run_kernel(tmp_path, call, graph, {"x": x}, {"x": 0}, inplace={"y": "x"})[0]
    np.testing.assert_array_equal(got, run_reference(graph, [x])[0])


@pytest.mark.parametrize("x_shape,kernel,attrs", [
    ((1, 3, 8, 8), (5, 5), {"pads": [2, 2, 2, 2]}),  # the generic kernel: no row buffer
    ((1, 2, 6, 200), (3, 3), {"pads": [1, 1, 1, 1]}),  # rows wider than the ring: the generic kernel
    ((1, 2, 20, 40), (3, 3), {"pads": [3, 1, 0, 1]}),  # the output is taller
    ((2, 4, 12, 12), (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),  # smaller planes, two images
], ids=["5x5", "wide", "taller", "stride2_batch2"])
def test_in_place_is_refused_off_the_safe_path(x_shape, kernel, attrs):
    graph, node, _ = dw_graph(x_shape, kernel, attrs)
    assert CONV.inplace(graph, node) is None


def test_ring_rows_must_be_copied_before_they_are_overwritten():
    """On the ring path output rows up to oh end where input row oh + 1 begins (same shape), and
    only rows up to oh * stride - pad + 2 are copied by then: a begin padding of 3 would write
    rows the kernel has not read yet. A stride-2 output of one image stays behind its reads
    (tests/memory/test_inplace_resize.py runs it)."""
    from mcudeploy.ops.conv import _dw_inplace_safe, geometry

    graph, node, _ = dw_graph((1, 2, 20, 40), attrs={"pads": [1, 1, 1, 1]})
    g = geometry(graph, node)
    assert _dw_inplace_safe(g)
    assert not _dw_inplace_safe(replace(g, pad_begin=(3, 1)))
    graph, node, _ = dw_graph((1, 2, 40, 60), attrs={"pads": [1, 1, 1, 1], "strides": [2, 2]})
    assert _dw_inplace_safe(geometry(graph, node))


# --------------------------------------------------------------------------- under QEMU


def _random_depthwise(rng, arithmetic: str, count: int = 12) -> Graph:
    """Int8 depthwise Convs, each reading its own input: 3x3 on random channels, heights and widths (odd and even
    output widths, so pairs and a last lone output), strides 1 and 2 along each axis, pads of 0 to 2, planes in the
    stack buffer and rings of rows; the last four a column or a row of 2 to 11 taps (mcud_dw_lines)."""
    tensors, nodes, inputs, outputs = {}, [], [], []
    for j in range(count):
        c, h = int(rng.integers(2, 7)), int(rng.integers(3, 14))
        w = int(rng.integers(30, 50)) if j % 4 == 3 else int(rng.integers(3, 20))  # a ring where wide
        stride = [[2, 2], [1, 1], [1, 2], [2, 1]][j % 4]
        pads = [int(v) for v in rng.integers(0, 3, 4)]
        kernel = (3, 3) if j < count - 4 else [(int(rng.integers(2, 12)), 1), (1, int(rng.integers(2, 12)))][j % 2]
        if kernel != (3, 3):  # a column or a row of taps (mcud_dw_lines): the line as long as the kernel or longer
            h, w = max(h, kernel[0]), max(w, kernel[1])
        s_w = rng.uniform(0.002, 0.01, c)
        z_x = int(rng.integers(-20, 20))
        tensors[f"x{j}"] = Tensor(f"x{j}", (1, c, h, w), "int8", "input", Quant((0.03,), (z_x,)))
        tensors[f"w{j}"] = constant(f"w{j}", rng.integers(-127, 128, (c, 1, *kernel)).astype(np.int8),
                                    Quant(tuple(s_w), (0,) * c, 0))
        tensors[f"b{j}"] = constant(f"b{j}", rng.integers(-5000, 5000, c).astype(np.int32),
                                    Quant(tuple(0.03 * s_w), (0,) * c, 0))
        node = Node(f"dw{j}", "Conv", (f"x{j}", f"w{j}", f"b{j}"), (f"y{j}",),
                    {"group": c, "strides": stride, "pads": pads})
        partial = Graph("g", dict(tensors), (), (f"x{j}",), (), arithmetic=arithmetic)
        shape, dtype = CONV.infer(partial, node)[0]
        tensors[f"y{j}"] = Tensor(f"y{j}", shape, dtype, "output",
                                  Quant((float(rng.uniform(0.02, 0.2)),), (int(rng.integers(-10, 10)),)))
        nodes.append(node)
        inputs.append(f"x{j}")
        outputs.append(f"y{j}")
    return Graph("dws", tensors, tuple(nodes), tuple(inputs), tuple(outputs), arithmetic=arithmetic)


@pytest.mark.qemu
@pytest.mark.parametrize("board,arithmetic", [("qemu-m4", "onnx"), ("qemu-m7", "tflite")])  # each core, each rounding
def test_random_depthwise_on_qemu_equal_the_host(tmp_path, board, arithmetic, need_qemu):
    """The DSP path of mcud_conv_s8_dw (two outputs a step at stride 1 and at stride 2 along W, two rows a step,
    rings of rows, lines of a column or a row of taps) on _random_depthwise, against the host's C (itself bit for bit
    with the numpy reference, above)."""
    from mcudeploy import check as mcheck
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.compile import compile_graph
    from mcudeploy.device.runner import run_on_board

    graph = _random_depthwise(np.random.default_rng(len(board) + 3 * len(arithmetic)), arithmetic)
    compiled = compile_graph(graph, board, name="dws")
    calls = [CONV.kernel(compiled.graph, n) for n in compiled.graph.nodes if n.op == "Conv"]
    assert {c.fn.removesuffix("_tfl") for c in calls} == {"mcud_conv_s8_dw"}
    strides = [tuple(n.attrs["strides"]) for n in compiled.graph.nodes if n.op == "Conv"]
    assert (2, 2) in strides and any(s[1] == 1 for s in strides)
    samples = mcheck.random_inputs(compiled.graph, 3, seed=8)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


@pytest.mark.qemu
def test_a_table_doubled_for_the_dsp_path_gives_the_same_bits_on_an_mve_core(tmp_path, need_qemu):
    """A plan whose depthwise tables hold doubled channels (offload.dsp_packings' "dsp", here set by hand: a plan made
    for a core without MVE) built for qemu-m55: the MVE kernels work those channels out from the weights instead
    (mcud_conv_dw.h), so the outputs are still the host's, which takes route 5."""
    from mcudeploy import check as mcheck
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.compile import compile_graph
    from mcudeploy.device.runner import run_on_board
    from mcudeploy.ops.conv import DW_FIELDS

    graph = _random_depthwise(np.random.default_rng(11), "tflite")
    graph = replace(graph, nodes=tuple(n.with_(attrs={**n.attrs, "dsp": 1}) for n in graph.nodes))
    compiled = compile_graph(graph, "qemu-m55", name="dws")
    tables = [dict(CONV.kernel(compiled.graph, n).params.fields).get("dw") for n in compiled.graph.nodes]
    assert any(t is not None and np.any(np.array(t.values).reshape(-1, DW_FIELDS)[:, 6]) for t in tables)
    samples = mcheck.random_inputs(compiled.graph, 2, seed=9)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


def _pointwise_then_depthwise(x_shape, attrs, arithmetic="tflite", seed=0, then=None):
    """x -> a 1x1 Conv with a Relu whose channels (0, c - 1) have weights of 0 and a negative bias (their output the
    zero point everywhere: quiet for the depthwise Conv after it) and channel 1 weights of 0 and a positive bias (one
    value, not the zero point: the depthwise Conv's padding then sums to something else at the borders) -> a
    depthwise Conv whose channel 2 has weights of 0 -> y.
    ``then`` adds a 1x1 Conv of 5 channels on y ("dw_pw": its input channels 0, 2 and c - 1 one value each) or on t
    instead of the depthwise Conv ("pw": 0, 1 and c - 1, channel 1 not the zero point), as the "dsp" plan of a core
    without MVE marks it, with ``attrs`` (its strides) -> z."""
    rng = np.random.default_rng(seed)
    n, c, h, w = x_shape
    s_w = rng.uniform(0.002, 0.01, c)
    pw = rng.integers(-127, 128, (c, 3, 1, 1)).astype(np.int8)
    pb = rng.integers(-5000, 5000, c).astype(np.int32)
    pw[[0, 1, c - 1]] = 0
    pb[0], pb[c - 1], pb[1] = -3000, -1, 4000
    dw = rng.integers(-127, 128, (c, 1, 3, 3)).astype(np.int8)
    dw[2] = 0  # a depthwise channel of weights 0: one value too
    db = rng.integers(-5000, 5000, c).astype(np.int32)
    tensors = {t.name: t for t in (
        Tensor("x", (n, 3, h, w), "int8", "input", Quant((0.03,), (-9,))),
        constant("pw", pw, Quant(tuple(s_w), (0,) * c, 0)), constant("pb", pb, Quant(tuple(0.03 * s_w), (0,) * c, 0)),
        Tensor("t", (n, c, h, w), "int8", "activation", Quant((0.04,), (-6,))),
        constant("dw", dw, Quant(tuple(s_w), (0,) * c, 0)), constant("db", db, Quant(tuple(0.04 * s_w), (0,) * c, 0)))}
    pointwise = Node("pw", "Conv", ("x", "pw", "pb"), ("t",), {"clip_min": 0.0, "clip_max": math.inf})
    nodes, out = [pointwise], "t"
    if then != "pw":
        depthwise = Node("dw", "Conv", ("t", "dw", "db"), ("y",), {"group": c, **attrs})
        shape, _ = CONV.infer(Graph("g", tensors, (), ("x",), (), arithmetic=arithmetic), depthwise)[0]
        tensors["y"] = Tensor("y", shape, "int8", "output" if then is None else "activation", Quant((0.05,), (4,)))
        nodes, out = [pointwise, depthwise], "y"
    if then is not None:
        s_v = rng.uniform(0.002, 0.01, 5)
        tensors["vw"] = constant("vw", rng.integers(-127, 128, (5, c, 1, 1)).astype(np.int8),
                                 Quant(tuple(s_v), (0,) * 5, 0))
        tensors["vb"] = constant("vb", rng.integers(-5000, 5000, 5).astype(np.int32),
                                 Quant(tuple(0.05 * s_v), (0,) * 5, 0))
        last = Node("pw2", "Conv", (out, "vw", "vb"), ("z",), {"dsp": 1, **({"strides": attrs["strides"]}
                                                                            if "strides" in attrs else {})})
        shape, _ = CONV.infer(Graph("g", tensors, (), ("x",), (), arithmetic=arithmetic), last)[0]
        tensors["z"] = Tensor("z", shape, "int8", "output", Quant((0.06,), (-3,)))
        nodes, out = nodes + [last], "z"
    if then == "pw":
        tensors["t"] = replace(tensors["t"], kind="activation")
    graph = Graph("g", tensors, tuple(nodes), ("x",), (out,), arithmetic=arithmetic)
    return graph, rng.integers(-128, 128, (n, 3, h, w)).astype(np.int8)


QUIET_CASES = [
    ("whole_plane", (1, 6, 7, 9), {"pads": [1, 1, 1, 1]}),
    ("ring", (1, 5, 20, 40), {"pads": [1, 1, 1, 1]}),
    ("stride2_batch2", (2, 6, 12, 11), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("valid", (1, 4, 6, 7), {}),
]


@needs_gcc
@pytest.mark.parametrize("case", QUIET_CASES, ids=[c[0] for c in QUIET_CASES])
@pytest.mark.parametrize("arithmetic", ["onnx", "tflite"])
def test_channels_whose_input_is_the_zero_point_are_written_not_computed(tmp_path, case, arithmetic):
    """A depthwise channel whose input plane is the zero point at every pixel (the channel of weights 0 of the
    pointwise layer before, through its Relu: VWW has dozens a layer) sums its bias alone, as does a channel of weights
    0 (channel 2): mcud_conv_s8_dw writes their one value (p->dead) without reading the plane; a channel of one value
    that is not the zero point (channel 1) is computed, its padded borders summing otherwise. Bit for bit with the numpy reference, on a view in a bigger
    buffer and channels-last."""
    _, x_shape, attrs = case
    graph, x = _pointwise_then_depthwise(x_shape, attrs, arithmetic, seed=len(case[0]))
    pointwise, depthwise = graph.nodes
    c = x_shape[1]
    call = CONV.kernel(graph, depthwise)
    fields = dict(call.params.fields)
    assert fields["dead"].values == (0, 2, c - 1) and fields["dead_n"] == 3
    t = run_reference(replace(graph, nodes=(pointwise,), outputs=("t",)), [x])[0]
    assert np.all(t[:, [0, c - 1]] == -6) and np.all(t[:, 1] == t[0, 1, 0, 0]) and t[0, 1, 0, 0] != -6
    want = run_reference(graph, [x])[0]
    assert [int(want[0, k].ravel()[0]) for k in (0, 2, c - 1)] == list(fields["dead_y"].values)
    for place in ({"t": 1, "y": 2}, {"t": Place(1, channels_last(4)), "y": Place(2, channels_last(4))}):
        got = run_kernel(tmp_path, call, graph, {"t": t}, place)[0]
        np.testing.assert_array_equal(got, want)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m55"])  # the DSP path, the MVE path
def test_channels_whose_input_is_the_zero_point_on_qemu_equal_the_host(tmp_path, board, need_qemu):
    """_pointwise_then_depthwise and a pointwise convolution after it compiled for a core with the DSP instructions
    (the pointwise convolution reading 3 of its 6 input channels, in the assembly block kernels) and one with MVE (the
    depthwise channel loop is shared; the pointwise convolution reads every channel): the board's outputs are the
    host's."""
    from mcudeploy import check as mcheck
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.compile import compile_graph
    from mcudeploy.device.runner import run_on_board

    graph, _ = _pointwise_then_depthwise((1, 6, 10, 9), {"pads": [1, 1, 1, 1]}, then="dw_pw")
    graph = replace(graph, nodes=tuple(n.with_(attrs={k: v for k, v in n.attrs.items() if k != "dsp"})
                                       for n in graph.nodes))  # the board's plan says
    compiled = compile_graph(graph, board, name="quiet")
    depthwise = next(n for n in compiled.graph.nodes if n.attrs.get("group", 1) > 1)
    assert dict(CONV.kernel(compiled.graph, depthwise).params.fields)["dead_n"] == 3
    last = next(n for n in compiled.graph.nodes if n.outputs == ("z",))
    assert ("in_live" in dict(CONV.kernel(compiled.graph, last).params.fields)) == (board == "qemu-m4")
    samples = mcheck.random_inputs(compiled.graph, 2, seed=4)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


READ_CASES = [  # (id, input shape, attributes, then): c less the channels of one value, and the pixels, vary
    ("after_dw", (1, 7, 7, 9), {"pads": [1, 1, 1, 1]}, "dw_pw"),  # reads 4 of 7
    ("after_dw_repeat", (1, 9, 5, 7), {"pads": [1, 1, 1, 1]}, "dw_pw"),  # reads 6 of 9: the last twice more
    ("after_dw_s2", (2, 8, 8, 11), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, "dw_pw"),  # 5 of 8, tails of pixels
    ("after_pw", (1, 8, 5, 6), {}, "pw"),  # 5 of 8, channel 1 of one value that is not the zero point
    ("after_pw_s2", (1, 11, 9, 7), {"strides": [2, 2]}, "pw"),  # 8 of 11
]


@needs_gcc
@pytest.mark.parametrize("case", READ_CASES, ids=[c[0] for c in READ_CASES])
@pytest.mark.parametrize("arithmetic", ["onnx", "tflite"])
def test_a_pointwise_convolution_reads_only_its_input_channels_not_of_one_value(tmp_path, case, arithmetic):
    """The input channels of a pointwise convolution that hold one value at every pixel (constant_channels: the
    depthwise channels above, or the channels of weights 0 themselves) are not read: their products, constants, go
    into the bias (p->in_live lists the others, the last repeated to a multiple of four with a weight of 0). Bit for
    bit with the numpy reference, on a view in a bigger buffer and channels-last; they fail with the products left out
    of the bias (checked)."""
    from mcudeploy.ops.conv import constant_channels

    _, x_shape, attrs, then = case
    graph, x = _pointwise_then_depthwise(x_shape, attrs, arithmetic, seed=len(case[0]), then=then)
    last = graph.nodes[-1]
    c = x_shape[1]
    one_value = constant_channels(graph, last.inputs[0])
    assert set(one_value) == ({0, 1, c - 1} if then == "pw" else {0, 2, c - 1})
    call = CONV.kernel(graph, last)
    fields = dict(call.params.fields)
    read = [k for k in range(c) if k not in one_value]
    kpad = -(-len(read) // 4) * 4
    assert call.fn == "mcud_conv_s8_fast" and fields["kpad"] == kpad
    assert fields["in_live"].values == tuple(read + [read[-1]] * (kpad - len(read))) and fields["in_live_n"] == kpad
    inputs = run_reference(replace(graph, outputs=(last.inputs[0],)), [x])[0]
    want = run_reference(graph, [x])[0]
    for place in ({last.inputs[0]: 1, "z": 2},
                  {last.inputs[0]: Place(1, channels_last(4)), "z": Place(2, channels_last(4))}):
        got = run_kernel(tmp_path, call, graph, {last.inputs[0]: inputs}, place)[0]
        np.testing.assert_array_equal(got, want)
    plain = CONV.kernel(graph, last.with_(attrs={k: v for k, v in last.attrs.items() if k != "dsp"}))
    assert "in_live" not in dict(plain.params.fields)  # an MVE core's plan (no "dsp") reads every channel
