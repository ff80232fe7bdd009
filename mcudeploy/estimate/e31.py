"""The SiFive E31 (the FE310's core, on the HiFive1) for the cycle estimate of a RISC-V trace: instructions by
class as QEMU names them, a block's cycles on the E31's pipeline, and its branch predictor.

What the manual says (SiFive's FE310-G000 Manual, chapter 3 "E31 RISC-V Core", 3.2 Instruction Fetch Unit and 3.3
Execution Pipeline, read at http://88.208.23.73:8080/en/manual/sifive/fe310-g000/1267085?page=19; the FE310-G002
carries an E31 too, but its own manual was not read here), and what this takes:
- "a single-issue, in-order pipeline" of five stages, "peak execution rate of one instruction per clock cycle",
  "fully bypassed so that most instructions have a one-cycle result latency", except: "LW has a two-cycle result
  latency", "LH, LHU, LB, and LBU have a three-cycle result latency" (both "assuming a cache hit": the DTIM here),
  "CSR reads have a three-cycle result latency", "MUL, MULH, MULHU, and MULHSU have a 5-cycle result latency",
  "DIV, DIVU, REM, and REMU have between a 2-cycle and 33-cycle result latency, depending on the operand values".
  "The pipeline only interlocks on read-after-write and write-after-write hazards": ``issue_cycles`` issues a block's
  instructions one a cycle, each waiting until the registers it reads are ready (read-after-write; write-after-write
  is left out). "an 8-bit per cycle hardware multiply and a 1-bit per cycle hardware divide ... The multiplier can
  only execute one operation at a time and will block until the previous operation completes": a multiply waits for
  the previous one's result. A divide is issued here as one cycle and charged its latency less one on top (class
  ``div``, cores.py), as if it blocked the pipeline: the estimate takes 33 cycles, the range 2 to 33.
- "correctly predicted control-flow instructions result in no penalty. Mispredicted control-flow instructions incur
  a three-cycle penalty", predicted by "a 40-entry branch target buffer (BTB) which predicts the target of taken
  branches, a 128-entry branch history table (BHT), which predicts the direction of conditional branches, and a
  2-entry return-address stack (RAS)" (SiFive's later E31 Core Complex Manual gives the same three-cycle penalty
  with a 28-entry BTB, a 512-entry BHT and a 6-entry RAS: manualshive.com/manual/sifive/e31/1267083, page 11; the
  FE310's figures are taken). ``Predictor`` counts the mispredictions of a trace with one two-bit counter
  per conditional branch (a BHT without aliasing or history), a BTB that holds every target once seen (none
  evicted), and a RAS of two entries: an idealisation of the three; the range of cores.py goes from no
  misprediction to every taken branch mispredicted.
- Left out: dependencies across blocks, except where a block follows itself (a loop: ``issue_cycles(..., again=
  True)``, its cycles after a run of itself); instruction fetch and reads of flash (estimate/flash.py counts them,
  cycles.py charges the board's serial flash).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

_REG = re.compile(r"\b(zero|ra|sp|gp|tp|t[0-6]|s1[01]|s[0-9]|fp|a[0-7])\b")
_BRANCHES = ("beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz", "bgtz", "bgt",
             "ble", "bgtu", "bleu")
_JUMPS = ("j", "jal", "jr", "jalr", "ret", "call", "tail")
LATENCY = {"alu": 1, "load": 2, "load_narrow": 3, "store": 1, "mul": 5, "div": 1, "csr": 3, "branch": 1}


def classify(mnemonic: str, operands: str = "") -> str:
    """The class of an RV32IMAC instruction as QEMU 7.2's disassembler prints it (compressed ones expanded)."""
    m = mnemonic.lower()
    if m == "lw":
        return "load"
    if m in ("lb", "lbu", "lh", "lhu"):
        return "load_narrow"
    if m in ("sb", "sh", "sw"):
        return "store"
    if m in ("mul", "mulh", "mulhu", "mulhsu"):
        return "mul"
    if m in ("div", "divu", "rem", "remu"):
        return "div"
    if m.startswith("csr") or m in ("rdcycle", "rdcycleh", "rdtime", "rdtimeh", "rdinstret", "rdinstreth"):
        return "csr"
    if m in _BRANCHES or m in _JUMPS:
        return "branch"
    return "alu"


