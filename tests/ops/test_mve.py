"""The Helium (MVE) kernels of a Cortex-M55 build (firmware/include/mcud_conv_mve.h, mcud_dw_row_mve): the
qemu-m55 build uses the vector instructions, and under QEMU (mps3-an547) gives the host's bits on a model
that takes every MVE path (the generic, channels-last and gathered pointwise columns, the direct path's
stack columns, depthwise rows at stride 1 and 2 from a ring of rows, and whole planes as one run of outputs) and on a shared MLPerf Tiny model
read from .tflite; and mcud_mve_requant and mcud_mve_rq_apply against the scalar requantizations on every route, on values the
models do not reach (shifts below 33, TFLite's left shift), in a small firmware of its own; and int8 Mul's vector rows
(ONNX's and TFLite's roundings, same shape and broadcast) against its scalar path, and on ONNX and TFLite Mul models
against the host."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.boards import load_board
from mcudeploy.codegen.emit import write_project
from mcudeploy.device.build import CFLAGS as ARM_CFLAGS
from mcudeploy.ops import registry
from mcudeploy.compile import compile_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from shared_models import MODELS, need_models  # noqa: E402

ARM = "arm-none-eabi-gcc"
needs_arm = pytest.mark.skipif(shutil.which(ARM) is None, reason="needs arm-none-eabi-gcc")
needs_qemu = pytest.mark.skipif(any(shutil.which(t) is None for t in ("qemu-system-arm", ARM)),
                                reason="needs qemu-system-arm and arm-none-eabi-gcc")


@pytest.fixture(scope="module")
def mve_model(tmp_path_factory):
    """Every MVE path of the int8 Conv kernels, quantized by onnxruntime."""
    import zoo

    net = zoo.Net("mve", 40)
    x = net.op("Relu", [net.conv("x", 3, 8, 3)])  # C = 3: (c, kh, kw) taps, edges padded
    x = net.op("Relu", [net.conv(x, 8, 16, 3)])  # C % 4 == 0: channels-last taps
    x = net.op("Relu", [net.conv(x, 16, 16, 3, group=16)])  # depthwise rows of 18 at stride 1, a ring of rows
    x = net.op("Relu", [net.conv(x, 16, 20, 1)])  # pointwise: gathered channels
    x = net.op("Relu", [net.conv(x, 20, 20, 3, stride=2, group=20)])  # depthwise rows of 9 at stride 2, a ring
    x = net.op("Relu", [net.conv(x, 20, 20, 3, group=20)])  # a whole plane of 15 x 9 as one run at stride 1
    x = net.op("Relu", [net.conv(x, 20, 20, 3, stride=2, group=20)])  # a plane of 8 x 5 at stride 2
    x = net.op("Relu", [net.conv(x, 20, 20, 3, stride=2, group=20)])  # a plane of 4 x 3
    x = net.op("Relu", [net.conv(x, 20, 6, 1)])  # pointwise
    x = net.conv(x, 6, 5, 1)  # C % 4 != 0: pointwise taps one by one
    inputs = {"x": (1, 3, 30, 18)}  # the first depthwise planes (32 x 20 padded) are more than MCUD_DW_BUF
    return zoo.quantize(net.model(inputs, {"y": x}), inputs, tmp_path_factory.mktemp("mve"))


def _kernels(compiled) -> set[str]:
    return {registry.get(n.op).kernel(compiled.graph, n).fn for n in compiled.graph.nodes
            if not registry.get(n.op).view}


@needs_arm
def test_cortex_m55_build_uses_helium(mve_model, tmp_path):
    compiled = compile_model(mve_model, "qemu-m55")
    out = write_project(compiled, tmp_path / "p")
    asm = subprocess.run([ARM, *load_board("qemu-m55").cpu_flags, *ARM_CFLAGS, "-I", str(out / "mcud" / "include"),
                          "-S", "-o", "-", str(out / "model.c")], check=True, capture_output=True, text=True).stdout
    asm = asm.replace("vldrbt", "vldrb").replace("vstrbt", "vstrb")  # the predicated forms
    for insn in ("vmladava.s8", "vctp.8", "vldrb.s32", "vstrb.32", "vmla.s32"):
        assert insn in asm, f"no {insn} in the Cortex-M55 build"


@pytest.mark.qemu
@needs_qemu
def test_mve_kernels_on_qemu_m55_equal_the_host(mve_model, tmp_path):
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    compiled = compile_model(mve_model, "qemu-m55")
    assert {"mcud_conv_s8_fast", "mcud_conv_s8_dw"} <= _kernels(compiled)
    samples = check.random_inputs(compiled.graph, 3, seed=3)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


@pytest.mark.qemu
@needs_qemu
def test_kws_tflite_on_qemu_m55_equals_the_host(tmp_path):
    """TFLite's two roundings in vectors, the direct path's stack columns (KWS's first Conv has no scratch
    in the memory-first plan) and the vector depthwise on whole 25 x 5 planes."""
    need_models()
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    compiled = compile_model(str(MODELS / "tflite" / "kws_dscnn_int8.tflite"), "qemu-m55")
    assert {"mcud_conv_s8_direct", "mcud_conv_s8_fast", "mcud_conv_s8_dw_tfl"} <= _kernels(compiled)
    samples = check.random_inputs(compiled.graph, 2, seed=5)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("seed", [23])
def test_tiled_columns_of_random_convs_equal_the_host(tmp_path, seed):
    """mcud_conv_mve_blocks' tiled columns (four columns interleaved in 16-byte pieces, two output channels a pass,
    the inner loop in assembly) on random shapes: taps per column from below 16 (not tiled) through whole pieces
    with and without a last partial piece to past 144 (three columns or fewer a block on the stack: not tiled),
    odd channel counts, blocks of fewer than four pixels; once as compiled (the direct kernel where its stack
    columns make the scratch worthless on the M55) and once with every scratch kept (mcud_conv_s8_fast)."""
    import numpy as np
    import zoo
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.compile import compile_model
    from mcudeploy.device.runner import run_on_board
    from mcudeploy.objective import Objective
    from mcudeploy.plan.options import CompileOptions

    rng = np.random.default_rng(seed)
    net = zoo.Net(f"tiles{seed}", seed)
    cin0 = cin = int(rng.integers(2, 4))
    x = "x"
    # (channels out, kernel, stride): taps cin * k * k of 18 or 27 taken tap by tap (a column in order, then tiled),
    # 72 or 108 channels-last (hwc), 16 to 23 gathered (tiled past 16), a 5 x 5 of over 160 (not tiled), below 16
    for cout, k, stride in ((4 * int(rng.integers(2, 4)), 3, 2), (int(rng.integers(16, 24)), 3, 1),
                            (int(rng.integers(9, 17)) | 1, 1, 1), (int(rng.integers(6, 10)), 5, 1),
                            (int(rng.integers(3, 7)) | 1, 1, 1)):
        x = net.op("Relu", [net.conv(x, cin, cout, k, stride=stride)])
        cin = cout
    h, w = 2 * int(rng.integers(5, 9)) + 1, 2 * int(rng.integers(4, 7)) + 1  # odd: blocks of fewer than four
    inputs = {"x": (1, cin0, h, w)}
    model = zoo.quantize(net.model(inputs, {"y": x}), inputs, tmp_path / "q")
    for name, options in (("priced", CompileOptions()),
                          ("kept", CompileOptions(objective=Objective("latency"), priced_scratch=False))):
        compiled = compile_model(model, "qemu-m55", options)
        kernels = _kernels(compiled)
        assert ("mcud_conv_s8_direct" if name == "priced" else "mcud_conv_s8_fast") in kernels, kernels
        samples = check.random_inputs(compiled.graph, 2, seed=seed)
        result = run_on_board(compiled, samples, workdir=tmp_path / name)
        same, lines = compare_with_host(compiled, result.outputs, samples)
        assert same, (name, lines)


# What both bare-metal checks below start with: the semihosting exit (its status is QEMU's), a vector table, and a
# seeded xorshift32 (SEED: each check's own).
BARE_METAL = r"""static void semihosting_exit(int32_t code) /* SYS_EXIT_EXTENDED: QEMU ends with this status */
{
    uint32_t block[2] = {0x20026u, (uint32_t)code};
    register uint32_t r0 __asm__("r0") = 0x20u;
    register uint32_t r1 __asm__("r1") = (uint32_t)(uintptr_t)block;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) {
    }
}
extern uint32_t _estack;
void Reset_Handler(void);
__attribute__((section(".isr_vector"), used)) const void *vectors[4] = {&_estack, Reset_Handler, Reset_Handler,
                                                                        Reset_Handler};
