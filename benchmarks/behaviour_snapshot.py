"""What the compiler decides on every shared model, as one JSON file to compare across a refactor:
per model and board, the arena, the lower bound, a digest of the order and of every buffer's
offset, the digest of model.c, and (on qemu-m4) the instructions of one whole run.

    python benchmarks/behaviour_snapshot.py write before.json
    python benchmarks/behaviour_snapshot.py compare before.json     # exit 1 on any difference

A refactor that changes none of these has changed no behaviour a user can see.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from shared_models import shared_models  # noqa: E402

from mcudeploy.check import random_inputs  # noqa: E402
from mcudeploy.codegen import write_project  # noqa: E402
from mcudeploy.compile import compile_model  # noqa: E402

BOARDS = ("host", "qemu-m4")


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def snapshot(run_on_qemu: bool = True) -> dict:
    out = {}
    for model in shared_models():
        for board in BOARDS:
            compiled = compile_model(model, board)
            with tempfile.TemporaryDirectory() as tmp:
                project = write_project(compiled, tmp)
                model_c = hashlib.sha256((project / "model.c").read_bytes()).hexdigest()[:16]
                plan = json.loads((project / "plan.json").read_text())
            entry = {
                "arena_bytes": compiled.placement.arena_bytes,
                "lower_bound_bytes": plan.get("lower_bound_bytes"),
                "order": digest([n.name for n in compiled.order]),
                "buffers": digest(plan.get("buffers")),
                "model_c": model_c,
            }
            if board == "qemu-m4" and run_on_qemu:
                from mcudeploy.device.runner import run_on_board

                run = run_on_board(compiled, random_inputs(compiled.graph, 1, seed=0))
                entry["instructions"] = round(run.runs[0].total_ticks * run.instructions_per_tick)
            out[f"{model.name} @ {board}"] = entry
            print(f"{model.name} @ {board}: {entry}", file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("write", "compare"))
    p.add_argument("file")
    p.add_argument("--no-qemu", action="store_true", help="leave out the instruction counts")
    args = p.parse_args(argv)
    now = snapshot(not args.no_qemu)
    if args.action == "write":
        Path(args.file).write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(now)} entries to {args.file}")
        return 0
    before = json.loads(Path(args.file).read_text())
    differences = 0
    for key in sorted(set(before) | set(now)):
        a, b = before.get(key), now.get(key)
        for field in sorted(set(a or {}) | set(b or {})):
            if (a or {}).get(field) != (b or {}).get(field):
                differences += 1
                print(f"{key}: {field} {(a or {}).get(field)} -> {(b or {}).get(field)}")
    print(f"{len(now)} entries, {differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
