"""Swap under a fast-memory budget against whole buffers in slow memory, per model and budget.

For every shared model (MODELS/onnx) and each budget (a share of the fast region's arena without
one), on a board with a slow region (default qemu-m4 and its PSRAM):
- mcudeploy's planner (``--fast-memory``, mcudeploy/offload/swap.py): the fast region's arena, the
  bytes in the slow region, the bytes moved by swaps, the tensors swapped, kept in slow memory and
  recomputed, and the modelled added ticks (the board's memory speeds), also as a share of the
  estimated ticks;
- with ``--cuts``, the planner on the best of a few schemes of cuts too (the segments at the
  unconstrained plan's peak, search/space.py, a cut added per round as tune grows a scheme): added
  ticks are then the split's own estimated overhead plus the swaps' (what ``tune --fast-memory``
  weighs on a board, here by estimates alone);
- whole-buffer placement (X-CUBE-AI's approach: activation buffers placed whole in the slow
  region): the same budget as the fast region's capacity, buffers moved whole by the region
  assignment (mcudeploy/memory/regions.py), each costing every byte its kernels read and write
  of it at the slow region's speed (``resident_ticks``, offload/access.py: the price the planner
  gives the buffers it keeps in slow memory);
- with ``--measure``: the measured ticks of the unconstrained and the budgeted plan on the board
  (under QEMU the PSRAM runs at full speed, so this shows the copies' own instructions only).

A budget is a share of the model's arena in a fast region big enough for it. Regions other than
the fast one and the slow one (qemu-an505's SSRAM, as fast as its SRAM in the
board data) are set aside, so every byte beyond the budget goes to the slow memory for both. On a
board with a DMA engine (qemu-an505) the swaps' copies are asynchronous and cost what the
computation between their start and wait does not hide; the firmware waits their modelled time.

    python benchmarks/offload_bench.py [--board qemu-m4] [--shares 0.75,0.5,0.25] [--models DIR] [--only A,B]
                                       [--cuts [--rounds 2]] [--measure]
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
from mcudeploy.frontend import import_model  # noqa: E402
from mcudeploy.memory.layout import lay_out  # noqa: E402
from mcudeploy.memory.regions import areas  # noqa: E402
from mcudeploy.offload.swap import node_ticks, regions_for_swap, resident_ticks  # noqa: E402
from mcudeploy.partition import split  # noqa: E402
from mcudeploy.compile import compile_graph, lower  # noqa: E402
from mcudeploy.plan import CompileOptions  # noqa: E402
from mcudeploy.search.peak import find_peak  # noqa: E402
from mcudeploy.search.space import candidate_cuts, grow, segments  # noqa: E402

DEFAULT_MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
PIECES = (2, 4, 8)  # piece counts tried per segment with --cuts
TOP = 3  # segments tried per round with --cuts


def fast_and_slow(board):
    """``board`` with every usable region but its fast one and its slow one set aside."""
    fast, slow = regions_for_swap(board)
    return dataclasses.replace(board, regions=tuple(
        r if r.name in (fast, slow.name) else dataclasses.replace(r, excluded=True) for r in board.regions))


def roomy(board):
    """``board`` with a fast region big enough for any of these models: the arena a budget is a share of."""
    fast, _ = regions_for_swap(board)
    return dataclasses.replace(board, regions=tuple(
        dataclasses.replace(r, size=max(r.size, 1 << 30)) if r.name == fast else r for r in board.regions))


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


def added(compiled, estimated: float) -> float:
    """A budgeted plan's modelled added ticks over the unconstrained unsplit plan's ``estimated``: its
    cuts' estimated overhead (their order's ticks before the swaps) and the offload's."""
    o = compiled.offload
    return o.baseline_ticks - estimated + o.added_ticks


