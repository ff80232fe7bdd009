"""What the pieces of a reduction cut cost on the board, against what the simulator estimates
(issue 23: the halo gathers and the pieces' fixed cost per call).

One model (default KWS int8), cut along its longest segment that ends in a reduction, with kept
halos, into each piece count given (most first). Per count: the arena; the estimate from the
unsplit plan's timings alone (each piece its share of its operator's ticks); the estimate from every
timing taken so far in this run (the unsplit plan and the counts measured before it: each
operator's own pieces then give their fixed cost, simulate.py rule 0); the ticks measured on the board, kernel by
kernel (``mcudeploy measure``); and the ticks of its halo gathers (the Concat kernels). Overheads
are against the unsplit plan's measured ticks. Figures only, nothing asserted.

    python benchmarks/piece_cost_bench.py [--model ONNX] [--board qemu-m4] [--pieces 24,16,12,8] [--cached]

Each run measures in a fresh timing cache unless ``--cached`` (then kernels timed before, by this
library version, are not timed again, and the second estimate sees them too).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models")) / "onnx" / "kws_dscnn_int8.onnx"


def reduction_segment(graph):
    """The longest segment whose cut is a reduction cut (ties: the first)."""
    from mcudeploy.partition import Cut, check_cut, mechanisms
    from mcudeploy.search import space

    found = [s for s in space.segments(graph)
             if check_cut(graph, Cut(s.axes, 2)) is None and "reduction" in mechanisms(graph, (Cut(s.axes, 2),))]
    return max(found, key=lambda s: len(s.axes)) if found else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    p.add_argument("--board", default="qemu-m4")
    p.add_argument("--pieces", default="24,16,12,8", help="piece counts, comma separated, most first")
    p.add_argument("--cached", action="store_true", help="use the board's timing cache ($MCUDEPLOY_CACHE)")
    args = p.parse_args(argv)

    from mcudeploy.boards import load_board
    from mcudeploy.device.measure import measure_model
    from mcudeploy.frontend import import_model
    from mcudeploy.partition import Cut
    from mcudeploy.compile import lower
    from mcudeploy.search.tune import compile_scheme
    from mcudeploy.simulate.simulate import reference_costs, simulate
    from mcudeploy.simulate.timing_cache import TimingCache

    if not args.model.exists():
        print(f"no model at {args.model} (set --model or MCUDEPLOY_MODELS)")
        return 0
    board = load_board(args.board)
    graph = lower(import_model(str(args.model)))
    seg = reduction_segment(graph)
    if seg is None:
        print(f"{args.model.stem}: no segment ends in a reduction")
        return 0
    with tempfile.TemporaryDirectory(prefix="mcud-piece-cost-") as tmp:
        cache = TimingCache(board.name, None if args.cached else Path(tmp))
        unsplit = compile_scheme(graph, (), board, args.model.stem)
        base = measure_model(unsplit, cache=cache, repeat=1)
        reference = reference_costs(unsplit, cache)
        base_only = cache.view({o.signature for o in base.ops})
        print(f"{args.model.stem} on {board.name}: {len(seg.axes)} operators cut, {seg.axes[0][0][-40:]} .. "
              f"{seg.axes[-1][0][-40:]}; unsplit {base.total_ticks:,} ticks, arena {unsplit.placement.arena_bytes:,} B")
        print("\n| pieces | arena | estimated, unsplit timings | estimated, timings so far | measured | halo gathers |")
        print("|---:|---:|---:|---:|---:|---:|")

        def pct(ticks):
            return f"{ticks:,} ({ticks / base.total_ticks - 1:+.1%})"

        for k in [int(x) for x in args.pieces.split(",") if x]:
            compiled = compile_scheme(graph, (Cut(seg.axes, k, "keep"),), board, args.model.stem)
            alone = simulate(compiled, base_only, reference).ticks
            so_far = simulate(compiled, cache.view(set(cache.entries())), reference).ticks
            m = measure_model(compiled, cache=cache, repeat=1)
            gathers = [o for o in m.ops if o.kernel.startswith("mcud_concat")]
            print(f"| {k} | {compiled.placement.arena_bytes:,} | {pct(alone)} | {pct(so_far)} | {pct(m.total_ticks)} | "
                  f"{sum(o.ticks for o in gathers):,} ticks in {len(gathers)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
