"""Estimated milliseconds of the MLPerf Tiny int8 models on NUCLEO-L4R5ZI at 120 MHz (issue 20), next to
MLPerf Tiny's published latencies on that board.

Each model (MODELS/tflite: KWS DS-CNN, VWW MobileNetV1, IC ResNet-8, AD autoencoder) is compiled for
qemu-m4 (the L4R5ZI's Cortex-M4F), run once under QEMU with its execution traced, and its instructions
weighted by the Cortex-M4 TRM's timings and the board's 5 flash wait states (mcudeploy/estimate). The
figure is an estimate; its stated error is the range the TRM's own ranges give (a taken branch 2 to 4
cycles, a divide 2 to 12, the flash accelerator hitting always or never, a data-cache miss on weights read
from flash waiting once for its line or once for each flash read of it: mcudeploy/estimate/flash.py).

The published figures are MLPerf Tiny's closed-division results on NUCLEO-L4R5ZI (120 MHz), each the
median throughput of the round's performance run turned into milliseconds, read from MLCommons'
results repositories (github.com/mlcommons/tiny_results_v0.5, _v1.0, _v1.1):

- TFLM: the reference submission of v0.5 (closed/reference/results/Nucleo-L4R5ZI/*/performance):
  KWS 5.497 inf/s, VWW 1.665, IC 1.420, AD 99.487.
- X-CUBE-AI: STMicroelectronics' latest round with a performance result for the model: v1.1 for VWW
  (8.425 inf/s) and IC (50 inferences in 10.700 s, its log.txt), v1.0 for AD (131.950 inf/s); KWS's
  43.4 ms is the figure issue 20 quotes (v1.1's results.txt is not in the repository; v1.0 gave
  13.323 inf/s, 75.1 ms).

They are other code (ST's X-CUBE-AI kernels, TFLM's reference kernels) on the real chip: the ratio
compares mcudeploy's kernels as estimated with theirs as measured, it does not calibrate the estimate.

Each model is planned with each objective (mcudeploy/objective.py): ``--objective memory`` (the default
plan, the least arena) and ``--objective latency`` (the fastest plan whose arena fits the board's first
region: every kernel keeps its scratch unless it must go to fit); both are traced, and their estimated
milliseconds and arenas printed side by side.

With ``--board nucleo-f746zg`` the traces are ``qemu-m7``'s and the published columns are empty (the figures above
are NUCLEO-L4R5ZI's).

    python benchmarks/cycles_bench.py [--models DIR] [--board nucleo-l4r5zi] [--objectives memory,latency] [--json]
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
from mcudeploy.estimate.cycles import estimate_cycles, estimate_range, milliseconds, target_for  # noqa: E402
from mcudeploy.memory import areas  # noqa: E402
from mcudeploy.objective import Objective  # noqa: E402
from mcudeploy.compile import compile_model  # noqa: E402

MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
# the emulated board whose traces stand for a real board's core
EMULATED = {"cortex-m4": "qemu-m4", "cortex-m7": "qemu-m7"}
# MLPerf Tiny on NUCLEO-L4R5ZI, ms (see the module's docstring for each figure's round and file); none is
# printed for another board
PUBLISHED_BOARD = "nucleo-l4r5zi"
PUBLISHED = {
    "kws_dscnn_int8": {"X-CUBE-AI": 43.4, "TFLM": round(1000 / 5.497, 1)},
    "vww_mobilenetv1_int8": {"X-CUBE-AI": round(1000 / 8.425, 1), "TFLM": round(1000 / 1.665, 1)},
    "ic_resnet8_int8": {"X-CUBE-AI": round(10700 / 50, 1), "TFLM": round(1000 / 1.420, 1)},
    "ad_autoencoder_int8": {"X-CUBE-AI": round(1000 / 131.950, 2), "TFLM": round(1000 / 99.487, 2)},
}


def estimate(path: Path, board: str, objective: str) -> dict:
    """One plan of the model (for the emulated board of ``board``'s core, EMULATED, with the real board's
    first region as the latency budget's bound: the plan must fit the board it is estimated for), traced
    and weighted for ``board``."""
    target_board = load_board(board)
    # the latency budget is the real board's first region (less its stack), not the emulator's 4 MB
    budget = areas(target_board)[0].capacity if objective != "memory" else None
    compiled = compile_model(str(path), EMULATED[target_board.core], objective=Objective(objective, budget))
    target = target_for(target_board, compiled.board)
    spans = trace_model(compiled, target=target)
    cycles = sum(estimate_cycles(s, target) for s in spans)
    low = high = 0.0
    for s in spans:
        lo, hi = estimate_range(s, target)
        low, high = low + lo, high + hi
    without = sum(1 for n in compiled.graph.nodes if n.attrs.get("scratch", 1) == 0)
    return {"arena_bytes": compiled.placement.arena_bytes, "kernels_without_scratch": without,
            "instructions": sum(s["instructions"] for s in spans), "estimated_cycles": round(cycles),
            "estimated_ms": milliseconds(cycles, target),
            "range_ms": (milliseconds(low, target), milliseconds(high, target)), "target": target.describe()}


def bench(path: Path, board: str, objectives=("memory", "latency")) -> dict:
    plans = {o: estimate(path, board, o) for o in objectives}
    first = plans[objectives[0]]
    published = PUBLISHED[path.stem] if board == PUBLISHED_BOARD else {"X-CUBE-AI": None, "TFLM": None}
    return {"model": path.stem, "board": board, "published_ms": published, "target": first["target"],
            "objectives": plans}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=MODELS)
    ap.add_argument("--board", default="nucleo-l4r5zi")
    ap.add_argument("--objectives", default="memory,latency", help="comma-separated (default memory,latency)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    folder = args.models / "tflite"
    if not folder.is_dir():
        print(f"the MLPerf Tiny models are not at {folder} (set MCUDEPLOY_MODELS)")
        return 1
    objectives = tuple(args.objectives.split(","))
    rows = [bench(folder / f"{name}.tflite", args.board, objectives) for name in PUBLISHED]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"estimated on {rows[0]['target']}; an estimate from a QEMU trace, not a measurement")
    heads = "".join(f" {o + ' arena B':>16} {o + ' est. ms':>16} {'range ms':>13}" for o in objectives)
    print(f"{'model':<22}{heads} {'X-CUBE-AI ms':>13} {'TFLM ms':>9}")
    for r in rows:
        pub = r["published_ms"]

        def shown(v):
            return f"{v:.1f}" if v is not None else "–"

        cells = ""
        for o in objectives:
            e = r["objectives"][o]
            lo, hi = e["range_ms"]
            cells += f" {e['arena_bytes']:>16,} {e['estimated_ms']:>16.1f} {f'{lo:.1f}-{hi:.1f}':>13}"
        print(f"{r['model']:<22}{cells} {shown(pub['X-CUBE-AI']):>13} {shown(pub['TFLM']):>9}")
    for r in rows:
        plans = r["objectives"]
        print(f"{r['model']}: " + "; ".join(f"{o} {p['instructions']:,} instructions, {p['estimated_cycles']:,} cycles, "
                                            f"{p['kernels_without_scratch']} kernel(s) without scratch"
                                            for o, p in plans.items()))
    published = ("Published figures: MLPerf Tiny on NUCLEO-L4R5ZI (rounds and files in this script's docstring), "
                 "other kernels on the real chip (no same-code calibration)." if args.board == PUBLISHED_BOARD else
                 f"No published figures for {args.board} in this script.")
    print("error: the range is the core's timing ranges (mcudeploy/estimate/cores.py RANGES; Cortex-M4: taken branch "
          "2-4 cycles, divide 2-12), the flash accelerator always/never hitting, and each data-cache miss on weights "
          "in flash waiting once per line or once per flash read (mcudeploy/estimate/flash.py). " + published)
    return 0


if __name__ == "__main__":
    sys.exit(main())
