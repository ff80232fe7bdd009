"""The generated C builds at any optimization level a user's project compiles with, not only the -O2 that mcudeploy's
own firmware uses: CMake's Debug (-O0) and MinSizeRel (-Os), PlatformIO's debug build (-Og), -O3, and a frame
pointer kept (-fno-omit-frame-pointer, which takes r7 from the register allocator). The kernels' inline assembly
needs up to fourteen registers; GCC 12 failed it with "impossible constraints" at every one of these levels before
its operands were fixed registers, and its combine pass crashed on an MVE kernel at -Os and -Og. Compiled with
-Wall -Wextra -Werror for a core of each kind (DSP, MVE, neither), and run under QEMU at -O0 and -Os bit for bit
against the host's -O2 build. At -O0 the kernels are called, not inlined (MCUD_INLINE): inlined, one operator's
function took 84 KB of stack and the outputs were wrong without a fault."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bounded
from mcudeploy.boards import load_board
from mcudeploy.codegen.emit import write_project
from mcudeploy.compile import compile_graph, compile_model
from mcudeploy.device import build
from mcudeploy.plan.options import CompileOptions
from mcudeploy.resources import firmware_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the graph builders
from ops.conv_graphs import random_convs  # noqa: E402

ARM = "arm-none-eabi-gcc"
CORPUS = Path(__file__).resolve().parents[1] / "keras_corpus"
BOARDS = ("qemu-m4", "qemu-m55", "qemu-m3")  # the DSP path, Helium, and neither
LEVELS = ("-O0", "-Og", "-Os", "-O3", "-O2 -fno-omit-frame-pointer")
needs_arm = pytest.mark.skipif(shutil.which(ARM) is None, reason=f"{ARM} is not installed")
# CI's bounded size (tests/bounded.py): every level on qemu-m4, whose C is the portable C plus the DSP path's assembly;
# qemu-m55 (Helium) at -Os and with the frame pointer, qemu-m3 (the portable C alone, which qemu-m4 compiles too) at
# -Os: each core's own branches at an optimizing level, where both the front end's warnings (any level) and the flow
# analysis's (-Wmaybe-uninitialized, -Warray-bounds: optimizing levels only) are given. The pairs left out took 60 s
# of CI's kernel compiles at stop 50, and those at -O0 and -Og of qemu-m55 and qemu-m3 another 31 s at stop 71;
# MCUDEPLOY_FULL_CAMPAIGNS=1 runs every pair
OUTSIDE_CI = {("qemu-m55", "-O3"), ("qemu-m3", "-O3"), ("qemu-m3", "-O2 -fno-omit-frame-pointer"),
              ("qemu-m55", "-O0"), ("qemu-m55", "-Og"), ("qemu-m3", "-O0"), ("qemu-m3", "-Og")}
PAIRS = [bounded.case(board, level, id=f"{board}-{level}", in_ci=(board, level) not in OUTSIDE_CI)
         for board in BOARDS for level in LEVELS]


def _compile(board: str, level: str, sources: list[Path], include: Path, out: Path) -> str:
    """arm-none-eabi-gcc's errors compiling ``sources`` for ``board`` at ``level`` ("" when none)."""
    out.mkdir(parents=True, exist_ok=True)
    flags = [*load_board(board).cpu_flags, "-std=c99", *level.split(), "-Wall", "-Wextra", "-Werror"]
    proc = subprocess.run([ARM, *flags, "-I", str(include), "-c", *map(str, sources)], cwd=out, capture_output=True,
                          text=True)
    return "" if proc.returncode == 0 else proc.stderr


@needs_arm
@pytest.mark.parametrize("board,level", PAIRS)
def test_every_kernel_compiles_at_the_level(tmp_path, board, level):
    fw = firmware_dir()
    errors = _compile(board, level, sorted((fw / "kernels").glob("*.c")), fw / "include", tmp_path)
    assert not errors, errors


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """Per board, generated folders whose model.c inlines every block kernel with assembly: random convolutions
    (groups of taps that leave the loop of four groups a tail of one, two or three, tiles, channels of weights 0),
    and a Keras model (convolutions, depthwise and pointwise, a mean, a fully connected layer, a softmax)."""
    root = tmp_path_factory.mktemp("levels")
    made = {}
    for board in BOARDS:
        graph = random_convs(np.random.default_rng(3), 5, "tflite")
        folders = [write_project(compile_graph(graph, board, name="convs", options=CompileOptions(scratch="keep")),
                                 root / board / "convs")]
        folders.append(write_project(compile_model(CORPUS / "dscnn_gap-int8.tflite", board), root / board / "dscnn"))
        made[board] = folders
    return made


@needs_arm
@pytest.mark.parametrize("board,level", PAIRS)
def test_generated_model_compiles_at_the_level(tmp_path, projects, board, level):
    for folder in projects[board]:
        errors = _compile(board, level, [folder / "model.c"], folder / "mcud" / "include", tmp_path)
        assert not errors, f"{folder.name}: {errors}"


@pytest.mark.qemu
@pytest.mark.parametrize("board,level,model", [("qemu-m4", "-O0", None), ("qemu-m4", "-O0", "dscnn_gap-int8"),
                                               ("qemu-m4", "-Os", "dscnn_gap-int8"),
                                               ("qemu-m55", "-Og", "dscnn_gap-int8")])
def test_firmware_at_another_level_equals_the_host(tmp_path, monkeypatch, board, level, model):
    """The firmware built at ``level`` instead of -O2 (every source: the kernels, model.c, the runtime) computes the
    same bits as the host: the fixed registers hold what the compiler put there at any level."""
    missing = [t for t in ("qemu-system-arm", ARM) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    from mcudeploy import check
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    assert "-O2" in build.CFLAGS
    monkeypatch.setattr(build, "CFLAGS", [level if f == "-O2" else f for f in build.CFLAGS])
    if model is None:
        compiled = compile_graph(random_convs(np.random.default_rng(11), 5, "onnx"), board, name="convs",
                                 options=CompileOptions(scratch="keep"))
    else:
        compiled = compile_model(CORPUS / f"{model}.tflite", board)
    samples = check.random_inputs(compiled.graph, 2, seed=3)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
