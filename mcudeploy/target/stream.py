"""Frames streamed through a system plan's stages: stage k takes each frame after stage k-1 handed
its boundary tensors over, and the model's outputs are gathered from the stages that make them.

On the host (``run_on_host``) every stage's C is built natively (retargeted to the host board where
it was compiled for a chip: the same plan, order and offsets) and run on all frames in turn.
"""
from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from mcudeploy.device.host import on_host, run_compiled_on_host
from mcudeploy.errors import MCUDeployError
from mcudeploy.stages.system_plan import SystemPlan, with_measured


def run_on_host(plan: SystemPlan, samples: Sequence[Mapping[str, np.ndarray]], workdir: Path) -> list[list[np.ndarray]]:
    """Every frame through every stage's host build; per frame, the model's outputs in order."""
    frames = [dict(s) for s in samples]
    for stage in plan.staged.stages:
        g = stage.compiled.graph
        outs = run_compiled_on_host(on_host(stage.compiled), [{i: f[i] for i in g.inputs} for f in frames],
                                    workdir / f"stage{stage.index}")
        for frame, values in zip(frames, outs):
            frame.update(zip(g.outputs, values))
    return [[f[o] for o in plan.outputs] for f in frames]


def compare(plan: SystemPlan, got: Sequence[Sequence[np.ndarray]], want: Sequence[Sequence[np.ndarray]]) -> tuple[bool, str]:
    """The system's outputs against the one-chip plan's, bit for bit, in one line."""
    differ = sum(int(np.count_nonzero(np.asarray(g) != np.asarray(w)))
                 for gs, ws in zip(got, want) for g, w in zip(gs, ws))
    ok = differ == 0 and len(got) == len(want)
    return ok, (f"the {len(plan.times)} stage(s) on {plan.system.name} vs the one-chip plan on {len(got)} streamed "
                f"input(s): {'bit for bit identical' if ok else f'{differ} element(s) differ'}")


@dataclass(frozen=True)
class SystemRun:
    plan: SystemPlan  # with the stages' times as measured, where a board ran them
    outputs: list  # per frame, the model's outputs
    ok: bool  # bit for bit with the one-chip plan (and, with check, the one-chip verdict)
    lines: list


def run_system(plan: SystemPlan, samples, check: bool = False, ports: Sequence[str] = ()) -> SystemRun:
    """Stream ``samples`` through the stages and compare every output with the one-chip plan's, bit for
    bit; with ``check`` also the one-chip verdict (run --check's) on the system's outputs. ``ports``:
    one per stage, chips flashed with ``mcudeploy flash -b SYSTEM`` (chain.py)."""
    from mcudeploy import check as checks
    from mcudeploy.frontend import is_tflite_model
    from mcudeploy.target.dual import dual_chip

    chip = dual_chip(plan) if emulated(plan) or ports else None
    if chip is not None and ports:
        raise MCUDeployError(f"--port streams through the chips of a chain; the two cores of {plan.system.name} run "
                             f"one firmware on one board, which run starts itself")
    if chip is not None:
        from mcudeploy.target.dual import run_dual

        dual = run_dual(plan, samples)
        outputs, want = dual.outputs, dual.one_chip_outputs
        lines = [f"both stages ran in one emulator of {chip.board.name} ({chip.board.qemu.machine}), stage 0 on core 0 "
                 f"and stage 1 on core 1, {len(samples)} frame(s) streamed through a ring of {chip.slots} slots in its "
                 f"{chip.ring_region}; the one-chip plan ran on one emulator of {plan.one_chip.board.name}",
                 f"stage 0 alone on core 0 (the first frame, core 1 idle): {dual.run_ticks[0]:,} ticks; "
                 f"{_later(dual.run_ticks)}the cores share one instruction clock under QEMU -icount, so each stage's "
                 f"ticks are taken on its own (mcudeploy measure), not from the streamed run"]
    elif emulated(plan) or ports:
        from mcudeploy.target.chain import run_chain

        chain = run_chain(plan, samples, ports=ports)
        plan, outputs, want = chain.plan, chain.outputs, chain.one_chip_outputs
        where = (f"on the flashed chip on {', '.join(ports)}" if ports else
                 f"on its own emulator ({', '.join(sorted({u.board.name for u in plan.partition.units}))})")
        one = ("as a host build (the same C)" if chain.one_chip_ticks is None
               else f"on one emulator of {plan.one_chip.board.name}")
        lines = [f"each stage ran {where}, frames streamed through CRC-checked links {_carrier(chain)} "
                 f"({sum(chain.link_frames)} frame(s); {_retries(chain)}); the one-chip plan ran {one}"]
    else:
        with tempfile.TemporaryDirectory(prefix="mcud-system-") as tmp:
            outputs = run_on_host(plan, samples, Path(tmp))
            want = run_compiled_on_host(on_host(plan.one_chip), samples, Path(tmp) / "one-chip")
        lines = [f"the stages ran one after another as host builds{_retargeted(plan)}"]
    same, line = compare(plan, outputs, want)
    lines.append(line)
    ok = same
    if check:
        if is_tflite_model(plan.model):
            verdict = checks.check_tflite_outputs(plan.model, plan.one_chip, outputs, samples, plan.graph)
        else:
            verdict = checks.check_outputs(plan.model, plan.one_chip, outputs, samples, plan.graph)
        lines += verdict.lines()
        ok = ok and verdict.ok
    return SystemRun(plan, outputs, ok, lines)


