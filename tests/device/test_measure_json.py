"""``mcudeploy measure --json`` on an emulated board: the shape benchmarks and scripts rely on
(issue 6): every operator's ``ticks`` and, under QEMU -icount, its guest ``instructions``."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import onnx
import pytest
from conformance.test_int8_cases import CASES, quantized
from object_cache import fresh_cache

pytestmark = pytest.mark.qemu

OP_KEYS = {"index", "name", "kernel", "signature", "ticks", "mean_ticks", "max_ticks", "repeat", "cached",
           "instructions"}


def conv_model(tmp_path) -> str:
    """A one-Conv int8 model (the int8 conformance case conv_k3_s1_p1) in ``tmp_path``."""
    build, _ = CASES["conv_k3_s1_p1"]
    model, _ = quantized(build, seed=1)
    path = tmp_path / "conv_int8.onnx"
    onnx.save(model, path)
    return str(path)


def test_measure_json_reports_ticks_and_instructions_per_operator(tmp_path, need_qemu):
    path = conv_model(tmp_path)
    env = {**os.environ, "MCUDEPLOY_CACHE": str(fresh_cache(tmp_path / "cache"))}
    proc = subprocess.run([sys.executable, "-m", "mcudeploy", "measure", str(path), "-b", "qemu-m4", "--json",
                           "--repeat", "2"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    d = json.loads(proc.stdout)

    assert d["board"] == "qemu-m4" and d["device_used"] is True
    assert d["instructions_per_tick"] == 40.0  # -icount shift=0: a 25 MHz SysTick tick is 40 instructions
    assert d["total_ticks"] == sum(o["ticks"] for o in d["ops"])
    assert d["total_instructions"] == round(d["total_ticks"] * 40)
    assert [o["index"] for o in d["ops"]] == list(range(len(d["ops"])))
    for o in d["ops"]:
        assert OP_KEYS <= set(o), f"operator {o.get('name')} lacks {OP_KEYS - set(o)}"
        assert isinstance(o["ticks"], int) and isinstance(o["instructions"], int)
        assert o["instructions"] == round(o["ticks"] * 40)
        assert o["repeat"] == 2 and not o["cached"]
    conv = [o for o in d["ops"] if o["name"].startswith("Conv:")]
    assert len(conv) == 1 and conv[0]["ticks"] > 0 and conv[0]["kernel"].startswith("mcud_")
    # 6 output channels x 9x9 pixels x 4x3x3 taps; SMLAD's two multiply-adds per instruction are the floor
    assert conv[0]["instructions"] >= 6 * 9 * 9 * 4 * 3 * 3 / 2
    # the firmware's stack use over the full run and the timings (READ_STACK): the serving loop's frames at least
    assert 64 < d["stack"]["used"] < d["stack"]["size"] == 4096, d["stack"]
    # beside it the worst case of the firmware's call graph (mcudeploy/device/stack_bound.py), which holds it
    assert d["stack"]["used"] <= d["stack"]["worst_case"] == d["memory"]["stack_worst_case"] < 4096, d["stack"]
    again = subprocess.run([sys.executable, "-m", "mcudeploy", "measure", str(path), "-b", "qemu-m4", "--repeat", "2"],
                           capture_output=True, text=True, env=env)
    assert again.returncode == 0, again.stderr + again.stdout
    assert "all from the timing cache" in again.stdout and "stack:" not in again.stdout  # no board, no figure


def test_measure_json_estimates_cycles_for_a_real_board(tmp_path, need_qemu):
    path = conv_model(tmp_path)
    env = {**os.environ, "MCUDEPLOY_CACHE": str(fresh_cache(tmp_path / "cache"))}
    proc = subprocess.run([sys.executable, "-m", "mcudeploy", "measure", str(path), "-b", "qemu-m4", "--json",
                           "--repeat", "1", "--estimate-for", "nucleo-l4r5zi"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    d = json.loads(proc.stdout)
    est = d["estimate"]
    assert (est["for"], est["core"], est["clock_hz"], est["flash_wait_states"]) == ("nucleo-l4r5zi", "cortex-m4",
                                                                                   120_000_000, 5)
    assert "estimate" in est["note"] and d["estimated_cycles"] == est["estimated_cycles"]
    assert abs(d["estimated_cycles"] - sum(o["estimated_cycles"] for o in d["ops"])) <= len(d["ops"])
    assert d["estimated_ms"] == pytest.approx(d["estimated_cycles"] / 120e3, rel=1e-3)
    for o in d["ops"]:
        assert o["estimated_ms"] == pytest.approx(o["estimated_cycles"] / 120e3, abs=1e-4)
        # the trace counts what the timer counts (40 instructions a tick), on the data of a whole run where RUN_OP
        # runs on what the run left in the arena: a float kernel's path depends on its data
        assert abs(o["traced_instructions"] - o["instructions"]) <= 0.1 * o["instructions"] + 80, o
        assert o["estimated_cycles"] >= o["traced_instructions"]  # a Cortex-M4 spends a cycle or more on each
    conv = next(o for o in d["ops"] if o["name"].startswith("Conv:"))  # integer: the same instructions on any data
    assert abs(conv["traced_instructions"] - conv["instructions"]) <= 0.01 * conv["instructions"] + 80, conv
    # the weights are read from flash through the board's 8 lines of 32 bytes: every line of them misses at least
    # once, and no miss without a read
    weights = next(i for i in onnx.load(path).graph.initializer if len(i.dims) == 4)
    assert conv["flash_misses"] >= weights.dims[0] * weights.dims[1] * weights.dims[2] * weights.dims[3] // 32, conv
    assert conv["flash_reads"] >= conv["flash_misses"] > 0, conv


def estimated_conv(tmp_path, board: str, real: str) -> tuple[dict, dict]:
    """(measure --json of the one-Conv model on ``board`` with --estimate-for ``real``, its Conv's entry), having
    checked that the trace counts the Conv's instructions as the timer does."""
    path = conv_model(tmp_path)
    env = {**os.environ, "MCUDEPLOY_CACHE": str(fresh_cache(tmp_path / "cache"))}
    proc = subprocess.run([sys.executable, "-m", "mcudeploy", "measure", str(path), "-b", board, "--json",
                           "--repeat", "1", "--estimate-for", real], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    d = json.loads(proc.stdout)
    conv = next(o for o in d["ops"] if o["name"].startswith("Conv:"))
    assert abs(conv["traced_instructions"] - conv["instructions"]) <= 0.01 * conv["instructions"] + 80, conv
    low, high = d["estimate"]["range_ms"]  # the error printed beside the estimate
    assert low <= d["estimated_ms"] <= high, d["estimate"]
    return d, conv


def test_the_estimate_for_a_cortex_m55_names_mve_instructions_by_objdump(tmp_path, need_qemu):
    """QEMU 7.2's disassembler takes a 32-bit MVE instruction for a byte pair and an instruction: the trace of
    a qemu-m55 run counts what the timer counts only with the firmware's own disassembly."""
    d, _ = estimated_conv(tmp_path, "qemu-m55", "alif-e7-appkit-hp")
    assert d["estimate"]["core"] == "cortex-m55" and d["estimated_cycles"] > 0


def test_the_estimate_for_a_cortex_m7_issues_two_instructions_a_cycle_at_most(tmp_path, need_qemu):
    """The M7's cycles come from its issue model (estimate/dual.py): fewer than its instructions where they pair,
    never fewer than half of them; the trace is named by objdump as the timer counts it."""
    d, conv = estimated_conv(tmp_path, "qemu-m7", "nucleo-f746zg")
    assert d["estimate"]["core"] == "cortex-m7"
    assert conv["traced_instructions"] / 2 <= conv["estimated_cycles"] < conv["traced_instructions"], conv


def test_estimate_for_a_board_of_another_core_is_one_sentence(tmp_path):
    path = conv_model(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "mcudeploy", "measure", str(path), "-b", "qemu-m4",
                           "--estimate-for", "nucleo-h743zi"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("mcudeploy: error: board qemu-m4 runs a cortex-m4, but --estimate-for nucleo-h743zi has a "
                                   "cortex-m7: the instructions traced would be another core's")


def test_estimate_for_plans_a_model_as_the_real_board_would(tmp_path, need_qemu):
    """A model file measured with --estimate-for is planned for that board (mcudeploy/device/stand_in.py): the
    latency objective's budget is its first region, not the emulator's 4 MB, and the constants its kernels read go
    to SRAM where that region has room, so the trace sees no read of them in flash."""
    from mcudeploy.boards import load_board
    from mcudeploy.memory import areas

    path = conv_model(tmp_path)
    env = {**os.environ, "MCUDEPLOY_CACHE": str(fresh_cache(tmp_path / "cache"))}

    def measured(*budget):
        proc = subprocess.run([sys.executable, "-m", "mcudeploy", "measure", str(path), "-b", "qemu-m4", "--json",
                               "--repeat", "1", "--objective", "latency", *budget, "--estimate-for", "nucleo-l4r5zi"],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr + proc.stdout
        d = json.loads(proc.stdout)
        return d["objective"], next(o for o in d["ops"] if o["name"].startswith("Conv:"))

    objective, conv = measured()
    assert objective["limit_bytes"] == areas(load_board("nucleo-l4r5zi"))[0].capacity < 4 << 20
    assert objective["sram_constants_bytes"] > 0
    tight, in_flash = measured("--memory-budget", "8K")  # no room beside the arena: the constants stay in flash
    assert tight["limit_bytes"] == 8192 and not tight.get("sram_constants_bytes")
    # what is left in flash are the kernel's parameter struct and views, a few words
    assert conv["flash_reads"] < in_flash["flash_reads"] / 4, (conv, in_flash)


def test_the_estimate_for_the_hifive1_counts_its_serial_flash(tmp_path, need_qemu):
    """qemu-rv32's trace stands for the HiFive1 Rev B's E31 (estimate/e31.py): one cycle or more an instruction; the
    Conv's code fetched through the instruction cache from the serial flash (a cold cache fills lines) and its
    weights read over the serial interface with no cache, every access one read command at most and one byte at
    least, a fill a whole line (the board file's xip); the estimate said to be unvalidated (not run on silicon)."""
    from mcudeploy.boards import load_board

    rv32 = load_board("qemu-rv32")
    for tool, package in ((rv32.toolchain.cc, rv32.toolchain.packages), (rv32.qemu.binary, rv32.qemu.package)):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (apt-get install {package})")
    d, conv = estimated_conv(tmp_path, "qemu-rv32", "hifive1-revb")
    est = d["estimate"]
    assert (est["core"], est["clock_hz"], est["silicon"]) == ("sifive-e31", 16_000_000, False)
    assert est["unvalidated"].startswith("unvalidated: board hifive1-revb has not run on silicon")
    weights = next(i for i in onnx.load(conv_model(tmp_path)).graph.initializer if len(i.dims) == 4)
    size = weights.dims[0] * weights.dims[1] * weights.dims[2] * weights.dims[3]
    assert conv["flash_reads"] >= size // 4 and conv["icache_fills"] > 0, conv
    assert conv["spi_commands"] <= conv["icache_fills"] + conv["flash_reads"], conv
    assert conv["spi_bytes"] >= conv["icache_fills"] * 64 + conv["flash_reads"], conv
    for o in d["ops"]:
        assert o["estimated_cycles"] >= o["traced_instructions"], o


@pytest.mark.parametrize("board, real, core", [("qemu-m0", "microbit", "cortex-m0"),
                                               ("qemu-m0-264k", "pico", "cortex-m0plus")])
def test_the_estimate_for_a_cortex_m0_or_m0plus_is_traced_on_qemu_m0(tmp_path, need_qemu, board, real, core):
    """The M0 and M0+ run QEMU's Cortex-M0 instructions (the Pico's plan on qemu-m0-264k, the micro:bit's on qemu-m0);
    neither issues more than one a cycle, so each instruction costs a cycle or more. On the Pico the Conv's code and
    weights come through the XIP cache: every read of a weight goes through it, each fill one 03h command of a whole
    8-byte line (the board file's xip). Both said to be unvalidated (not run on silicon)."""
    d, conv = estimated_conv(tmp_path, board, real)
    est = d["estimate"]
    assert (est["core"], est["silicon"]) == (core, False)
    assert est["unvalidated"].startswith(f"unvalidated: board {real} has not run on silicon")
    for o in d["ops"]:
        assert o["estimated_cycles"] >= o["traced_instructions"], o
    if real == "pico":
        weights = next(i for i in onnx.load(conv_model(tmp_path)).graph.initializer if len(i.dims) == 4)
        size = weights.dims[0] * weights.dims[1] * weights.dims[2] * weights.dims[3]
        assert conv["flash_reads"] >= size // 4 and conv["icache_fills"] > 0, conv
        assert conv["spi_commands"] == conv["icache_fills"] and conv["spi_bytes"] == 8 * conv["icache_fills"], conv


@pytest.mark.parametrize("board, real", [("qemu-an505", "pico2"), ("qemu-m4", "nano33ble")])
def test_the_estimate_for_the_pico2_and_the_nano33ble(tmp_path, need_qemu, board, real):
    """The Pico 2 (traced on qemu-an505): the Conv's code and weights through the XIP cache, every fill 8 bytes and
    a command only where it does not continue the read before (the QMI chains sequential reads: the board file's
    xip). The Nano 33 BLE Sense (traced on qemu-m4): no serial flash, its weights read at 0 wait states. Both said
    to be unvalidated (not run on silicon)."""
    d, conv = estimated_conv(tmp_path, board, real)
    est = d["estimate"]
    assert est["silicon"] is False and est["unvalidated"].startswith(f"unvalidated: board {real} has not run")
    if real == "pico2":
        weights = next(i for i in onnx.load(conv_model(tmp_path)).graph.initializer if len(i.dims) == 4)
        size = weights.dims[0] * weights.dims[1] * weights.dims[2] * weights.dims[3]
        assert conv["flash_reads"] >= size // 4 and conv["icache_fills"] > 0, conv
        assert 0 < conv["spi_commands"] <= conv["icache_fills"] and conv["spi_bytes"] == 8 * conv["icache_fills"], conv
    else:
        assert "spi_commands" not in conv and conv["flash_reads"] > 0, conv
    assert est["clock_hz"] == (12_000_000 if real == "pico2" else 64_000_000)
