"""The swap planner's added ticks against the exact formulation's, per generated graph and budget.

Graphs: benchmarks/graphs.py's families (randomly wired, NAS-like cells, U-Net-like) at up to 40
operators, in the order they are built; budgets: shares of the unconstrained live peak. Per graph
and budget: the heuristic's added ticks (``fit_fast_memory(..., keep=False)``, "-" where it does
not reach the budget), the exact one's (mcudeploy/offload/exact_swap.py, "*" where proven optimal, "-"
where no choice was found; "none" where the model proves none exists), and their ratio; then the
mean and max ratio and the share within 10%, over the rows where both meet the budget.

    python benchmarks/offload_exact_bench.py [--full] [--board host] [--effort 5]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from graphs import FAMILIES, make  # noqa: E402
from mcudeploy.boards import load_board  # noqa: E402
from mcudeploy.effort import Effort  # noqa: E402
from mcudeploy.errors import MCUDeployError  # noqa: E402
from mcudeploy.offload.exact_swap import apply, fast_peak, solve_swaps  # noqa: E402
from mcudeploy.offload.swap import fit_fast_memory  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="host")
    ap.add_argument("--effort", type=float, default=5.0, help="effort seconds per exact solve")
    ap.add_argument("--full", action="store_true", help="sizes 20/30/40 and seeds 0-4 (default: 20/30, seeds 0-2)")
    ap.add_argument("--shares", default="0.9,0.75,0.6")
    args = ap.parse_args()
    board = load_board(args.board)
    sizes, seeds = ((20, 30, 40), range(5)) if args.full else ((20, 30), range(3))
    shares = [float(s) for s in args.shares.split(",")]
    print(f"{'graph':<22}{'ops':>4}{'share':>6}{'budget':>9} | {'heuristic':>10}{'exact':>11} | {'ratio':>6}")
    ratios = []
    for family in FAMILIES:
        for ops in sizes:
            for seed in seeds:
                g = make(family, ops, seed)
                order, al = g.nodes, board.alignment
                peak = fast_peak(g, order, board, al)
                for share in shares:
                    budget = int(peak * share)
                    try:
                        g3, o3, off = fit_fast_memory(g, order, board, budget, al, keep=False)
                        heur = off.added_ticks if fast_peak(g3, o3, board, al) <= budget else None
                    except MCUDeployError:
                        heur = None
                    ticks, choices, proven = solve_swaps(g, order, board, budget, Effort(args.effort), al)
                    if ticks is not None:
                        g2, o2 = apply(g, order, board, choices)
                        if fast_peak(g2, o2, board, al) > budget:
                            print(f"  exact choices miss the budget on {g.name} at {share:.0%}", file=sys.stderr)
                            ticks = None
                    ex = "none" if ticks is None and proven else "-" if ticks is None else f"{ticks:.1f}{'*' if proven else ''}"
                    ratio = ""
                    if heur is not None and ticks is not None:
                        r = heur / ticks if ticks else 1.0
                        ratios.append(r)
                        ratio = f"{r:.3f}"
                    h = "-" if heur is None else f"{heur:.1f}"
                    print(f"{g.name:<22}{len(g.nodes):>4}{share:>6.0%}{budget:>9,} | {h:>10}{ex:>11} | {ratio:>6}")
    if ratios:
        within = sum(r <= 1.1 for r in ratios) / len(ratios)
        print(f"\n{len(ratios)} rows where both meet the budget: mean ratio {sum(ratios) / len(ratios):.3f}, "
              f"max {max(ratios):.3f}, within 10%: {within:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
