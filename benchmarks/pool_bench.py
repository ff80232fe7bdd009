"""tune on one emulated board and on a pool of two (issue 22, acceptance 1): the wall time of each,
their ratio, and whether the two plans are the same (model.c byte for byte, and plan.json's arena,
scheme and latency).

    python benchmarks/pool_bench.py [--model vww_mobilenetv1_int8.onnx] [--board qemu-m4] [--budget N]
                                    [--boards 1,2]

Each run starts from an empty timing cache of its own (so every kernel is timed on the board, as a
first tune is) and runs ``mcudeploy tune`` as a user would. The target is a ratio of at most 0.6
on a machine with two cores free: the candidates' compiles and the board's kernel timings are what
the boards share; the steps in between (the search's decisions, the simulator) stay in one process.
The load average is printed beside the figures: on a shared machine they are not the target's.
Needs qemu-system-arm, arm-none-eabi-gcc and the model (../shared/models or $MCUDEPLOY_MODELS).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from shared_models import MODELS  # noqa: E402


def tune(model: Path, board: str, boards: int, budget: int, work: Path) -> tuple[float, Path, str]:
    out = work / f"boards{boards}"
    env = dict(os.environ, MCUDEPLOY_CACHE=str(work / f"cache{boards}"))
    cmd = [sys.executable, "-m", "mcudeploy", "tune", str(model), "-b", board, "--boards", str(boards), "-o", str(out)]
    if budget:
        cmd += ["--budget", str(budget)]
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"tune --boards {boards} failed: {done.stderr[-2000:]}")
    return seconds, out, done.stdout.strip().splitlines()[0]


def plan_of(out: Path) -> tuple:
    plan = json.loads((out / "plan.json").read_text())
    return ((out / "model.c").read_bytes(), plan["arena_bytes"], json.dumps(plan.get("split"), sort_keys=True),
            json.dumps(plan.get("latency"), sort_keys=True))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="vww_mobilenetv1_int8.onnx", help="a model in the shared models' onnx folder, or a path")
    p.add_argument("--board", default="qemu-m4")
    p.add_argument("--budget", type=int, default=0, help="tune --budget (default: tune's own)")
    p.add_argument("--boards", default="1,2", help="the pool sizes to compare, the first the reference (default 1,2)")
    args = p.parse_args()
    model = Path(args.model) if Path(args.model).exists() else MODELS / "onnx" / args.model
    if not model.exists():
        print(f"pool_bench: {model} is not there (set MCUDEPLOY_MODELS)", file=sys.stderr)
        return 1
    sizes = [int(n) for n in args.boards.split(",")]
    print(f"{model.name} on {args.board}, tune budget {args.budget or 'default'}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory(prefix="mcud-pool-bench-") as tmp:
        runs = {}
        for n in sizes:
            seconds, out, summary = tune(model, args.board, n, args.budget, Path(tmp))
            runs[n] = (seconds, plan_of(out))
            print(f"--boards {n}: {seconds:7.1f} s  ({summary}); load average {os.getloadavg()[0]:.1f}")
        ref = sizes[0]
        for n in sizes[1:]:
            same = runs[n][1] == runs[ref][1]
            print(f"--boards {n} / --boards {ref}: wall time ratio {runs[n][0] / runs[ref][0]:.2f} (target <= 0.6 for "
                  f"2 on two free cores); plan {'identical' if same else 'DIFFERENT'} (model.c, arena, split, latency)")
            if not same:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