def _carrier(chain) -> str:
    if chain.joined:
        return "from chip to chip over their joined UARTs, the host carrying none"
    return f"carried by the host ({chain.host_bytes:,} bytes)"


def _retries(chain) -> str:
    """The links' resends and refused frames, per link where there are several."""
    if not any(chain.link_resent) and not any(chain.link_refused):
        return "no frame sent again"
    per = [f"{r} resent, {f} refused" for r, f in zip(chain.link_resent, chain.link_refused)]
    if len(per) == 1:
        return f"{per[0]} (damaged, repeated or lost frames thrown away)"
    return "; ".join(f"link {k}->{k + 1}: {p}" for k, p in enumerate(per)) + " (damaged, repeated or lost frames)"


def _later(ticks) -> str:
    """Core 0's RUNs after the first, while core 1 may work on the frame before: what the shared clock shows."""
    if len(ticks) < 2:
        return ""
    return f"the later frames' RUNs (core 1 holding a frame of its own) took a median {int(statistics.median(ticks[1:])):,}; "


def emulated(plan: SystemPlan) -> bool:
    """Every stage's core is an emulated board: the stages run on emulators (chain.py)."""
    return all(u.board.kind == "qemu" for u in plan.partition.units)


def _retargeted(plan: SystemPlan) -> str:
    boards = sorted({u.board.name for u in plan.partition.units if u.board.kind != "host"})
    return f" (the plans made for {', '.join(boards)}, built for this computer)" if boards else ""


def measure_system(compile_plan: Callable[[], SystemPlan], repeat: int = 5, ports: Sequence[str] = ()) -> SystemPlan:
    """The one-chip plan's operators timed on an emulator of its board first (so the partitioner cuts
    by measured ticks: ``compile_plan`` runs again), then every stage's, one stage after another
    (mcudeploy measure of each stage plan, through the timing cache): the plan with its stages' times
    and its throughput from those measured ticks. Under QEMU the stages cannot run at once on one
    instruction clock, so each is measured on its own.

    ``ports`` (one per stage, first to last): chips flashed with ``mcudeploy flash -b SYSTEM``, each
    timing its own stage; no chip runs the whole model there, so the one-chip figure is the sum of the
    stages' measured ticks (the same operators and kernels, one after another)."""
    from mcudeploy.device.measure import measure_model

    plan = compile_plan()
    real = sorted({u.board.name for u in plan.partition.units if u.board.kind != "qemu"})
    stages = plan.staged.stages
    if ports:
        if len(ports) != len(stages):
            raise MCUDeployError(f"{plan.system.name} has {len(stages)} stage(s): give one --port per stage, first "
                                 f"to last, not {len(ports)}")
        ticks = {s.index: measure_model(s.compiled, port=p, repeat=repeat).total_ticks for s, p in zip(stages, ports)}
        return with_measured(plan, ticks, sum(ticks.values()))
    if real:
        raise MCUDeployError(f"measure on {plan.system.name} needs its boards ({', '.join(real)}), flashed with "
                             f"`mcudeploy flash -b {plan.system.name}`, each on a port: give --port once per stage")
    one_chip = measure_model(plan.one_chip, repeat=repeat)
    if one_chip.device_used:
        plan = compile_plan()
    ticks = {s.index: measure_model(s.compiled, repeat=repeat).total_ticks for s in plan.staged.stages}
    return with_measured(plan, ticks, one_chip.total_ticks)
