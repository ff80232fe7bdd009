"""Models from the field, end to end: the Keras 3 corpus (tests/keras_corpus) and published .tflite models mcudeploy
was never developed on (the streaming wake-word models that the PyPI package pymicro-wakeword ships, fetched from
PyPI into a cache at run time, never committed), each

- compiled and run by mcudeploy's C on the host and, with ``--board``, on an emulated board, on a sequence of
  ``--steps`` seeded inputs (a streaming model's state carries over), checked as ``run --check`` does: bit for bit
  against TensorFlow Lite Micro (LiteRT's reference kernels where TFLite Micro cannot run the file);
- its arena next to TensorFlow Lite Micro's (the smallest arena_size that runs, and its activations; memory_bench.py's
  measurement) and, for a stateful model, the state buffer apart.

    python benchmarks/corpus_bench.py [--board qemu-m4] [--only NAME] [--steps 20] [--no-field] [--json out.json]

A model mcudeploy refuses is a row with the refusal, not a crash of the run.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
CORPUS = ROOT / "tests" / "keras_corpus"
FIELD_PACKAGES = {"pymicro-wakeword": "pymicro_wakeword/models/"}  # PyPI package -> where its .tflite files sit
CACHE = Path.home() / ".cache" / "mcudeploy" / "field-models"


def field_models() -> list[Path]:
    """The published .tflite models, from their PyPI wheels (downloaded once into CACHE)."""
    found = []
    for package, inside in FIELD_PACKAGES.items():
        folder = CACHE / package
        if not folder.is_dir() or not any(folder.glob("*.tflite")):
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory() as tmp:
                run = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", package, "-d", tmp],
                                     capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"could not fetch {package} from PyPI: {run.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                    continue
                for wheel in Path(tmp).glob("*.whl"):
                    with zipfile.ZipFile(wheel) as z:
                        for name in z.namelist():
                            if name.startswith(inside) and name.endswith(".tflite"):
                                (folder / Path(name).name).write_bytes(z.read(name))
        found += sorted(folder.glob("*.tflite"))
    return found


def check_model(path: Path, board: str, steps: int) -> dict:
    """Compile, run ``steps`` seeded inputs in sequence, check against the reference; the figures."""
    from mcudeploy import check
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.errors import MCUDeployError
    from mcudeploy.compile import compile_model

    start = time.perf_counter()
    try:
        compiled = compile_model(path, board)
    except MCUDeployError as exc:
        return {"error": str(exc).replace(str(path), path.name)[:200]}
    samples = check.random_inputs(compiled.graph, steps)
    if compiled.board.kind == "host":
        with tempfile.TemporaryDirectory() as tmp:
            outputs = run_compiled_on_host(compiled, samples, Path(tmp))
    else:
        from mcudeploy.device.runner import run_on_board

        outputs = run_on_board(compiled, samples).outputs
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    state = getattr(compiled.placement, "state_bytes", None)
    return {"ok": verdict.ok, "reference": "LiteRT" if verdict.why_not_tflm else "TFLM",
            "verdict": verdict.lines()[-1][:12], "arena": compiled.placement.arena_bytes,
            "bound": compiled.placement.lower_bound_bytes, "state": state, "seconds": time.perf_counter() - start,
            "lines": verdict.lines() if not verdict.ok else []}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--board", default=None, help="also run on this emulated or real board (e.g. qemu-m4)")
    ap.add_argument("--only", help="the models whose name contains this")
    ap.add_argument("--steps", type=int, default=20, help="inputs in sequence per model (default 20)")
    ap.add_argument("--no-field", action="store_true", help="only the Keras corpus, no published models")
    ap.add_argument("--no-tflm-arena", action="store_true", help="skip TFLite Micro's arena (its bisection is slow)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = ap.parse_args(argv)
    import memory_bench

    models = [("keras", p) for p in sorted(CORPUS.glob("*.tflite"))]
    if not args.no_field:
        models += [("pymicro-wakeword", p) for p in field_models()]
    rows = []
    for source, path in models:
        if args.only and args.only not in path.stem:
            continue
        row = {"model": path.stem, "source": source, "host": check_model(path, "host", args.steps)}
        if args.board:
            row["board"] = check_model(path, args.board, args.steps)
        row["tflm"] = {} if args.no_tflm_arena else memory_bench.tflm_arena(path)
        rows.append(row)
        h = row["host"]
        print(f"  {path.stem}: host {'PASS' if h.get('ok') else 'FAIL' if 'ok' in h else 'refused'}"
              + (f", {args.board} {'PASS' if row['board'].get('ok') else 'FAIL'}" if args.board else ""),
              file=sys.stderr, flush=True)
    w = max([len(r["model"]) for r in rows] + [5])
    print(f"{'model':<{w}}  {'source':<16}  {'ref':<6}  {'host':<6}  {(args.board or '-'):<8}  {'mcud arena':>10}  "
          f"{'state':>6}  {'TFLM arena':>10}  {'TFLM act.':>9}  {'vs act.':>8}")
    notes = []
    for r in rows:
        h, b, t = r["host"], r.get("board", {}), r["tflm"]

        def verdict(d):
            return "-" if not d else "PASS" if d.get("ok") else "FAIL" if "ok" in d else "refused"

        arena = h.get("arena")
        act = t.get("activations")
        vs = f"{arena / act - 1:+.1%}" if isinstance(arena, int) and act else "-"
        print(f"{r['model']:<{w}}  {r['source']:<16}  {h.get('reference', '-'):<6}  {verdict(h):<6}  {verdict(b):<8}  "
              f"{arena if arena is not None else '-':>10}  {h.get('state') or '-':>6}  {t.get('arena', '-'):>10}  "
              f"{act or '-':>9}  {vs:>8}")
        for where, d in (("host", h), (args.board, b)):
            if d.get("error"):
                notes.append(f"  {r['model']} ({where}): {d['error']}")
            notes += [f"  {r['model']} ({where}): {line}" for line in d.get("lines", [])]
    print("\n".join(notes))
    passed = sum(bool(r["host"].get("ok")) for r in rows)
    print(f"\n{passed} of {len(rows)} models pass on the host" +
          (f", {sum(bool(r.get('board', {}).get('ok')) for r in rows)} on {args.board}" if args.board else ""))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
