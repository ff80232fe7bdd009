"""Copies through mcud_dma.h under QEMU (tests/device/firmware/dma_copy.c): on qemu-an505 its PL081
moves bytes from the PSRAM (the slow region) to the internal SRAM while the core does not touch them,
and a bounded wait reports a stall; on qemu-m4, without a DMA engine, the kernel library's memcpy
fallback copies the same bytes with the core.

What QEMU's PL080 model does (hw/dma/pl080.c, 7.2): the whole transfer, linked items included, runs
inside the register write that enables the channel (or the controller), element by element and in no
guest time; so under QEMU a copy is done before mcud_dma_copy_start returns, and a wait stalls only
when the controller is held disabled, as here."""
from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.boards import load_board
from mcudeploy.device.build import ARCH, CC, CFLAGS, firmware_build_spec
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.device.runner import run_on_board, timed_nodes
from mcudeploy.compile import compile_graph, compile_model, lower
from mcudeploy.frontend import import_model
from mcudeploy.plan import CompileOptions
from mcudeploy.resources import firmware_dir
from mcudeploy.search.stalls import round_lines, settle
from residual import SHAPE, residual_model, skip_model

pytestmark = pytest.mark.qemu

HERE = Path(__file__).resolve().parent
BIG = 16384  # bytes of the timed copy (dma_copy.c)
HELD_BOUND = 200  # ticks the held copy's wait may take


def run_dma_firmware(board_name: str, work: Path) -> dict[str, int]:
    """Build dma_copy.c for the board (its start-up, timer and, where it has one, DMA driver, plus the
    kernel library's fallback), run it under QEMU; the report's "key value" lines as a dict."""
    board = load_board(board_name)
    spec = firmware_build_spec(board, work / "measurer")  # the board's linker script, with its regions' sections
    runtime, dma = firmware_dir() / "runtime", board.dma_engine
    slow = next(r for r in board.regions if r.speed is not None)
    defines = [f"-DSLOW_SECTION=\"{slow.section}\"", f"-DDMA_BASE={dma.base if dma else 0}u",
               f"-DDMA_CHANNELS={dma.channels if dma else 0}u", "-DMCUD_DMA_PL080_ITEMS=2u"]
    if dma and board.core == "cortex-m33":
        defines.append("-DNS_ALIAS_OFFSET=0x10000000u")  # the IDAU's secure and non-secure aliases
    sources = [HERE / "firmware" / "dma_copy.c", firmware_dir() / "kernels" / "dma.c",
               *(runtime / f for f in (*ARCH[board.arch].runtime, "system.c", f"timer_{board.timer.driver}.c"))]
    if dma:
        sources.append(runtime / f"dma_{dma.driver}.c")
    elf = work / "dma.elf"
    build = subprocess.run([CC, *board.cpu_flags, *CFLAGS, *defines, f"-I{runtime}", f"-I{firmware_dir() / 'include'}",
                            *map(str, sources), *spec["ldflags"], "-T", spec["linker_script"], *spec["libs"],
                            "-o", str(elf)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run(["qemu-system-arm", "-M", board.qemu.machine, "-display", "none", "-monitor", "none",
                          "-serial", "null", "-icount", f"shift={board.qemu.icount_shift}",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)],
                         capture_output=True, text=True, timeout=60, cwd=work)
    assert run.returncode == 0, f"the DMA test firmware exited with {run.returncode}: {run.stderr[-2000:]}"
    lines = (work / "dma-report.txt").read_text().split("\n")
    return {key: int(value) for key, value in (line.split() for line in lines if line)}


def test_the_pl081_of_qemu_an505_copies_from_psram_to_sram_without_the_core(need_qemu, tmp_path):
    board = load_board("qemu-an505")
    got = run_dma_firmware(board.name, tmp_path)
    regions = {r.name: r for r in board.regions}
    assert {"psram", "sram"} <= set(board.dma_engine.reaches)  # the board data say the engine reaches both
    assert got["slow_address"] == regions["psram"].origin  # the source really is in the slow region
    assert regions["sram"].origin <= got["fast_address"] < regions["sram"].origin + regions["sram"].size
    # the bytes arrived, and the engine's channel read every one of them (its source pointer moved past the end)
    assert got["big_same"] == 1 and got["big_engine_read"] == BIG
    assert (got["big_done"], got["big_stalled"], got["big_error"], got["big_ticks"]) == (1, 0, 0, 0)
    # the core did not copy them: starting and waiting took a fraction of what memcpy of the same bytes took
    assert got["memcpy_same"] == 1 and got["memcpy_ticks"] > 100
    assert got["big_start_ticks"] + got["big_wait_ticks"] < got["memcpy_ticks"] / 10
    assert got["odd_same"] == 1 and got["odd_done"] == 1  # byte elements between odd addresses
    assert got["pair_same"] == 1 and got["pair_channels_differ"] == 1  # two channels at once
    # two linked items per batch: the wait started the second batch, so it counts as a stall
    assert got["long_same"] == 1 and (got["long_done"], got["long_stalled"]) == (1, 1)
    # the controller held disabled: the bounded wait gave up after its bound, said so, and nothing was copied
    assert got["held_untouched"] == 1
    assert (got["held_done"], got["held_stalled"]) == (0, 1) and HELD_BOUND <= got["held_ticks"] < 2 * HELD_BOUND
    # enabled again, QEMU ran the transfer at once: the next wait finds it done
    assert got["released_same"] == 1 and (got["released_done"], got["released_stalled"]) == (1, 0)
    # a secure master's writes to the non-secure alias of the secure SRAM are dropped (the board's note)
    assert got["ns_alias_untouched"] == 1 and got["ns_alias_done"] == 1


def test_without_a_dma_engine_the_core_copies(need_qemu, tmp_path):
    got = run_dma_firmware("qemu-m4", tmp_path)
    assert got["big_same"] == 1 and got["odd_same"] == 1 and got["long_same"] == 1 and got["pair_same"] == 1
    assert (got["big_done"], got["big_stalled"], got["big_ticks"]) == (1, 0, 0)  # nothing left to wait for
    assert got["big_start_ticks"] > got["memcpy_ticks"] / 2  # the copy was memcpy, inside the start


def test_a_swap_on_qemu_an505_is_an_asynchronous_copy_and_bit_exact(need_qemu, tmp_path):
    """A residual block under a fast-memory budget on the DMA board: the skip goes out to the PSRAM and
    back as CopyStart/CopyWait pairs (the PL081 copies), the outputs are the host's unconstrained
    plan's, bit for bit, and each wait takes about its copy's modelled ticks (nothing in between hides
    it: the block's peak is where the skip idles)."""
    model = residual_model()
    plain = compile_model(model, "host")
    fitted = compile_model(model, "qemu-an505", options=CompileOptions(fast_memory="60%"))
    ops = [n.op for n in fitted.order]
    assert ops.count("CopyStart") == ops.count("CopyWait") == 2 and "Copy" not in ops
    sample = {plain.graph.inputs[0]: np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)}
    want = run_compiled_on_host(plain, [sample], tmp_path / "host")
    got = run_on_board(fitted, [sample], workdir=tmp_path / "fw")
    assert all(np.array_equal(g, w) for g, w in zip(got.outputs[0], want[0]))
    for node, ticks in zip(timed_nodes(fitted), got.runs[0].op_ticks):
        if node.op == "CopyWait":  # the modelled time, less the start's few ticks, plus the wait's own
            assert node.attr("ticks") - 5 <= ticks <= node.attr("ticks") + 5


