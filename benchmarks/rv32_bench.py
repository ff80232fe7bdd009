"""Instructions per multiply-accumulate on the RISC-V board qemu-rv32 (RV32IMAC, no SIMD) against the Cortex-M3
board qemu-m3 (ARMv7-M, no DSP extension either), for the MLPerf Tiny int8 models KWS DS-CNN, VWW MobileNetV1 and
IC ResNet-8 (issue 60, acceptance 3).

Each model is compiled for each board with the default options (the plans' arenas are printed: both boards have a
4 MB first region and 4-byte alignment, so the plans are alike) and run once under QEMU on one seeded random input;
the instructions are the run's total ticks times the board's instructions per tick under -icount shift=0 (1 on
qemu-rv32, whose timer is the instruction count mcycle gives under -icount; 40 on qemu-m3, SysTick at 25 MHz, so its
figure is good to 40 instructions per operator). MACs are mcudeploy's own count (each operator's ``macs``, as
benchmarks/cycles_bench.py counts them). Both cores run the portable C kernels; these are instructions, not cycles.

    python benchmarks/rv32_bench.py [--models DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcudeploy import check  # noqa: E402
from mcudeploy.boards import instructions_per_tick  # noqa: E402
from mcudeploy.compile import compile_model  # noqa: E402
from mcudeploy.device.runner import run_on_board  # noqa: E402
from mcudeploy.ops import registry  # noqa: E402

MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
MODEL_NAMES = ("kws_dscnn_int8", "vww_mobilenetv1_int8", "ic_resnet8_int8")
BOARDS = ("qemu-rv32", "qemu-m3")


def macs_of(compiled) -> int:
    return sum(int(registry.get(n.op).macs(compiled.graph, n)) for n in compiled.graph.nodes)


def instructions(path: Path, board: str) -> dict:
    """One run of the model on ``board`` (one seeded input): its instructions and its plan's arena."""
    compiled = compile_model(str(path), board)
    samples = check.random_inputs(compiled.graph, 1, seed=0)
    with tempfile.TemporaryDirectory(prefix="mcud-rv32-bench-") as tmp:
        result = run_on_board(compiled, samples, workdir=Path(tmp))
    count = result.runs[0].total_ticks * instructions_per_tick(compiled.board)
    return {"instructions": round(count), "arena_bytes": compiled.placement.arena_bytes, "macs": macs_of(compiled)}


def table(rows: dict) -> list[str]:
    out = [f"{'model':<22}{'MACs':>12}" + "".join(f"{b + ' instr':>18}{'/MAC':>7}" for b in BOARDS) + f"{'rv32/m3':>9}"]
    for model, by_board in rows.items():
        macs = by_board[BOARDS[0]]["macs"]
        line = f"{model:<22}{macs:>12,}"
        for b in BOARDS:
            line += f"{by_board[b]['instructions']:>18,}{by_board[b]['instructions'] / macs:>7.2f}"
        ratio = by_board[BOARDS[0]]["instructions"] / by_board[BOARDS[1]]["instructions"]
        out.append(line + f"{ratio:>9.3f}")
    out.append("arenas (bytes): " + "; ".join(f"{m} " + ", ".join(f"{b} {r[b]['arena_bytes']:,}" for b in BOARDS)
                                               for m, r in rows.items()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=MODELS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = {name: {b: instructions(args.models / "onnx" / f"{name}.onnx", b) for b in BOARDS} for name in MODEL_NAMES}
    print(json.dumps(rows, indent=2) if args.json else "\n".join(table(rows)))


if __name__ == "__main__":
    main()
