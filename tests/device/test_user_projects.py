"""Issue 37: the README's "your own CMake project" and "your own PlatformIO project", built from the README's own
blocks with a generated folder: the CMake one natively (host gcc) through the generated CMakeLists.txt, its output
the model's; the PlatformIO one offline with mcudeploy's own platform for a board of the user's
choosing (nucleo_f446re, PlatformIO's name), through the generated library.json. The platform's board manifests
are held to boards/*.json."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

from devmodels import matmul
from mcudeploy.boards import load_board
from mcudeploy.cli import main
from mcudeploy.device import flash, pio_core
from mcudeploy.device.pio_project import PLATFORM_BOARDS, platform_board_files, platform_dir
from mcudeploy.errors import MCUDeployError
from test_upload_failure import OPENOCD

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_blocks(heading: str) -> dict[str, str]:
    """The fenced blocks of the README section under ``heading``, by language."""
    text = README.read_text()
    section = re.split(r"\n##+ ", text.split(f"\n### {heading}\n", 1)[1], maxsplit=1)[0]
    return {lang: body for lang, body in re.findall(r"```(\w+)\n(.*?)```", section, re.S)}


def test_the_platform_boards_are_the_board_files():
    shipped = {p.name: p.read_text() for p in (platform_dir() / PLATFORM_BOARDS).glob("*.json")}
    assert shipped == platform_board_files(), "regenerate them: python -m mcudeploy.device.pio_project"
    assert {"nucleo-f446re.json", "nucleo_f446re.json", "qemu-m4.json"} <= set(shipped)


def _kws(tmp_path: Path, board: str) -> Path:
    """What the README's compile line writes: the folder kws/, here of a small float model."""
    out = tmp_path / "app" / "kws"
    assert main(["compile", str(matmul(tmp_path / "model.onnx", 4, seed=3)), "-b", board, "-o", str(out),
                 "--name", "kws"]) == 0
    return out


def test_own_cmake_project_native(tmp_path, capsys):
    if shutil.which("cmake") is None or shutil.which("gcc") is None:
        pytest.skip("needs cmake and gcc (CI installs them from apt)")
    blocks = readme_blocks("Your own CMake project")
    out = _kws(tmp_path, "host")
    capsys.readouterr()
    app = out.parent
    (app / "CMakeLists.txt").write_text(blocks["cmake"])
    (app / "main.c").write_text(blocks["c"])
    build = tmp_path / "build"
    for step in (["cmake", "-S", str(app), "-B", str(build), "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"],
                 ["cmake", "--build", str(build), "-j2"]):
        proc = subprocess.run(step, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    x = np.random.default_rng(5).standard_normal((4, 64)).astype(np.float32)
    got = subprocess.run([str(build / "app")], input=x.tobytes(), capture_output=True, check=True).stdout
    w = onnx.numpy_helper.to_array(onnx.load(tmp_path / "model.onnx").graph.initializer[0])
    want = np.maximum(x @ w, 0)  # the model: Relu(X @ W); the C sums in another order than numpy
    np.testing.assert_allclose(np.frombuffer(got, np.float32).reshape(want.shape), want, rtol=1e-5, atol=1e-5)
    assert np.abs(want).max() > 0


@pytest.mark.qemu
def test_own_platformio_project_for_a_board_of_ones_choice(tmp_path, monkeypatch, capsys):
    """Built offline by mcudeploy's platform for nucleo_f446re with the core's flags; then the upload of that
    project through mcudeploy's upload (what `mcudeploy flash` runs) with a fake openocd failing as a real one
    without a probe: one sentence saying what to check."""
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs arm-none-eabi-gcc (CI installs it from apt)")
    core = tmp_path / "core"
    try:
        pio_core.prepare_core(core)
    except MCUDeployError as exc:
        pytest.skip(str(exc))
    blocks = readme_blocks("Your own PlatformIO project")
    out = _kws(tmp_path, "nucleo-f446re")
    app = out.parent
    (app / "src").mkdir()
    (app / "src" / "main.c").write_text(readme_blocks("Your own CMake project")["c"])
    ini = blocks["ini"].replace("/path/to/mcudeploy/firmware/platformio", platform_dir().resolve().as_posix())
    (app / "platformio.ini").write_text(ini.replace("/path/to/app/kws", out.as_posix()))
    proc = pio_core.run_pio(app, core=core)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert (app / ".pio" / "build" / "myboard" / "firmware.elf").is_file()
    assert "kws @ 1.0.0" in proc.stdout and "from 131072 bytes" in proc.stdout  # the library; the board's SRAM
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "openocd"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint({OPENOCD.format(lines='Error: open failed')!r}, "
                    f"file=sys.stderr)\nsys.exit(1)\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    with pytest.raises(MCUDeployError, match=r"^cannot upload to board 'nucleo-f446re': no ST-LINK probe was found "
                                             r"on USB \(the uploader said \"open failed\"\); check the USB cable"):
        flash.upload(app, load_board("nucleo-f446re"), core)