static uint32_t state = SEED;
static uint32_t next(void)
{
    state ^= state << 13; /* xorshift32: every bit varies (an LCG's low bits repeat with a short period) */
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}
"""

# mcud_mve_requant, mcud_mve_rq_apply and (TFLite's routes) mcud_mve_tfl_kind (firmware/include/mcud_mve.h) against
# the scalar functions they replace, every route (and mcud_mve_lanes4's lane order),
# on seeded pseudo-random accumulators, multipliers, shifts and zero points; the mismatches are the exit status.
REQUANT_CHECK = r"""
#include <stdint.h>
#include "mcud_conv_fast.h"

""" + BARE_METAL.replace("SEED", "12345u") + r"""
static int32_t scalar(int32_t acc, int32_t mult, int32_t shift, int32_t route)
{
    switch (route) {
    case 1: return mcud_requant_hi(acc, mult, shift);
    case 2: return mcud_requant_tfl(acc, mult, shift);
    case 3: return mcud_requant_tfl_r(acc, mult, shift);
    default: return mcud_requant(acc, mult, shift);
    }
}

static __attribute__((noinline)) int32_t mismatches(void);

void Reset_Handler(void)
{
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CP10, CP11: the FPU and MVE, before any vector register */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    int32_t bad = mismatches();
    semihosting_exit(bad > 255 ? 255 : bad);
}

