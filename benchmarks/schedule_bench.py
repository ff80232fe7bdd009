"""Scheduling benchmark: the peak of every method on the generated suite and the reference models.

    python benchmarks/schedule_bench.py [--quick] [--time-limit 10] [--refine-limit 1.5]

For each graph: its operators, the best lower bound any method reported, and for each method the
peak that lifetimes() measures (``*``: proven optimal) and the time the method took: schedule()'s
time less one lifetimes() call on its order, the slowest of which is shown apart as "yardstick".
``exact`` runs on graphs of at most ``--exact-ops`` operators. The summary gives the geometric-mean peak of each method relative to
the model's own order, and the figures of the acceptance criteria of issue 3.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.graphs import LARGE, MEDIUM, SMALL, suite  # noqa: E402
from mcudeploy.ir import Graph  # noqa: E402
from mcudeploy.memory.lifetimes import lifetimes  # noqa: E402
from mcudeploy.schedule import schedule  # noqa: E402

HEURISTICS = ("model", "rpo", "bfs", "dfs", "refine")
MODELS = ROOT.parent / "shared" / "models" / "onnx"


def run(graph: Graph, args) -> dict:
    row = {"ops": len(graph.nodes), "yardstick": 0.0}
    for method in HEURISTICS + ("exact",):
        if method == "exact" and len(graph.nodes) > args.exact_ops:
            continue
        limit = args.time_limit if method == "exact" else args.refine_limit
        s = schedule(graph, method, limit)
        t0 = time.perf_counter()  # schedule() measured its order once with lifetimes(); time that apart
        lifetimes(graph, s.order, 4).lower_bound()
        yardstick = time.perf_counter() - t0
        row[method] = (s.peak_bytes, max(0.0, s.time_s - yardstick), s.proven_optimal)
        row["bound"] = max(row.get("bound", 0), s.bound_bytes)
        row["yardstick"] = max(row["yardstick"], yardstick)
    return row


def cell(entry) -> str:
    if entry is None:
        return f"{'-':>18}"
    peak, secs, proven = entry
    return f"{peak:>10,}{'*' if proven else ' '}{secs:>6.2f}s"


def header() -> None:
    methods = HEURISTICS + ("exact",)
    print(f"{'graph':<26}{'ops':>5}{'bound':>11}" + "".join(f"{m:>18}" for m in methods) + f"{'yardstick':>11}")


def line(name: str, r: dict) -> None:
    print(f"{name:<26}{r['ops']:>5}{r['bound']:>11,}" + "".join(cell(r.get(m)) for m in HEURISTICS + ("exact",))
          + f"{r['yardstick']:>10.2f}s", flush=True)


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summary(title: str, rows: list[tuple[str, dict]]) -> None:
    print(f"\n{title}: geometric-mean peak relative to the model's own order (lower is better)")
    for m in HEURISTICS + ("exact",):
        ratios = [r[m][0] / r["model"][0] for _, r in rows if m in r]
        if ratios:
            print(f"  {m:<8}{geomean(ratios):8.3f}   over {len(ratios)} graphs, best {min(ratios):.3f}")


def acceptance(rows: list[tuple[str, dict]]) -> None:
    small = [(n, r) for n, r in rows if r["ops"] <= 40 and "exact" in r]
    proven = [r for _, r in small if r["exact"][2]]
    slowest = max((r["exact"][1] for _, r in small), default=0.0)
    print(f"\nexact on graphs of <= 40 operators: {len(proven)} of {len(small)} proven optimal, "
          f"slowest {slowest:.2f} s")
    ratios = [(r["refine"][0] / r["exact"][0], n) for n, r in small if r["exact"][2]]
    if ratios:
        worst, name = max(ratios)
        within = sum(x <= 1.05 for x, _ in ratios)
        print(f"refined heuristic vs the proven optimum there: {within} of {len(ratios)} within 5%, "
              f"worst {worst:.3f} ({name})")
    large = [(n, r) for n, r in rows if r["ops"] >= 1500]
    for n, r in large:
        print(f"heuristic on {n} ({r['ops']} operators): refine {r['refine'][1]:.2f} s "
              f"(bfs {r['bfs'][1]:.2f} s, dfs {r['dfs'][1]:.2f} s); the yardstick lifetimes() takes another "
              f"{r['yardstick']:.2f} s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one seed, no 2,000-operator graphs")
    p.add_argument("--time-limit", type=float, default=10.0, help="seconds for exact (default 10)")
    p.add_argument("--refine-limit", type=float, default=1.5, help="seconds for refine (default 1.5)")
    p.add_argument("--exact-ops", type=int, default=100, help="run exact up to this many operators (default 100)")
    p.add_argument("--no-models", action="store_true", help="skip the reference models")
    args = p.parse_args(argv)
    specs = suite(SMALL + MEDIUM, (0,)) if args.quick else suite(SMALL + MEDIUM + LARGE)
    rows = []
    print(f"generated suite ({len(specs)} graphs); peaks in bytes, * = proven optimal, time of the method")
    header()
    for spec in specs:
        name = f"{spec.family}{spec.ops}_s{spec.seed}_{spec.dtype}"
        rows.append((name, run(spec.build(), args)))
        line(*rows[-1])
    summary("generated suite", rows)
    acceptance(rows)
    if not args.no_models and MODELS.is_dir():
        from mcudeploy.frontend import import_onnx
        from mcudeploy.compile import lower

        print("\nreference models")
        header()
        model_rows = []
        for path in sorted(MODELS.glob("*.onnx")):
            model_rows.append((path.stem, run(lower(import_onnx(path)), args)))
            line(*model_rows[-1])
        summary("reference models", model_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
