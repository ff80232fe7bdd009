"""One inference on the two cores of qemu-an521 (issue 63): per model, the critical path of the plan on the cores as
compiled (the estimate's plan) and as tuned (cores/search.py), each over the one-core latency plan of
qemu-an521-core, in guest instructions counted per core by QEMU, with the arenas, the plans the tune measured and
its wall time. Everything is measured in one run on one machine; the ratios are instructions over instructions,
which a loaded machine does not change (the wall times it does).

Default models: the int8 MLPerf Tiny models of ../shared/models (MCUDEPLOY_MODELS or --models), ONNX and TFLite,
and the Keras corpus's MobileNetV2 and SE-ResNet (tests/keras_corpus), which mcudeploy was never tuned on; or the
files named. A model either step refuses is one line saying why, and the run goes on. Targets (acceptance 1 of
issue 63): VWW and ResNet-8 at most 0.55x.

    python benchmarks/cores_bench.py [FILE ...] [--models DIR] [--only NAME] [--budget N] [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcudeploy.cli import main  # noqa: E402

MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
SHARED = ("kws_dscnn_int8", "vww_mobilenetv1_int8", "ic_resnet8_int8", "ad_autoencoder_int8")
CORPUS = tuple(ROOT / "tests" / "keras_corpus" / f"{name}-int8.tflite" for name in ("mobilenetv2", "se_resnet"))
TARGET = 0.55  # VWW and ResNet-8
KEPT = re.compile(r"^kept (?P<what>.+): critical path (?P<path>[\d,]+) instructions .*; (?P<plans>\d+) plan\(s\)", re.M)


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def bench(path: Path, budget: int) -> dict:
    code, out, err = run(["measure", str(path), "-b", "qemu-an521", "--objective", "latency", "--json"])
    if code != 0:
        return {"model": path.name, "error": err.strip().splitlines()[-1] if err.strip() else f"exit {code}"}
    measured = json.loads(out)
    with tempfile.TemporaryDirectory(prefix="cores-bench-") as tmp:
        start = time.monotonic()
        code, out, err = run(["tune", str(path), "-b", "qemu-an521", "--objective", "latency", "-o", tmp,
                              "--budget", str(budget)])
        seconds = time.monotonic() - start
    kept = KEPT.search(out)
    if code != 0 or kept is None:
        return {"model": path.name, "error": err.strip().splitlines()[-1] if err.strip() else f"exit {code}"}
    one = measured["one_core_instructions"]
    tuned = int(kept["path"].replace(",", ""))
    return {"model": path.name, "one_core_instructions": one,
            "compiled_instructions": measured["critical_path_instructions"], "compiled_ratio": measured["ratio"],
            "tuned_instructions": tuned, "tuned_ratio": tuned / one, "kept": kept["what"], "plans": int(kept["plans"]),
            "tune_seconds": round(seconds, 1), "arena_bytes": measured["arena_bytes"],
            "one_core_arena_bytes": measured["one_core_arena_bytes"]}


def models(args) -> list[Path]:
    if args.files:
        return [Path(f) for f in args.files]
    found = [args.models / kind / f"{name}.{kind}" for name in SHARED for kind in ("onnx", "tflite")]
    out = [p for p in found if p.is_file()] + [p for p in CORPUS if p.is_file()]
    missing = [p for p in found if not p.is_file()]
    if missing:
        print(f"not found (set --models or MCUDEPLOY_MODELS): {', '.join(p.name for p in missing)}")
    return [p for p in out if not args.only or args.only in p.name]


def main_bench() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--models", type=Path, default=MODELS)
    ap.add_argument("--only", help="only the models whose file name holds this")
    ap.add_argument("--budget", type=int, default=10, help="plans each tune may measure (default 10)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    rows = []
    print(f"{'model':<34} {'one core':>12} {'compiled':>12} {'ratio':>6} {'tuned':>12} {'ratio':>6} {'plans':>5} "
          f"{'tune s':>7} {'arena (1 core)':>18}  kept")
    for path in models(args):
        row = bench(path, args.budget)
        rows.append(row)
        if "error" in row:
            print(f"{row['model']:<34} {row['error']}")
            continue
        print(f"{row['model']:<34} {row['one_core_instructions']:>12,} {row['compiled_instructions']:>12,} "
              f"{row['compiled_ratio']:>6.3f} {row['tuned_instructions']:>12,} {row['tuned_ratio']:>6.3f} "
              f"{row['plans']:>5} {row['tune_seconds']:>7.0f} "
              f"{row['arena_bytes']:>8,} ({row['one_core_arena_bytes']:,})  {row['kept']}", flush=True)
    judged = [r for r in rows if "error" not in r and ("vww" in r["model"] or "resnet8" in r["model"])]
    if judged:
        worst = max(r["tuned_ratio"] for r in judged)
        print(f"VWW and ResNet-8, tuned: worst {worst:.3f}x one core (target {TARGET}x: "
              f"{'met' if worst <= TARGET else 'missed'})")
    print("guest instructions under QEMU -icount, counted per core by firmware/qemu/core_phases.c; one core: the "
          "latency plan of qemu-an521-core; tuned plans are checked bit for bit against the numpy reference")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
