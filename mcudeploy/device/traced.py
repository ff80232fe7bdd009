"""One run of a model under QEMU with its execution logged (``-d in_asm,exec,nochain``): the instruction
classes each operator executed, for the cycle estimate of mcudeploy/estimate, and, for a target board whose
flash reads are modelled, the reads of flash its data cache would miss, or the fills of its instruction cache and
its serial flash's reads (estimate/flash.py's plugin). The log
of a model of a few million instructions is some hundred megabytes; it lives in a temporary folder while it
is read."""
from __future__ import annotations

import dataclasses
import logging
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Optional

from mcudeploy.device.runner import build_for_board, connect, timed_nodes
from mcudeploy.device.samples import sample_bytes
from mcudeploy.errors import MCUDeployError
from mcudeploy.estimate import flash
from mcudeploy.estimate.cycles import Target
from mcudeploy.estimate.cores import CORES
from mcudeploy.estimate.trace import disassemble, op_counts
from mcudeploy.samples import random_inputs

log = logging.getLogger(__name__)
NM = "arm-none-eabi-nm"


def _symbols(elf: Path, names: tuple[str, ...]) -> dict[str, int]:
    out = subprocess.run([NM, str(elf)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in names:
            found[parts[2]] = int(parts[0], 16) & ~1  # the Thumb bit is no part of the address
    return found


def trace_model(compiled, workdir: Optional[Path] = None, timeout: Optional[float] = None,
                target: Optional[Target] = None) -> list[Counter]:
    """Instruction classes (mcudeploy/estimate/trace.py) of each timed operator of ``compiled`` over one
    run on its emulated board, on the seeded random input ``measure`` uses, in MCUD_OP_BEGIN order; with a
    ``target`` whose flash reads are modelled, each operator's flash reads and misses too (flash.keys)."""
    board = compiled.board
    if board.kind != "qemu":
        raise MCUDeployError(f"a cycle estimate traces the model under QEMU; board {board.name} is not emulated")
    with tempfile.TemporaryDirectory(prefix="mcud-trace-") as tmp:
        work = Path(workdir or tmp)
        firmware = build_for_board(compiled, work / "project")
        names = ("mcud_fw_op_begin", "mcud_fw_op_end")
        syms = _symbols(firmware.elf, names)
        if len(syms) != 2:
            raise MCUDeployError(f"the firmware for {board.name} lacks {', '.join(n for n in names if n not in syms)}")
        trace = Path(tmp) / "qemu.log"
        extra = board.qemu.extra_args + ("-d", "in_asm,exec,nochain", "-D", str(trace))
        caches = target.caches if target is not None else None
        xip = target.xip if target is not None else None
        reads = Path(tmp) / "flash_reads.txt"
        if caches is not None or xip is not None:
            extra += flash.qemu_args(board, caches, syms["mcud_fw_op_begin"], syms["mcud_fw_op_end"], reads, xip)
        traced = dataclasses.replace(board, qemu=dataclasses.replace(board.qemu, extra_args=extra))
        inputs = Path(tmp) / "inputs.bin"
        data = sample_bytes(compiled.graph, random_inputs(compiled.graph, 1, seed=0)[0])
        inputs.write_bytes(b"".join(data))
        with connect(traced, firmware, None, timeout) as session:
            session.begin_run()
            offset = 0
            for i, b in enumerate(data):  # through semihosting: the UART would put its polling in the trace
                session.load_input_file(i, str(inputs.resolve()), offset, len(b))
                offset += len(b)
            session.run()
        log.info("trace of %s: %.1f MB", board.name, trace.stat().st_size / 1e6)
        march = CORES.get(board.core, {}).get("disassembler")  # QEMU cannot name this core's instructions
        names = disassemble(str(firmware.elf), march) if march else None
        spans = op_counts(trace, syms["mcud_fw_op_begin"], syms["mcud_fw_op_end"], names, board.arch)
        if caches is not None or xip is not None:
            spans = flash.merge(spans, flash.read_counts(reads, len(spans), flash.keys(caches, xip)))
    expected = len(timed_nodes(compiled))
    if len(spans) != expected:
        raise MCUDeployError(f"the trace on {board.name} holds {len(spans)} operator runs, the model {expected}")
    return spans