static __attribute__((noinline)) int32_t mismatches(void)
{
    int32_t bad = 0;
    for (int32_t route = 0; route < 4; route++) {
        for (int32_t i = 0; i < 4000; i++) {
            int32_t lo_shift = route == 1 || route == 3 ? 33 : (route == 2 ? 20 : 1);
            int32_t shift = lo_shift + (int32_t)(next() % (uint32_t)(63 - lo_shift));
            int32_t mult = (int32_t)(0x40000000u | (next() >> 2));
            int32_t bits = route == 2 && shift < 31 ? 30 - (31 - shift) : 26; /* TFLite's left shift must not overflow */
            if (next() % 2u && bits > 10) {
                bits = 10; /* small sums: results inside [lo, hi] at shifts near 31, not all clamped */
            }
            int32_t acc[4], zy = (int32_t)(next() % 256u) - 128, lo = -128 + (int32_t)(next() % 2u) * 100, hi = 127;
            int32_t tie = next() % 4u == 0; /* exact halves, where the roundings differ */
            if (tie) {
                mult = 0x40000000;
                shift = route == 0 ? 31 + (int32_t)(next() % 2u) : 33 + (int32_t)(next() % 23u);
            }
            for (int32_t k = 0; k < 4; k++) {
                acc[k] = (int32_t)(next() >> (32 - bits)) - (1 << (bits - 1));
                if (tie) { /* ONNX: acc * 2^30 / 2^shift ends in one half; TFLite: so does h / 2^(shift - 31) */
                    int32_t q = (int32_t)(next() % 64u) - 32;
                    acc[k] = route < 2 ? q * (1 << (shift - 30)) + (1 << (shift - 31))
                                       : 2 * (q * (1 << (shift - 31)) + (1 << (shift - 32)));
                }
            }
            int32x4_t q = mcud_mve_requant(vldrwq_s32(acc), mult, shift, route, zy, lo, hi);
            mcud_mve_rq rq = mcud_mve_rq_of(mult, shift, route); /* the channel's constants taken once */
            int32x4_t q2 = mcud_mve_rq_apply(vldrwq_s32(acc), &rq, route, zy, lo, hi);
            int32_t got[4], got2[4], got3[4], lanes[4];
            vstrwq_s32(lanes, mcud_mve_lanes4(acc[0], acc[1], acc[2], acc[3]));
            for (int32_t k = 0; k < 4; k++) {
                bad += lanes[k] != acc[k];
            }
            vstrwq_s32(got, q);
            vstrwq_s32(got2, q2);
            if (route >= 2) { /* TFLite's, its shift's kind taken before a loop (the depthwise rows) */
                int32_t kind = shift > 31 ? 0 : shift == 31 ? 1 : 2;
                vstrwq_s32(got3, mcud_mve_out8(mcud_mve_tfl_kind(vldrwq_s32(acc), mult, 31 - shift, kind), zy, lo, hi));
            } else {
                vstrwq_s32(got3, q2);
            }
            for (int32_t k = 0; k < 4; k++) {
                int32_t want = mcud_clamp(scalar(acc[k], mult, shift, route) + zy, lo, hi);
                bad += (got[k] != want) + (got2[k] != want) + (got3[k] != want);
            }
        }
    }
    return bad;
}
"""


@pytest.mark.qemu
@needs_qemu
def test_vector_requantization_equals_the_scalar_one_on_every_route(tmp_path):
    from mcudeploy.resources import firmware_dir

    fw = firmware_dir()
    (tmp_path / "check.c").write_text(REQUANT_CHECK)
    (tmp_path / "link.ld").write_text("ENTRY(Reset_Handler)\nMEMORY\n{\n ITCM (rx) : ORIGIN = 0x10000000, LENGTH = 512K\n"
                                      " DTCM (rw) : ORIGIN = 0x30000000, LENGTH = 512K\n}\nSECTIONS\n{\n"
                                      " .isr_vector : { KEEP(*(.isr_vector)) } > ITCM\n .text : { *(.text*) *(.rodata*) } > ITCM\n"
                                      " .data : { *(.data*) } > ITCM\n .bss (NOLOAD) : { *(.bss* COMMON) } > DTCM\n _estack = 0x30080000;\n}\n")
    elf = tmp_path / "check.elf"
    subprocess.run([ARM, *load_board("qemu-m55").cpu_flags, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-nostartfiles", "--specs=nano.specs", "-I", str(fw / "include"), "-T", str(tmp_path / "link.ld"),
                    str(tmp_path / "check.c"), "-o", str(elf)], check=True)
    run = subprocess.run(["qemu-system-arm", "-M", "mps3-an547", "-display", "none", "-monitor", "none", "-serial", "null",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)], timeout=60)
    assert run.returncode == 0, f"{run.returncode} of 48,000 requantized values (16,000 by each vector form) differ from the scalar functions"


# The MVE paths of TFLite's int8 ADD/SUB (firmware/kernels/binary.c: dense rows, every shift route), of ONNX's int8
# Add/Sub (mcud_sum_s8 of two dense operands of one shape) and of the
# int8 max and TFLite average pools (firmware/kernels/pool.c: windows of dense rows) against the same kernels'
# scalar paths, which a view stepping by 2 along its last axis takes: seeded random operands, parameters and
# window geometries (padding, strides, partial windows at the edges); the mismatching elements are the exit status.
KERNEL_CHECK = r"""
#include <stdint.h>
#include <string.h>
#include "mcud_binary.h"
#include "mcud_pool.h"