def slower(compiled, ticks: int):
    """The plan with every asynchronous copy modelled as taking ``ticks``: a board slower than its data."""
    nodes = {n.name: n.with_(attrs={**n.attrs, "ticks": ticks}) if n.op in ("CopyStart", "CopyWait") else n
             for n in compiled.graph.nodes}
    graph = compiled.graph.replace(nodes=tuple(nodes.values()))
    schedule = dataclasses.replace(compiled.schedule, order=tuple(nodes[n.name] for n in compiled.order))
    return dataclasses.replace(compiled, graph=graph, schedule=schedule)


def test_a_stalled_wait_moves_its_trigger_earlier_until_it_stalls_no_more(need_qemu, tmp_path):
    """The skip of skip_model swapped on qemu-an505 with its copies modelled slower than the board data
    say (1.5 times the convolution before the copy's wait): the plan starts the copy back one step
    before that wait, the wait stalls, the feedback moves the trigger a step earlier, and the stall
    is gone."""
    graph = lower(import_model(skip_model()))
    sample = {graph.inputs[0]: np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)}
    runs = []

    def measure(compiled):
        runs.append(run_on_board(compiled, [sample], workdir=tmp_path / f"fw{len(runs)}"))
        return runs[-1].runs[0].op_ticks

    sram = compile_model(skip_model(), "qemu-an505").placement.arenas["sram"]
    fast = compile_graph(graph, "qemu-an505", options=CompileOptions(fast_memory=int(sram * 0.9)))
    ticks = dict(zip((n.name for n in timed_nodes(fast)), measure(fast)))
    start = next(i for i, n in enumerate(fast.order) if n.op == "CopyStart" and n.attr("of") == "a" and i > 3)
    slow = int(1.5 * ticks[fast.order[start + 1].name])  # more than the one convolution between start and wait
    budget = fast.offload.budget_bytes
    last, rounds = settle(lambda earlier: slower(compile_graph(graph, "qemu-an505", options=CompileOptions(
        fast_memory=budget, earlier=earlier)), slow), measure)
    assert rounds[0].stalls.get("a", 0) > slow / 4  # stalled: the convolution hid two thirds
    assert rounds[-1].triggers["a"] < rounds[0].triggers["a"] and rounds[-1].stalls == {}
    lines = round_lines(rounds)  # what measure --settle prints
    assert "stalled waits: a " in lines[0] and "triggers moved earlier: a step" in lines[len(rounds) - 1]
    assert lines[-1].startswith("no wait stalls")
    want = run_compiled_on_host(compile_model(skip_model(), "host"), [sample], tmp_path / "host")
    assert all(np.array_equal(g, w) for g, w in zip(runs[-1].outputs[0], want[0]))
