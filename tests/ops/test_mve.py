"""The Helium (MVE) kernels of a Cortex-M55 build (firmware/include/mcud_conv_mve.h, mcud_dw_row_mve): the
qemu-m55 build uses the vector instructions, and under QEMU (mps3-an547) gives the host's bits on a model
that takes every MVE path (the generic, channels-last and gathered pointwise columns, the direct path's
stack columns, depthwise rows wide enough for vectors at stride 1 and 2) and on a shared MLPerf Tiny model
read from .tflite; and mcud_mve_requant against the scalar requantizations on every route, on values the
models do not reach (shifts below 33, TFLite's left shift), in a small firmware of its own."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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
    x = net.op("Relu", [net.conv(x, 16, 16, 3, group=16)])  # depthwise rows of 18 at stride 1
    x = net.op("Relu", [net.conv(x, 16, 20, 1)])  # pointwise: gathered channels
    x = net.op("Relu", [net.conv(x, 20, 20, 3, stride=2, group=20)])  # depthwise rows of 9 at stride 2
    x = net.op("Relu", [net.conv(x, 20, 6, 1)])  # pointwise
    x = net.conv(x, 6, 5, 1)  # C % 4 != 0: pointwise taps one by one
    inputs = {"x": (1, 3, 10, 18)}
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
    in the memory-first plan) and the DSP depthwise rows of 5."""
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


# mcud_mve_requant (firmware/include/mcud_conv_mve.h) against the scalar functions it replaces, every route,
# on seeded pseudo-random accumulators, multipliers, shifts and zero points; the mismatches are the exit status.
REQUANT_CHECK = r"""
#include <stdint.h>
#include "mcud_conv_fast.h"

static void semihosting_exit(int32_t code) /* SYS_EXIT_EXTENDED: QEMU ends with this status */
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
static uint32_t state = 12345u;
static uint32_t next(void)
{
    state ^= state << 13; /* xorshift32: every bit varies (an LCG's low bits repeat with a short period) */
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

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
            int32_t got[4];
            vstrwq_s32(got, q);
            for (int32_t k = 0; k < 4; k++) {
                int32_t want = mcud_clamp(scalar(acc[k], mult, shift, route) + zy, lo, hi);
                bad += got[k] != want;
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
    assert run.returncode == 0, f"{run.returncode} of 16,000 requantized values differ from the scalar functions"