""" + BARE_METAL.replace("SEED", "2024u") + r"""static int32_t upto(int32_t n) { return (int32_t)(next() % (uint32_t)n); }

#define N 80
static int8_t a[N], b[N], a2[2 * N], b2[2 * N], y1[N], y2[N];
#define P 400
static int8_t x[P], x2[2 * P], z1[P], z2[P];

static mcud_view view(void *data, int32_t c, int32_t h, int32_t w, int32_t step)
{
    mcud_view v = {data, 4, {1, c, h, w, 0, 0}, {c * h * w * step, h * w * step, w * step, step, 0, 0}};
    return v;
}

static __attribute__((noinline)) int32_t add_mismatches(void)
{
    int32_t bad = 0;
    for (int32_t t = 0; t < 300; t++) {
        int32_t n = 1 + upto(N);
        for (int32_t i = 0; i < n; i++) {
            a[i] = a2[2 * i] = (int8_t)upto(256);
            b[i] = b2[2 * i] = (int8_t)upto(256);
        }
        mcud_add_tfl_params p;
        p.a_zero = upto(256) - 128;
        p.b_zero = upto(256) - 128;
        p.y_zero = upto(256) - 128;
        p.a_mult = (int32_t)(0x40000000u | (next() >> 2));
        p.b_mult = t % 3 == 0 ? 0x40000000 : (int32_t)(0x40000000u | (next() >> 2));
        p.y_mult = (int32_t)(0x40000000u | (next() >> 2));
        p.a_shift = 26 + upto(24); /* below 31 (a left shift), 31, above (a right shift) */
        p.b_shift = t % 3 == 0 ? 31 : 26 + upto(24);
        p.y_shift = 26 + upto(30);
        p.act_min = t % 2 ? -128 : -128 + upto(128);
        p.act_max = t % 4 ? 127 : upto(128);
        p.sign = t % 5 == 0 ? -1 : 1;
        p.left_shift = 20;
        mcud_view va = view(a, 1, 1, n, 1), vb = view(b, 1, 1, n, 1), vy = view(y1, 1, 1, n, 1);
        mcud_view sa = view(a2, 1, 1, n, 2), sb = view(b2, 1, 1, n, 2), sy = view(y2, 1, 1, n, 1);
        mcud_add_s8_tfl(&va, &vb, &vy, &p);
        mcud_add_s8_tfl(&sa, &sb, &sy, &p);
        for (int32_t i = 0; i < n; i++) {
            bad += y1[i] != y2[i];
        }
    }
    return bad;
}

/* ONNX's int8 Add and Sub (mcud_sum_s8 of two operands): shifts in [17, 46] (the vector path) and just outside,
 * multipliers of either sign, one in four a pair of powers of two that makes exact halves */
static __attribute__((noinline)) int32_t sum_mismatches(void)
{
    int32_t bad = 0;
    for (int32_t t = 0; t < 300; t++) {
        int32_t n = 1 + upto(N);
        for (int32_t i = 0; i < n; i++) {
            a[i] = a2[2 * i] = (int8_t)upto(256);
            b[i] = b2[2 * i] = (int8_t)upto(256);
        }
        mcud_sum_s8_params p;
        memset(&p, 0, sizeof p);
        p.shift = 16 + upto(32);
        for (int32_t k = 0; k < 2; k++) {
            int32_t bits = p.shift - 7 + upto(4);
            p.zero[k] = upto(256) - 128;
            p.mult[k] = (int32_t)(next() >> (32 - (bits > 31 ? 31 : bits)));
            if (t % 4 == 0 && p.shift <= 31) {
                p.mult[k] = (int32_t)1 << (p.shift - 1 - k);
            }
            p.mult[k] = upto(3) == 0 ? -p.mult[k] : p.mult[k];
        }
        p.y_zero = upto(256) - 128;
        p.act_min = t % 2 ? -128 : -128 + upto(128);
        p.act_max = t % 3 ? 127 : upto(128);
        mcud_view va = view(a, 1, 1, n, 1), vb = view(b, 1, 1, n, 1), vy = view(y1, 1, 1, n, 1);
        mcud_view sa = view(a2, 1, 1, n, 2), sb = view(b2, 1, 1, n, 2), sy = view(y2, 1, 1, n, 1);
        mcud_sum_s8(&va, &vb, NULL, NULL, NULL, NULL, NULL, NULL, &vy, &p);
        mcud_sum_s8(&sa, &sb, NULL, NULL, NULL, NULL, NULL, NULL, &sy, &p);
        for (int32_t i = 0; i < n; i++) {
            bad += y1[i] != y2[i];
        }
    }
    return bad;
}

