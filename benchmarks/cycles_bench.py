"""Estimated milliseconds of the MLPerf Tiny int8 models on a real board (issues 20 and 42), next to the fastest
latencies published for that board.

Each model (MODELS/tflite: KWS DS-CNN, VWW MobileNetV1, IC ResNet-8, AD autoencoder) is planned with each
objective (mcudeploy/objective: ``--objective memory``, the default plan with the least arena, and
``--objective latency``, the fastest plan whose arena fits the board's first region, with the constants its kernels
read copied to SRAM where room is left), compiled for the
emulated board of the real board's core (EMULATED: qemu-m4 for a Cortex-M4, qemu-m7 for a Cortex-M7, qemu-an505
for a Cortex-M33, qemu-m55 for a Cortex-M55; its first region made as large as the real board's where it is
smaller, emulator_for), run once under QEMU with its execution traced, and its instructions weighted by the
core's published timings, the board's clock, flash wait states and its data cache's misses on weights read from
flash (mcudeploy/estimate). The figure is an estimate; its stated error is the
range the timings' own ranges give (for a Cortex-M4: a taken branch 2 to 4 cycles, a divide 2 to 12, the flash
accelerator hitting always or never, a missed data-cache line waiting once or once per flash read).
Cycles per MAC divide the estimated cycles by the model's multiply-accumulates (mcudeploy/simulate's count).

The published figures (PUBLISHED) are issue 42's table: for NUCLEO-L4R5ZI, NUCLEO-F746ZG, NUCLEO-H7A3ZI-Q and
NUCLEO-U575ZI-Q the fastest CPU-only latency of the MLPerf Tiny closed division (the ``results.txt`` medians of
mlcommons/tiny_results_v1.1 to v1.3), and, for NUCLEO-L4R5ZI, the TFLM reference submission of v0.5
(closed/reference/results/Nucleo-L4R5ZI/*/performance: KWS 5.497 inf/s, VWW 1.665, IC 1.420, AD 99.487). They are
other code on the real chip: the ratio compares mcudeploy's kernels as estimated with theirs as measured, it does
not calibrate the estimate (benchmarks/estimate_check.py checks the estimate itself against CMSIS-NN's published
latencies). NUCLEO-H7A3ZI-Q and NUCLEO-U575ZI-Q run at the published figures' 280 and 160 MHz (PUBLISHED_HZ) since
their board files have clock trees; a board whose board file runs it at another clock (its reset clock, without a
clock tree) gets the published figures in cycles too, beside the estimated cycles.

Beside each plan's arena, TensorFlow Lite Micro's for the same model (memory_bench.tflm_arena; --no-tflm skips it).

Where the latency plan copies constants to SRAM, the model is planned once more with --objective latency and the
latency plan's own arena as --memory-budget (no room for constants: they stay in flash), and memory / latency is
split into the kernels' choice (memory against that plan) and the copy to SRAM (that plan against latency).

    python benchmarks/cycles_bench.py [--models DIR] [--board nucleo-l4r5zi] [--objectives memory,latency] [--json]
                                      [--no-tflm]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcudeploy.boards import load_board  # noqa: E402
from mcudeploy.device.traced import trace_model  # noqa: E402
from mcudeploy.estimate.cores import RANGES  # noqa: E402
from mcudeploy.estimate.cycles import estimate_cycles, estimate_range, milliseconds, target_for  # noqa: E402
from mcudeploy.device.stand_in import EMULATED, emulator_for, latency_budget  # noqa: E402
from mcudeploy.objective import Objective  # noqa: E402
from mcudeploy.compile import compile_model  # noqa: E402
from mcudeploy.device.runner import timed_nodes  # noqa: E402
from mcudeploy.ops import registry  # noqa: E402
from mcudeploy.plan import CompileOptions  # noqa: E402

MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
MODEL_NAMES = ("kws_dscnn_int8", "vww_mobilenetv1_int8", "ic_resnet8_int8", "ad_autoencoder_int8")
# board: {model: (ms, who)}: issue 42's table of the fastest published CPU-only MLPerf Tiny latencies (the board of
# the "STM32F746 Discovery" row is the chip of nucleo-f746zg)
PUBLISHED = {
    "nucleo-l4r5zi": dict(zip(MODEL_NAMES, ((43.19, "X-CUBE-AI 9.0, v1.2"), (88.93, "X-CUBE-AI 9.0, v1.2"),
                                            (165.13, "X-CUBE-AI 9.0, v1.2"), (4.05, "Plumerai 2023.05, v1.1")))),
    "nucleo-f746zg": dict(zip(MODEL_NAMES, ((17.75, "Plumerai, v1.1"), (34.08, "Plumerai, v1.1"),
                                            (61.57, "Bosch HALE, v1.1"), (1.70, "Bosch HALE, v1.1")))),
    "nucleo-h7a3zi-q": dict(zip(MODEL_NAMES, ((11.32, "X-CUBE-AI 9.0, v1.2"), (23.80, "X-CUBE-AI 9.0, v1.2"),
                                              (40.84, "X-CUBE-AI 9.0, v1.2"), (1.08, "Bosch HALE, v1.2")))),
    "nucleo-u575zi-q": dict(zip(MODEL_NAMES, ((28.99, "X-CUBE-AI 10.2, v1.3"), (59.27, "X-CUBE-AI 10.2, v1.3"),
                                              (104.29, "Plumerai, v1.1"), (3.09, "Bosch, v1.2")))),
}
# the clock the published figures ran at, for a board whose file runs it at another clock (its reset clock): issue
# 42's table (NUCLEO-H7A3ZI-Q, Cortex-M7 at 280 MHz; NUCLEO-U575ZI-Q, Cortex-M33 at 160 MHz)
PUBLISHED_HZ = {"nucleo-h7a3zi-q": 280_000_000, "nucleo-u575zi-q": 160_000_000}
# boards with no published figure of their own, and the nearest published board: (its name, core and clock, who,
# {model: ms}); printed beside the estimate with that board's cycles, not as a comparison of the same chip.
# EK-RA8D1: Renesas, MLPerf Tiny v1.2 closed (mlcommons/tiny_results_v1.2, closed/Renesas/results/EK-RA8D1/*/
# performance/results.txt medians: KWS 288.611 inf/s, VWW 74.665, IC 117.948, AD 1884.138; systems/EK-RA8D1.json:
# Cortex-M85 at 480 MHz, TensorFlow Lite Micro with CMSIS-NN)
NEAREST = {"alif-e7-appkit-hp": ("EK-RA8D1", "Cortex-M85 at 480 MHz", 480e6, "TFLM + CMSIS-NN, v1.2", dict(zip(
    MODEL_NAMES, (round(1000 / 288.611, 3), round(1000 / 74.665, 3), round(1000 / 117.948, 3), round(1000 / 1884.138, 3)))))}
TFLM = {"nucleo-l4r5zi": dict(zip(MODEL_NAMES, (round(1000 / 5.497, 1), round(1000 / 1.665, 1), round(1000 / 1.420, 1),
                                                round(1000 / 99.487, 2))))}


def estimate(path: Path, board: str, objective: str, budget: int | None = None) -> dict:
    """One plan of the model (for the emulated board of ``board``'s core, with the real board's first region as
    the latency budget's bound: the plan must fit the board it is estimated for; emulator_for, or within
    ``budget`` bytes where given), traced and weighted for ``board``."""
    target_board = load_board(board)
    # the latency budget is the real board's first region (less its stack), not the emulator's 4 MB
    if budget is None and objective != "memory":
        budget = latency_budget(target_board, None)
    compiled = compile_model(str(path), emulator_for(target_board),
                             options=CompileOptions(objective=Objective(objective, budget)))
    target = target_for(target_board, compiled.board)
    spans = trace_model(compiled, target=target)
    cycles = sum(estimate_cycles(s, target) for s in spans)
    low = high = 0.0
    for s in spans:
        lo, hi = estimate_range(s, target)
        low, high = low + lo, high + hi
    without = sum(1 for n in compiled.graph.nodes if n.attrs.get("scratch", 1) == 0)
    macs = sum(int(registry.get(n.op).macs(compiled.graph, n)) for n in compiled.graph.nodes)
    return {"arena_bytes": compiled.placement.arena_bytes, "kernels_without_scratch": without,
            "sram_constants_bytes": compiled.objective.sram_constants_bytes or 0,  # offload/sram.py
            "instructions": sum(s["instructions"] for s in spans), "estimated_cycles": round(cycles),
            "macs": macs, "cycles_per_mac": cycles / macs if macs else None,
            "estimated_ms": milliseconds(cycles, target),
            "range_ms": (milliseconds(low, target), milliseconds(high, target)), "target": target.describe(),
            "operators": [{"name": n.name, "op": n.op, "instructions": s["instructions"]}
                          for n, s in zip(timed_nodes(compiled), spans)]}


def tflm_arena(path: Path) -> dict:
    """TensorFlow Lite Micro's arena for the model at ``path`` (memory_bench.tflm_arena: the smallest arena_size with
    which its interpreter, tflite-micro from PyPI on this host, runs one inference, and the part of it its planner
    gives the activations), or {"error": why not}."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import memory_bench

    missing = memory_bench.tflm_status()
    return {"error": missing} if missing else memory_bench.tflm_arena(path)


