"""What the CMSIS-NN harnesses share (cmsis_s16.py: the _s16 kernels on a 16x8 network's layers; cmsis_s8.py: the
int8 kernels on whole MLPerf Tiny models): the checkout, TFLite's multipliers in CMSIS-NN's convention, the build
for an emulated board and its run under QEMU.

Nothing of CMSIS-NN is vendored: the user names a checkout (``MCUDEPLOY_CMSIS_NN=/path/to/CMSIS-NN`` or the
benchmark's ``--cmsis-nn PATH``). A harness is one C file rendered from a template; it is built with CMSIS-NN's
sources for the board's CPU (the DSP path on Cortex-M4: ``__ARM_FEATURE_DSP``, ARM_MATH_DSP; the MVE path on
Cortex-M55: ``__ARM_FEATURE_MVE``, ARM_MATH_MVEI, which CMSIS-NN's arm_nn_math_types.h sets from the compiler's
feature macros and which takes precedence over its DSP path), linked into the board's flash and first RAM region
(cmsis_link.ld.j2, from the board file), with mcudeploy's own
start-up and timer (firmware/runtime/startup.c, timer_systick.c), so its ticks are taken as ``measure_model``
takes mcudeploy's, and writes one line per layer by semihosting: ``layer <i> <ticks> <status>``.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional, Sequence

import jinja2

from mcudeploy.device import qemu
from mcudeploy.device.build import ram_region
from mcudeploy.ops.requant import tflite_multiplier

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LINK = HERE / "cmsis_link.ld.j2"
ENV = "MCUDEPLOY_CMSIS_NN"
OPT = "-O3"  # as issue 6 built CMSIS-NN for kernel_bench.py's int8 figures
SOURCES = ("ActivationFunctions", "BasicMathFunctions", "ConvolutionFunctions", "FullyConnectedFunctions",
           "NNSupportFunctions", "PoolingFunctions", "SoftmaxFunctions", "TransposeFunctions")


def how(what: str) -> str:
    return (f"{what} not compared: name a CMSIS-NN checkout with {ENV}=/path/to/CMSIS-NN or --cmsis-nn PATH "
            f"(git clone https://github.com/ARM-software/CMSIS-NN)")


def checkout(option: Optional[str]) -> Optional[Path]:
    """The CMSIS-NN checkout named by ``option`` or $MCUDEPLOY_CMSIS_NN; None when neither names one."""
    given = option or os.environ.get(ENV)
    if not given:
        return None
    path = Path(given).expanduser()
    if not (path / "Include" / "arm_nnfunctions.h").is_file():
        raise SystemExit(f"{path} is not a CMSIS-NN checkout (no Include/arm_nnfunctions.h)")
    return path


def quantize_multiplier(scale: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier in CMSIS-NN's convention: scale = m * 2^(shift - 31), m in [2^30, 2^31)
    (requant.tflite_multiplier gives the right shift 31 - shift)."""
    m, right = tflite_multiplier(scale)
    return (0, 0) if m == 0 else (m, 31 - right)


def link_script(board) -> str:
    """The harness's linker script for ``board``: its flash (and boot memory) and its first RAM region."""
    ram = ram_region(board)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    return env.from_string(LINK.read_text()).render(
        board=board.name, flash_origin=f"0x{board.flash_origin:08X}", flash_bytes=board.flash_bytes,
        boot_origin=None if board.boot_origin is None else f"0x{board.boot_origin:08X}",
        ram_origin=f"0x{ram.origin:08X}", ram_bytes=ram.size)


def build(cmsis: Path, source: str, board, out: Path, name: str) -> Path:
    """The harness ``source`` built with CMSIS-NN's sources for ``board``'s CPU: the ELF."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.c").write_text(source)
    (out / "link.ld").write_text(link_script(board))
    runtime = ROOT / "firmware" / "runtime"
    srcs = [out / f"{name}.c", runtime / "startup.c", runtime / "timer_systick.c"]
    for folder in SOURCES:
        srcs += sorted(p for p in (cmsis / "Source" / folder).glob("*.c") if not p.stem.endswith(("_f16", "_f32")))
    elf = out / f"{name}.elf"
    cmd = ["arm-none-eabi-gcc", *board.cpu_flags, "-std=c99", OPT, "-DARM_MATH_DSP", "-ffunction-sections",
           "-fdata-sections", f"-I{cmsis / 'Include'}", f"-I{runtime}", *map(str, srcs),
           "-T", str(out / "link.ld"), "-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs",
           "-Wl,--gc-sections", "-o", str(elf)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"building the CMSIS-NN harness {name} failed:\n{proc.stderr[-4000:]}")
    return elf


def run(elf: Path, board, extra: Sequence[str] = ()) -> list[tuple[int, int]]:
    """(ticks, status) per layer, from the harness's semihosting lines; ``extra``: more QEMU arguments (a trace)."""
    q = board.qemu
    cmd = [qemu.qemu_binary(), "-M", q.machine, "-display", "none", "-monitor", "none", "-serial", "null",
           "-icount", f"shift={q.icount_shift},sleep=off", "-semihosting-config", "enable=on,target=native",
           "-kernel", str(elf), *q.extra_args, *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise SystemExit(f"the CMSIS-NN harness ended with status {proc.returncode} "
                         f"({qemu.EXIT_MEANING.get(proc.returncode, 'unknown')}):\n{proc.stdout}{proc.stderr}")
    # QEMU 7.2 writes the semihosting console to its stderr
    rows = [line.split() for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("layer ")]
    return [(int(ticks), int(status)) for _, _, ticks, status in rows]