static __attribute__((noinline)) int32_t pool_mismatches(void)
{
    int32_t bad = 0;
    for (int32_t t = 0; t < 300; t++) {
        int32_t c = 1 + upto(3), h = 1 + upto(8), w = 1 + upto(24);
        int32_t kh = 1 + upto(h), kw = 1 + upto(w), sh = 1 + upto(3), sw = 1 + upto(3), dh = 1 + upto(2);
        int32_t pbh = upto(kh), pbw = upto(kw), peh = upto(kh), pew = upto(kw);
        int32_t oh = (h + pbh + peh - ((kh - 1) * dh + 1)) / sh + 1, ow = (w + pbw + pew - kw) / sw + 1;
        if (c * h * w > P || oh < 1 || ow < 1 || c * oh * ow > P) {
            continue;
        }
        for (int32_t i = 0; i < c * h * w; i++) {
            x[i] = x2[2 * i] = (int8_t)upto(256);
        }
        mcud_view vx = view(x, c, h, w, 1), sx = view(x2, c, h, w, 2);
        mcud_view v1 = view(z1, c, oh, ow, 1), v2 = view(z2, c, oh, ow, 1);
        mcud_maxpool_params m;
        memset(&m, 0, sizeof m);
        m.kernel[0] = kh, m.kernel[1] = kw, m.stride[0] = sh, m.stride[1] = sw, m.dilation[0] = dh;
        m.dilation[1] = 1, m.pad_begin[0] = pbh, m.pad_begin[1] = pbw;
        m.act_min = t % 2 ? -128 : -100, m.act_max = 127;
        mcud_maxpool_s8(&vx, &v1, &m);
        mcud_maxpool_s8(&sx, &v2, &m);
        for (int32_t i = 0; i < c * oh * ow; i++) {
            bad += z1[i] != z2[i];
        }
        mcud_avgpool_tfl_params q;
        q.kernel[0] = kh, q.kernel[1] = kw, q.stride[0] = sh, q.stride[1] = sw, q.dilation[0] = dh;
        q.dilation[1] = 1, q.pad_begin[0] = pbh, q.pad_begin[1] = pbw, q.pad_end[0] = peh, q.pad_end[1] = pew;
        q.act_min = t % 2 ? -128 : -50, q.act_max = t % 3 ? 127 : 60;
        mcud_avgpool_s8_tfl(&vx, &v1, &q);
        mcud_avgpool_s8_tfl(&sx, &v2, &q);
        for (int32_t i = 0; i < c * oh * ow; i++) {
            bad += z1[i] != z2[i];
        }
    }
    return bad;
}

void Reset_Handler(void)
{
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CP10, CP11: the FPU and MVE, before any vector register */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    int32_t bad = add_mismatches() + sum_mismatches() + pool_mismatches();
    semihosting_exit(bad > 255 ? 255 : bad);
}
"""


@pytest.mark.qemu
@needs_qemu
def test_vector_add_and_pools_equal_their_scalar_paths(tmp_path):
    from mcudeploy.resources import firmware_dir

    fw = firmware_dir()
    (tmp_path / "check.c").write_text(KERNEL_CHECK)
    (tmp_path / "link.ld").write_text("ENTRY(Reset_Handler)\nMEMORY\n{\n ITCM (rx) : ORIGIN = 0x10000000, LENGTH = 512K\n"
                                      " DTCM (rw) : ORIGIN = 0x30000000, LENGTH = 512K\n}\nSECTIONS\n{\n"
                                      " .isr_vector : { KEEP(*(.isr_vector)) } > ITCM\n .text : { *(.text*) *(.rodata*) } > ITCM\n"
                                      " .data : { *(.data*) } > ITCM\n .bss (NOLOAD) : { *(.bss* COMMON) } > DTCM\n _estack = 0x30080000;\n}\n")
    elf = tmp_path / "check.elf"
    flags = [*load_board("qemu-m55").cpu_flags, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffunction-sections"]
    asm = subprocess.run([ARM, *flags, "-I", str(fw / "include"), "-S", "-o", "-", str(fw / "kernels" / "binary.c"),
                          ], check=True, capture_output=True, text=True).stdout
    assert "vqrdmulh.s32" in asm and "vctp.32" in asm, "the Cortex-M55 build of binary.c has no MVE ADD"
    subprocess.run([ARM, *flags, "-nostartfiles", "--specs=nano.specs", "-I", str(fw / "include"), "-T",
                    str(tmp_path / "link.ld"), str(tmp_path / "check.c"), str(fw / "kernels" / "binary.c"),
                    str(fw / "kernels" / "pool.c"), "-lm", "-o", str(elf)], check=True)
    run = subprocess.run(["qemu-system-arm", "-M", "mps3-an547", "-display", "none", "-monitor", "none", "-serial", "null",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)], timeout=60)
    assert run.returncode == 0, f"{run.returncode} elements of ADD, Sum or the pools differ between the MVE and scalar paths"


# The MVE path of int8 Mul (firmware/kernels/binary.c: mul_s8_row_mve, ONNX's rounding and TFLite's, the shift in
# [17, 62]) against the same kernels' scalar paths, which an output stepping by 2 takes:
# seeded random operands and parameters, each of the layouts the vector rows take (same shape as one row, b one value,
# a one value, b a row broadcast over rows), row lengths 1 to 80 (the predicated last step), shifts inside and outside
# the vector ranges, exact halves (multiplier 2^30), fused activation clamps; the mismatching elements are the exit status.
MUL_CHECK = r"""
#include <stdint.h>
#include <string.h>
#include "mcud_binary.h"