def bench(path: Path, board: str, objectives=("memory", "latency"), tflm: bool = True) -> dict:
    plans = {o: estimate(path, board, o) for o in objectives}
    first = plans[objectives[0]]
    fast = plans.get("latency")
    if fast and fast["sram_constants_bytes"] and "memory" in plans:
        # the latency plan's SRAM held to its arena: the same kernels with their constants left in flash, which
        # splits memory/latency into the kernels' choice and the constants' copy to SRAM
        plans["latency, constants in flash"] = estimate(path, board, "latency", fast["arena_bytes"])
    fastest = PUBLISHED.get(board, {}).get(path.stem)
    row = {"model": path.stem, "board": board, "target": first["target"], "objectives": plans,
           "published_ms": fastest[0] if fastest else None, "published_by": fastest[1] if fastest else None,
           "tflm_ms": TFLM.get(board, {}).get(path.stem),
           "tflm_arena": tflm_arena(path) if tflm else {"error": "skipped (--no-tflm)"}}
    if board in NEAREST:
        name, core, hz, who, figures = NEAREST[board]
        row["nearest"] = {"board": name, "core": core, "who": who, "ms": figures[path.stem],
                          "cycles": round(figures[path.stem] * hz / 1e3)}
    hz = PUBLISHED_HZ.get(board)
    if fastest and hz and hz != load_board(board).clock_hz:  # published at another clock than the board runs at
        row["published_hz"] = hz
        row["published_cycles"] = round(fastest[0] * hz / 1e3)
    return row


