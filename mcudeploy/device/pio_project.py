"""The PlatformIO project of a firmware: platformio.ini, a board manifest made from
``boards/<name>.json`` and the build spec of ``mcudeploy.device.build``.

The project names the platform shipped in ``firmware/platformio`` (``platform = symlink://…``;
with ``file://`` PlatformIO would copy it once and keep using that copy after mcudeploy
changes), which compiles with arm-none-eabi-gcc from PATH and asks for no package. Emulated
boards upload with ``upload_protocol = custom``: the upload command is the ``emulate`` hook of
``mcudeploy.device.emulator``; real boards upload through PlatformIO's usual means.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Optional

from mcudeploy.boards import ARM_TOOLCHAIN, Board
from mcudeploy.codegen import write_project
from mcudeploy.codegen.emit import BANNER, environment
from mcudeploy.device.build import firmware_build_spec
from mcudeploy.device.host import cache_dir
from mcudeploy.files import write_atomic
from mcudeploy.resources import firmware_dir

BUILD_SPEC = "mcudeploy-build.json"
PLATFORM_SUBDIR = "platformio"


def platform_dir() -> Path:
    return firmware_dir() / PLATFORM_SUBDIR


def _upload_settings(board: Board) -> dict:
    if board.kind == "qemu":
        # The port is not in the command (a changed platformio.ini makes PlatformIO rebuild everything):
        # `flash` passes it in the environment, $MCUDEPLOY_EMULATOR_PORT.
        cmd = [sys.executable, "-m", "mcudeploy.device.emulator", "emulate", "--board", board.name, "$SOURCE"]
        return {"protocol": "custom", "protocols": ["custom"], "command": " ".join(_ini_quote(c) for c in cmd),
                "port": "", "note": "starts QEMU with the UART on a TCP socket"}
    up = board.upload
    return {"protocol": up.protocol, "protocols": list(up.protocols), "command": "", "port": up.port,
            "note": f"flashes the board over {up.protocol}"}


def _ini_quote(arg: str) -> str:
    return f'"{arg}"' if re.search(r"[\s;#]", arg) else arg


def board_manifest(board: Board, upload: dict, spec: Optional[dict] = None) -> dict:
    """The values of templates/platformio/board.json.j2: PlatformIO's view of ``boards/<name>.json``.

    The RAM capacity is that of the region the firmware's RAM lives in (the build spec's), so
    PlatformIO's "RAM: used N bytes from M bytes" line agrees with mcudeploy's report.
    """
    spec = spec or {}
    mcu = board.mcu or (board.qemu.machine if board.qemu else "") or board.platformio_board or board.name
    return {
        "description": board.description,
        "vendor": board.vendor or "mcudeploy",
        "url": board.url or "https://docs.platformio.org/en/latest/platforms/creating_board.html",
        "cpu": board.core,
        "mcu": mcu,
        "f_cpu": f"{board.clock_hz}L",
        "flash_bytes": int(spec.get("flash_bytes", board.flash_bytes)),
        "sram_bytes": int(spec.get("sram_bytes", board.sram_bytes)),
        "flash_origin": hex(board.flash_origin),
        "upload_protocol": upload["protocol"],
        "upload_protocols": upload["protocols"],
        "openocd_target": board.upload.openocd_target if board.upload else "",
        "uf2_drive": board.upload.uf2_drive if board.upload else "",
        "jlink_device": board.upload.jlink_device if board.upload else "",
        "cpu_flags": list(board.cpu_flags),
        # a board with a compiler of its own (not arm-none-eabi-gcc): a user's project builds with it (builder/main.py)
        "toolchain": None if board.toolchain == ARM_TOOLCHAIN else {
            "cc": board.toolchain.cc, "packages": board.toolchain.packages,
            "libc_flags": [f for f in dict.fromkeys(board.toolchain.cflags + board.toolchain.ldflags)
                           if f != "-nostartfiles"]},
    }


PLATFORM_BOARDS = "boards"  # the platform's own board manifests (a user's project names them in `board =`)


def platform_board_files() -> dict[str, str]:
    """The platform's board manifests, file name -> text: one per emulated and real board under its mcudeploy
    name, and under its name in PlatformIO's own platform (nucleo_f446re) where no other board has it. They
    are shipped in firmware/platformio/boards/ (`python -m mcudeploy.device.pio_project` writes them)."""
    from mcudeploy.boards import all_boards

    boards = [b for b in all_boards() if b.kind in ("qemu", "hardware") and not b.alias_of]
    pio_ids = [b.platformio_board for b in boards if b.platformio_board]
    env = environment()
    files = {}
    for board in boards:
        text = env.get_template("platformio/board.json.j2").render(
            banner=BANNER, **board_manifest(board, _upload_settings(board)))
        json.loads(text)
        files[f"{board.name}.json"] = text
        if board.platformio_board and pio_ids.count(board.platformio_board) == 1:
            files[f"{board.platformio_board}.json"] = text
    return dict(sorted(files.items()))


def write_platformio_project(board: Board, project: Path, spec: dict, what: str) -> Path:
    """Write platformio.ini, boards/<board>.json and the build spec into ``project``; return the ini's path."""

    project.mkdir(parents=True, exist_ok=True)
    env = environment()
    upload = _upload_settings(board)
    write_atomic(project / BUILD_SPEC, json.dumps(spec, indent=1) + "\n")
    (project / "boards").mkdir(exist_ok=True)
    manifest = env.get_template("platformio/board.json.j2").render(banner=BANNER,
                                                                   **board_manifest(board, upload, spec))
    json.loads(manifest)  # a template slip would only show up inside PlatformIO otherwise
    write_atomic(project / "boards" / f"{board.name}.json", manifest)
    ini = env.get_template("platformio/platformio.ini.j2").render(
        banner=BANNER, what=what, board=board.name, description=board.description,
        platform_dir=platform_dir().resolve().as_posix(), env=board.name, build_spec=BUILD_SPEC,
        upload_protocol=upload["protocol"], upload_command=upload["command"], upload_port=upload["port"],
        upload_note=upload["note"], baud=board.uart.baud)
    write_atomic(project / "platformio.ini", ini)
    return project / "platformio.ini"