""" + BARE_METAL.replace("SEED", "4242u") + r"""static int32_t upto(int32_t n) { return (int32_t)(next() % (uint32_t)n); }

#define N 80
#define M 3
static int8_t a[M * N], b[M * N], y1[M * N], y2[2 * M * N];

static mcud_view view(void *data, int32_t c, int32_t h, int32_t w, int32_t step)
{
    mcud_view v = {data, 4, {1, c, h, w, 0, 0}, {c * h * w * step, h * w * step, w * step, step, 0, 0}};
    return v;
}

static __attribute__((noinline)) int32_t mul_mismatches(void)
{
    int32_t bad = 0;
    for (int32_t t = 0; t < 1600; t++) {
        int32_t n = 1 + upto(N), m = 1 + upto(M), layout = t % 4, tfl = (t / 4) % 2;
        for (int32_t i = 0; i < M * N; i++) {
            a[i] = (int8_t)upto(256);
            b[i] = (int8_t)upto(256);
        }
        mcud_mul_s8_params p;
        p.a_zero = upto(256) - 128;
        p.b_zero = upto(256) - 128;
        p.y_zero = upto(256) - 128;
        p.mult = (int32_t)(0x40000000u | (next() >> 2));
        p.shift = 14 + upto(49); /* [14, 62]: the vector range [17, 62], ONNX's two routes either side of 33 */
        if (t % 5 == 0) { /* exact halves of the product */
            p.mult = 0x40000000;
            p.shift = 31 + upto(12);
        }
        p.act_min = t % 2 ? -128 : -128 + upto(128);
        p.act_max = t % 3 ? 127 : upto(128);
        mcud_view va = view(a, 1, m, n, 1), vb = view(b, 1, m, n, 1);
        if (layout == 1) {
            vb = view(b, 1, 1, 1, 1);
        } else if (layout == 2) {
            va = view(a, 1, 1, 1, 1);
        } else if (layout == 3) {
            vb = view(b, 1, 1, n, 1);
        }
        mcud_view vy = view(y1, 1, m, n, 1), sy = view(y2, 1, m, n, 2);
        if (tfl) {
            mcud_mul_s8_tfl(&va, &vb, &vy, &p);
            mcud_mul_s8_tfl(&va, &vb, &sy, &p);
        } else {
            mcud_mul_s8(&va, &vb, &vy, &p);
            mcud_mul_s8(&va, &vb, &sy, &p);
        }
        for (int32_t i = 0; i < m * n; i++) {
            bad += y1[i] != y2[2 * i];
        }
    }
    return bad;
}

void Reset_Handler(void)
{
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CP10, CP11: the FPU and MVE, before any vector register */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    int32_t bad = mul_mismatches();
    semihosting_exit(bad > 255 ? 255 : bad);
}
"""

LINK_LD = ("ENTRY(Reset_Handler)\nMEMORY\n{\n ITCM (rx) : ORIGIN = 0x10000000, LENGTH = 512K\n"
           " DTCM (rw) : ORIGIN = 0x30000000, LENGTH = 512K\n}\nSECTIONS\n{\n"
           " .isr_vector : { KEEP(*(.isr_vector)) } > ITCM\n .text : { *(.text*) *(.rodata*) } > ITCM\n"
           " .data : { *(.data*) } > ITCM\n .bss (NOLOAD) : { *(.bss* COMMON) } > DTCM\n _estack = 0x30080000;\n}\n")


def _function_asm(asm: str, name: str) -> str:
    """The body of function `name` in GCC's assembly output."""
    start = asm.index(f"\n{name}:\n")
    return asm[start:asm.index(f".size\t{name},", start)]


@pytest.mark.qemu
@needs_qemu
def test_vector_mul_equals_its_scalar_path(tmp_path):
    from mcudeploy.resources import firmware_dir

    fw = firmware_dir()
    (tmp_path / "check.c").write_text(MUL_CHECK)
    (tmp_path / "link.ld").write_text(LINK_LD)
    elf = tmp_path / "check.elf"
    flags = [*load_board("qemu-m55").cpu_flags, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffunction-sections"]
    subprocess.run([ARM, *flags, "-nostartfiles", "--specs=nano.specs", "-I", str(fw / "include"), "-T",
                    str(tmp_path / "link.ld"), str(tmp_path / "check.c"), str(fw / "kernels" / "binary.c"), "-lm",
                    "-o", str(elf)], check=True)
    run = subprocess.run(["qemu-system-arm", "-M", "mps3-an547", "-display", "none", "-monitor", "none", "-serial", "null",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)], timeout=60)
    assert run.returncode == 0, f"{run.returncode} elements of Mul differ between the MVE and scalar paths"


