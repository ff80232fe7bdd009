"""mcudeploy's arena next to TensorFlow Lite Micro's, measured in the same run.

For every model in MODELS/tflite (and its namesake in MODELS/onnx):
- TFLM: the smallest ``arena_size`` with which the ``tflite-micro`` interpreter (PyPI) allocates
  the .tflite and runs one inference, found by bisection to the byte, each trial in a child
  process of its own; and the part of that arena TFLM's planner gives to activations (the "head" of
  ``print_allocations()``; the rest is TFLM's own bookkeeping);
- mcudeploy: ``arena_bytes`` and ``lower_bound_bytes`` of the plan compiled from the same .tflite
  (the ONNX twin's arena beside it), and the arena each placement method reaches on the same
  buffers, against the bound. A model with only an ONNX file is compiled from it.

    python benchmarks/memory_bench.py [--models DIR] [--board host] [--corpus] [--json out.json]

``--corpus`` adds the Keras 3 exports of tests/keras_corpus (issue 35's corpus), .tflite only.

Without ``tflite-micro`` the TFLM columns say why and the rest still runs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
SEED = 0
START_BYTES = 16 * 1024
MAX_BYTES = 256 * 1024 * 1024
WORKER_TIMEOUT_S = 600


# --- TFLM, in a child process (the interpreter prints from C and holds native memory) ---------

def _tflm_runs(runtime, np, path: str, size: int):
    """The interpreter after one inference with an arena of ``size`` bytes, or None if it fails."""
    try:
        interp = runtime.Interpreter.from_file(path, arena_size=size)
    except RuntimeError:  # "TFLM failed to allocate tensors"
        return None
    rng = np.random.default_rng(SEED)
    index = 0
    while True:
        try:
            detail = interp.get_input_details(index)
        except IndexError:
            break
        dtype = np.dtype(detail["dtype"])
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, size=detail["shape"], endpoint=True, dtype=dtype)
        else:
            x = rng.standard_normal(detail["shape"]).astype(dtype)
        interp.set_input(x, index)
        index += 1
    try:
        interp.invoke()
    except RuntimeError:
        return None
    return interp


def tflm_try(path: str, size: int) -> None:
    """One trial, alone in its process: exit status 0 when the interpreter runs with ``size`` bytes (a failed
    allocation can leave TFLM's allocator unusable for later trials in the same process: a stateful model's
    variables are allocated at its first invoke)."""
    import numpy as np
    from tflite_micro.python.tflite_micro import runtime

    interp = _tflm_runs(runtime, np, path, size)
    if interp is None:
        sys.exit(1)
    if os.environ.get("MCUD_PRINT_ALLOCATIONS"):
        sys.stdout.flush()
        interp.print_allocations()  # C stdout; the parent reads the "head" line
        sys.stdout.flush()


def _runs(path: str, size: int) -> bool:
    run = subprocess.run([sys.executable, __file__, "--tflm-try", path, str(size)], capture_output=True, text=True,
                         timeout=WORKER_TIMEOUT_S)
    return run.returncode == 0


def tflm_worker(path: str) -> None:
    trials = 0
    high = START_BYTES
    while True:
        trials += 1
        if _runs(path, high):
            break
        if high >= MAX_BYTES:
            print("RESULT " + json.dumps({"error": f"does not run with {MAX_BYTES:,} bytes"}), flush=True)
            return
        high *= 2
    low = high // 2 if high > START_BYTES else 0  # fails (or is 0)
    while high - low > 1:
        mid = (low + high) // 2
        trials += 1
        if _runs(path, mid):
            high = mid
        else:
            low = mid
    run = subprocess.run([sys.executable, __file__, "--tflm-try", path, str(high)], capture_output=True, text=True,
                         timeout=WORKER_TIMEOUT_S, env={**os.environ, "MCUD_PRINT_ALLOCATIONS": "1"})
    print(run.stdout + run.stderr, flush=True)  # TFLM's allocation report (it prints to stderr)
    print("RESULT " + json.dumps({"arena": high, "trials": trials}), flush=True)


def tflm_arena(tflite: Path) -> dict:
    """{"arena", "activations", "trials", "seconds"} or {"error"} for one .tflite."""
    start = time.perf_counter()
    try:
        run = subprocess.run([sys.executable, __file__, "--tflm-worker", str(tflite)], capture_output=True,
                             text=True, timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {WORKER_TIMEOUT_S} s"}
    out = run.stdout + run.stderr
    result = re.search(r"^RESULT (.*)$", out, re.M)
    if not result:
        last = [line for line in out.splitlines() if line.strip()][-1:] or [f"exit code {run.returncode}"]
        return {"error": last[0][:160]}
    found = json.loads(result.group(1))
    head = re.search(r"Arena allocation head (\d+) bytes", out)
    found["activations"] = int(head.group(1)) if head else None
    found["seconds"] = time.perf_counter() - start
    return found


def tflm_status() -> str | None:
    """None if tflite-micro can be imported, else why not (the test of run --check's TFLM oracle)."""
    from mcudeploy.check import tflm

    return tflm.available()


def tflm_version() -> str:
    try:
        from importlib.metadata import version

        return version("tflite-micro")
    except Exception:  # noqa: BLE001 - only a label
        return "?"


# --- mcudeploy ----------------------------------------------------------------------------------

def placement_methods() -> tuple[str, ...]:
    from mcudeploy.memory.place import METHODS

    return tuple(METHODS)


def mcudeploy_arena(model_path: Path, board: str) -> dict:
    from mcudeploy.memory import areas, place
    from mcudeploy.compile import compile_model

    start = time.perf_counter()
    compiled = compile_model(model_path, board)
    seconds = time.perf_counter() - start
    methods = {}
    for method in placement_methods():
        t0 = time.perf_counter()
        try:
            p = place(compiled.lifetimes, areas(compiled.board), method, compiled.board.alignment)
        except Exception as exc:  # noqa: BLE001 - a method that fails is a row of the table
            methods[method] = {"error": f"{type(exc).__name__}: {exc}"[:120]}
            continue
        methods[method] = {"arena": p.arena_bytes, "method": p.method, "seconds": time.perf_counter() - t0,
                           "proven_optimal": getattr(p, "proven_optimal", None)}
    return {"arena": compiled.placement.arena_bytes, "bound": compiled.placement.lower_bound_bytes,
            "placement": compiled.placement.method, "schedule": compiled.schedule_method,
            "operators": len(compiled.order), "alignment": compiled.board.alignment, "seconds": seconds,
            "methods": methods, "from": model_path.suffix.lstrip(".")}


# --- the run --------------------------------------------------------------------------------------

CORPUS = ROOT / "tests" / "keras_corpus"


def pairs(models: Path, corpus: bool = False) -> list[tuple[str, Path | None, Path | None]]:
    onnx = {p.stem: p for p in sorted((models / "onnx").glob("*.onnx"))}
    tflite = {p.stem: p for p in sorted((models / "tflite").glob("*.tflite"))}
    out = [(name, onnx.get(name), tflite.get(name)) for name in sorted(set(onnx) | set(tflite))]
    if corpus:  # the Keras 3 exports of tests/keras_corpus (.tflite only)
        out += [(f"keras/{p.stem}", None, p) for p in sorted(CORPUS.glob("*.tflite"))]
    return out


def _n(v) -> str:
    return f"{v:,}" if isinstance(v, int) else "–"


def _pct(a, b) -> str:
    return f"{a / b - 1:+.1%}" if isinstance(a, int) and isinstance(b, int) and b else "–"


def tables(rows: list[dict], methods: tuple[str, ...]) -> list[str]:
    w = max([len(r["model"]) for r in rows] + [5])
    out = [f"{'model':<{w}}  {'TFLM arena':>10}  {'TFLM act.':>10}  {'mcud arena':>10}  {'(.onnx)':>9}  {'bound':>8}  "
           f"{'arena/bound':>11}  {'vs TFLM act.':>12}  {'vs TFLM arena':>13}"]
    notes = []
    for r in rows:
        t, m = r.get("tflm") or {}, r.get("mcudeploy") or {}
        ratio = f"{m['arena'] / m['bound']:.3f}" if m.get("bound") else "–"
        o = r.get("mcudeploy_onnx") or {}
        out.append(f"{r['model']:<{w}}  {_n(t.get('arena')):>10}  {_n(t.get('activations')):>10}  "
                   f"{_n(m.get('arena')):>10}  {_n(o.get('arena')):>9}  {_n(m.get('bound')):>8}  {ratio:>11}  "
                   f"{_pct(m.get('arena'), t.get('activations')):>12}  {_pct(m.get('arena'), t.get('arena')):>13}")
        for who, d in (("TFLM", t), ("mcudeploy", m), ("mcudeploy (.onnx)", o)):
            if d.get("error"):
                notes.append(f"  {r['model']}: {who}: {d['error']}")
    out += notes
    out += ["", "placement methods on the same buffers (arena bytes, above the bound, time):"]
    out.append(f"{'model':<{w}}  {'bound':>8}  " + "  ".join(f"{m:>28}" for m in methods))
    for r in rows:
        m = r.get("mcudeploy") or {}
        if "methods" not in m:
            continue
        cells = []
        for name in methods:
            p = m["methods"].get(name, {})
            if "error" in p:
                cells.append(f"{'failed':>28}")
                notes.append(f"  {r['model']}: placement {name}: {p['error']}")
                continue
            proof = " proven" if p.get("proven_optimal") else ""
            cells.append(f"{_n(p['arena']) + ' (' + _pct(p['arena'], m['bound']) + ', ' + format(p['seconds'] * 1e3, '.0f') + ' ms' + proof + ')':>28}")
        out.append(f"{r['model']:<{w}}  {_n(m['bound']):>8}  " + "  ".join(cells))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS, help=f"folder with onnx/ and tflite/ (default {DEFAULT_MODELS})")
    ap.add_argument("--board", default="host", help="mcudeploy board (default host: 16-byte alignment, as TFLM's)")
    ap.add_argument("--only", help="run the models whose name contains this")
    ap.add_argument("--corpus", action="store_true", help="also the Keras 3 corpus (tests/keras_corpus/*.tflite)")
    ap.add_argument("--no-tflm", action="store_true", help="skip TFLite Micro")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    ap.add_argument("--tflm-worker", help=argparse.SUPPRESS)
    ap.add_argument("--tflm-try", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.tflm_worker:
        tflm_worker(args.tflm_worker)
        return 0
    if args.tflm_try:
        tflm_try(args.tflm_try[0], int(args.tflm_try[1]))
        return 0
    if not (args.models / "onnx").is_dir() and not (args.models / "tflite").is_dir():
        print(f"no models at {args.models}/tflite or /onnx (set --models or MCUDEPLOY_MODELS)", file=sys.stderr)
        return 1
    tflm_missing = "skipped (--no-tflm)" if args.no_tflm else tflm_status()
    methods = placement_methods()
    print(f"models {args.models}; mcudeploy board {args.board}; placement methods {', '.join(methods)}")
    print(f"TFLite Micro: {tflm_missing or 'tflite-micro ' + tflm_version() + ' (PyPI), smallest arena_size that runs one inference, by bisection'}")
    print()
    rows = []
    for name, onnx, tflite in pairs(args.models, args.corpus):
        if args.only and args.only not in name:
            continue
        row = {"model": name}
        if tflite is None:
            row["tflm"] = {"error": "no .tflite"}
        elif tflm_missing:
            row["tflm"] = {"error": tflm_missing}
        else:
            row["tflm"] = tflm_arena(tflite)
        for key, path in (("mcudeploy", tflite or onnx), ("mcudeploy_onnx", onnx if tflite else None)):
            if path is None:
                row[key] = {"error": "no .onnx"} if key == "mcudeploy_onnx" and tflite else {}
                continue
            try:
                row[key] = mcudeploy_arena(path, args.board)
            except Exception as exc:  # noqa: BLE001 - report and go on with the next model
                row[key] = {"error": f"{type(exc).__name__}: {exc}"[:160]}
        rows.append(row)
        print(f"  {name}: TFLM {_n(row['tflm'].get('arena'))}, mcudeploy {_n(row['mcudeploy'].get('arena'))}",
              file=sys.stderr, flush=True)
    print("\n".join(tables(rows, methods)))
    print()
    print("TFLM arena: the whole arena_size; TFLM act.: the part its planner gives to activations ('head').")
    print("mcud arena: activations only, every offset fixed at compile time, compiled from the .tflite (.onnx: from the ONNX "
          "twin); the percentages are mcud arena against each.")
    used = sorted({(r["mcudeploy"]["schedule"], r["mcudeploy"]["placement"]) for r in rows if "schedule" in r["mcudeploy"]})
    print("mcudeploy compile used: " + "; ".join(f"schedule {s}, placement {p}" for s, p in used))
    if args.json:
        args.json.write_text(json.dumps({"board": args.board, "placement_methods": list(methods),
                                         "tflm": tflm_missing or tflm_version(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
