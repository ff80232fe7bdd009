"""The fast int8 Conv (firmware/include/mcud_conv_fast.h): bit-exact with the numpy reference on
the host for every kind of geometry, on views that sit inside bigger buffers (a row band, a
channel range, channels-last memory, a step between elements) and on split graphs; its
requantization shortcut against mcud_requant; its scratch buffer in lifetimes, placement and the
generated C; the Cortex-M4 build using the DSP instructions, the Cortex-M3 build compiling
without them; and, under QEMU, the same bits on qemu-m4 and qemu-m3 as on the host."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcudeploy.boards import load_board
from mcudeploy.ir import Graph
from mcudeploy.codegen.values import c_int
from mcudeploy.codegen.emit import write_project
from mcudeploy.device.build import CFLAGS as ARM_CFLAGS
from mcudeploy.memory.lifetimes import SCRATCH
from mcudeploy.ops import registry
from mcudeploy.ops.conv import wide_weight_bytes
from mcudeploy.partition import Cut
from mcudeploy.plan.options import CompileOptions
from mcudeploy.compile import compile_graph, compile_model
from mcudeploy.reference import run_reference
from mcudeploy.resources import firmware_dir

from .conv_graphs import int8_conv, random_convs
from .kernel_harness import CC, CFLAGS, Place, channels_last, needs_gcc, run_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the conformance model builders
from conformance.test_int8_cases import conv as conv_case  # noqa: E402
from conformance.test_int8_cases import quantized  # noqa: E402

ARM = "arm-none-eabi-gcc"
DIRECT_COLS = 1152  # MCUD_DIRECT_COLS in firmware/include/mcud_conv_fast.h: the direct kernel's stack columns, bytes
needs_arm = pytest.mark.skipif(shutil.which(ARM) is None, reason="arm-none-eabi-gcc is not installed")




def field(call, name):
    return dict(call.params.fields)[name]


# (id, input shape, output channels, kernel, attributes): every one takes mcud_conv_s8_fast
CASES = [
    ("pointwise", (1, 16, 5, 6), 8, (1, 1), {}),
    ("pointwise_odd_c", (1, 7, 3, 5), 5, (1, 1), {}),  # C % 4 != 0, 15 pixels: a tail of 3
    ("pointwise_s2", (1, 12, 9, 7), 6, (1, 1), {"strides": [2, 2]}),
    ("3x3_pad", (1, 3, 8, 8), 5, (3, 3), {"pads": [1, 1, 1, 1]}),
    ("3x3_hwc", (1, 8, 7, 6), 5, (3, 3), {"pads": [1, 2, 0, 1]}),  # C % 4 == 0: taps in (kh, kw, c) order
    ("5x3_hwc_s2_dil", (1, 4, 13, 11), 6, (5, 3), {"strides": [2, 1], "dilations": [1, 2], "pads": [2, 1, 2, 1]}),
    ("3x3_s2_pad_end", (1, 3, 11, 10), 8, (3, 3), {"strides": [2, 2], "pads": [0, 0, 1, 1]}),
    ("kws_10x4", (1, 1, 19, 10), 7, (10, 4), {"strides": [2, 2], "pads": [4, 1, 5, 1]}),
    ("dilated", (1, 4, 10, 9), 3, (3, 2), {"dilations": [2, 3], "strides": [1, 2], "pads": [2, 1, 0, 2]}),
    ("big_pad", (1, 2, 3, 4), 3, (3, 3), {"pads": [3, 3, 3, 3]}),  # windows wholly outside the input
    ("batch2", (2, 5, 6, 5), 4, (3, 3), {"pads": [1, 0, 1, 2]}),
    ("one_pixel", (1, 9, 1, 1), 3, (1, 1), {}),
    ("conv1d", (1, 4, 23), 6, (5,), {"pads": [2, 2], "strides": [2]}),
]


@needs_gcc
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("layout", ["plain", "garbage_around", "channels_last", "step2"])
def test_fast_kernel_is_bit_exact(tmp_path, case, layout):
    _, x_shape, cout, kernel, attrs = case
    graph, node, values = int8_conv(x_shape, cout, kernel, attrs, seed=len(case[0]))
    call = registry.get("Conv").kernel(graph, node)
    assert call.fn == "mcud_conv_s8_fast"
    rank = len(x_shape)
    place = {"plain": {},
             "garbage_around": {"x": Place(2), "y": Place(1)},
             "channels_last": {"x": Place(1, channels_last(rank)), "y": Place(0, channels_last(rank))},
             "step2": {"x": Place(1, None, 2), "y": Place(0, None, 3)}}[layout]
    got = run_kernel(tmp_path, call, graph, values, place)[0]
    np.testing.assert_array_equal(got, run_reference(graph, [values["x"]])[0])


@needs_gcc
@pytest.mark.parametrize("what", ["shift_le_32", "clip", "no_bias", "full_weights"])
def test_fast_kernel_requantization_and_range(tmp_path, what):
    """Shifts of 32 and below (mcud_requant), a narrowed output range (no SSAT), no bias, and
    weights of -128 (the sxtb16 unpacking of every byte value)."""
    kw = {"shift_le_32": dict(s_y=1e-4), "clip": dict(clip=(0.0, 1.5)), "no_bias": dict(bias=False),
          "full_weights": dict(w_range=128)}[what]
    graph, node, values = int8_conv((1, 6, 7, 7), 5, (3, 3), {"pads": [1, 1, 1, 1]}, seed=3, **kw)
    call = registry.get("Conv").kernel(graph, node)
    shifts = field(call, "shift").values
    assert field(call, "hi_shift") == (0 if what == "shift_le_32" else 1), shifts
    got = run_kernel(tmp_path, call, graph, values, {"x": 1, "y": 2})[0]
    np.testing.assert_array_equal(got, run_reference(graph, [values["x"]])[0])


@needs_gcc
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=st.integers(1, 9), oc=st.integers(1, 7), h=st.integers(1, 9), w=st.integers(1, 9),
       kh=st.integers(1, 4), kw=st.integers(1, 4), sh=st.integers(1, 3), sw=st.integers(1, 3),
       dh=st.integers(1, 2), dw=st.integers(1, 2), pads=st.tuples(*[st.integers(0, 3)] * 4),
       seed=st.integers(0, 1000), direct=st.booleans(), wide=st.booleans(), tile=st.sampled_from([1, 2, 3, 8]))
def test_fast_kernel_random_shapes(tmp_path, c, oc, h, w, kh, kw, sh, sw, dh, dw, pads, seed, direct, wide, tile):
    """Both variants: with scratch (mcud_conv_s8_fast) and without (mcud_conv_s8_direct); with the weights'
    int16 copy (w16) and without it (offload.fit_wide_weights: "wide" = 0 where the board's flash cannot hold it);
    with the scratch in tiles of blocks (offload.tile_convolutions: taken with w16 and an even count of channels)."""
    if (h + pads[0] + pads[2] - dh * (kh - 1) - 1) < 0 or (w + pads[1] + pads[3] - dw * (kw - 1) - 1) < 0:
        return  # no output
    attrs = {"strides": [sh, sw], "dilations": [dh, dw], "pads": list(pads), **({"scratch": 0} if direct else {}),
             **({} if wide else {"wide": 0}), **({"tile": tile} if tile > 1 else {})}
    graph, node, values = int8_conv((1, c, h, w), oc, (kh, kw), attrs, seed=seed, z_x=seed % 256 - 128)
    call = registry.get("Conv").kernel(graph, node)
    assert call.fn == ("mcud_conv_s8_direct" if direct else "mcud_conv_s8_fast")
    assert (field(call, "w16") != 0) == wide
    tiled = not direct and wide and oc % 2 == 0 and tile > 1
    assert dict(call.params.fields).get("blocks", 1) == (tile if tiled else 1)
    got = run_kernel(tmp_path, call, graph, values, {"x": Place(1, channels_last(4) if seed % 2 else None)})[0]
    np.testing.assert_array_equal(got, run_reference(graph, [values["x"]])[0])


# (id, input shape, output channels, kernel, attributes, channels whose weights are all 0)
DEAD = [
    ("pointwise", (1, 16, 5, 6), 8, (1, 1), {}, (1, 6)),  # six live: three pairs
    ("pointwise_odd_live", (1, 12, 3, 5), 7, (1, 1), {}, (0, 3)),  # five live: the last channel alone
    ("tile", (1, 8, 5, 7), 10, (1, 1), {"tile": 3}, (2, 9)),  # eight live in tiles of three blocks
    ("tile_odd_live", (1, 8, 5, 7), 10, (1, 1), {"tile": 3}, (4,)),  # nine live: no tiles, nor their scratch
    ("tile_even_live", (1, 8, 5, 7), 9, (1, 1), {"tile": 3}, (4,)),  # nine channels, eight live: tiles
    ("3x3_pad_direct", (1, 4, 7, 6), 6, (3, 3), {"pads": [1, 1, 1, 1], "scratch": 0}, (5, 0)),  # stack columns
    ("3x3_beyond_stack", (1, 17, 6, 9), 5, (3, 3), {"pads": [1, 1, 1, 1], "scratch": 0}, (2,)),  # row3, edges
    ("5x5_beyond_stack", (1, 6, 13, 16), 4, (5, 5), {"strides": [1, 2], "pads": [2, 2, 2, 2], "scratch": 0},
     (3, 1)),  # the generic sums, the strip
]


@needs_gcc
@pytest.mark.parametrize("case", DEAD, ids=[c[0] for c in DEAD])
@pytest.mark.parametrize("layout", ["garbage_around", "channels_last"])
def test_channels_of_zero_weights_are_left_out_bit_exact(tmp_path, case, layout):
    """A channel whose weights are all 0 (Keras leaves many, with biases near 2^30) writes one value at every pixel
    (mcud_conv_fast_dead) and the block kernels compute the others only (p->live): in quads, pairs, the odd last
    channel, tiles, and the direct kernel from its stack columns and beyond them (here a core without MVE's params,
    "dsp"; an MVE core's kernels below, test_channels_of_weights_0_are_left_out_on_an_mve_core)."""
    _, x_shape, cout, kernel, attrs, dead = case
    graph, node, values = int8_conv(x_shape, cout, kernel, {**attrs, "dsp": 1}, seed=len(case[0]), dead=dead)
    call = registry.get("Conv").kernel(graph, node)
    live = [c for c in range(cout) if c not in dead]
    assert field(call, "live").values == tuple(live) and field(call, "live_n") == len(live)
    assert sorted(field(call, "dead").values) == sorted(dead) and len(field(call, "w16").values) % len(live) == 0
    assert len(field(call, "bias").values) == len(live)
    # tiles where the channels computed pair up (mcud_conv_fast_blocks' rule), and only then their scratch
    blocks = attrs.get("tile", 1) if len(live) % 2 == 0 else 1
    assert dict(call.params.fields).get("blocks", 1) == blocks
    assert call.scratch == (0 if attrs.get("scratch") == 0 else 4 * 2 * field(call, "kpad") * blocks)
    place = {"x": Place(1, channels_last(len(x_shape)) if layout == "channels_last" else None), "y": Place(2)}
    got = run_kernel(tmp_path, call, graph, values, place)[0]
    want = run_reference(graph, [values["x"]])[0]
    np.testing.assert_array_equal(got, want)
    assert len(set(want[0, dead[0]].ravel().tolist())) == 1 and want[0, dead[0]].ravel()[0] != 4  # not the zero point
    # the flash the int16 copy is priced at (offload.fit_wide_weights) is the copy model.c holds
    assert wide_weight_bytes(graph, node) == 2 * len(field(call, "w16").values) == 2 * len(live) * field(call, "kpad")
    narrow = registry.get("Conv").kernel(graph, node.with_(attrs={**node.attrs, "wide": 0}))
    assert "live" not in dict(narrow.params.fields)  # the int8 copy's kernels compute every channel


@needs_gcc
@pytest.mark.parametrize("case", CASES + [("3x3_wide", (1, 3, 5, 13), 4, (3, 3), {"pads": [1, 1, 1, 1]})],
                         ids=[c[0] for c in CASES] + ["3x3_wide"])
@pytest.mark.parametrize("layout", ["garbage_around", "channels_last"])
def test_direct_kernel_without_scratch_is_bit_exact(tmp_path, case, layout):
    """The variant for a node whose scratch fit_scratch dropped (attribute "scratch" = 0); with
    rows contiguous in memory, a 3-wide stride-1 kernel takes the pair-packed row path."""
    _, x_shape, cout, kernel, attrs = case
    graph, node, values = int8_conv(x_shape, cout, kernel, {**attrs, "scratch": 0}, seed=len(case[0]) + 1)
    call = registry.get("Conv").kernel(graph, node)
    assert call.fn == "mcud_conv_s8_direct" and call.scratch == 0 == registry.get("Conv").scratch(graph, node)
    row3 = kernel[-1] == 3 and attrs.get("strides", [1, 1])[-1] == 1 and attrs.get("dilations", [1, 1])[-1] == 1
    assert (field(call, "w3") != 0) == row3
    place = {"x": Place(1, channels_last(len(x_shape)) if layout == "channels_last" else None), "y": Place(2)}
    got = run_kernel(tmp_path, call, graph, values, place)[0]
    np.testing.assert_array_equal(got, run_reference(graph, [values["x"]])[0])


# (id, input shape, output channels, kernel, attributes): kpad above 144, so mcud_conv_s8_direct works from the
# input itself (no stack columns); widths where a row's last block of four overlaps pixels already written
DIRECT_WIDE = [
    ("3x3_c17_w9", (1, 17, 6, 9), 5, (3, 3), {"pads": [1, 1, 1, 1]}),  # row3: 9 inside, blocks at 1 and 4..7
    ("3x3_c17_w6", (1, 17, 4, 6), 3, (3, 3), {"pads": [0, 1, 0, 1]}),  # row3: 6 pixels, blocks at 1 and 1..4
    ("5x5_c6_s2", (1, 6, 13, 16), 4, (5, 5), {"strides": [1, 2], "pads": [2, 2, 2, 2]}),  # kpad 152, generic
    ("2x4_c19_dil", (1, 19, 7, 15), 2, (2, 4), {"dilations": [2, 1], "pads": [1, 0, 0, 3]}),  # kpad 152
    ("3x3_c80_chunks", (1, 80, 5, 7), 3, (3, 3), {"pads": [1, 1, 1, 1]}),  # 64 channels a strip: two, per channel
    ("3x3_c17_narrow", (1, 17, 5, 3), 2, (3, 3), {"pads": [1, 1, 1, 1]}),  # rows of three pixels: pixel by pixel
    ("3x400_c1", (1, 1, 3, 420), 2, (3, 400), {"pads": [1, 1, 1, 1]}),  # a channel's strip 1209 bytes: pixel by pixel
]


@needs_gcc
@pytest.mark.parametrize("case", DIRECT_WIDE, ids=[c[0] for c in DIRECT_WIDE])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_direct_kernel_beyond_stack_columns_is_bit_exact(tmp_path, case, layout):
    """mcud_conv_s8_direct where its columns would not fit MCUD_DIRECT_COLS (1152 bytes of stack): blocks inside the
    input from the input, blocks at its edges (and, where an input's rows are not contiguous, every block the row
    kernel can take) through the zero-point strip, in chunks of channels where a block's channels do not fit it."""
    _, x_shape, cout, kernel, attrs = case
    graph, node, values = int8_conv(x_shape, cout, kernel, {**attrs, "scratch": 0}, seed=len(case[0]) + 7)
    call = registry.get("Conv").kernel(graph, node)
    assert call.fn == "mcud_conv_s8_direct" and 4 * 2 * field(call, "kpad") > DIRECT_COLS
    x_place = Place(1, channels_last(len(x_shape)) if layout == "channels_last" else None)
    got = run_kernel(tmp_path, call, graph, values, {"x": x_place, "y": Place(2)})[0]
    np.testing.assert_array_equal(got, run_reference(graph, [values["x"]])[0])


@needs_gcc
@pytest.mark.parametrize("shape", [(1, 16, 5, 5), (1, 6, 3, 7), (2, 5, 1, 9), (1, 8, 2, 5), (1, 12, 7, 1)],
                         ids=["kws_like", "odd", "batch2", "tail2", "tail3"])
@pytest.mark.parametrize("dead", [False, True], ids=["all_live", "dead"])
def test_pointwise_in_place_is_bit_exact(tmp_path, shape, dead):
    """A 1x1 group-1 Conv with as many outputs as inputs may write over its input: each block of
    pixels is in the scratch before its outputs are written (a tail block of two or three pixels
    too, which stores its last pixel more than once); channels of weights 0 (p->live) get their one
    value after every block."""
    attrs, gone = ({"dsp": 1}, (1, shape[1] - 2)) if dead else ({}, ())
    graph, node, values = int8_conv(shape, shape[1], (1, 1), attrs, seed=4, dead=gone)
    op = registry.get("Conv")
    assert ("live" in dict(op.kernel(graph, node).params.fields)) == dead
    assert op.inplace(graph, node) == 0
    no_scratch = node.with_(attrs={**attrs, "scratch": 0})
    assert op.inplace(graph, no_scratch) is None  # the direct kernel reads every channel after writing
    got = run_kernel(tmp_path, op.kernel(graph, node), graph, values, {"x": Place(1)}, inplace={"y": "x"})[0]
    np.testing.assert_array_equal(got, run_reference(graph, [values["x"]])[0])


def test_fit_scratch_keeps_scratch_off_the_peak():
    """A Conv at the peak runs without scratch; one below the peak keeps it; the arena is the
    bound without any scratch."""
    model, _ = quantized(conv_case(cin=4, cout=16, hw=(12, 12), k=(3, 3), pads=[1, 1, 1, 1])[0], seed=3)
    compiled = compile_model(model, "host")
    (conv,) = [n for n in compiled.graph.nodes if n.op == "Conv"]
    assert conv.attr("scratch") == 0 and registry.get("Conv").kernel(compiled.graph, conv).fn == "mcud_conv_s8_direct"
    assert not [b for b in compiled.lifetimes.buffers if not b.tensors]
    # input 4*144 + output 16*144 bytes are the peak
    assert compiled.placement.arena_bytes == compiled.placement.lower_bound_bytes == 20 * 144


def test_dispatch_and_scratch():
    op = registry.get("Conv")
    graph, node, _ = int8_conv((1, 6, 5, 5), 4, (3, 3), {"pads": [1, 1, 1, 1]})
    call = op.kernel(graph, node)
    # 6 * 3 * 3 = 54 taps -> kpad 56; 4 pixels of 56 int16
    assert call.fn == "mcud_conv_s8_fast" and field(call, "kpad") == 56
    assert call.scratch == op.scratch(graph, node) == 4 * 56 * 2
    packed = np.array(field(call, "w").values).reshape(4, 14, 4)
    w = np.zeros((4, 56), np.int64)
    w[:, :54] = graph["w"].data.reshape(4, -1)
    assert np.array_equal(packed, w.reshape(4, 14, 4)[:, :, [0, 2, 1, 3]])  # [w0 w2 w1 w3]
    # the input zero point (-9) folded into the bias: b - z_x * sum w
    assert np.array_equal(field(call, "bias").values, graph["b"].data + 9 * graph["w"].data.reshape(4, -1).sum(1))

    graph, node, _ = int8_conv((1, 6, 5, 5), 6, (3, 3), {"group": 6, "pads": [1, 1, 1, 1]})
    assert op.kernel(graph, node).fn == "mcud_conv_s8_dw" and op.scratch(graph, node) == 0
    graph, node, _ = int8_conv((1, 6, 5, 5), 4, (3, 3), {"group": 2})
    assert op.kernel(graph, node).fn == "mcud_conv_s8" and op.scratch(graph, node) == 0


@needs_gcc
def test_requant_hi_equals_mcud_requant(tmp_path):
    """Random products and every tie (remainder exactly 2^(shift-1)) for shifts 33..62."""
    rng = np.random.default_rng(0)
    accs = list(rng.integers(-2**31, 2**31, 3000)) + [-2**31, 2**31 - 1, 0, 1, -1]
    mults = list(rng.integers(2**30, 2**31, 3000)) + [2**30, 2**31 - 1, 2**30 + 1, 2**31 - 1, 2**30]
    lines = ['#include <stdio.h>', '#include "mcud_conv_fast.h"',
             f"static const int32_t acc[{len(accs)}] = {{{', '.join(c_int(a) for a in accs)}}};",
             f"static const int32_t mult[{len(mults)}] = {{{', '.join(str(int(m)) for m in mults)}}};",
             "int main(void)", "{", "    long bad = 0;",
             "    for (int s = 33; s <= 62; s++) {",
             f"        for (int i = 0; i < {len(accs)}; i++) {{",
             "            bad += mcud_requant_hi(acc[i], mult[i], s) != mcud_requant(acc[i], mult[i], s);",
             "        }",
             "        for (int32_t a = -4096; a <= 4096; a++) {  /* ties: acc * 2^(s-31) / 2^s = acc / 2 */",
             "            int32_t m = 1 << 30;",
             "            bad += mcud_requant_hi(a, m, s) != mcud_requant(a, m, s);",
             "            bad += mcud_requant_hi(a << 1 | 1, m, s) != mcud_requant(a << 1 | 1, m, s);",
             "        }", "    }", '    printf("%ld\\n", bad);', "    return 0;", "}"]
    src = tmp_path / "requant.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "requant"
    proc = subprocess.run([CC, *CFLAGS, "-I", str(firmware_dir() / "include"), str(src), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.strip() == "0"


def _compiled_conv(board: str):
    model, _ = quantized(conv_case(cin=8, cout=6, hw=(7, 9), k=(3, 3), pads=[1, 1, 1, 1], relu=True)[0], seed=11)
    return compile_model(model, board)


def test_scratch_is_a_buffer_of_its_step_in_the_arena(tmp_path):
    compiled = _compiled_conv("host")
    conv = next(n for n in compiled.graph.nodes if n.op == "Conv")
    step = [n.name for n in compiled.order].index(conv.name)
    (buf,) = [b for b in compiled.lifetimes.buffers if b.name == conv.name + SCRATCH]
    assert buf.tensors == () and buf.first == buf.last == step
    assert buf.size == registry.get("Conv").scratch(compiled.graph, conv) == 4 * 72 * 2  # kpad = 8 * 9 = 72
    assert compiled.lifetimes.live_bytes()[step + 1] >= buf.size + compiled.graph[conv.outputs[0]].nbytes
    off = compiled.placement.offsets[buf.name]
    assert off % 4 == 0 and off + buf.size <= compiled.placement.arena_bytes
    out = write_project(compiled, tmp_path / "p")
    assert f"(void *)(mcud_arena + {off})" in (out / "model.c").read_text()
    plan = json.loads((out / "plan.json").read_text())
    assert any(b["name"] == buf.name and b["tensors"] == [] for b in plan["buffers"])


@needs_gcc
@pytest.mark.parametrize("axis", ["oh", "oc"])
def test_split_pieces_are_bit_exact(axis):
    """A Conv -> pointwise Conv chain cut into row bands or channel ranges: the kernels run on views."""
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.compile import lower
    from mcudeploy.frontend import import_onnx

    model, _ = quantized(conv_case(cin=3, cout=8, hw=(11, 7), k=(3, 3), pads=[1, 1, 1, 1], relu=True)[0], seed=5)
    graph = lower(import_onnx(model))
    conv = next(n for n in graph.nodes if n.op == "Conv")
    from mcudeploy.partition import split

    pieces = split(graph, (Cut(((conv.name, axis),), 3),))
    assert sum(n.op == "Conv" for n in pieces.nodes) == 3
    compiled = compile_graph(pieces, "host")
    x = np.random.default_rng(1).integers(-128, 128, graph[graph.inputs[0]].shape).astype(np.int8)
    got = run_compiled_on_host(compiled, [{graph.inputs[0]: x}])[0]
    np.testing.assert_array_equal(got[0], run_reference(graph, [x])[0])


def _arm_objdump(tmp_path, board: str) -> str:
    compiled = _compiled_conv(board)
    out = write_project(compiled, tmp_path / board)
    flags = list(load_board(board).cpu_flags)
    obj = out / "model.o"
    proc = subprocess.run([ARM, *flags, *ARM_CFLAGS, "-I", str(out / "mcud" / "include"), "-c", str(out / "model.c"),
                           "-o", str(obj)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return subprocess.run(["arm-none-eabi-objdump", "-d", str(obj)], check=True, capture_output=True,
                          text=True).stdout


@needs_arm
def test_cortex_m4_build_uses_the_dsp_instructions(tmp_path):
    asm = _arm_objdump(tmp_path, "qemu-m4")
    for insn in ("smlad", "ldrd", "ssat"):  # int16 weights from flash (w16): no sxtb16 in the product
        assert f"\t{insn}" in asm, f"no {insn} in the Cortex-M4 build"
    assert "mcud_conv_s8_fast" not in asm  # inlined: its shapes are constants


@needs_arm
def test_cortex_m3_build_compiles_without_dsp(tmp_path):
    asm = _arm_objdump(tmp_path, "qemu-m3")
    assert "\tsmlad" not in asm and "\tsxtb16" not in asm


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_fast_conv_on_qemu_equals_the_host(tmp_path, board):
    missing = [t for t in ("qemu-system-arm", ARM) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    compiled = _compiled_conv(board)
    assert any(registry.get(n.op).kernel(compiled.graph, n).fn == "mcud_conv_s8_fast"
               for n in compiled.graph.nodes if n.op == "Conv")
    samples = check.random_inputs(compiled.graph, 3, seed=2)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


@needs_gcc
@pytest.mark.parametrize("seed", [1, 2])
def test_random_tflite_convs_on_the_host_equal_numpy(tmp_path, seed):
    """The host's C of random_convs' TFLite convolutions, one at a time, bit for bit with the numpy reference (TFLite's
    arithmetic): the doubled weights and mcud_requant_tfl_2 (rq2), a channel whose output is its zero point, and pairs
    with a channel off that route, requantized as TFLite does in general, in quads, tiles, pairs and the odd last
    channel."""
    graph = random_convs(np.random.default_rng(seed), 8, "tflite")
    x = np.random.default_rng(seed + 10).integers(-128, 128, graph["x"].shape).astype(np.int8)
    kinds = set()
    for k, node in enumerate(graph.nodes):
        node = node.with_(attrs={**node.attrs, "dsp": 1})  # a core without MVE's params (channels left out: p->live)
        y = node.outputs[0]
        one = Graph("one", {n: graph[n] for n in (*node.inputs, y)}, (node,), ("x",), (y,), arithmetic="tflite")
        call = registry.get("Conv").kernel(one, node)
        rq2 = field(call, "rq2")
        kinds |= set(rq2.values[1::4]) & {0, 1} if rq2 != 0 else set()
        (tmp_path / str(k)).mkdir()
        got = run_kernel(tmp_path / str(k), call, one, {"x": x})[0]
        np.testing.assert_array_equal(got, run_reference(one, [x])[0], err_msg=node.name)
    assert kinds == {0, 1}


@pytest.mark.qemu
@pytest.mark.parametrize("board,cin,arithmetic", [("qemu-m4", 5, "onnx"), ("qemu-m7", 8, "tflite")])
def test_random_fast_convs_on_qemu_equal_the_host(tmp_path, board, cin, arithmetic):
    """The DSP path's block kernel (mcud_conv_fast_quads: four pixels by a pair of channels, its sums and TFLite's
    requantization in assembly) and the tiles over it, channels of weights 0 left out (p->live), on random
    convolutions, taps in (c, kh, kw) order (five
    channels) and (kh, kw, c) (eight), with ONNX's rounding and TFLite's (one on each core: the assembly is the same
    for both), against the host's C (itself bit for bit with the numpy reference, above)."""
    missing = [t for t in ("qemu-system-arm", ARM) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    graph = random_convs(np.random.default_rng(cin * 7 + len(board)), cin, arithmetic)
    compiled = compile_graph(graph, board, name="convs", options=CompileOptions(scratch="keep"))
    calls = [registry.get("Conv").kernel(compiled.graph, n) for n in compiled.graph.nodes if n.op == "Conv"]
    assert {c.fn for c in calls} == {"mcud_conv_s8_fast"}
    assert any(dict(c.params.fields).get("blocks", 1) > 1 for c in calls)
    assert any("live" in dict(c.params.fields) for c in calls)
    # TFLite's rounding: the doubled weights and mcud_requant_tfl_2 (rq2), in assembly after the blocks' sums, and
    # channels off that route (multiplier 0 in rq2) requantized as TFLite does in general
    rq2 = [field(c, "rq2") for c in calls]
    if arithmetic == "tflite":
        assert sum(r != 0 for r in rq2) >= 6 and any(0 in r.values[1::4] for r in rq2 if r != 0)
        assert any(1 in r.values[1::4] for r in rq2 if r != 0)  # a channel whose output is its zero point
    else:
        assert rq2 == [0] * len(calls)
    samples = check.random_inputs(compiled.graph, 3, seed=5)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


@pytest.mark.qemu
@pytest.mark.parametrize("board,cin,arithmetic", [("qemu-m4", 72, "tflite"), ("qemu-m7", 25, "onnx")])
def test_random_direct_convs_on_qemu_equal_the_host(tmp_path, board, cin, arithmetic):
    """The DSP path of mcud_conv_s8_direct beyond its stack columns (the pair-packed row kernel's sums in assembly, the
    zero-point strip at the edges, in chunks of channels where 72 do not fit it) on random convolutions, against
    the host's C (itself bit for bit with the numpy reference, above)."""
    missing = [t for t in ("qemu-system-arm", ARM) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    kernels = [(3, 3), (3, 3), (2, 3), (3, 2), (3, 4)]
    graph = random_convs(np.random.default_rng(cin + len(board)), cin, arithmetic, kernels, direct=True)
    compiled = compile_graph(graph, board, name="direct", options=CompileOptions(scratch="keep"))
    calls = [registry.get("Conv").kernel(compiled.graph, n) for n in compiled.graph.nodes if n.op == "Conv"]
    assert {c.fn for c in calls} == {"mcud_conv_s8_direct"} and all(4 * 2 * field(c, "kpad") > DIRECT_COLS for c in calls)
    assert any(field(c, "w3") != 0 for c in calls)
    samples = check.random_inputs(compiled.graph, 3, seed=6)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


@pytest.mark.qemu
@pytest.mark.parametrize("cin,direct", [(8, False), (8, True), (5, True)])
def test_channels_of_weights_0_are_left_out_on_an_mve_core(tmp_path, cin, direct):
    """An MVE core's convolution kernels leave channels of weights 0 out too (p->live: mcud_conv_mve.h stores
    channel k at live[k], mcud_conv_fast_dead writes the others after): the block kernels with scratch (their
    columns tiled or not), the direct kernel's stack columns in (kh, kw, c) order (eight channels); in (c, kh, kw)
    order (five) the direct kernel reads the model's weights, every channel's, so the scalar path runs. Bit for bit
    with the host on qemu-m55."""
    missing = [t for t in ("qemu-system-arm", ARM) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    graph = random_convs(np.random.default_rng(4 + cin), cin, "tflite", direct=direct)
    # every scratch kept, where it pays on the M55 or not (its direct kernel's stack columns often make it worthless)
    compiled = compile_graph(graph, "qemu-m55", name="live", options=CompileOptions(scratch="keep",
                                                                                    priced_scratch=False))
    calls = [registry.get("Conv").kernel(compiled.graph, n) for n in compiled.graph.nodes if n.op == "Conv"]
    assert {c.fn for c in calls} == {"mcud_conv_s8_direct" if direct else "mcud_conv_s8_fast"}
    assert not any(n.attrs.get("dsp") for n in compiled.graph.nodes)  # a plan for the MVE core itself
    assert any("live" in dict(c.params.fields) for c in calls)
    samples = check.random_inputs(compiled.graph, 2, seed=8)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
