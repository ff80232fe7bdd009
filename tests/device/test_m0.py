"""qemu-m0, a Cortex-M0 (ARMv6-M) with the micro:bit's 16 KB of SRAM under QEMU's microbit machine: the board's data
agree with the machine they start, the firmware is ARMv6-M code throughout, and the loop of qemu-m4 runs on it: the
autoencoder (int8) and a 16x8 model (int16 activations, int8 weights) bit for bit the host board's and within a step
of onnxruntime, and measure gives every operator its ticks.

The models are the ones that fit 16 KB untuned: MLPerf Tiny's autoencoder (arena 768 B) and the 16x8 LSTM of the
int16 corpus (lstm_kws-int16, arena 1,960 B); the int8 conformance cases run on the same core with its SRAM enlarged
(test only). Few samples keep the module near a minute and a half on a quiet machine."""
from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from shared_models import need_models, shared_models

from mcudeploy import check
from mcudeploy.boards import instructions_per_tick, load_board
from mcudeploy.check.against_host import compare_with_host
from mcudeploy.compile import compile_model
from mcudeploy.device.measure import measure_model
from mcudeploy.device.qemu import command_line
from mcudeploy.device.runner import run_on_board
from mcudeploy.simulate.timing_cache import TimingCache

pytestmark = pytest.mark.qemu

BOARD = "qemu-m0"
SAMPLES = 3
CORPUS16 = Path(__file__).resolve().parents[1] / "onnx16_corpus"


def autoencoder() -> Path:
    need_models()
    found = shared_models("ad_autoencoder_int8.onnx")
    if not found:
        pytest.skip("the MLPerf Tiny autoencoder is not among the shared models")
    return found[0]


def test_the_board_is_a_micro_bit_with_a_larger_flash(tmp_path, need_qemu):
    board = load_board(BOARD)
    assert board.regions[0].size == 16 * 1024 and board.regions[0].origin == 0x20000000  # the nRF51822's SRAM
    assert "-mcpu=cortex-m0" in board.cpu_flags and board.features == frozenset()
    # the flash QEMU gives the machine is the flash the linker and the fit check are given
    cmd = command_line(board, tmp_path / "fw.elf", 1234)
    assert cmd[cmd.index("-M") + 1] == "microbit"
    assert f"nrf51-soc.flash-size={board.flash_bytes}" in cmd
    # SysTick counts the 16 MHz CPU clock: 62.5 instructions a tick under -icount shift=0
    assert instructions_per_tick(board) == 62.5


def test_the_firmware_is_armv6m_code(need_arm_gcc, tmp_path):
    from mcudeploy.device.build import build_firmware

    fw = build_firmware(BOARD, tmp_path)
    attributes = subprocess.run(["arm-none-eabi-readelf", "-A", str(fw.elf)], capture_output=True, text=True).stdout
    assert "Tag_CPU_arch: v6S-M" in attributes and "Tag_THUMB_ISA_use: Thumb-1" in attributes, attributes


def run_and_check(path: Path, tmp_path: Path):
    compiled = compile_model(path, BOARD)
    samples = check.random_inputs(compiled.graph, SAMPLES, seed=3)
    result = run_on_board(compiled, samples, workdir=tmp_path)
    same, lines = compare_with_host(compiled, result.outputs, samples)
    verdict = check.check_outputs(path, compiled, result.outputs, samples)
    assert same and verdict.ok, "\n".join(lines + verdict.lines())
    # no guard on ARMv6-M (no MPU, no stack limit): a quarter of the stack left unused says it did not overflow
    assert result.stack is not None and result.stack.used <= 3 * result.stack.size // 4, result.stack.describe()
    return compiled


def test_the_autoencoder_runs_bit_for_bit_and_measure_times_each_operator(need_qemu, tmp_path):
    compiled = run_and_check(autoencoder(), tmp_path / "run")
    timed = measure_model(compiled, repeat=1, cache=TimingCache(BOARD, tmp_path / "cache"))
    assert len(timed.ops) == 10 and all(o.ticks > 0 for o in timed.ops)  # the autoencoder's ten Gemm
    # about 4.0 M instructions a run (64,575 ticks of 62.5 measured on 2026-11-27): the int8 Gemm on the M0's C path
    assert 3.5e6 < timed.total_ticks * instructions_per_tick(compiled.board) < 4.5e6


def test_a_16x8_model_runs_within_a_step_of_onnxruntime(need_qemu, tmp_path):
    compiled = run_and_check(CORPUS16 / "lstm_kws-int16.onnx", tmp_path)
    assert any(compiled.graph[t].dtype == "int16" for n in compiled.graph.nodes for t in n.outputs)


def test_the_int8_conformance_cases_on_armv6m_with_more_sram(need_qemu, tmp_path):
    """The board matrix's batch of int8 cases (57,728 B with the stack: over qemu-m0's 16 KB, skipped there) on the same
    core and machine with its SRAM enlarged through nrf51-soc's sram-size (test only): every kernel those cases reach
    runs its ARMv6-M code (no unaligned word access, which QEMU traps on this core; no divide instruction), bit for
    bit the host board's."""
    from test_board_matrix import CASE_SAMPLES, batched_cases, run_and_compare

    board = load_board(BOARD)
    sram = 128 * 1024
    board = dataclasses.replace(board, regions=(dataclasses.replace(board.regions[0], size=sram),),
                                qemu=dataclasses.replace(board.qemu, extra_args=board.qemu.extra_args
                                                         + ("-global", f"nrf51-soc.sram-size={sram}")))
    compiled = compile_model(batched_cases(), board)
    samples = check.random_inputs(compiled.graph, CASE_SAMPLES, seed=11)
    runs = run_and_compare(compiled, samples, tmp_path)
    bad = {name: runs.differing(name) for name in runs.names if runs.differing(name)}
    assert len(runs.names) >= 40 and not bad, bad
