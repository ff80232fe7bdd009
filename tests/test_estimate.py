"""The cycle estimate's pieces on their own: instruction classes from QEMU's disassembly, and cycles from
class counts with the core's timings and the board's flash wait states (mcudeploy/estimate)."""
from __future__ import annotations

from collections import Counter

import pytest

from mcudeploy.boards import load_board
from mcudeploy.estimate.cores import CORES, FLASH_CACHE_HIT
from mcudeploy.estimate.cycles import estimate_cycles, estimate_range, target_for
from mcudeploy.estimate.trace import _overlap, classify


@pytest.mark.parametrize("mnemonic, operands, cls", [
    ("ldr.w", "r3, [r1, #0xd88]", "load"), ("ldrsb", "r2, [r0]", "load"), ("strb.w", "r1, [r2], #1", "store"),
    ("ldrd", "r4, r5, [r0]", "ldst_double"), ("smlad", "r0, r1, r2, r0", "mul"), ("mla", "r0, r1, r2, r3", "mul"),
    ("sxtb16", "r1, r2", "dsp"), ("ssat", "r0, #8, r0", "dsp"), ("bne.n", "#0x1234", "branch"),
    ("bls", "#0x10", "branch"), ("bl", "#0x800", "branch"), ("cbz", "r0, #0x40", "branch"),
    ("pop", "{r4, r5, pc}", "branch"), ("push", "{r4, r5, lr}", "multi"), ("sdiv", "r0, r1, r2", "div"),
    ("vmla.f32", "s0, s1, s2", "fpu_mac"), ("vldr", "s0, [r0]", "fpu_ldst"), ("vdiv.f32", "s0, s1, s2", "fpu_div"),
    ("vadd.f32", "s0, s1, s2", "fpu"), ("ite", "eq", "it"), ("addeq", "r0, #1", "alu"), ("bics", "r0, r1", "alu"),
    ("blx", "r3", "branch"), ("movs", "r0, #0", "alu"),
    # MVE (objdump's names): the pipe of ARMScheduleM55.td; low-overhead loops
    ("vldrb.s32", "q0, [r0, #16]", "mve_ls"), ("vstrw.32", "q1, [r2]", "mve_ls"), ("vld40.8", "{q0, q1, q2, q3}, [r1]", "mve_ls"),
    ("vmlava.s8", "r0, q1, q2", "mve_mul"), ("vqrdmulh.s32", "q0, q0, r3", "mve_mul"), ("vaddv.s32", "r0, q0", "mve_mul"),
    ("vadd.i32", "q0, q1, q2", "mve_int"), ("vmax.s8", "q0, q0, q1", "mve_int"), ("vdup.32", "q0, r1", "mve_int"),
    ("vpst", "", "mve_sys"), ("vctp.8", "r2", "mve_sys"), ("vadd.f32", "s0, s1, s2", "fpu"), ("le", "lr, 0x1100", "lob"),
    ("dlstp.8", "lr, r2", "lob"),
])
def test_instructions_fall_in_their_class(mnemonic, operands, cls):
    assert classify(mnemonic, operands)[0] == cls


def test_cycles_are_the_classes_weighted_plus_flash_stalls_on_taken_branches_and_data_misses():
    counts = Counter({"alu": 100, "load": 10, "ldst_pipelined": 10, "mul": 50, "branch": 20, "branch_taken": 15,
                      "flash_reads": 40, "flash_misses": 7, "flash_misses_words": 12})
    target = target_for(load_board("nucleo-l4r5zi"), load_board("qemu-m4"))
    cost = CORES["cortex-m4"]["cost"]
    by_hand = 100 * cost["alu"] + 10 * cost["load"] + 10 * cost["ldst_pipelined"] + 50 * cost["mul"] + \
        20 * cost["branch"] + 15 * cost["branch_taken"] + 15 * 5 * (1 - FLASH_CACHE_HIT) + 7 * 5
    assert estimate_cycles(counts, target) == pytest.approx(by_hand)
    low, high = estimate_range(counts, target)
    assert low < by_hand < high
    assert high - estimate_range(counts - Counter({"flash_misses_words": 12}), target)[1] == pytest.approx(12 * 5)
    assert target.describe() == ("nucleo-l4r5zi (cortex-m4 at 120 MHz, 5 flash wait states, flash accelerator on, "
                                 "weights through a 256 B data cache of 32 B lines)")


@pytest.mark.parametrize("classes, saved", [
    (["mve_ls", "mve_mul", "mve_ls", "mve_mul"], 3),  # every first beat under the previous one's second
    (["mve_ls", "mve_ls"], 0),  # one pipe: the second waits for the first
    (["mve_ls", "alu", "mve_mul"], 1),  # a scalar instruction issues during a vector one's second beat
    (["mve_sys", "mve_ls"], 0),  # VPST takes one cycle
])
def test_vector_instructions_overlap_across_pipes(classes, saved):
    assert _overlap(classes) == saved
