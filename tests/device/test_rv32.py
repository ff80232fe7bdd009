"""The RISC-V board qemu-rv32 (QEMU virt, RV32IMAC, built with riscv64-unknown-elf-gcc and picolibc): the
measurer serves the protocol and exits through semihosting with the Arm firmware's status, the autoencoder and
a 16x8 model (int16 activations, int8 weights) give the host board's outputs bit for bit and pass run --check,
and measure gives every operator its ticks (one tick one instruction under -icount shift=0)."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from shared_models import MODELS, need_models

from mcudeploy import check
from mcudeploy.boards import load_board
from mcudeploy.check.against_host import compare_with_host
from mcudeploy.compile import compile_model
from mcudeploy.device.build import build_firmware, firmware_build_spec
from mcudeploy.device.measure import measure_model
from mcudeploy.device.qemu import QemuBoard, instructions_per_tick
from mcudeploy.device.runner import run_on_board
from mcudeploy.device.session import Session
from mcudeploy.errors import MCUDeployError
from mcudeploy.simulate.timing_cache import TimingCache

pytestmark = pytest.mark.qemu

BOARD = "qemu-rv32"
CORPUS16 = Path(__file__).resolve().parents[1] / "onnx16_corpus"


@pytest.fixture(scope="module")
def need_rv32():
    board = load_board(BOARD)
    for tool, package in ((board.toolchain.cc, board.toolchain.packages), (board.qemu.binary, board.qemu.package)):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (apt-get install {package})")
    return board


def test_the_measurer_serves_the_protocol_and_exits_with_the_status_asked(need_rv32, tmp_path):
    fw = build_firmware(BOARD, tmp_path)
    with QemuBoard(need_rv32, fw.elf) as emulator:
        s = Session(emulator.start(), BOARD)
        info = s.open(boot_wait=5.0)
        assert (info.board, info.emulated, info.num_ops, info.timer_hz) == (BOARD, True, 0, 10**9)
        assert s.echo(bytes(range(256)) * 4) == bytes(range(256)) * 4
        # the calibration loop is 2 instructions an iteration, and mcycle counts instructions under -icount
        t1, t2 = s.calibrate(100_000), s.calibrate(200_000)
        assert t2 - t1 == 200_000 and instructions_per_tick(need_rv32) == 1.0
        s.exit(5)
        assert emulator.stop() == 5  # semihosting's SYS_EXIT_EXTENDED, as on the Cortex-M boards


def test_the_build_takes_the_risc_v_runtime_and_compiler_from_the_board(tmp_path):
    spec = firmware_build_spec(BOARD, tmp_path)
    names = [Path(s).name for s in spec["sources"]]
    assert {"startup_riscv.c", "arch_riscv.c", "uart_ns16550.c", "timer_riscv_cycle.c"} <= set(names)
    assert "startup.c" not in names and "arch_arm.c" not in names
    assert spec["cc"] == "riscv64-unknown-elf-gcc" and "-DMCUD_UART_REG_SHIFT=0" in spec["cflags"]
    assert "--specs=picolibc.specs" in spec["cflags"] and "--specs=nano.specs" not in spec["ldflags"]
    assert "ENTRY(_start)" in Path(spec["linker_script"]).read_text()
    arm = firmware_build_spec("qemu-m3", tmp_path / "m3")
    assert {"startup.c", "arch_arm.c"} <= {Path(s).name for s in arm["sources"]} and arm["cc"] == "arm-none-eabi-gcc"


def test_a_missing_compiler_is_named_with_its_package(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MCUDeployError, match=r"board qemu-rv32 needs the cross compiler riscv64-unknown-elf-gcc.*"
                                             r"apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"):
        build_firmware(BOARD, tmp_path / "p")


@pytest.mark.parametrize("path", [MODELS / "onnx" / "ad_autoencoder_int8.onnx", CORPUS16 / "dscnn_gap-int16.onnx"],
                         ids=["ad_int8", "dscnn_16x8"])
def test_models_equal_the_host_board_and_pass_check(path, need_rv32, tmp_path):
    if path.parent != CORPUS16:
        need_models()
    compiled = compile_model(path, BOARD)
    samples = check.random_inputs(compiled.graph, 3, seed=3)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
    verdict = check.check_outputs(path, compiled, result.outputs, samples)
    assert verdict.ok, verdict.lines()
    assert result.info.board == BOARD and all(t > 0 for t in result.runs[0].op_ticks)


def test_measure_gives_every_operator_its_ticks(need_rv32, tmp_path):
    compiled = compile_model(CORPUS16 / "dscnn_gap-int16.onnx", BOARD)
    first = measure_model(compiled, repeat=2, cache=TimingCache(BOARD, tmp_path / "c"))
    assert first.device_used and len(first.ops) >= 4
    assert all(o.ticks > 0 for o in first.ops)
    convs = [o for o in first.ops if o.label.startswith("Conv")]
    assert convs and all(o.ticks == o.max for o in convs)  # integer kernels: the same instructions every repetition


def test_a_stack_too_small_faults_on_its_guard_and_says_so(need_rv32, tmp_path, monkeypatch):
    """The stack's guarded bottom (a locked read-only PMP entry): a store there traps, and the trap handler exits
    QEMU with MCUD_EXIT_STACK as the Cortex-M's MPU guard does; the autoencoder needs about 1.3 KB of stack, so the
    build's check of the bound (stack_bound.check_stack) is turned off to reach the guard at run time."""
    from mcudeploy.device import stack_bound
    need_models()
    monkeypatch.setattr(stack_bound, "check_stack", lambda *a, **k: None)
    small = dataclasses.replace(need_rv32, stack_bytes=512)
    compiled = compile_model(MODELS / "onnx" / "ad_autoencoder_int8.onnx", small)
    with pytest.raises(MCUDeployError, match=r"stack of 512 B overflowed on board qemu-rv32"):
        run_on_board(compiled, check.random_inputs(compiled.graph, 1, seed=0), workdir=tmp_path / "p")
