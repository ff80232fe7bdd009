"""Swap under a fast-memory budget against whole buffers in slow memory, per model and budget.

For every shared model (MODELS/onnx) and each budget (a share of the fast region's arena without
one), on a board with a slow region (default qemu-m4 and its PSRAM):
- mcudeploy's planner (``--fast-memory``, mcudeploy/offload/swap.py): the fast region's arena, the
  bytes in the slow region, the bytes moved by swaps, the tensors swapped and kept in slow memory,
  and the modelled added ticks (the board's memory speeds), also as a share of the estimated ticks;
- whole-buffer placement (X-CUBE-AI's approach: activation buffers placed whole in the slow
  region): the same budget as the fast region's capacity, buffers moved whole by the region
  assignment (mcudeploy/memory/regions.py), each costing a write and a read per use at the slow
  region's speed (``resident_ticks``, the same price the planner uses);
- with ``--measure``: the measured ticks of the unconstrained and the budgeted plan on the board
  (under QEMU the PSRAM runs at full speed, so this shows the copies' own instructions only).

On a board with a DMA engine (qemu-an505) the swaps' copies are asynchronous and cost what the
computation between their start and wait does not hide; the firmware waits their modelled time.

    python benchmarks/offload_bench.py [--board qemu-m4] [--shares 0.75,0.5,0.25] [--models DIR] [--only A,B]
                                       [--measure]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcudeploy.boards import load_board  # noqa: E402
from mcudeploy.errors import MCUDeployError  # noqa: E402
from mcudeploy.memory.layout import lay_out  # noqa: E402
from mcudeploy.memory.regions import areas  # noqa: E402
from mcudeploy.offload.swap import node_ticks, regions_for_swap, resident_ticks  # noqa: E402
from mcudeploy.pipeline import compile_model  # noqa: E402

DEFAULT_MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))


def whole_buffers(plain, board, budget: int) -> dict:
    """The budget met by placing buffers whole in the slow region (no copies): the unconstrained
    plan's order laid out with the fast region's capacity at the budget (the region assignment)."""
    fast, slow = regions_for_swap(board)
    regions = areas(board)
    capped = (dataclasses.replace(regions[0], capacity=budget),) + regions[1:]
    lives, placement = lay_out(plain.graph, plain.order, capped, "exact", board.alignment, 5.0)
    slow_buffers = [b for b in lives.buffers if placement.regions.get(b.name) == slow.name]
    ticks = sum(resident_ticks(plain.graph, plain.order, b.tensors, slow) for b in slow_buffers)
    return {"fast": placement.arenas.get(fast, 0), "slow": placement.arenas.get(slow.name, 0), "ticks": ticks,
            "fits": placement.arenas.get(fast, 0) <= budget}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="qemu-m4")
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    ap.add_argument("--shares", default="0.75,0.5,0.25")
    ap.add_argument("--only", default="", help="model file stems to run, comma-separated (default: every model)")
    ap.add_argument("--measure", action="store_true", help="also measure both plans on the board")
    args = ap.parse_args()
    board = load_board(args.board)
    fast, slow = regions_for_swap(board)
    shares = [float(s) for s in args.shares.split(",")]
    paths = sorted((args.models / "onnx").glob("*.onnx"))
    if args.only:
        paths = [p for p in paths if p.stem in args.only.split(",")]
    if not paths:
        print(f"no models in {args.models / 'onnx'} (set --models or MCUDEPLOY_MODELS)", file=sys.stderr)
        return 1
    print(f"board {board.name}: fast {fast}, slow {slow.name} ({'modelled' if slow.speed.modelled else 'measured'} "
          f"speeds: {slow.speed.read_bytes_per_tick:g} B/tick in, {slow.speed.write_bytes_per_tick:g} B/tick out, "
          f"{slow.speed.latency_ticks:g} ticks per transfer)")
    head = (f"{'model':<24}{'share':>6}{'budget':>9} | {'fast':>8}{'slow':>9}{'moved':>9}{'swap':>5}{'keep':>5}{'rec':>4}"
            f"{'added':>10}{'of est.':>8} | {'whole: fast':>11}{'slow':>9}{'added':>10} | {'ratio':>6}")
    print(head)
    print("-" * len(head))
    for path in paths:
        plain = compile_model(path, board)
        estimated = sum(node_ticks(plain.graph, plain.order, board))
        for share in shares:
            budget = int(plain.placement.arenas.get(fast, 0) * share)
            row = f"{path.stem:<24}{share:>6.0%}{budget:>9,} | "
            try:
                c = compile_model(path, board, fast_memory=budget)
            except MCUDeployError as err:
                print(row + f"planner: {err}")
                continue
            o = c.offload
            row += (f"{c.placement.arenas.get(fast, 0):>8,}{c.placement.arenas.get(slow.name, 0):>9,}"
                    f"{o.bytes_moved:>9,}{len(o.swaps):>5}{len(o.residents):>5}{len(o.recomputes):>4}{o.added_ticks:>10,.0f}"
                    f"{o.added_ticks / estimated:>8.1%} | ")
            w = whole_buffers(plain, board, budget)
            row += (f"{w['fast']:>11,}{w['slow']:>9,}{w['ticks']:>10,.0f}" + ("" if w["fits"] else "!") +
                    f" | {o.added_ticks / w['ticks']:>6.2f}" if w["ticks"] else " |      –")
            if args.measure:
                from mcudeploy.device.measure import measure_model
                ticks = []
                for plan in (plain, c):
                    try:
                        ticks.append(measure_model(plan).total_ticks)
                    except MCUDeployError as err:  # e.g. the unconstrained plan does not fit the board
                        ticks.append(None)
                        print(f"{path.stem}: not measured: {err}", file=sys.stderr)
                row += "  measured " + " -> ".join("–" if t is None else f"{t:,}" for t in ticks) + " ticks"
                if ticks[0]:
                    row += f"; added {o.added_ticks / ticks[0]:.1%} of measured"
            print(row)
    print("fast/slow: arena bytes per region; moved: bytes the swaps copy (out and back); swap/keep: tensors swapped, "
          "kept in slow memory; rec: tensors recomputed; added: modelled ticks (of est.: of the unconstrained plan's estimated ticks); whole: "
          "the budget met by whole buffers in slow memory (! where the assignment could not fit it); ratio: the "
          "planner's added ticks over whole-buffer placement's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