def branch_kind(mnemonic: str, operands: str) -> str:
    """How the predictor sees a control-flow instruction: "cond", "jump" (direct), "call", "ret", "indirect";
    "" for any other instruction."""
    m = mnemonic.lower()
    regs = _REG.findall(operands.split("#")[0])
    if m in _BRANCHES:
        return "cond"
    if m == "ret" or (m == "jr" and regs == ["ra"]):
        return "ret"
    if m in ("j", "tail"):
        return "jump"
    if m in ("jal", "call"):
        return "call" if regs[:1] == ["ra"] or m == "call" else "jump"
    if m == "jalr":  # "jalr a5" (c.jalr) links ra; "jalr ra,a5,0" too
        return "call" if len(regs) == 1 or regs[0] == "ra" else "indirect"
    if m == "jr":
        return "indirect"
    return ""


@dataclass(frozen=True)
class Insn:
    cls: str
    dst: Optional[str]
    src: tuple[str, ...]


def decode(mnemonic: str, operands: str) -> Insn:
    """The class, the register written and the registers read (x0 neither) of an instruction."""
    cls = classify(mnemonic, operands)
    regs = _REG.findall(operands.split("#")[0])
    m = mnemonic.lower()
    writes = cls not in ("store", "branch") or (m in ("jal", "jalr") and branch_kind(m, operands) == "call")
    if m in ("jal", "jalr") and writes:
        dst, src = "ra", tuple(r for r in regs if r != "ra") if m == "jalr" else ()
    elif writes and regs:
        dst, src = regs[0], tuple(regs[1:])
    else:
        dst, src = None, tuple(regs) + (("ra",) if m == "ret" else ())
    return Insn(cls, None if dst == "zero" else dst, tuple(r for r in src if r != "zero"))


def issue_cycles(block: list[Insn], again: bool = False) -> int:
    """Cycles of ``block`` on the E31's pipeline (the module's rule), every register ready at its start; with
    ``again``, the cycles of a second run right after a first (the block a loop's body, following itself)."""
    ready: dict[str, int] = {}
    t, muldiv = -1, 0
    ends = []
    for _ in range(2 if again else 1):
        for insn in block:
            t = max([t + 1, *(ready.get(r, 0) for r in insn.src)])
            if insn.cls in ("mul", "div"):
                t = max(t, muldiv)
                muldiv = t + LATENCY[insn.cls]
            if insn.dst is not None:
                ready[insn.dst] = t + LATENCY[insn.cls]
        ends.append(t)
    return ends[-1] - ends[0] if again else ends[0] + 1


@dataclass
class Predictor:
    """The mispredictions of the E31's branch predictor over a trace, idealised (the module's rule): fed each
    control-flow instruction that ended a block, with where it went."""
    counters: dict[int, int] = field(default_factory=dict)  # per branch: 0, 1 predict not taken; 2, 3 taken
    targets: dict[int, int] = field(default_factory=dict)  # the BTB: per branch its last target
    returns: list[int] = field(default_factory=list)  # the RAS, newest last
    depth: int = 2

    def mispredicted(self, kind: str, site: int, after: int, target: int) -> bool:
        """Whether the instruction ending at ``site`` (the address after it; ``after`` is where falling through
        goes, the same) of ``kind`` (branch_kind), having gone to ``target``, was mispredicted; learns it."""
        taken = target != after
        known = self.targets.get(site)
        if taken:
            self.targets[site] = target
        if kind == "cond":
            count = self.counters.get(site, 1)
            self.counters[site] = min(3, count + 1) if taken else max(0, count - 1)
            return (count >= 2) != taken or (taken and known != target)
        if kind == "ret":
            predicted = self.returns.pop() if self.returns else None
            return predicted != target
        if kind == "call":
            self.returns = (self.returns + [after])[-self.depth:]
        return known != target  # a jump, a call or an indirect jump: the BTB's target
