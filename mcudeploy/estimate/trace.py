"""Instruction classes per operator from a QEMU execution log (``-d in_asm,exec,nochain``).

QEMU prints each translation block's instructions when it translates it (``IN:`` then one line per
instruction) and a ``Trace`` line, naming the block's host address and guest pc, each time it runs
one (``nochain`` makes every run print). The blocks that run between a call of ``begin`` and the
next call of ``end`` (the firmware's mcud_fw_op_begin and mcud_fw_op_end: the addresses come from
the ELF) belong to one operator, the k-th such span to the k-th operator. A block ends at its
branch; the branch was taken when the next block does not start where this one ends.

QEMU 7.2's disassembler does not know the M-profile vector extension (MVE, Helium): it prints its
instructions as coprocessor operations or bytes. For a core with MVE the instructions are named by
``arm-none-eabi-objdump -m armv8.1-m.main`` of the firmware instead (``disassemble``), by address. MVE
instructions go to the pipe Arm's own scheduling model of the Cortex-M55 puts them in (LLVM's
ARMScheduleM55.td): load/store, integer, float/multiply (every multiply and multiply-accumulate, the
across-vector adds, compares and predicated tests) and control (VCTP, VPST, VPNOT); a vector instruction
holds its pipe for two cycles (two beats of 64 bits), and the first beat of the next one overlaps the second
of the previous when the two use different pipes. ``mve_overlap`` counts the cycles so saved in each block
(an in-order issue of one instruction a cycle, each vector instruction waiting for its pipe).
A block without vector instructions also counts its Cortex-M7 issue cycles (``m7_issue``, and with one load pipe
``m7_issue_one_load``: estimate/dual.py), which only the M7's weights use.

A RISC-V trace (``arch="riscv"``: QEMU prints a 32-bit instruction as 8 hex digits, a compressed one as 4, and the
compressed ones expanded) is counted in the classes of estimate/e31.py, with the E31's issue cycles of each block
(``e31_issue``: its cycles after a run of itself where it follows itself, a loop) and the mispredictions of the
E31's branch predictor (``mispredict``; ``mispredict_nt`` those of branches that fell through).
"""
from __future__ import annotations

import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from mcudeploy.estimate import e31
from mcudeploy.estimate.dual import CONDS, issue_cycles

_INSN = re.compile(r"^0x([0-9a-f]{8}):\s+([0-9a-f]{4}(?: [0-9a-f]{4})?|[0-9a-f]{8})\s{2,}(\S+)\s*(.*)$")
_TRACE = re.compile(r"^Trace \d+: (0x[0-9a-f]+) \[[0-9a-f]+/([0-9a-f]+)/")
_BRANCHES = ("b", "bl", "bx", "blx", "cbz", "cbnz", "tbb", "tbh")
_MUL = ("mul", "mla", "mls", "smul", "smla", "smlal", "umull", "umlal", "umaal", "smmul", "smmla", "smmls", "smuad",
        "smusd", "smlad", "smlsd", "smlald", "smlsld", "smull")
_DSP = ("sxtb16", "uxtb16", "sxtab16", "uxtab16", "sadd", "ssub", "uadd", "usub", "qadd", "qsub", "qdadd", "qdsub",
        "shadd", "shsub", "uhadd", "uhsub", "ssat", "usat", "pkhbt", "pkhtb", "sel", "sasx", "ssax", "qasx", "qsax",
        "usad8", "usada8")


# MVE: which pipe each family goes to (ARMScheduleM55.td), by the mnemonic's first letters
_MVE_LS = ("vldr", "vstr", "vld2", "vld4", "vst2", "vst4")
_MVE_SYS = ("vctp", "vpst", "vpnot")
_MVE_MUL = ("vmul", "vmla", "vmls", "vqdmul", "vqrdmul", "vqdml", "vqrdml", "vrmla", "vrmls", "vaddv", "vaddlv",
            "vcmp", "vpt", "vfma", "vfms", "vcmul", "vcmla", "vcvt", "vrint", "vabav")
_LOB = ("dls", "dlstp", "wls", "wlstp", "le", "letp", "lctp")  # low-overhead loops
MVE_CLASSES = ("mve_ls", "mve_int", "mve_mul", "mve_sys")
_Q = re.compile(r"\bq[0-7]\b")