def write_platform_boards(folder: Optional[Path] = None) -> Path:
    """Write platform_board_files() into the platform's boards/ (or ``folder``), and nothing else there."""
    folder = Path(folder or platform_dir() / PLATFORM_BOARDS)
    folder.mkdir(parents=True, exist_ok=True)
    files = platform_board_files()
    for stale in folder.glob("*.json"):
        if stale.name not in files:
            stale.unlink()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def firmware_elf(project: Path, board: Board) -> Path:
    return project / ".pio" / "build" / board.name / "firmware.elf"


def generate_project(board: Board, project: Path, compiled=None, link: Optional[dict] = None) -> dict:
    """Write the firmware sources (measurer, plus the model when given) and the PlatformIO project; return the spec."""

    project.mkdir(parents=True, exist_ok=True)
    for stale in ("model.c", "mcud_model.h"):  # a measurer-alone project must not pick up an earlier model
        if compiled is None:
            (project / stale).unlink(missing_ok=True)
    if compiled is not None:

        write_project(compiled, project)
    spec = firmware_build_spec(board, project, link=link)
    write_platformio_project(board, project, spec, describe(compiled))
    return spec


def describe(compiled) -> str:
    return f"measurer with model {Path(compiled.model).name}" if compiled is not None else "measurer alone"


def default_project_dir(board: Board, model: Optional[str]) -> Path:
    stem = Path(model).stem if model else "measurer"
    return cache_dir() / "platformio" / f"{board.name}-{stem}"



if __name__ == "__main__":
    print(write_platform_boards())