def planned(graph, name: str, board, budget: int, estimated: float, rounds: int):
    """The budgeted plan of least added ticks: unsplit, and with ``rounds`` > 0 each of a few cuts at
    the peak, the best grown by another cut per round; (plan, added ticks) or the planner's refusal."""
    def build(scheme, placement="exact"):
        return compile_graph(split(graph, scheme) if scheme else graph, board, name,
                             options=CompileOptions(scheme=scheme, placement_method=placement, fast_memory=budget))
    best, refusal = None, None
    try:
        plan = build(())
        best = (added(plan, estimated), (), plan)
    except MCUDeployError as err:
        refusal = err
    scheme = ()
    for _ in range(rounds):
        base = compile_graph(split(graph, scheme) if scheme else graph, board, name,
                             options=CompileOptions(scheme=scheme))
        peak = find_peak(base)
        taken = frozenset(n for c in scheme for n, _ in c.axes)
        tried = []
        for cut in candidate_cuts(graph, segments(graph), taken, peak.nodes, PIECES, top=TOP, live=peak.tensors):
            try:
                plan = build(grow(scheme, cut), "greedy")
            except MCUDeployError:
                continue
            tried.append((added(plan, estimated), grow(scheme, cut)))
        if not tried:
            break
        scheme = min(tried, key=lambda t: (t[0], len(t[1])))[1]
        plan = build(scheme)
        if best is None or added(plan, estimated) < best[0]:
            best = (added(plan, estimated), scheme, plan)
    if best is None:
        raise refusal
    return best[2], best[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="qemu-m4")
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    ap.add_argument("--shares", default="0.75,0.5,0.25")
    ap.add_argument("--only", default="", help="model file stems to run, comma-separated (default: every model)")
    ap.add_argument("--cuts", action="store_true", help="also try schemes of cuts under each budget")
    ap.add_argument("--rounds", type=int, default=1, help="with --cuts: cuts grown one per round (default 1)")
    ap.add_argument("--measure", action="store_true", help="also measure both plans on the board")
    args = ap.parse_args()
    board = fast_and_slow(load_board(args.board))
    fast, slow = regions_for_swap(board)
    capacity = areas(board)[0].capacity
    shares = [float(s) for s in args.shares.split(",")]
    paths = sorted((args.models / "onnx").glob("*.onnx"))
    if args.only:
        paths = [p for p in paths if p.stem in args.only.split(",")]
    if not paths:
        print(f"no models in {args.models / 'onnx'} (set --models or MCUDEPLOY_MODELS)", file=sys.stderr)
        return 1
    print(f"board {board.name}: fast {fast}, slow {slow.name} ({'modelled' if slow.speed.modelled else 'measured'} "
          f"speeds: {slow.speed.read_bytes_per_tick:g} B/tick in, {slow.speed.write_bytes_per_tick:g} B/tick out, "
          f"{slow.speed.latency_ticks:g} ticks per transfer); other regions set aside")
    head = (f"{'model':<24}{'share':>6}{'budget':>9} | {'fast':>8}{'slow':>9}{'moved':>9}{'swap':>5}{'keep':>5}{'rec':>4}"
            f"{'cuts':>5}{'added':>10}{'of est.':>8} | {'whole: fast':>11}{'slow':>9}{'added':>10}{'of est.':>8} | "
            f"{'ratio':>6}")
    print(head)
    print("-" * len(head))
    for path in paths:
        graph = lower(import_model(path))
        plain = compile_graph(graph, roomy(board), str(path))
        estimated = sum(node_ticks(plain.graph, plain.order, board))
        for share in shares:
            budget = int(plain.placement.arenas.get(fast, 0) * share)
            row = f"{path.stem:<24}{share:>6.0%}{budget:>9,}" + ("^" if budget > capacity else " ") + "| "
            budget = min(budget, capacity)
            try:
                c, more = planned(graph, str(path), board, budget, estimated, args.rounds if args.cuts else 0)
            except MCUDeployError as err:
                print(row + f"planner: {err}")
                continue
            o = c.offload
            row += (f"{c.placement.arenas.get(fast, 0):>8,}{c.placement.arenas.get(slow.name, 0):>9,}"
                    f"{o.bytes_moved:>9,}{len(o.swaps):>5}{len(o.residents):>5}{len(o.recomputes):>4}{len(c.scheme):>5}"
                    f"{more:>10,.0f}{more / estimated:>8.1%} | ")
            w = whole_buffers(plain, board, budget)
            row += (f"{w['fast']:>11,}{w['slow']:>9,}{w['ticks']:>10,.0f}{w['ticks'] / estimated:>8.1%}"
                    + ("!" if not w["fits"] else "") + (f" | {more / w['ticks']:>6.2f}" if w["ticks"] else " |      –"))
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
                    row += f"; added {more / ticks[0]:.1%} of measured"
            print(row)
    print("fast/slow: arena bytes per region; moved: bytes the swaps copy (out and back); swap/keep/rec: tensors "
          "swapped, kept in slow memory, recomputed; cuts: the scheme's cuts; added: modelled ticks over the "
          "unconstrained unsplit plan (of est.: of its estimated ticks); whole: the budget met by whole buffers in "
          "slow memory (! where the assignment could not fit it); ^: a budget above the fast region's capacity, which is "
          "used instead; ratio: the planner's added ticks over whole-buffer "
          "placement's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