def _base(mnemonic: str) -> str:
    m = mnemonic.split(".")[0]
    return m


def _strip_cond(m: str, names: Iterable[str]) -> str:
    """``m`` without a condition suffix when what is left is one of ``names`` (bne -> b, addeq -> add)."""
    for name in names:
        if m == name or (m.startswith(name) and m[len(name):] in CONDS):
            return name
        if m.startswith(name) and m[len(name):len(name) + 1] == "s" and m[len(name) + 1:] in CONDS + ("",):
            return name
    return m


def classify(mnemonic: str, operands: str) -> tuple[str, int]:
    """(class of mcudeploy/estimate/cores.py, registers moved for multiple loads and stores)."""
    m = _base(mnemonic)
    regs = operands.count(",") + 1 if "{" in operands else 0
    if m in _LOB:
        return "lob", 0
    if m.startswith("v") and (_Q.search(operands) or m.startswith(_MVE_SYS) or m.startswith("vpt")):
        if m.startswith(_MVE_LS):
            return "mve_ls", 0
        if m.startswith(_MVE_SYS):
            return "mve_sys", 0
        return ("mve_mul" if m.startswith(_MVE_MUL) else "mve_int"), 0
    if m.startswith("v"):
        if m[:4] in ("vldr", "vstr") or m[:4] in ("vldm", "vstm") or m[:5] in ("vpush", "vpop"):
            return "fpu_ldst", 0
        if m[:4] in ("vdiv", "vsqr"):
            return "fpu_div", 0
        if m[:4] in ("vmla", "vmls", "vfma", "vfms", "vnml", "vfnm"):
            return "fpu_mac", 0
        return "fpu", 0
    if m.startswith("it") and set(m[2:]) <= {"t", "e"}:
        return "it", 0
    if m in ("pop", "push") or m[:3] in ("ldm", "stm"):
        return ("branch" if "pc" in operands and m != "push" and m[:3] != "stm" else "multi"), regs
    if _strip_cond(m, _BRANCHES) in _BRANCHES:
        return "branch", 0
    if m[:4] in ("ldrd", "strd"):
        return "ldst_double", 0
    if m.startswith("ldr"):
        return ("branch" if operands.startswith("pc") else "load"), 0
    if m.startswith("str"):
        return "store", 0
    if m in ("sdiv", "udiv"):
        return "div", 0
    if any(m.startswith(p) for p in _MUL):
        return "mul", 0
    if any(m.startswith(p) for p in _DSP):
        return "dsp", 0
    return "alu", 0


NOT_INSTRUCTIONS = ("multi_regs", "branch_taken", "mve_overlap", "m7_issue", "m7_issue_one_load", "e31_issue",
                    "mispredict", "mispredict_nt")  # counts of a span that are not instructions


@dataclass
class Block:
    counts: Counter
    end: int            # the address after its last instruction
    ends_in_branch: bool
    branch: str = ""    # RISC-V: how the predictor sees its last instruction (e31.branch_kind)
    issue: tuple[int, int] = (0, 0)  # RISC-V: the E31's cycles of the block, and of it following itself


def _size(code: str) -> int:
    """Bytes of an instruction from QEMU's hex of it ("f8d3 3d88", "00000297", "1141")."""
    return len(code.replace(" ", "")) // 2


def _block_riscv(lines: list[tuple[int, int, str, str]]) -> Block:
    insns = [e31.decode(mnemonic, operands) for _, _, mnemonic, operands in lines]
    counts = Counter(i.cls for i in insns)
    addr, size, mnemonic, operands = lines[-1]
    return Block(counts, addr + size, insns[-1].cls == "branch", e31.branch_kind(mnemonic, operands),
                 (e31.issue_cycles(insns), e31.issue_cycles(insns, again=True)))


