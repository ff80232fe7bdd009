"""Issue cycles of a block of Cortex-M7 code: Arm's scheduling model of the core in LLVM
(llvm/lib/Target/ARM/ARMScheduleM7.td), run over the block's instructions in order.

What the model says, and what this takes from it:
- Two instructions issue a cycle, in order. Per cycle: two ALU pipes, two load pipes, one store, one
  multiply-accumulate (MAC), one DSP SIMD pipe (SXTB16, SADD16, SSAT...: first of a pair only, as
  BFI, BFC and CLZ), one branch, one floating-point pipe; one shifter for an operand shifted in
  place (``add r3, r5, r5, lsl #2``).
- Issued alone: LDRD and STRD, LDM, STM, PUSH and POP (two registers a cycle here: the M7's 64-bit
  load and store paths), TBB and TBH, divides (7 cycles: they stall for their latency), MRS and MSR.
- When a result is ready, counted from issue: ALU and SIMD 1; a word load 1 (byte and halfword 2);
  multiply and multiply-accumulate 2, whose accumulator is read a cycle late (back-to-back SMLADs on
  one accumulator issue a cycle apart); saturation, QADD and kin 2; floating point 3, a float
  multiply-accumulate 6 with its addend read 3 cycles late. Registers that form an address, and
  SSAT's input, are read a cycle early; a stored register a cycle late. A base register written back
  is ready the next cycle.
- Left out: dependencies across blocks (each block starts with every register ready), the flash and
  the caches (cycles.py charges those), and the branch predictor (cycles.py charges a taken branch).

``issue_cycles(lines, load_pipes=2)`` gives the block's cycles; ``load_pipes=1`` is the range's high end
(the M7 pairs two loads only in cases its TRM does not spell out)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable

CONDS = ("eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al")
_REG = re.compile(r"\b(r1[0-5]|r[0-9]|sl|fp|ip|sp|lr|pc|sb|s[0-9]+|d[0-9]+)\b")
_SHIFTED = re.compile(r",\s*(lsl|lsr|asr|ror)\b")
_NO_RESULT = ("cmp", "cmn", "tst", "teq", "b", "bl", "bx", "blx", "cbz", "cbnz", "tbb", "tbh", "it", "nop", "dmb",
              "dsb", "isb", "bkpt", "svc", "msr", "vcmp", "vcmpe", "pld", "pli")
_TWO_RESULTS = ("ldrd", "smull", "umull", "smlal", "umlal", "umaal", "smlald", "smlsld", "smlalbb", "smlalbt",
                "smlaltb", "smlaltt")
_ACCUMULATE = ("smlad", "smladx", "smlsd", "smlsdx", "smlabb", "smlabt", "smlatb", "smlatt", "smlawb", "smlawt",
               "mla", "mls", "smmla", "smmls", "smmlar", "smmlsr", "usada8")
_SLOW_SIMD = ("qadd", "qsub", "qasx", "qsax", "qdadd", "qdsub", "uqadd", "uqsub", "usad8", "usada8", "ssat", "usat")
_SLOT0 = ("bfi", "bfc", "clz")


@dataclass(frozen=True)
class _Insn:
    units: tuple[str, ...]  # pipes it holds in its cycle
    latency: int            # cycles from its issue to its result
    alone: int              # 0: pairs; else the cycles it takes issued alone
    first: bool             # first of a pair only
    dst: tuple[str, ...]
    src: tuple[tuple[str, int], ...]  # (register, cycles it is read before (+) or after (-) issue)


CAPACITY = {"alu": 2, "load": 2, "store": 1, "mac": 1, "simd": 1, "shift": 1, "branch": 1, "vfp": 1}


def _cond_free(m: str, names: Iterable[str]) -> str:
    """``m`` less a condition code, when what is left is one of ``names``."""
    for name in names:
        if m == name or (m.startswith(name) and m[len(name):] in CONDS):
            return name
    return m


def _insn(cls: str, mnemonic: str, operands: str, regs: int) -> _Insn:
    """The model's view of one instruction of class ``cls`` (trace.classify's)."""
    m = mnemonic.split(".")[0]
    ops = operands.split(";")[0]
    names = _REG.findall(ops)
    address = _REG.findall(ops[ops.index("["):]) if "[" in ops else []
    writeback = "!" in ops or re.search(r"\],\s*#", ops) is not None
    base = (address[0],) if writeback and address else ()
    if m.startswith(("str", "stm", "push", "vstr", "vstm", "vpush")):
        src = tuple((r, -1) for r in names if r not in address) + tuple((r, 1) for r in address)
        dst: tuple[str, ...] = base
    else:
        src = tuple((r, 1) for r in address)
        rest = [r for r in names if r not in address] if address else names
        bare = _cond_free(m, _NO_RESULT)
        if bare in _NO_RESULT or m.startswith("it"):
            names_out, ins = (), rest
        elif m.startswith(("ldm", "pop", "vldm", "vpop")):
            names_out, ins = tuple(r for r in rest if r != "pc"), []
        elif m.startswith(_TWO_RESULTS):
            names_out, ins = tuple(rest[:2]), rest[2:] + (rest[:2] if not m.startswith(("ldrd", "smull", "umull"))
                                                         else [])
        else:
            names_out, ins = tuple(rest[:1]), rest[1:]
        early = 1 if m.startswith(("ssat", "usat")) else 0
        late = m.startswith(_ACCUMULATE)
        src += tuple((r, -1 if late and i == len(ins) - 1 else early) for i, r in enumerate(ins))
        dst = names_out + base
    shifted = ("shift",) if _SHIFTED.search(ops) and cls == "alu" else ()
    if cls == "ldst_double":
        return _Insn(("load",) if m.startswith("ldr") else ("store",), 1, 1, False, dst, src)
    if cls == "multi":
        return _Insn((), 1, max(1, math.ceil(regs / 2)), False, dst, src)
    if cls == "div":
        return _Insn(("alu",), 1, 7, False, dst, src)
    if cls in ("load", "store", "ldst_pipelined"):
        if m.startswith("ldr"):
            slow = m.startswith(("ldrb", "ldrh", "ldrsb", "ldrsh"))
            return _Insn(("load",), 2 if slow else 1, 0, False, dst, src)
        return _Insn(("store",), 1, 0, False, dst, src)
    if cls == "branch":
        alone = 2 if m.startswith(("tbb", "tbh")) else (max(1, math.ceil(regs / 2)) if regs else 0)
        return _Insn(("branch",) if not regs else (), 1, alone, False, dst, src)
    if cls == "mul":
        return _Insn(("mac",), 2, 0, False, dst, src)
    if cls == "dsp":
        return _Insn(("simd", "alu"), 2 if m.startswith(_SLOW_SIMD) else 1, 0, True, dst, src)
    if cls == "fpu_ldst":
        if m.startswith(("vpush", "vpop", "vldm", "vstm")):
            return _Insn((), 1, max(1, math.ceil(regs / 2)), False, dst, src)
        return _Insn(("load",) if m.startswith("vldr") else ("store",), 1, 0, False, dst, src)
    if cls == "fpu_div":
        return _Insn(("vfp",), 16, 0, False, dst, src)
    if cls == "fpu_mac":
        return _Insn(("vfp",), 6, 0, False, dst, src[:-1] + tuple((r, -3) for r, _ in src[-1:]))
    if cls == "fpu":
        return _Insn(("vfp",), 3, 0, False, dst, src)
    if cls == "it":
        return _Insn((), 1, 0, False, dst, src)
    return _Insn(("alu",) + shifted, 1, 0, m in _SLOT0, dst, src)


def issue_cycles(lines: list[tuple[str, str, str, int]], load_pipes: int = 2) -> int:
    """Cycles to issue ``lines`` ((class, mnemonic, operands, registers moved) in order) on a Cortex-M7."""
    capacity = {**CAPACITY, "load": load_pipes}
    ready: dict[str, int] = {}
    cycle, used, slots, closed = 0, {}, 0, False  # the cycle being filled, its pipes taken, its issues
    for cls, mnemonic, operands, regs in lines:
        insn = _insn(cls, mnemonic, operands, regs)
        earliest = max([cycle, *(ready[r] + lead for r, lead in insn.src if r in ready)])
        fits = (earliest == cycle and not closed and slots < 2 and not insn.alone and not (insn.first and slots)
                and all(used.get(u, 0) < capacity[u] for u in insn.units))
        if not fits:
            cycle = max(earliest, cycle + (1 if slots else 0))
            used, slots, closed = {}, 0, False
        for u in insn.units:
            used[u] = used.get(u, 0) + 1
        slots += 1
        for r in insn.dst:
            ready[r] = cycle + insn.latency
        if insn.alone:
            cycle += insn.alone
            used, slots, closed = {}, 0, False
    return cycle + (1 if slots else 0)
