"""``mcudeploy flash -b SYSTEM``: every stage's measurer firmware, built for its own core's board
(device/flash.py, offline PlatformIO) in a folder of its own, checked to fit its chip, and
uploaded to its own chip: an emulated chip gets an emulator of its own on a free port; a real one
takes the ``--port`` given for it, once per stage in stage order. Where the chips' boards name link
UARTs (``links``), each firmware also holds its links (target/linked_firmware.py, firmware/runtime/link.c:
RUN_LINKED passes the boundary tensors chip to chip); it still serves the ordinary measurer's RUN, and
emulated chips are started first to last with their link UARTs joined (device/emulator.py). Two
stages on the two cores of one emulated chip (qemu-an521) are one firmware instead, the two-core
one `run` streams through (target/dual.py), started on one emulator.

Every firmware is built and checked before anything is uploaded, so a stage that does not fit
stops the command with nothing flashed; an upload that fails stops the emulators this command
started, so a half-flashed system does not stay behind.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from mcudeploy.device import qemu
from mcudeploy.device.emulator import end_emulators_on, socket_port
from mcudeploy.device.flash import FlashResult, flash_compiled, flashable
from mcudeploy.target.linked_firmware import link_values, unlinkable
from mcudeploy.errors import MCUDeployError
from mcudeploy.stages.system_plan import SystemPlan


def _ports(plan: SystemPlan, ports: Sequence[str], upload: bool) -> list[Optional[str]]:
    """The port of each stage: the given ones in stage order (a real chip needs one), else None."""
    stages = plan.staged.stages
    boards = [s.compiled.board for s in stages]
    if ports and len(ports) != len(stages):
        raise MCUDeployError(f"flash -b {plan.system.name} takes one --port per stage ({len(stages)}, in stage "
                             f"order), not {len(ports)}")
    real = [k for k, b in enumerate(boards) if b.kind == "hardware"]
    if upload and real and not ports:
        raise MCUDeployError(f"flash -b {plan.system.name} needs the serial port of each of its {len(stages)} "
                             f"stage(s)' chips: --port once per stage, in stage order (or --no-upload to build only)")
    given = list(ports) or [None] * len(stages)
    for board, port in zip(boards, given):
        flashable(board, port)
    return given


def flash_dual(plan: SystemPlan, chip, project: Path, ports: Sequence[str], upload: bool,
               progress=print) -> list[FlashResult]:
    """The two-core firmware of ``chip`` with both stages, built in ``project`` and started on an
    emulator of its own (the port given, else a free one)."""
    from mcudeploy.target.dual_firmware import build_dual_firmware
    from mcudeploy.device.emulator import start_emulator
    from mcudeploy.device.runner import model_name

    if len(ports) > 1:
        raise MCUDeployError(f"flash -b {plan.system.name} runs both stages in one emulator: give at most one --port")
    if chip.board.kind != "qemu":
        raise MCUDeployError(f"the two-core firmware of {plan.system.name} is built for emulators only")
    first, second = (s.compiled for s in plan.staged.stages)
    progress(f"stages 0 and 1: building the two-core firmware for {chip.board.name}")
    fw = build_dual_firmware(first, second, plan.graph.inputs, plan.graph.outputs, chip, Path(project),
                             model_name(plan.one_chip))
    if not upload:
        return [FlashResult(chip.board, Path(project), fw.elf, fw.report, "two-core firmware", None, uploaded=False)]
    emu = start_emulator(chip.board, fw.elf, socket_port(ports[0]) if ports else qemu.free_port())
    return [FlashResult(chip.board, Path(project), fw.elf, fw.report, "two-core firmware", emu.url, emulator=emu)]


def flash_system(plan: SystemPlan, project: Path, ports: Sequence[str] = (), upload: bool = True,
                 progress=print) -> list[FlashResult]:
    """Build every stage's firmware in ``project``/stageK, then upload each to its chip."""
    from mcudeploy.target.dual import dual_chip

    chip = dual_chip(plan)
    if chip is not None:
        return flash_dual(plan, chip, project, ports, upload, progress)
    ports = _ports(plan, ports, upload)
    stages = plan.staged.stages
    joined = len(stages) > 1 and unlinkable(stages) is None
    links = [link_values(stages, k) if joined else None for k in range(len(stages))]
    built = []
    for stage, port, link in zip(stages, ports, links):
        board = stage.compiled.board
        progress(f"stage {stage.index}: building for {board.name}" + (" with its links" if link else ""))
        built.append(flash_compiled(stage.compiled, board, Path(project) / f"stage{stage.index}",
                                    f"{plan.model} (stage {stage.index})", port, upload_firmware=False, link=link))
    if not upload:
        return built
    done: list[FlashResult] = []
    emulated = [s.compiled.board.kind == "qemu" for s in stages]
    downs = [qemu.free_port() if joined and all(emulated[k:k + 2]) and k + 1 < len(stages) else None
             for k in range(len(stages))]  # chip k's down link listens there, chip k+1's up link connects
    try:
        for stage, port, result in zip(plan.staged.stages, ports, built):
            k = stage.index
            up = downs[k - 1] if k > 0 else None
            wires = f"{up or ''}:{downs[k] or ''}" if up or downs[k] else ""
            board = result.board
            if board.kind == "qemu" and port is None:
                port = f"socket://127.0.0.1:{qemu.free_port()}"  # each chip an emulator of its own
            progress(f"stage {stage.index}: uploading to {board.name}" + (f" on {port}" if port else ""))
            done.append(flash_compiled(stage.compiled, board, result.project, f"{plan.model} (stage {stage.index})",
                                       port, link=links[k], link_ports=wires))
    except BaseException:
        for r in done:
            if r.emulator is not None:
                end_emulators_on(socket_port(r.port))
        raise
    return done


def summary(plan: SystemPlan, results: Sequence[FlashResult]) -> list[str]:
    """What ``mcudeploy flash -b SYSTEM`` prints: each stage's firmware, its memory use and where it runs."""
    lines = [f"{plan.system.name}: {len(results)} firmware(s) for the {len(plan.staged.stages)} stage(s) of {plan.model}"]
    one = len(results) == 1 < len(plan.staged.stages)  # one firmware for every stage: the two-core one
    for stage, r in zip(plan.staged.stages, results):
        where = ("not uploaded (--no-upload)" if not r.uploaded else
                 f"QEMU runs it on {r.port}" if r.emulator else f"uploaded to {r.port}")
        who = "stages 0 and 1 on its two cores" if one else f"stage {stage.index}"
        lines.append(f"  {who} on {r.board.name}: {r.elf}; {where}")
        lines += [f"    {line}" for line in r.memory.lines()]
    for name in sorted({r.board.name for r in results if r.emulator}):
        lines.append(f"stop the emulators with `mcudeploy flash -b {name} --stop --all`")
    return lines
