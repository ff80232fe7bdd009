"""The cycle estimate checked against latencies it was not built on (issue 42): CMSIS-NN's int8 kernels, which
published MLPerf Tiny results ran on a real board, are run under the same QEMU as mcudeploy's, traced, weighted by
mcudeploy/estimate for that board, and the estimate printed beside the published figure with its error.

The outside figures (MLPerf Tiny closed division, v1.1, Krai's microtvm_cmsis_nn submission on NUCLEO_L4R5ZI,
Cortex-M4F at 120 MHz: mlcommons/tiny_results_v1.1 closed/Krai/results/README.md, performance in inferences per
second): KWS 10.019, VWW 3.324, IC 2.567, AD 116.212, that is 99.81 / 300.84 / 389.56 / 8.60 ms. microTVM calls
CMSIS-NN for convolutions, depthwise convolutions and fully connected layers and generates the rest (pooling,
softmax, the residual ADDs) itself; the harness (cmsis_s8.py) calls CMSIS-NN for those too, so the operators
outside CMSIS-NN's share in that run are counted with CMSIS-NN's code, not TVM's.

The second board, another core: EK-RA6M4 (Renesas RA6M4, Cortex-M33 at 200 MHz), TensorFlow Lite Micro with
CMSIS-NN, 50.57 / 162.36 / 246.18 / 4.61 ms (issue 42's figures). CMSIS-NN's kernels are built for the Cortex-M33
and traced on qemu-an505 (its SSRAM standing in for the board's SRAM, as mcudeploy/device/stand_in.py does), and
weighted for the board as data (AS_DATA: mcudeploy has no board file for it, having no PlatformIO platform to build
for Renesas RA offline): the Cortex-M33 timings of mcudeploy/estimate/cores.py, three code-flash wait cycles (Renesas
FSP, ra/fsp/src/bsp/mcu/ra6m4/bsp_feature.h: three above 150 MHz) and the flash cache on (FSP's start-up turns it on,
R_BSP_FlashCacheEnable). The sizes of its flash and code caches are not in those sources, so the weights read from
flash are charged as SRAM (no data-cache misses counted: the estimate's low side there). Left out there besides: the
SRAM wait cycle FSP sets above 100 MHz (SRAMWTSC) and TFLM's interpreter around the kernels.

Errors that are known, not calibrated away: weights read from flash wait only where the board's data cache
misses, counted by mcudeploy/estimate/flash.py's QEMU plugin with the cache modelled fully associative (the
range's high end has every flash read of a missed line wait); the harness has no
interpreter or runtime around the kernels (microTVM's graph executor, TFLM's interpreter); the published figure
is the median of the benchmark runner's timed loop on the real chip.

    MCUDEPLOY_CMSIS_NN=/path/to/CMSIS-NN python benchmarks/estimate_check.py [--models DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

import cmsis_s8  # noqa: E402
import cycles_bench  # noqa: E402
from cmsis_nn import checkout, how  # noqa: E402
from mcudeploy.boards import load_board  # noqa: E402
from mcudeploy.estimate.cycles import Target, estimate_cycles, estimate_range, milliseconds, target_for  # noqa: E402
from mcudeploy.device.stand_in import first_region  # noqa: E402
from mcudeploy.memory import areas  # noqa: E402
from mcudeploy.frontend import import_model  # noqa: E402
from mcudeploy.compile import lower  # noqa: E402

MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
# board: (the emulated board whose traces stand for its core, who ran it, {model: published ms})
OUTSIDE = {
    "nucleo-l4r5zi": ("qemu-m4", "microTVM + CMSIS-NN (Krai, MLPerf Tiny v1.1)", {
        "kws_dscnn_int8": 1000 / 10.019, "vww_mobilenetv1_int8": 1000 / 3.324, "ic_resnet8_int8": 1000 / 2.567,
        "ad_autoencoder_int8": 1000 / 116.212}),
    "ek-ra6m4": ("qemu-an505", "TFLM + CMSIS-NN (EK-RA6M4, issue 42's figures)", {
        "kws_dscnn_int8": 50.57, "vww_mobilenetv1_int8": 162.36, "ic_resnet8_int8": 246.18,
        "ad_autoencoder_int8": 4.61}),
}
# boards with no board file, as data (the module's docstring): name, core, clock, flash wait states, flash cache on;
# no flash_data, so weights read from flash are charged as SRAM
AS_DATA = {"ek-ra6m4": Target("ek-ra6m4", "cortex-m33", 200_000_000, 3, True)}


def target_of(board: str, emulated: str) -> Target:
    """The estimate's target: a board file's (target_for) or AS_DATA's, refused where the cores differ."""
    if board not in AS_DATA:
        return target_for(load_board(board), load_board(emulated))
    target = AS_DATA[board]
    if target.core != load_board(emulated).core:
        raise SystemExit(f"{board} has a {target.core}, {emulated} another core")
    return target


