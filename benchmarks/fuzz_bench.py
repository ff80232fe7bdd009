"""The mutation fuzzer at length: damaged models through what ``mcudeploy plan MODEL -b host`` does,
counted by outcome (tests/fuzz/: the mutators, the target, the runner; CI runs 3,000 ONNX cases,
tests/fuzz/test_fuzz.py, and 2,000 .tflite cases, tests/fuzz/test_fuzz_tflite.py).

    python benchmarks/fuzz_bench.py [--format onnx|tflite|both] [--cases 50000] [--seed 0] [--start 0]
                                    [--jobs 1] [--timeout 10] [--no-shared] [--slow-seeds] [--save DIR] [--case I]
                                    [--sanitize]

ONNX seeds are the zoo's float and int8 models (tests/zoo.py) and the MLPerf Tiny reference models in
../shared/models/onnx (or $MCUDEPLOY_MODELS) unless --no-shared; .tflite seeds the committed corpora
(tests/field_corpus, tests/keras_corpus) and ../shared/models/tflite (tests/fuzz/seeds.py; the slow
recurrent models only with --slow-seeds). --format both (the default) runs --cases of each format, one
after the other, and counts each apart. Prints the count of each outcome: ok,
clear errors by their first words (names and numbers masked), and failures (any other exception, a
message of several lines, a case over --timeout seconds, a worker that died) with the indices of
their first cases; --save DIR writes those cases as DIR/case-I.onnx (.tflite); --case I makes case I
of --format again (ONNX where both), writes it to case-I.onnx (case-I.tflite) and runs it in this
process (a traceback shows where it fails).
--sanitize: each case that plans is also built for the host with AddressSanitizer and UBSan and run on two
inputs (``run --sanitize -b host``); "ok" then means it ran clean, a report is a failure (give --timeout 60: a
sanitized build of a shared model takes seconds). CI runs 100 ONNX and 100 .tflite cases so.
Exits 1 when any case failed.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's mcudeploy, not an installed one

from fuzz.runner import case, case_suffix, fuzz  # noqa: E402
from fuzz.seeds import seed_models, tflite_seed_models  # noqa: E402
from fuzz.target import plan, run_sanitized  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--format", choices=("onnx", "tflite", "both"), default="both",
                   help="which seeds: ONNX, .tflite, or both, counted apart (default both)")
    p.add_argument("--cases", type=int, default=50_000, help="mutated models to run of each format (default 50,000)")
    p.add_argument("--seed", type=int, default=0, help="the fuzzer's seed (default 0)")
    p.add_argument("--start", type=int, default=0, help="index of the first case (default 0)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds a case may take (default 10)")
    p.add_argument("--no-shared", action="store_true", help="only the zoo's models and the committed corpora as seeds")
    p.add_argument("--slow-seeds", action="store_true", help="the recurrent .tflite seeds too (0.5 s a plan)")
    p.add_argument("--save", type=Path, help="write the failing cases here")
    p.add_argument("--case", type=int, help="make this one case again and run it here")
    p.add_argument("--sanitize", action="store_true", help="also run each case that plans, sanitized")
    args = p.parse_args(argv)

    formats = ("onnx", "tflite") if args.format == "both" else (args.format,)
    if args.case is not None:
        seeds = _seeds(formats[0], args)
        name, data, done = case(seeds, args.seed, args.case)
        path = Path(f"case-{args.case}{case_suffix(seeds, args.seed, args.case)}")
        path.write_bytes(data)
        print(f"case {args.case}: {name}, {'; '.join(done)} -> {path}")
        compiled = plan(path)
        if args.sanitize:
            run_sanitized(compiled)
        print("ok")
        return 0
    failed = False
    for fmt in formats:
        failed |= _campaign(fmt, _seeds(fmt, args), args)
    return 1 if failed else 0


def _seeds(fmt: str, args) -> list[tuple]:
    if fmt == "tflite":
        seeds = tflite_seed_models(shared=not args.no_shared, slow=args.slow_seeds)
    else:
        with tempfile.TemporaryDirectory(prefix="mcud-fuzz-seeds-") as tmp:
            seeds = seed_models(Path(tmp), shared=not args.no_shared)
    print(f"{len(seeds)} {fmt} seed models: {', '.join(s[0] for s in seeds)}", file=sys.stderr)
    return seeds


def _campaign(fmt: str, seeds: list[tuple], args) -> bool:
    """Run and print one format's campaign; True if any case failed."""
    began = time.monotonic()

    def progress(done, result):
        if done % 1000 == 0:
            fails = sum(n for k, n in result.counts.items() if k.startswith("FAIL"))
            print(f"{done:,} cases, {time.monotonic() - began:,.0f} s, {fails} failures", file=sys.stderr, flush=True)

    result = fuzz(seeds, args.cases, seed=args.seed, start=args.start, jobs=args.jobs, timeout=args.timeout,
                  progress=progress, sanitize=args.sanitize)
    ok = result.counts.get("ok", 0)
    errors = {k: n for k, n in result.counts.items() if k.startswith("error")}
    failures = result.failures
    print(f"{fmt}: {result.cases:,} cases (seed {args.seed}, from {args.start}) in {result.seconds:,.0f} s "
          f"({result.seconds / max(result.cases, 1) * 1000:.0f} ms a case, {args.jobs} worker(s); the slowest, "
          f"case {result.slowest[1]}, {result.slowest[0]:.2f} s)")
    print(f"{ok:>8,}  ok{' (planned, and ran clean under AddressSanitizer and UBSan)' if args.sanitize else ''}")
    print(f"{sum(errors.values()):>8,}  clear errors (one line, MCUDeployError), by first words:")
    for kind, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{n:>14,}  {kind[len('error: '):] if kind.startswith('error: ') else kind}")
    print(f"{sum(result.counts[k] for k in failures):>8,}  failures")
    for kind, indices in sorted(failures.items()):
        print(f"{result.counts[kind]:>14,}  {kind}  (cases {', '.join(map(str, indices))})")
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            for i in indices:
                (args.save / f"case-{i}{case_suffix(seeds, args.seed, i)}").write_bytes(case(seeds, args.seed, i)[1])
    if result.warnings:
        print("numeric warnings (not failures; a hint at a value computed wrong without an error), first cases:")
        for warning, indices in sorted(result.warnings.items()):
            print(f"          {warning}  (cases {', '.join(map(str, indices))})")
    return bool(failures)


if __name__ == "__main__":
    sys.exit(main())
