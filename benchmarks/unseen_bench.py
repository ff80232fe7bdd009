"""Speed on models mcudeploy was never tuned on (issue 42, acceptance 5: the kernels are made faster for every shape,
not for the four MLPerf Tiny models that cycles_bench.py times), against CMSIS-NN's int8 kernels on the same
emulator.

Each int8 model (default: the Keras corpus's, tests/keras_corpus/*-int8.tflite, made by TensorFlow's converter in
tests/keras_corpus/make.py; or every *int8*.tflite of ``--models DIR``; or the files named) is planned with
``--objective latency`` for the emulator of the board's core, traced there once and weighted for the real board
(cycles_bench.estimate: qemu-m4 and NUCLEO-L4R5ZI by default), and, where cmsis_s8.py maps every one of its
operators, CMSIS-NN's kernels on the same model are run under the same QEMU, traced and weighted the same way
(estimate_check.cmsis_estimate; a checkout named by MCUDEPLOY_CMSIS_NN or --cmsis-nn). Both sides' instructions are
counted by the same trace (mcudeploy/estimate/trace.py) between the same per-operator markers, so their ratio is
instructions against instructions; the operators are paired by name to say where mcudeploy takes more. A model
mcudeploy refuses, or one with an operator cmsis_s8.py has no call for, is a line saying so, and the run goes on.
Whether the outputs are right is the conformance tests' business, not this script's.

    MCUDEPLOY_CMSIS_NN=/path/to/CMSIS-NN python benchmarks/unseen_bench.py [FILE ...] [--models DIR]
                                         [--board nucleo-l4r5zi] [--cmsis-nn PATH] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

import cycles_bench  # noqa: E402
from cmsis_nn import checkout, how  # noqa: E402
from estimate_check import cmsis_estimate  # noqa: E402
from mcudeploy.boards import load_board  # noqa: E402
from mcudeploy.compile import lower  # noqa: E402
from mcudeploy.errors import MCUDeployError  # noqa: E402
from mcudeploy.device.stand_in import EMULATED  # noqa: E402
from mcudeploy.frontend import import_model  # noqa: E402

CORPUS = ROOT / "tests" / "keras_corpus"


def one_line(exc: BaseException, path: Path) -> str:
    """The first line of an error, the model's path as its name, an operator's long fused name cut short."""
    text = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    text = text.replace(str(path), path.name)
    head, sep, tail = text.partition(": ")
    if sep and len(head) > 60:
        text = f"{head[:40]}...: {tail}"
    return text if isinstance(exc, (MCUDeployError, SystemExit)) else f"{type(exc).__name__}: {text}"


def kind(node) -> str:
    """What an operator is, for adding up both sides' instructions by kind."""
    if node.op == "Conv":
        kh, kw = node.attrs.get("kernel_shape", (1, 1))
        return f"{'depthwise' if node.attrs.get('group', 1) > 1 else 'conv'} {kh}x{kw}"
    return "fully connected" if node.op == "Gemm" else node.op


def by_kind(path: Path, mine: list[dict], theirs: list[dict]) -> dict[str, dict]:
    """Instructions per kind of operator on both sides, operators paired by name (a CMSIS-NN call's label is
    "<op> <name>" of the same lowered graph); an operator mcudeploy times and CMSIS-NN does not call (the input's
    layout view) counts on mcudeploy's side only."""
    nodes = {n.name: n for n in lower(import_model(path)).nodes}
    cmsis = {layer["label"].split(" ", 1)[1]: layer["instructions"] for layer in theirs}
    kinds: dict[str, dict] = defaultdict(lambda: {"layers": 0, "mcudeploy": 0, "cmsis_nn": 0})
    for op in mine:
        node = nodes.get(op["name"])
        k = kind(node) if node is not None else op["op"]
        if op["name"] not in cmsis:
            k += " (no CMSIS-NN call)"
        kinds[k]["layers"] += 1
        kinds[k]["mcudeploy"] += op["instructions"]
        kinds[k]["cmsis_nn"] += cmsis.pop(op["name"], 0)
    for name, n in cmsis.items():  # a call with no operator of mcudeploy's (none seen so far)
        k = (kind(nodes[name]) if name in nodes else name) + " (CMSIS-NN only)"
        kinds[k]["layers"] += 1
        kinds[k]["cmsis_nn"] += n
    return dict(kinds)


def bench(path: Path, board: str, cmsis) -> dict:
    row: dict = {"model": path.name, "file": str(path)}
    start = time.perf_counter()
    print(f"  {path.name}: mcudeploy's latency plan, traced ...", end="", file=sys.stderr, flush=True)
    try:
        row["mcudeploy"] = cycles_bench.estimate(path, board, "latency")
    except Exception as exc:  # a refusal (MCUDeployError) or a failure: one line, and the run goes on
        row["refused" if isinstance(exc, MCUDeployError) else "failed"] = one_line(exc, path)
    print(f" {time.perf_counter() - start:.0f} s", end="", file=sys.stderr, flush=True)
    if cmsis is not None and "mcudeploy" in row:
        began = time.perf_counter()
        print("; CMSIS-NN ...", end="", file=sys.stderr, flush=True)
        emulated = EMULATED[load_board(board).core]
        try:
            row["cmsis_nn"] = cmsis_estimate(cmsis, path, board, emulated)
        except (SystemExit, Exception) as exc:  # cmsis_s8.py's refusals (an operator it has no call for, a build
            row["cmsis_nn_not_run"] = one_line(exc, path)  # that failed) are SystemExits
        print(f" {time.perf_counter() - began:.0f} s", end="", file=sys.stderr, flush=True)
        if "cmsis_nn" in row:
            mine, theirs = row["mcudeploy"]["instructions"], row["cmsis_nn"]["traced_instructions"]
            row["ratio"] = mine / theirs
            row["by_kind"] = by_kind(path, row["mcudeploy"]["operators"], row["cmsis_nn"]["layers"])
    row["seconds"] = time.perf_counter() - start
    verdict = ("refused" if "refused" in row else "failed" if "failed" in row
               else f"{row['ratio']:.3f}x CMSIS-NN" if "ratio" in row else "done")
    print(f": {verdict}", file=sys.stderr, flush=True)
    return row


