"""A pipeline of two stages on the two cores of one chip, in one emulator (QEMU mps2-an521).

Both stages link into one firmware (mcudeploy/target/dual_firmware.py; firmware/runtime/mcud_dual.h): core 0
serves the protocol and runs the first stage, core 1 the second, and the boundary tensors cross a
ring in shared memory. The host streams the frames over UART0 with the protocol's CRC frames: it
loads frame n and RUNs it (core 0 runs the first stage on frame n while core 1 runs the second on
frame n-1), then reads frame n-1's outputs. A ring that stalls, or a core that faults, ends the
stream with one sentence, never with another frame's numbers.

Under QEMU -icount both cores advance one instruction clock, so ticks taken while both run count
both cores' instructions: the RUN of the first frame (core 1 has no frame yet) times the first stage
alone, and ``mcudeploy measure`` times each stage on its own.
"""
from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.target.dual_firmware import build_dual_firmware
from mcudeploy.device.runner import connect, model_name, run_on_board
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.errors import MCUDeployError
from mcudeploy.stages.system import ChipFirmware
from mcudeploy.stages.system_plan import SystemPlan


@dataclass(frozen=True)
class DualRun:
    plan: SystemPlan
    outputs: list  # per frame, the model's outputs
    run_ticks: tuple[int, ...]  # per frame, core 0's RUN (the shared clock: both cores' instructions)
    one_chip_outputs: list
    one_chip_ticks: int


def dual_chip(plan: SystemPlan) -> Optional[ChipFirmware]:
    """The chip firmware that runs ``plan``'s two stages on its two cores, if the system has one."""
    units = plan.partition.units
    if len(plan.staged.stages) != 2 or units[0].chip != units[1].chip:
        return None
    return plan.system.chip_firmware(units[0].chip)


def stream(plan: SystemPlan, samples: Sequence[Mapping[str, np.ndarray]], workdir: Path,
           stall_after: int = 0) -> tuple[list, list[int]]:
    """Build the two-core firmware and stream ``samples`` through it; per frame the model's outputs and
    core 0's RUN ticks. ``stall_after`` (tests): core 1 stops after that many frames."""
    chip = dual_chip(plan)
    if chip is None:
        raise MCUDeployError(f"{plan.system.name} has no firmware for two stages on the two cores of one chip")
    first, second = (s.compiled for s in plan.staged.stages)
    graph = plan.graph
    firmware = build_dual_firmware(first, second, graph.inputs, graph.outputs, chip, workdir / "firmware",
                                   model_name(plan.one_chip), stall_after)
    bulk = workdir / "inputs.bin"
    frames = [sample_bytes(graph, {n: s[n] for n in graph.inputs}) for s in samples]
    bulk.write_bytes(b"".join(b for f in frames for b in f))
    outputs: list = [None] * len(samples)
    ticks, ids = [], []
    with connect(chip.board, firmware) as session:
        def read(n: int) -> None:
            try:
                raw = [session.read_output(i, graph[o].nbytes, ids[n]) for i, o in enumerate(graph.outputs)]
            except MCUDeployError as exc:
                raise MCUDeployError(f"the two-core firmware of {plan.system.name} stopped the stream at frame {n}: "
                                     f"{str(exc).rstrip('.')}") from None
            outputs[n] = [output_array(graph, o, b) for o, b in zip(graph.outputs, raw)]

        offset = 0
        for n, data in enumerate(frames):
            ids.append(session.begin_run())
            for i, chunk in enumerate(data):
                session.load_input_file(i, str(bulk.resolve()), offset, len(chunk))
                offset += len(chunk)
            try:
                ticks.append(session.run().total_ticks)
            except MCUDeployError as exc:
                raise MCUDeployError(f"the two-core firmware of {plan.system.name} stopped the stream at frame {n}: "
                                     f"{str(exc).rstrip('.')}") from None
            if n > 0:
                read(n - 1)
        read(len(frames) - 1)
    return outputs, ticks


def run_dual(plan: SystemPlan, samples: Sequence[Mapping[str, np.ndarray]], workdir: Optional[Path] = None,
             stall_after: int = 0) -> DualRun:
    """Stream ``samples`` through the two cores (see the module's docstring), then run the one-chip plan
    on one emulator of its board for the comparison."""
    with tempfile.TemporaryDirectory(prefix="mcud-dual-") as tmp:
        outputs, ticks = stream(plan, samples, Path(workdir or tmp), stall_after)
    one = run_on_board(plan.one_chip, samples)
    one_ticks = int(statistics.median(r.total_ticks for r in one.runs))
    return DualRun(plan, outputs, tuple(ticks), one.outputs, one_ticks)