def harness_board(emulated: str):
    """``emulated`` with its first RAM region its largest of full speed (qemu-an505's 4 MB SSRAM for its 32 KB SRAM):
    the harness keeps every tensor in a buffer of its own."""
    board = load_board(emulated)
    room = max((r for r in board.regions if not r.excluded and r.speed is None), key=lambda r: r.size)
    return board if room.size <= areas(board)[0].capacity else first_region(board, room, room.size)


def cmsis_estimate(cmsis: Path, path: Path, board: str, emulated: str) -> dict:
    """CMSIS-NN's int8 kernels on the model at ``path`` (cmsis_s8.py), traced on ``emulated`` and weighted for the
    real ``board``: instructions (from the ticks, as cmsis_s8.py prints them, and as the trace counts them), the
    estimate and its range, and each call's traced instructions."""
    target = target_of(board, emulated)
    layers = cmsis_s8.measure(cmsis, lower(import_model(path)), harness_board(emulated), path.name, trace=True,
                              caches=target.caches)
    cycles = sum(estimate_cycles(layer.counts, target) for layer in layers)
    ranges = [estimate_range(layer.counts, target) for layer in layers]
    return {"target": target.describe(), "instructions": sum(layer.instructions for layer in layers),
            "traced_instructions": sum(layer.counts["instructions"] for layer in layers),
            "estimated_ms": milliseconds(cycles, target),
            "range_ms": (milliseconds(sum(lo for lo, _ in ranges), target),
                         milliseconds(sum(hi for _, hi in ranges), target)),
            "layers": [{"label": layer.label, "function": layer.function, "instructions": layer.counts["instructions"]}
                       for layer in layers]}


def check(cmsis: Path, path: Path, board: str) -> dict:
    emulated, who, published = OUTSIDE[board]
    row = cmsis_estimate(cmsis, path, board, emulated)
    want = published[path.stem]
    return {"model": path.stem, "board": board, "who": who, "target": row["target"],
            "instructions": row["instructions"], "estimated_ms": row["estimated_ms"], "range_ms": row["range_ms"],
            "published_ms": want, "error": row["estimated_ms"] / want - 1.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=MODELS)
    ap.add_argument("--cmsis-nn", help="a CMSIS-NN checkout (default: $MCUDEPLOY_CMSIS_NN)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cmsis = checkout(args.cmsis_nn)
    if cmsis is None:
        print(how("the estimate is"))
        return 1
    folder = args.models / "tflite"
    if not folder.is_dir():
        print(f"the MLPerf Tiny models are not at {folder} (set MCUDEPLOY_MODELS)")
        return 1
    rows = [check(cmsis, folder / f"{name}.tflite", board) for board, (_, _, figures) in OUTSIDE.items()
            for name in figures]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for board in OUTSIDE:
        mine = [r for r in rows if r["board"] == board]
        print(f"CMSIS-NN's int8 kernels traced on {OUTSIDE[board][0]}, estimated for {mine[0]['target']}, "
              f"against {mine[0]['who']}")
        print(f"{'model':<22} {'instructions':>13} {'est. ms':>9} {'range ms':>13} {'published ms':>13} {'error':>8}")
        for r in mine:
            lo, hi = r["range_ms"]
            print(f"{r['model']:<22} {r['instructions']:>13,} {r['estimated_ms']:>9.1f} {f'{lo:.1f}-{hi:.1f}':>13} "
                  f"{r['published_ms']:>13.2f} {r['error']:>+8.1%}")
        mean = sum(abs(r["error"]) for r in mine) / len(mine)
        print(f"mean absolute error {mean:.1%} over {len(mine)} published figures; negative: the estimate is below "
              f"the real board (the runtime around the kernels, the data cache's model: the module's docstring)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
