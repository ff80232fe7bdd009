"""The stage partitioner's heuristic against the exact optimum (issue 16, acceptance 3).

For every int8 shared model (its operators' seconds on the board from the simulator: measured ticks
from the timing cache where it holds them, else estimated) and for the generated DAGs of
benchmarks/graphs.py (estimated seconds), the steps of the scheduled order are reduced
(mcudeploy/stages/steps.reduce), and split into K stages over a chain of the board linked by the
system's link, by the exact dynamic program (split.exact, the optimal contiguous split) and by the
heuristic (split.heuristic: recursive splitting by cost, then local refinement). Printed per graph
and K: steps before and after the reduction, the optimum's bottleneck and throughput against one
chip, the heuristic's bottleneck and its gap to the optimum; the summary says whether every gap is
within the target (5%). Nothing is asserted.

With ``--measure SYSTEM`` (acceptance 2) it measures instead: for each int8 model (``--only`` narrows
them; VWW and ResNet-8 are the targets on qemu-an521), the one-chip plan and then every stage, each
on its own emulator (mcudeploy measure of a system: under QEMU -icount the cores of one emulator share
one instruction clock, so stages that run at once cannot be timed together), and prints per stage its
core and ticks, and the throughput against one core with the target (1.8x on two cores).

    python benchmarks/pipeline_bench.py [--models DIR] [--system qemu-m4x4] [--stages 2,3,4,8]
                                        [--dags 30,100,300] [--seeds 0,1,2] [--only NAME]
    python benchmarks/pipeline_bench.py --measure qemu-an521 [--only vww]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from graphs import FAMILIES, make  # noqa: E402

from mcudeploy.frontend import import_model  # noqa: E402
from mcudeploy.compile import lower  # noqa: E402
from mcudeploy.schedule import schedule  # noqa: E402
from mcudeploy.stages.assign import estimated_seconds, operator_costs  # noqa: E402
from mcudeploy.stages.split import Problem, exact, heuristic  # noqa: E402
from mcudeploy.stages.steps import reduce, steps_of  # noqa: E402
from mcudeploy.stages.system import load_system  # noqa: E402

TARGET = 0.05
DEFAULT_MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))


def rows_of(name, graph, seconds, board, link, counts):
    order = schedule(graph, "rpo", 10.0, board.alignment).order
    steps = steps_of(graph, order, {board.name: seconds})
    reduced, _ = reduce(steps)
    whole = float(sum(seconds.values()))
    out = []
    for k in counts:
        if k > reduced.n:
            continue
        problem = Problem(reduced, (board.name,) * k, (link,) * (k - 1))
        best, h, split = exact(problem), heuristic(problem), heuristic(problem, tighten=False)
        out.append((name, steps.n, reduced.n, k, best.bottleneck, whole / best.bottleneck,
                    split.bottleneck / best.bottleneck - 1.0, h.bottleneck, h.bottleneck / best.bottleneck - 1.0))
    return out


MEASURE_TARGET = {2: 1.8, 4: 3.2}  # throughput against one core (issue 16, acceptance 2)


def measure(args) -> int:
    from mcudeploy.target.stream import measure_system
    from mcudeploy.stages.system_plan import compile_system, pipeline_dict

    system = load_system(args.measure)
    models = sorted((args.models / "onnx").glob("*_int8.onnx")) if (args.models / "onnx").is_dir() else []
    models = [m for m in models if not args.only or args.only in m.stem]
    if not models:
        print(f"no int8 models in {args.models / 'onnx'} (matching {args.only!r})")
        return 0
    target = MEASURE_TARGET.get(len(system.units))
    for path in models:
        graph = lower(import_model(path))
        plan = measure_system(lambda: compile_system(graph, system, str(path)))
        pipe = pipeline_dict(plan)
        stages = ", ".join(f"stage {k} on chip {u.chip} {u.core}: {t.ticks:,} ticks ({t.source})"
                           for k, (u, t) in enumerate(zip(plan.partition.units, plan.times)))
        verdict = f" (target {target:g}x: {'met' if pipe['throughput_ratio'] >= target else 'missed'})" if target else ""
        print(f"{path.stem}: one {pipe['one_core_board']} core {plan.one_chip_ticks:,} ticks; {stages}; throughput "
              f"{pipe['throughput_ratio']:.2f}x one core{verdict}")
    print("each stage timed on its own emulator: under QEMU -icount the cores of one emulator share one instruction "
          "clock; link times modelled from the system file")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    p.add_argument("--system", default="qemu-m4x4", help="the chain whose board and link are used")
    p.add_argument("--stages", default="2,3,4,8")
    p.add_argument("--dags", default="30,100,300", help="operator counts of the generated DAGs")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--only", help="run only the graphs whose name holds this")
    p.add_argument("--measure", metavar="SYSTEM", help="measure each int8 model's stages on this system's emulators")
    args = p.parse_args(argv)
    if args.measure:
        return measure(args)
    system = load_system(args.system)
    board, link = system.units[0].board, system.link
    counts = [int(k) for k in args.stages.split(",")]
    print(f"board {board.name}, link {link.kind} {link.bits_per_s / 1e6:g} Mbit/s + {link.latency_us:g} us per "
          f"transfer ({'modelled' if link.modelled else 'measured'}); bottleneck = slowest stage's compute + its send")
    rows = []
    models = sorted((args.models / "onnx").glob("*_int8.onnx")) if (args.models / "onnx").is_dir() else []
    if not models:
        print(f"no int8 models in {args.models / 'onnx'}: generated DAGs only")
    for path in models:
        if args.only and args.only not in path.stem:
            continue
        graph = lower(import_model(path))
        rows += rows_of(path.stem, graph, operator_costs(graph, board, "rpo", 10.0).seconds, board, link, counts)
    for ops in (int(x) for x in args.dags.split(",") if x):
        for family in FAMILIES:
            for seed in (int(s) for s in args.seeds.split(",")):
                name = f"{family}-{ops}-s{seed}"
                if args.only and args.only not in name:
                    continue
                graph = make(family, ops, seed, "float32")
                rows += rows_of(name, graph, estimated_seconds(graph, board), board, link, counts)
    print(f"{'graph':<28} {'steps':>5} {'reduced':>7} {'K':>2} {'exact ms':>10} {'x one':>6} {'split gap':>9} "
          f"{'heur. ms':>10} {'gap':>7}")
    for name, n, r, k, best, ratio, split_gap, h, gap in rows:
        print(f"{name:<28} {n:>5} {r:>7} {k:>2} {best * 1e3:>10.3f} {ratio:>6.2f} {split_gap:>9.2%} {h * 1e3:>10.3f} "
              f"{gap:>7.2%}")
    worst = max((r[-1] for r in rows), default=0.0)
    within = sum(1 for r in rows if r[-1] <= TARGET)
    print(f"recursive splitting and refinement alone: worst gap {max((r[6] for r in rows), default=0.0):.2%}, "
          f"within {TARGET:.0%} on {sum(1 for r in rows if r[6] <= TARGET)} of {len(rows)}")
    print(f"heuristic within {TARGET:.0%} of the exact optimum on {within} of {len(rows)} (graph, K); "
          f"worst gap {worst:.2%}, mean {sum(r[-1] for r in rows) / max(len(rows), 1):.2%}: "
          f"{'met' if within == len(rows) else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