def _bytes(n) -> str:
    return f"{n:,}" if isinstance(n, int) else "–"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=MODELS)
    ap.add_argument("--board", default="nucleo-l4r5zi")
    ap.add_argument("--objectives", default="memory,latency", help="comma-separated (default memory,latency)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-tflm", action="store_true", help="skip TensorFlow Lite Micro's arena")
    args = ap.parse_args()
    folder = args.models / "tflite"
    if not folder.is_dir():
        print(f"the MLPerf Tiny models are not at {folder} (set MCUDEPLOY_MODELS)")
        return 1
    objectives = tuple(args.objectives.split(","))
    rows = [bench(folder / f"{name}.tflite", args.board, objectives, not args.no_tflm) for name in MODEL_NAMES]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"estimated on {rows[0]['target']}; an estimate from a QEMU trace, not a measurement")
    heads = "".join(f" {o + ' arena B':>16} {'+ SRAM const. B':>15} {o + ' est. ms':>16} {'range ms':>13} "
                    f"{'cyc/MAC':>8}" for o in objectives)
    print(f"{'model':<22}{heads} {'published ms':>13} {'latency/published':>18} {'TFLM ms':>8} {'TFLM arena B':>13} "
          f"{'TFLM act. B':>12}")
    for r in rows:
        cells = ""
        for o in objectives:
            e = r["objectives"][o]
            lo, hi = e["range_ms"]
            per_mac = f"{e['cycles_per_mac']:.2f}" if e["cycles_per_mac"] else "–"
            cells += (f" {e['arena_bytes']:>16,} {e['sram_constants_bytes']:>15,} {e['estimated_ms']:>16.1f} "
                      f"{f'{lo:.1f}-{hi:.1f}':>13} {per_mac:>8}")
        pub, tflm = r["published_ms"], r["tflm_ms"]
        fastest = r["objectives"][objectives[-1]]["estimated_ms"]
        ratio = f"{fastest / pub:.2f}x" if pub else "–"
        arena = r["tflm_arena"]
        print(f"{r['model']:<22}{cells} {pub if pub else '–':>13} {ratio:>18} {tflm if tflm else '–':>8} "
              f"{_bytes(arena.get('arena')):>13} {_bytes(arena.get('activations')):>12}")
    for r in rows:
        if "error" in r["tflm_arena"]:
            print(f"{r['model']}: no TFLite Micro arena: {r['tflm_arena']['error']}")
    for r in rows:
        plans = r["objectives"]
        print(f"{r['model']}: " + "; ".join(f"{o} {p['instructions']:,} instructions, {p['estimated_cycles']:,} cycles, "
                                            f"{p['macs']:,} MACs, {p['kernels_without_scratch']} kernel(s) without "
                                            f"scratch" for o, p in plans.items())
              + (f"; published: {r['published_ms']} ms by {r['published_by']}" if r["published_ms"] else ""))
    for r in rows:
        plans = r["objectives"]
        if "latency, constants in flash" in plans:
            m, f, l = (plans[o]["estimated_cycles"] for o in ("memory", "latency, constants in flash", "latency"))
            print(f"{r['model']}: memory / latency {m / l:.2f}x = the kernels' choice {m / f:.2f}x (memory against "
                  f"the latency plan with its constants in flash, --memory-budget "
                  f"{plans['latency, constants in flash']['arena_bytes']:,}: {f:,} cycles) x the constants "
                  f"copied to SRAM {f / l:.2f}x ({plans['latency']['sram_constants_bytes']:,} B)")
    for r in rows:
        if "published_cycles" in r:
            e = r["objectives"][objectives[-1]]
            print(f"{r['model']}: estimated {e['estimated_cycles']:,} cycles ({objectives[-1]} plan) at the board's "
                  f"{load_board(args.board).clock_hz / 1e6:g} MHz; published {r['published_ms']} ms at "
                  f"{r['published_hz'] / 1e6:g} MHz, {r['published_cycles']:,} cycles "
                  f"({e['estimated_cycles'] / r['published_cycles']:.2f}x in cycles; the wait states and caches "
                  f"differ with the clock: beside, not against)")
    for r in rows:
        if "nearest" in r:
            n, e = r["nearest"], r["objectives"][objectives[-1]]
            print(f"{r['model']}: estimated {e['estimated_cycles']:,} cycles; the nearest published board, {n['board']} "
                  f"({n['core']}, {n['who']}): {n['ms']} ms, {n['cycles']:,} cycles (another core and clock: beside, "
                  f"not against)")
    published = ("Published figures: the fastest CPU-only MLPerf Tiny latencies on this board (issue 42's table; "
                 "TFLM: the v0.5 reference), other code on the real chip, no same-code calibration."
                 if args.board in PUBLISHED else f"No published figures for {args.board} in this script.")
    if any("published_cycles" in r for r in rows):
        published += (f" {args.board} runs at its reset clock (its board file has no clock tree: reset_clock says "
                      f"why), the published figures at {PUBLISHED_HZ[args.board] / 1e6:g} MHz: its ms and "
                      "latency/published are at the reset clock.")
    print("+ SRAM const. B: the constants the latency objective copies to SRAM at start-up, where the first region has "
          "room beside the arena (mcudeploy/offload/sram.py; read there without flash wait states). The published "
          "figures are each engine's own build; where it kept its weights is not in the results tables.")
    print("TFLM arena: the smallest arena_size with which TensorFlow Lite Micro's interpreter (tflite-micro from PyPI, "
          "on this 64-bit host) runs one inference, and TFLM act. the part its planner gives the activations "
          "(benchmarks/memory_bench.py); mcudeploy's arena holds the activations and scratch only.")
    core = load_board(args.board).core
    spread = ", ".join(f"{c} {lo}-{hi}" for c, (lo, hi) in RANGES[core].items())
    print(f"error: the range is the {core}'s timing ranges (mcudeploy/estimate/cores.py RANGES, cycles per "
          f"class: {spread}), the flash accelerator always/never hitting, and each data-cache miss on weights "
          "in flash waiting once per line or once per flash read (mcudeploy/estimate/flash.py). " + published)
    return 0


if __name__ == "__main__":
    sys.exit(main())
