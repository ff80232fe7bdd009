"""Cycle costs of instruction classes per Cortex-M core: the published timings an estimate weights a
QEMU instruction trace with (mcudeploy/estimate/trace.py counts the classes).

Cortex-M4 and M33: the Cortex-M4 Technical Reference Manual (r0p1, "Processor instruction timings"):
one cycle for data processing, multiply and the DSP extension's multiply-accumulate and SIMD; a
load or store 2 cycles, 1 when it follows another load or store (their address and data phases
pipeline); LDM/STM/PUSH/POP 1 + N; LDRD/STRD 1 + 2; SDIV/UDIV 2 to 12 (early termination: 7 taken
here); a branch 1, plus P = 1 to 3 for the pipeline refill when taken (2 taken here); FPU
VADD/VMUL 1, VMLA/VFMA 3, VDIV/VSQRT 14, VLDR/VSTR 2. The Cortex-M33 TRM gives the same figures
for these classes within a cycle (its divide takes 2 to 11).

Cortex-M7: dual issue, from Arm's scheduling model of the core in LLVM (llvm/lib/Target/ARM/ARMScheduleM7.td;
the TRM gives pairing rules, no cycle table): estimate/dual.py issues each block's instructions in order, two a
cycle within the pipes the model gives (two ALU, two load, one store, one MAC, one DSP SIMD, one branch, one
FPU), waiting for each operand's latency, LDRD/STRD, LDM/STM and divides issued alone; the block's cycles are
the class ``m7_issue``. A taken branch costs 1 more (the predictor hides most refills in loops; LLVM's model
gives 4 to 6 for a mispredicted one: the range). The range's high end pairs no two loads (``m7_issue_one_load``).

Cortex-M55: Arm's scheduling model of the core in LLVM (llvm/lib/Target/ARM/ARMScheduleM55.td, written with
the core's timings) says it schedules "a lot like the M4/M33", so its scalar classes take the Cortex-M4's
figures (its dual issue of some 16-bit pairs is left out: an overestimate). A vector instruction (MVE) takes
two beats of 64 bits, holding its pipe (load/store, integer, float/multiply) two cycles, a control one (VCTP,
VPST) one cycle; the first beat of a vector instruction overlaps the previous one's second when their pipes
differ, the cycles so saved counted per block in the trace (``mve_overlap``, estimate/trace.py). Low-overhead
loop instructions (DLS, WLS, LE, LETP) cost nothing once the loop runs (the range: up to the 3-cycle branch
penalty LLVM's model gives each). The range's high end has no overlap.

Cortex-M0 and M0+ (ARMv6-M; the micro:bit's nRF51822 and the Pico's RP2040, traced on QEMU's Cortex-M0, whose
instructions an M0+ runs unchanged): the Cortex-M0 TRM (Arm DDI 0432C, "Instruction set summary") and the
Cortex-M0+ TRM (Arm DDI 0484C, "Instruction set summary"): data processing 1 cycle; a load or store 2, with no
pipelining of neighbours (``ldst_pipelined`` 2); LDM/STM/PUSH/POP 1 + N; MULS 1 with the implementation's fast
multiplier, 32 with its small one (which of the two the nRF51822 and the RP2040 were built with was not found in
their data sheets as searched: 1 is taken, the range goes to 32). A taken branch costs 3 on the M0's three-stage
pipeline (``branch`` 1 + ``branch_taken`` 2), 2 on the M0+'s two stages; BL takes 4 on the M0 (3 on the M0+) and
POP {..., pc} 4 + N (3 + N), a cycle more than the taken branch they are counted as (the range's high end adds it
to every taken branch). There is no divide instruction (the library's __aeabi_idiv runs as instructions) and no
IT, FPU or DSP extension.

SiFive E31 (the HiFive1 Rev B's FE310-G002; RV32IMAC, traced on qemu-rv32): the FE310-G000 Manual's chapter on the
E31 (estimate/e31.py quotes it): each block issued one instruction a cycle, in order, waiting for its operands'
result latencies (LW 2, LB/LBU/LH/LHU 3, CSR reads 3, MUL 5 with one multiply at a time; ``e31_issue``); a divide
2 to 33 cycles (33 taken: ``div`` charges 32 on top of its issue cycle); a misprediction 3 (``mispredict``, counted
by e31.Predictor), a correctly predicted branch 0. The range: divides of 2 cycles and no misprediction; every
taken branch mispredicted, and the fall-throughs the predictor missed. Code and weights come from the board's SPI
flash (its ``xip``: an instruction cache in front of the code, none in front of the weights), charged by cycles.py
from what estimate/flash.py's plugin counts.

Flash: an instruction fetch after a taken branch waits the board's flash wait states unless the
flash accelerator (ART, F4/L4 instruction cache, or the M7's L1 I-cache) holds the line; a hit
rate of 90% is assumed there, 0% without one. Data read from flash (weights, literal pools) waits
the wait states on each miss of the board's data cache, counted in the traced run by a QEMU plugin
(mcudeploy/estimate/flash.py) where the board file gives ``flash_data``; elsewhere it is charged as
SRAM, which underestimates boards whose weights stream from flash.
"""
from __future__ import annotations

