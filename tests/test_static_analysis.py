"""The generated C and the kernel library pass GCC's static analyser (``-fanalyzer``) with no finding.

The kernels are analysed as the host builds them and as the Cortex-M4 (DSP) and Cortex-M55 (Helium) boards do, so
that every #if branch of the library is read; the zoo's models' model.c as generated for the host. A finding is
printed with its path through the code, as GCC gives it. About 60 s of compiler time, spread over the cores."""
from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import zoo

from mcudeploy.boards import load_board
from mcudeploy.codegen import write_project
from mcudeploy.compile import compile_model
from mcudeploy.resources import firmware_dir

ANALYSE = ["-fanalyzer", "-O1", "-fdiagnostics-plain-output"]
KERNELS = sorted((firmware_dir() / "kernels").glob("*.c"))
# (board whose compiler and CPU flags are used, what it adds to the library's #if branches)
TARGETS = (("host", "the portable C"), ("qemu-m4", "DSP"), ("qemu-m55", "Helium"))


def _flags(board) -> tuple[str, list[str]]:
    if board.kind == "host":
        return board.build.cc, [f for f in board.build.cflags if not f.startswith("-O")]
    from mcudeploy.device.build import CFLAGS

    flags = [*board.cpu_flags, *board.toolchain.cflags, *CFLAGS]
    return board.toolchain.cc, [f for f in flags if not f.startswith("-O")]


def _findings(cc: str, flags: list[str], sources: list[Path], include: Path, extra=()) -> list[str]:
    def one(source: Path) -> str:
        proc = subprocess.run([cc, *flags, *ANALYSE, *extra, "-I", str(include), "-c", str(source), "-o", os.devnull],
                              capture_output=True, text=True)
        return proc.stderr.strip() if proc.returncode != 0 or "-Wanalyzer" in proc.stderr else ""

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return [f"{s.name}:\n{text}" for s, text in zip(sources, pool.map(one, sources)) if text]


@pytest.mark.parametrize("board_name", [b for b, _ in TARGETS], ids=[f"{b}-{what}" for b, what in TARGETS])
def test_kernels_have_no_finding(board_name):
    board = load_board(board_name)
    cc, flags = _flags(board)
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed (bash .ci/setup.sh installs it)")
    found = _findings(cc, flags, KERNELS, firmware_dir() / "include")
    assert not found, "\n\n".join(found)


def test_generated_c_has_no_finding(tmp_path):
    board = load_board("host")
    cc, flags = _flags(board)
    sources = []
    for name, build in zoo.BUILDERS.items():
        float_model, int8_model, _ = build(tmp_path / name)
        for kind, model in (("float", float_model), ("int8", int8_model)):
            project = write_project(compile_model(model, board), tmp_path / f"{name}-{kind}")
            sources.append(project / "model.c")
    found = _findings(cc, flags, sources, sources[0].parent / "mcud" / "include")
    assert not found, "\n\n".join(found)