def _block(lines: list[tuple[int, int, str, str]], arch: str = "arm") -> Block:
    if arch == "riscv":
        return _block_riscv(lines)
    counts: Counter = Counter()
    previous = ""
    classes = []
    issued = []
    for _, _, mnemonic, operands in lines:
        cls, regs = classify(mnemonic, operands)
        issued.append((cls, mnemonic, operands, regs))
        if cls in ("load", "store") and previous in ("load", "store", "ldst_pipelined"):
            cls = "ldst_pipelined"
        counts[cls] += 1
        if regs:
            counts["multi_regs"] += regs
        previous = cls
        classes.append(cls)
    if any(c in MVE_CLASSES for c in classes):
        counts["mve_overlap"] += _overlap(classes)
    else:  # a Cortex-M7's dual issue (dual.py)
        counts["m7_issue"] += issue_cycles(issued)
        counts["m7_issue_one_load"] += issue_cycles(issued, load_pipes=1)
    addr, size, _, _ = lines[-1]
    return Block(counts, addr + size, previous == "branch")


def _overlap(classes: list[str]) -> int:
    """Cycles a block saves by starting a vector instruction's first beat during the previous one's second
    (one instruction issued a cycle, in order; a vector instruction holds its pipe two cycles, a control one
    one cycle; every other instruction counted as one cycle here)."""
    t, free, alone = 0, {}, 0
    for cls in classes:
        beats = 2 if cls in MVE_CLASSES and cls != "mve_sys" else 1
        alone += beats
        if cls in MVE_CLASSES:
            start = max(t, free.get(cls, 0))
            free[cls] = start + beats
            t = start + 1
        else:
            t += 1
    return alone - max([t, *free.values()])


def disassemble(elf: str, march: str) -> dict[int, tuple[int, str, str]]:
    """(size in bytes, mnemonic, operands) by address of every instruction of ``elf``'s code, as objdump names
    them for ``march`` (QEMU 7.2's own disassembler does not know MVE: it takes such an instruction's first
    halfword for bytes and its second for an instruction of its own)."""
    out = subprocess.run(["arm-none-eabi-objdump", "-d", "-m", march, str(elf)], capture_output=True, text=True,
                         check=True).stdout
    names = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].strip().endswith(":"):
            try:
                addr = int(parts[0].strip()[:-1], 16)
            except ValueError:
                continue
            size = 2 * len(parts[1].split())
            names[addr] = (size, parts[2].strip(), parts[3].split("@")[0].strip() if len(parts) > 3 else "")
    return names


def op_counts(log: Path, begin: int, end: int, names: Optional[dict[int, tuple[int, str, str]]] = None,
              arch: str = "arm") -> list[Counter]:
    """Per span between a run of the block at ``begin`` and the next at ``end``: instruction classes
    (with ``instructions`` and ``branch_taken``), in the order the spans ran; ``names``: the instructions by
    address, where QEMU's disassembly is not to be trusted (disassemble); ``arch``: the board's ("riscv": the
    classes, issue cycles and mispredictions of estimate/e31.py)."""
    blocks: dict[str, Block] = {}
    pending: list = []
    spans: list[Counter] = []
    current = None  # the Counter of the span being counted
    last = None  # the block that ran last, waiting to learn whether its branch was taken
    last_host = None
    predictor = e31.Predictor() if arch == "riscv" else None
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("0x"):
                m = _INSN.match(line)
                if m:
                    addr = int(m[1], 16)
                    if names and pending and addr < pending[-1][0] + pending[-1][1]:
                        continue  # the second half of a 32-bit instruction QEMU did not know (an MVE one)
                    named = names.get(addr) if names else None
                    pending.append((addr, *named) if named else (addr, _size(m[2]), m[3], m[4]))
                continue
            if not line.startswith("Trace"):
                continue
            t = _TRACE.match(line)
            if t is None:
                continue
            host, pc = t[1], int(t[2], 16)
            if pending:
                blocks[host] = _block(pending, arch)
                pending = []
            if last is not None and last.ends_in_branch:
                if current is not None and pc != last.end:
                    current["branch_taken"] += 1
                if predictor is not None and last.branch and \
                        predictor.mispredicted(last.branch, last.end, last.end, pc) and current is not None:
                    current["mispredict"] += 1
                    current["mispredict_nt"] += pc == last.end
            if pc == end and current is not None:
                spans.append(current)
                current = None
            if pc == begin:
                current = Counter()
            block = blocks.get(host)
            if current is not None and block is not None:
                current.update(block.counts)
                if predictor is not None:
                    current["e31_issue"] += block.issue[1] if host == last_host else block.issue[0]
            last, last_host = block, host
    for span in spans:
        span["instructions"] = sum(v for k, v in span.items() if k not in NOT_INSTRUCTIONS)
    return spans