CLASSES = ("alu", "mul", "dsp", "div", "load", "store", "ldst_pipelined", "ldst_double", "multi", "multi_regs",
           "branch", "branch_taken", "it", "fpu", "fpu_mac", "fpu_div", "fpu_ldst", "lob",
           "mve_ls", "mve_int", "mve_mul", "mve_sys", "mve_overlap", "m7_issue", "m7_issue_one_load",
           "load_narrow", "csr", "e31_issue", "mispredict", "mispredict_nt")

_M4 = {"alu": 1, "mul": 1, "dsp": 1, "div": 7, "load": 2, "store": 2, "ldst_pipelined": 1, "ldst_double": 3,
       "multi": 1, "multi_regs": 1, "branch": 1, "branch_taken": 2, "it": 1, "fpu": 1, "fpu_mac": 3, "fpu_div": 14,
       "fpu_ldst": 2, "lob": 1, "mve_ls": 2, "mve_int": 2, "mve_mul": 2, "mve_sys": 1, "mve_overlap": -1,
       "m7_issue": 0, "m7_issue_one_load": 0, "load_narrow": 0, "csr": 0, "e31_issue": 0, "mispredict": 0,
       "mispredict_nt": 0}
_M55 = {**_M4, "lob": 0}
# the M7's cycles are its blocks' issue cycles (dual.py), with a taken branch's refill on top
_M7 = {**{c: 0 for c in _M4}, "m7_issue": 1, "branch_taken": 1}

# ARMv6-M: every load and store 2 cycles, a taken branch 3 on the M0 and 2 on the M0+ (branch 1 + branch_taken)
_M0 = {**{c: 0 for c in _M4}, "alu": 1, "mul": 1, "load": 2, "store": 2, "ldst_pipelined": 2, "multi": 1,
       "multi_regs": 1, "branch": 1, "branch_taken": 2}
_M0PLUS = {**_M0, "branch_taken": 1}

# the E31's cycles are its blocks' issue cycles (e31.py), a divide's latency beyond its issue, and mispredictions
_E31 = {**{c: 0 for c in _M4}, "e31_issue": 1, "div": 32, "mispredict": 3}

CORES = {
    "cortex-m4": {"cost": _M4, "source": "Cortex-M4 TRM instruction timings"},
    "cortex-m33": {"cost": _M4, "source": "Cortex-M33 TRM (as the Cortex-M4's within a cycle)"},
    "cortex-m7": {"cost": _M7, "source": "LLVM's Cortex-M7 scheduling model (Arm): dual issue within its pipes",
                  "disassembler": "armv7e-m"},
    "cortex-m55": {"cost": _M55, "source": "LLVM's Cortex-M55 scheduling model (Arm): the M4's scalar timings, "
                                           "two-beat vector instructions overlapping across pipes",
                   "disassembler": "armv8.1-m.main"},
    "cortex-m0": {"cost": _M0, "source": "Cortex-M0 TRM instruction set summary (three-stage pipeline)"},
    # traced_on: the core of the emulated board whose traces stand for this one (the same instruction set)
    "sifive-e31": {"cost": _E31, "source": "FE310-G000 Manual, E31 execution pipeline and branch predictor",
                   "traced_on": "rv32imac"},
    "cortex-m0plus": {"cost": _M0PLUS, "source": "Cortex-M0+ TRM instruction set summary (two-stage pipeline)",
                      "traced_on": "cortex-m0"},
}
FLASH_CACHE_HIT = 0.9  # an assumption, see the module's docstring
# The published ranges of the figures fixed above, per core: the estimate's stated error is the spread they give
# (with the flash accelerator hitting every time and never).
RANGES = {
    "cortex-m4": {"branch_taken": (1, 3), "div": (2, 12)},
    "cortex-m33": {"branch_taken": (1, 3), "div": (2, 11)},
    "cortex-m7": {"branch_taken": (0, 6), "m7_issue": (1, 0), "m7_issue_one_load": (0, 1)},
    "cortex-m55": {"branch_taken": (1, 3), "div": (2, 12), "lob": (0, 3), "mve_overlap": (-1, 0)},
    "cortex-m0": {"branch_taken": (2, 3), "mul": (1, 32)},
    "cortex-m0plus": {"branch_taken": (1, 2), "mul": (1, 32)},
    "sifive-e31": {"div": (1, 32), "mispredict": (0, 0), "branch_taken": (0, 3), "mispredict_nt": (0, 3)},
}
