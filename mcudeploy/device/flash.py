"""``mcudeploy flash``: build the measurer (and a model) with PlatformIO and upload it.

``flash(model, board)`` writes the PlatformIO project (device/pio_project.py), runs ``pio run``
(device/pio_core.py, offline), reports the firmware's SRAM and flash use against the board's
capacity, refuses a firmware that does not fit, then runs ``pio run -t upload``: an emulated
board starts in the background (device/emulator.py); real boards upload through PlatformIO's
usual means (OpenOCD or st-flash for ST-LINK, a copy to the board's USB disk for mbed), and fail
in one sentence when none is there, or when it fails for a common cause (no probe, no permission, the
chip not answering: device/upload_failure.py).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from mcudeploy.boards import ARM_TOOLCHAIN, Board, load_board
from mcudeploy.device import elfsize
from mcudeploy.device.emulator import (LINKS_ENV, PORT_ENV, Emulator, emulator_port, end_emulators_on,
                                       running_emulator, socket_port)
from mcudeploy.device.build import worst_case_stack
from mcudeploy.device.host import BuildError
from mcudeploy.device.pio_core import pio_failure, run_pio
from mcudeploy.device.pio_project import BUILD_SPEC, default_project_dir, describe, firmware_elf, generate_project
from mcudeploy.device.stack_bound import with_guard
from mcudeploy.device.uf2 import write_uf2
from mcudeploy.device.upload_failure import check_serial_port, explain_upload
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import output_lock, write_atomic
from mcudeploy.fit import TO_THE_BUILD, check_fit
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions, plan_dict, plan_id


def upload(project: Path, board: Board, core: Optional[Path] = None, port: Optional[str] = None,
           links: str = "") -> subprocess.CompletedProcess:
    """``pio run -t upload``: start the emulator (on ``port``, a socket URL, else a free port; ``links``: its
    link ports, emulator.LINKS_ENV) or flash the board."""
    env = {LINKS_ENV: links} if links else {}
    if board.kind == "qemu":
        _need_tool(board.qemu.binary, f"install {board.qemu.package}")
        env[PORT_ENV] = str(socket_port(port)) if port else "0"
    proc = run_pio(project, ["upload"], core=core, env=env)
    if proc.returncode != 0:
        explained = explain_upload(proc.stdout, board) if board.kind == "hardware" else None
        if explained:
            raise MCUDeployError(explained)
        reason = pio_failure(proc)
        if reason:
            raise MCUDeployError(f"cannot upload to board '{board.name}': {reason.rstrip('.')}")
        raise BuildError(f"PlatformIO failed to upload {project}:\n{proc.stdout[-6000:]}")
    return proc


def _need_tool(name: str, how: str) -> None:
    if shutil.which(name) is None:
        raise MCUDeployError(f"flashing needs {name}, which is not on PATH; {how}")


@dataclass(frozen=True)
class FlashResult:
    board: Board
    project: Path
    elf: Path
    memory: elfsize.MemoryReport
    what: str
    port: Optional[str] = None  # where to talk to the firmware: the emulator's socket URL, or the user's --port
    uploaded: bool = True
    emulator: Optional[Emulator] = None
    plan_id: str = ""  # the flashed plan's id (plan.plan_id, NAME_PLAN_ID), "" for the measurer alone
    model_id: int = 0  # what the firmware's IDENTIFY reports: the CRC-32 of its model.c (0: no model)


def build_and_check(board: Board, project: Path, spec: dict, model_name: str,
                    core: Optional[Path] = None) -> tuple[Path, elfsize.MemoryReport]:
    """``pio run``; the ELF and its memory report, or one sentence saying by how much it does not fit.

    Two steps, as the direct build (build.py) takes them: PlatformIO compiles the objects (target ``objects``), the
    worst-case stack from the call graphs its compiler wrote beside them is checked against the board's stack and
    sizes the guard below it (stack_bound.with_guard, written into the project's build spec), then PlatformIO links.
    The two builds' firmware are the same bytes."""
    _need_tool(spec.get("cc", "arm-none-eabi-gcc"), f"install {spec.get('packages', ARM_TOOLCHAIN.packages)}")
    elf = firmware_elf(project, board)
    proc = run_pio(project, ["objects"], core=core)
    if proc.returncode != 0:
        raise BuildError(f"PlatformIO failed to build {project}:\n{proc.stdout[-6000:]}")
    found = worst_case_stack(board, spec, sorted(elf.parent.rglob("*.o")))
    spec = with_guard(spec, found, board.core)
    write_atomic(project / BUILD_SPEC, json.dumps(spec, indent=1) + "\n")
    proc = run_pio(project, core=core)
    capacity = (spec["flash_bytes"], spec["sram_bytes"], spec["sram_region"], spec["extra_regions"])
    if proc.returncode != 0:
        if "overflowed" in proc.stdout or "will not fit" in proc.stdout:
            sizing = run_pio(project, ["sizing"], core=core)
            sizing_elf = elf.with_name("firmware-sizing.elf")
            if sizing.returncode == 0 and sizing_elf.is_file():
                elfsize.check_fits(elfsize.memory_report(sizing_elf, *capacity, stack=found), model_name, board.name)
        raise BuildError(f"PlatformIO failed to build {project}:\n{proc.stdout[-6000:]}")
    report = elfsize.memory_report(elf, *capacity, stack=found)
    elfsize.check_fits(report, model_name, board.name)
    return elf, report


def flash(model: Optional[str], board_name: str, port: Optional[str] = None, project: Optional[Path] = None,
          upload_firmware: bool = True, input_shapes=None, core: Optional[Path] = None,
          allow_overflow: bool = False, warn=None, options: Optional[CompileOptions] = None) -> FlashResult:
    """Build the measurer (with ``model`` when given, compiled with ``options``, default the defaults) for the
    board with PlatformIO and upload it.

    A plan that does not fit the board is refused before the project is written (mcudeploy/fit.py;
    ``allow_overflow``: a warning, to ``warn`` when given), a firmware that does not fit after the build,
    before any upload.
    """
    board = flashable(load_board(board_name), port)
    compiled = compile_model(model, board, options or CompileOptions(), input_shapes) if model else None
    if compiled is not None:
        check_fit(compiled, allow_overflow, TO_THE_BUILD, warn)
    return flash_plan(compiled, board.name, port, project, upload_firmware, core)


def flash_plan(compiled, board_name: str, port: Optional[str] = None, project: Optional[Path] = None,
               upload_firmware: bool = True, core: Optional[Path] = None) -> FlashResult:
    """Build the measurer with ``compiled`` (a plan for ``board_name``: compiled afresh, or the one a
    compile -o or tune -o folder records, mcudeploy/project.py; None: the measurer alone) and upload it.
    The firmware's model.c is the plan's C, so the board's model id (and the plan id model.c returns)
    are the plan's."""
    board = flashable(load_board(board_name), port)
    model = compiled.model if compiled is not None else None
    project = Path(project or default_project_dir(board, model)).resolve()
    with output_lock(project, "flash"):  # one build in a project folder at a time
        return flash_compiled(compiled, board, project, Path(model).name if model else "(measurer alone)", port,
                              upload_firmware, core)


def flashable(board: Board, port: Optional[str] = None) -> Board:
    """``board``, or one sentence saying why flash cannot take it (or its emulated board's --port)."""
    if board.kind not in ("qemu", "hardware"):
        raise MCUDeployError(f"board '{board.name}' is not a microcontroller; flash needs a qemu or hardware "
                             f"board (see `mcudeploy boards`)")
    if board.kind == "qemu" and port:
        socket_port(port)
    if board.kind == "hardware" and port:
        check_serial_port(board, port)
    return board


def flash_compiled(compiled, board: Board, project: Path, label: str, port: Optional[str] = None,
                   upload_firmware: bool = True, core: Optional[Path] = None, link: Optional[dict] = None,
                   link_ports: str = "") -> FlashResult:
    """Build the measurer with ``compiled`` (a model compiled for ``board``, or None) in ``project``,
    check it fits, and upload it (an emulated board starts in the background). ``link``: a chip of a
    chain's link ports and tensors (target/linked_firmware.py); ``link_ports``: an emulated chip's, "UP:DOWN"."""
    spec = generate_project(board, project, compiled, link)
    elf, report = build_and_check(board, project, spec, label, core)
    ids = dict(plan_id=plan_id(plan_dict(compiled)) if compiled is not None else "", model_id=spec["model_id"])
    if board.upload is not None and board.upload.uf2_family:  # the file a boot drive takes, with or without upload
        write_uf2(elf.with_name("firmware.bin"), board.flash_origin, board.upload.uf2_family)
    if not upload_firmware:
        return FlashResult(board, project, elf, report, describe(compiled), port, uploaded=False, **ids)
    if board.kind == "qemu":
        port = port or f"socket://127.0.0.1:{emulator_port(board)}"
    try:
        upload(project, board, core, port, link_ports)
    except BaseException:
        if board.kind == "qemu":  # an emulator the interrupted upload started must not outlive it
            end_emulators_on(socket_port(port))
        raise
    if board.kind == "qemu":
        emu = running_emulator(board.name, socket_port(port))
        if emu is None:
            raise MCUDeployError(f"the emulator for board '{board.name}' stopped right after it started")
        return FlashResult(board, project, elf, report, describe(compiled), emu.url, emulator=emu, **ids)
    return FlashResult(board, project, elf, report, describe(compiled), port, **ids)


def summary(result: FlashResult) -> list[str]:
    """What ``mcudeploy flash`` prints."""
    lines = [f"built the {result.what} for {result.board.name} with PlatformIO: {result.elf}"]
    if result.plan_id:
        lines.append(f"plan {result.plan_id}, model id 0x{result.model_id:08X} (the CRC-32 of its model.c, which "
                     f"the board reports and run and measure --port check)")
    lines += result.memory.lines()
    up = result.board.upload
    if up is not None and up.uf2_family:
        lines.append(f"UF2 for the board's {up.uf2_drive or 'boot'} drive: {result.elf.with_name('firmware.uf2')} (hold "
                     f"BOOTSEL while plugging the board in, then copy it there)")
    if not result.uploaded:
        lines.append("not uploaded (--no-upload)")
    elif result.board.kind == "qemu":
        limit = result.emulator.lifetime if result.emulator else 0
        lines.append(f"QEMU runs it in the background{f' for up to {limit:g} s' if limit else ''}; talk to it with "
                     f"--port {result.port} (stop it with `mcudeploy flash -b {result.board.name} --stop "
                     f"--port {result.port}`)")
    else:
        where = f"--port {result.port}" if result.port else "--port with its serial port, e.g. /dev/ttyACM0"
        lines.append(f"uploaded to {result.board.name}; talk to it with {where}")
    return lines

