"""Every kernel source compiles without a warning, with gcc for the host and with
arm-none-eabi-gcc for a Cortex-M4."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from mcudeploy.resources import firmware_dir

FIRMWARE = firmware_dir()
SOURCES = sorted((FIRMWARE / "kernels").glob("*.c"))
COMPILERS = {"gcc": ["gcc"], "arm": ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb"]}
FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2"]


@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
@pytest.mark.parametrize("cc", list(COMPILERS.values()), ids=list(COMPILERS))
def test_kernel_compiles_cleanly(tmp_path, cc, source):
    if shutil.which(cc[0]) is None:
        pytest.skip(f"{cc[0]} is not installed")
    proc = subprocess.run([*cc, *FLAGS, "-I", str(FIRMWARE / "include"), "-c", str(source), "-o",
                           str(tmp_path / f"{source.stem}.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
