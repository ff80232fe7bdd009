"""Each core's instructions per phase of a plan on several cores, run on its emulated chip: QEMU runs the cores
of mps2-an521 on one clock (-icount), so the firmware's timer counts both; a TCG plugin (firmware/qemu/
core_phases.c) counts each vCPU's instructions from the start of its steps in a phase to its barrier ("work")
and in the barrier, waiting included ("barrier").

The critical path of a run is the longer core's work in each phase plus the shorter core's barrier (the core
that arrives last waits least: its barrier is the cost of the barrier itself), summed over the phases.
"""
from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.device.runner import build_for_board, connect
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.device.traced import _symbols
from mcudeploy.errors import MCUDeployError
from mcudeploy.estimate.flash import plugin

PLUGIN = Path("qemu") / "core_phases.c"
MARKS = ("mcud_cores_phase_start", "mcud_cores_barrier")


@dataclass(frozen=True)
class CoreRun:
    """One run: per core, per phase, its instructions of work and in the barrier."""

    work: tuple[tuple[int, ...], ...]
    barrier: tuple[tuple[int, ...], ...]

    @property
    def critical_path(self) -> int:
        phases = len(self.work[0])
        return sum(max(w[p] for w in self.work) + min(b[p] for b in self.barrier) for p in range(phases))

    @property
    def barriers(self) -> int:
        """The barriers' share of the critical path."""
        return sum(min(b[p] for b in self.barrier) for p in range(len(self.barrier[0])))

    def as_dict(self) -> dict:
        return {"critical_path_instructions": self.critical_path, "barrier_instructions": self.barriers,
                "core_instructions": [sum(w) for w in self.work], "phases": len(self.work[0])}


@dataclass(frozen=True)
class CoresMeasure:
    outputs: list  # per sample, per model output
    runs: list[CoreRun]  # per sample


def parse(text: str, cores: int, phases: int, runs: int) -> list[CoreRun]:
    """The plugin's lines as ``runs`` runs of ``phases`` phases on ``cores`` cores; refused when they do not add up."""
    work: list[list[int]] = [[] for _ in range(cores)]
    waits: list[list[int]] = [[] for _ in range(cores)]
    for line in text.splitlines():
        kind, vcpu, n = line.split()
        if int(vcpu) >= cores:
            raise MCUDeployError(f"the per-core count names vCPU {vcpu}, but the plan runs on {cores} cores")
        (work if kind == "W" else waits)[int(vcpu)].append(int(n))
    want = phases * runs
    if any(len(w) != want for w in work) or any(len(b) != want for b in waits):
        raise MCUDeployError(f"the per-core count holds {[len(w) for w in work]} phases of work and "
                             f"{[len(b) for b in waits]} barriers per core, not {want} ({runs} runs of {phases})")
    return [CoreRun(tuple(tuple(w[r * phases:(r + 1) * phases]) for w in work),
                    tuple(tuple(b[r * phases:(r + 1) * phases]) for b in waits)) for r in range(runs)]


def measure_on_cores(compiled, samples: Sequence[Mapping[str, np.ndarray]], workdir: Optional[Path] = None,
                     timeout: Optional[float] = None) -> CoresMeasure:
    """Run ``compiled`` (a plan on its emulated chip's cores, Compiled.cores) on ``samples``: the outputs, and each
    core's instructions per phase of every run."""
    board, graph, plan = compiled.board, compiled.graph, compiled.cores
    if plan is None:
        raise MCUDeployError(f"the plan of {compiled.model} runs on one core: nothing to count per core")
    if board.kind != "qemu":
        raise MCUDeployError(f"each core's instructions are counted under QEMU; board {board.name} is not emulated")
    with tempfile.TemporaryDirectory(prefix="mcud-cores-") as tmp:
        work = Path(workdir or tmp)
        firmware = build_for_board(compiled, work / "project")
        marks = _symbols(firmware.elf, MARKS)
        if len(marks) != len(MARKS):
            raise MCUDeployError(f"the firmware for {board.name} lacks {', '.join(m for m in MARKS if m not in marks)}")
        counts = work / "core_phases.txt"
        args = ("-plugin", f"{plugin(PLUGIN)},start={marks[MARKS[0]]:#x},barrier={marks[MARKS[1]]:#x},out={counts}")
        counted = dataclasses.replace(board, qemu=dataclasses.replace(board.qemu,
                                                                      extra_args=board.qemu.extra_args + args))
        bulk = work / "inputs.bin"
        data = [sample_bytes(graph, s) for s in samples]
        bulk.write_bytes(b"".join(b for d in data for b in d))
        outputs, offset = [], 0
        with connect(counted, firmware, None, timeout) as session:
            out_bytes = [graph[n].nbytes for n in graph.model_outputs()]
            for d in data:
                session.begin_run()
                for i, b in enumerate(d):  # through semihosting, as run_on_board does on an emulator
                    session.load_input_file(i, str(bulk.resolve()), offset, len(b))
                    offset += len(b)
                session.run()
                raw = [session.read_output(i, n) for i, n in enumerate(out_bytes)]
                outputs.append([output_array(graph, n, b) for b, n in zip(raw, graph.model_outputs())])
        text = counts.read_text()
    return CoresMeasure(outputs, parse(text, plan.cores, plan.phase_count, len(samples)))