def models(files: list[Path], folder) -> list[Path]:
    found = [p for f in files for p in (sorted(f.glob("*int8*.tflite")) if f.is_dir() else [f])]
    if folder is not None or not files:
        found += sorted((folder or CORPUS).glob("*int8*.tflite"))
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="models (.tflite, .onnx) or folders of *int8*.tflite")
    ap.add_argument("--models", type=Path, help="every *int8*.tflite here (default, with no files: the Keras corpus)")
    ap.add_argument("--board", default="nucleo-l4r5zi", help="the real board to estimate for")
    ap.add_argument("--cmsis-nn", help="a CMSIS-NN checkout (default: $MCUDEPLOY_CMSIS_NN)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    paths = models(args.files, args.models)
    missing = [p for p in paths if not p.is_file()]
    if missing or not paths:
        print(f"no such model: {', '.join(map(str, missing))}" if missing else "no *int8*.tflite models found")
        return 1
    cmsis = checkout(args.cmsis_nn)
    if cmsis is None:
        print(how("CMSIS-NN's int8 kernels are"), file=sys.stderr)
    print(f"{len(paths)} model(s), about a minute each", file=sys.stderr)
    rows = []
    for i, path in enumerate(paths, 1):
        print(f"[{i}/{len(paths)}]", end="", file=sys.stderr)
        rows.append(bench(path, args.board, cmsis))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    target = next((r["mcudeploy"]["target"] for r in rows if "mcudeploy" in r), args.board)
    emulated = EMULATED[load_board(args.board).core]
    print(f"latency plans traced on {emulated}, estimated for {target}; an estimate from a QEMU trace, not a "
          f"measurement")
    w = max(len(r["model"]) for r in rows) + 1
    print(f"{'model':<{w}} {'MACs':>11} {'mcud instr':>12} {'instr/MAC':>9} {'est. ms':>8} {'arena B':>9} "
          f"{'CMSIS-NN instr':>14} {'CMSIS ms':>9} {'mcud/CMSIS':>10}")
    notes = []
    for r in rows:
        if "mcudeploy" not in r:
            print(f"{r['model']:<{w}} {'refused' if 'refused' in r else 'failed':>11}")
            notes.append(f"{r['model']}: mcudeploy {'refuses it' if 'refused' in r else 'failed'}: "
                         f"{r.get('refused') or r.get('failed')}")
            continue
        m = r["mcudeploy"]
        per_mac = f"{m['instructions'] / m['macs']:.2f}" if m["macs"] else "-"
        c = r.get("cmsis_nn")
        theirs = (f"{c['traced_instructions']:>14,} {c['estimated_ms']:>9.2f} {r['ratio']:>9.3f}x" if c
                  else f"{'-':>14} {'-':>9} {'-':>10}")
        print(f"{r['model']:<{w}} {m['macs']:>11,} {m['instructions']:>12,} {per_mac:>9} {m['estimated_ms']:>8.2f} "
              f"{m['arena_bytes']:>9,} {theirs}")
        if "cmsis_nn_not_run" in r:
            notes.append(f"{r['model']}: no CMSIS-NN figure: {r['cmsis_nn_not_run']}")
        if "by_kind" in r:
            parts = []
            for k, v in sorted(r["by_kind"].items(), key=lambda kv: -kv[1]["mcudeploy"]):
                ratio = f"{v['mcudeploy'] / v['cmsis_nn']:.2f}x" if v["cmsis_nn"] else "-"
                parts.append(f"{k} ({v['layers']}) {v['mcudeploy']:,} / {v['cmsis_nn']:,} = {ratio}"
                             + (" SLOWER" if v["mcudeploy"] > v["cmsis_nn"] > 0 else ""))
            notes.append(f"{r['model']}: by kind, mcudeploy / CMSIS-NN instructions: " + "; ".join(parts))
    if cmsis is None:
        notes.append(how("CMSIS-NN's int8 kernels are"))
    print("\n".join(notes))
    compared = [r for r in rows if "ratio" in r]
    total = sum(r["seconds"] for r in rows)
    print(f"{len(rows)} model(s) in {total:.0f} s: {sum('mcudeploy' in r for r in rows)} planned and traced, "
          f"{len(compared)} against CMSIS-NN"
          + (f" (mcudeploy / CMSIS-NN {min(r['ratio'] for r in compared):.3f}x to "
             f"{max(r['ratio'] for r in compared):.3f}x)" if compared else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