def _onnx_muls():
    """ONNX int8 Mul in QDQ form, four times: same shape (105 elements: a predicated last step), a value per channel
    broadcast over 5 x 7 (squeeze-excite) with a Relu fused, a row of 7 broadcast over 15 rows (shifts in [33, 62]),
    and a product whose shift is below 33 (multiplier 2.5: shift 29, mcud_requant's route)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    q = {"x0": (0.05, 3), "x1": (0.04, -9), "x2": (1 / 255, -128), "x3": (0.02, 5)}

    def dq(name):
        if any(n.output == [f"{name}_f"] for n in nodes):
            return f"{name}_f"
        s, z = q[name]
        inits.extend([numpy_helper.from_array(np.array(s, np.float32), f"{name}_s"),
                      numpy_helper.from_array(np.array(z, np.int8), f"{name}_z")])
        nodes.append(helper.make_node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_f"]))
        return f"{name}_f"

    def mul(out, x, y, scale, zero, relu=False):
        t = f"{out}_m"
        nodes.append(helper.make_node("Mul", [dq(x), dq(y)], [t]))
        if relu:
            nodes.append(helper.make_node("Relu", [t], [f"{out}_r"]))
            t = f"{out}_r"
        q[out] = (scale, zero)
        inits.extend([numpy_helper.from_array(np.array(scale, np.float32), f"{out}_qs"),
                      numpy_helper.from_array(np.array(zero, np.int8), f"{out}_qz")])
        nodes.append(helper.make_node("QuantizeLinear", [t, f"{out}_qs", f"{out}_qz"], [out]))

    mul("m1", "x0", "x1", 0.03, 2)
    mul("m2", "m1", "x2", 0.01, -128, relu=True)
    mul("m3", "m2", "x3", 0.003, -4)
    mul("y", "m3", "x0", 0.00006, 1)  # 0.003 * 0.05 / 0.00006 = 2.5
    shapes = {"x0": (1, 3, 5, 7), "x1": (1, 3, 5, 7), "x2": (1, 3, 1, 1), "x3": (7,)}
    graph = helper.make_graph(nodes, "muls", [helper.make_tensor_value_info(n, TensorProto.INT8, s)
                                              for n, s in shapes.items()],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _tflite_muls(path: Path) -> Path:
    """TFLite MUL five times: same shape (105 elements) with a RELU, a row of 3 broadcast, one value broadcast
    with a RELU6 and a multiplier of 1.25 (shift 30: a left shift), a square (shift 38), and a multiplier in
    [0.5, 1) (shift 31)."""
    import tflite_build as tb

    s = (1, 5, 7, 3)
    tensors = [tb.T("a", s, scale=(0.05,), zero_point=(3,)), tb.T("b", s, scale=(0.04,), zero_point=(-9,)),
               tb.T("c", (3,), scale=(0.02,), zero_point=(1,)), tb.T("d", (1, 1, 1, 1), scale=(0.5,), zero_point=(-2,)),
               tb.T("y1", s, scale=(0.03,), zero_point=(-128,)), tb.T("y2", s, scale=(0.01,), zero_point=(4,)),
               tb.T("y3", s, scale=(0.004,), zero_point=(-128,)), tb.T("y4", s, scale=(0.002,), zero_point=(-7,)),
               tb.T("y", s, scale=(0.0001,), zero_point=(0,))]
    ops = [tb.Op(tb.OPS.MUL, ("a", "b"), ("y1",), tb.mul_options(tb.RELU)),
           tb.Op(tb.OPS.MUL, ("y1", "c"), ("y2",), tb.mul_options()),
           tb.Op(tb.OPS.MUL, ("y2", "d"), ("y3",), tb.mul_options(tb.RELU6)),
           tb.Op(tb.OPS.MUL, ("y3", "y3"), ("y4",), tb.mul_options()),
           tb.Op(tb.OPS.MUL, ("y4", "b"), ("y",), tb.mul_options())]
    path.write_bytes(tb.Model(tensors, ops, ("a", "b", "c", "d"), ("y",)).build())
    return path


@needs_arm
def test_cortex_m55_mul_kernel_uses_vector_multiplies(tmp_path):
    compiled = compile_model(_onnx_muls(), "qemu-m55")
    assert "mcud_mul_s8" in {registry.get(n.op).kernel(compiled.graph, n).fn for n in compiled.graph.nodes if n.op == "Mul"}
    out = write_project(compiled, tmp_path / "p")
    asm = subprocess.run([ARM, *load_board("qemu-m55").cpu_flags, *ARM_CFLAGS, "-I", str(out / "mcud" / "include"),
                          "-S", "-o", "-", str(out / "mcud" / "kernels" / "binary.c")], check=True, capture_output=True,
                         text=True).stdout
    row = _function_asm(asm, "mul_s8_row_mve")
    for insn in ("vmul.i32", "vmulh.s32", "vqrdmulh.s32", "vctp.32", "vstrbt.32"):
        assert insn in row, f"no {insn} in the Cortex-M55 Mul kernel"
    for kernel in ("mcud_mul_s8", "mcud_mul_s8_tfl"):
        assert "bl\tmul_s8_row_mve" in _function_asm(asm, kernel), f"{kernel} does not call the MVE rows"


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("kind", ["onnx", "tflite"])
def test_mul_models_on_qemu_m55_equal_the_host(tmp_path, kind):
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    source = _onnx_muls() if kind == "onnx" else str(_tflite_muls(tmp_path / "muls.tflite"))
    compiled = compile_model(source, "qemu-m55")
    muls = {registry.get(n.op).kernel(compiled.graph, n).fn for n in compiled.graph.nodes if n.op == "Mul"}
    assert muls == {"mcud_mul_s8_tfl" if kind == "tflite" else "mcud_mul_s8"}
    samples = check.random_inputs(compiled.graph, 3, seed=11)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


def _random_gemms_onnx(rng: np.random.Generator, tmp: Path):
    """A chain of ONNX Gemms (QDQ int8 by onnxruntime, ONNX's rounding) of random widths, rows of A two at once."""
    import zoo

    net = zoo.Net("gemms", int(rng.integers(1 << 20)))
    widths = [int(w) for w in rng.choice((3, 5, 12, 16, 17, 31, 48, 64, 100), size=4)]
    x = "x"
    for i, (cin, cout) in enumerate(zip(widths, widths[1:])):
        w = net.const(net.weights((cout, cin), cin), "w")
        x = net.op("Gemm", [x, w, net.const(net.bias(cout), "b")], transB=1)
        if i % 2 == 0:
            x = net.op("Relu", [x])
    inputs = {"x": (2, widths[0])}
    return zoo.quantize(net.model(inputs, {"y": x}), inputs, tmp)


def _random_fcs_tflite(rng: np.random.Generator, path: Path) -> Path:
    """TFLite FULLY_CONNECTED three times, random widths (K below, at and past the vector's sixteen, with a tail;
    N of every remainder by four), one to three rows, per-tensor weights, bias or none, RELU, RELU6 or none."""
    import tflite_build as tb

    rows = int(rng.integers(1, 4))
    widths = [int(w) for w in rng.choice((3, 4, 8, 13, 16, 19, 32, 47, 70), size=4)]
    tensors = [tb.T("x0", (rows, widths[0]), scale=(0.05,), zero_point=(int(rng.integers(-20, 20)),))]
    ops = []
    for i, (cin, cout) in enumerate(zip(widths, widths[1:])):
        sx = tensors[-1].scale[0]
        sw = float(rng.uniform(0.002, 0.02))
        w = rng.integers(-127, 128, size=(cout, cin)).astype(np.int8)
        tensors.append(tb.T(f"w{i}", (cout, cin), scale=(sw,), zero_point=(0,), data=w))
        ins = (f"x{i}", f"w{i}")
        if rng.random() < 0.7:
            bias = rng.integers(-2000, 2000, size=cout).astype(np.int32)
            tensors.append(tb.T(f"b{i}", (cout,), "int32", scale=(sx * sw,), zero_point=(0,), data=bias))
            ins += (f"b{i}",)
        else:
            ins += ("",)
        scale = float(sx * sw * np.sqrt(cin) * rng.uniform(20, 60))
        tensors.append(tb.T(f"x{i + 1}", (rows, cout), scale=(scale,), zero_point=(int(rng.integers(-30, 30)),)))
        act = (tb.RELU, tb.RELU6, 0)[int(rng.integers(3))]
        ops.append(tb.Op(tb.OPS.FULLY_CONNECTED, ins, (f"x{i + 1}",), tb.fc_options(act)))
    path.write_bytes(tb.Model(tensors, ops, ("x0",), (f"x{len(ops)}",)).build())
    return path


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("kind", ["onnx", "tflite"])
def test_random_fully_connected_layers_on_qemu_m55_equal_the_host(tmp_path, kind):
    """The MVE fully connected kernel (sixteen k a VMLADAVA, four columns a pass, then the scalar quads and the tail)
    on random widths and rows, with ONNX's rounding and TFLite's, against the host's C (itself bit for bit with
    the numpy reference, tests/ops)."""
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    rng = np.random.default_rng(31 if kind == "onnx" else 37)
    source = (_random_gemms_onnx(rng, tmp_path) if kind == "onnx"
              else str(_random_fcs_tflite(rng, tmp_path / "fcs.tflite")))
    compiled = compile_model(source, "qemu-m55")
    assert {"mcud_gemm_s8_tfl" if kind == "tflite" else "mcud_gemm_s8"} <= _kernels(compiled)
    samples = check.random_inputs(compiled.graph, 3, seed=13)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
