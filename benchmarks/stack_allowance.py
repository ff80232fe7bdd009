"""Measure the stack of the library functions a firmware can call, for mcudeploy/device/stack_bound.py's LIBRARY.

For each board given: compile the measurer with every kernel (a project of MODEL), list the functions the
units call but none defines (the C library's and libgcc's), link the firmware with each of them kept
(-Wl,-u,NAME) and read their stack from `objdump -d` (stack_bound.library_frames: the pushes and
``sub sp``/``addi sp, -N`` of each function plus the deepest library function it calls). Prints, per
toolchain, the most over the boards' multilibs, rounded up to 8 bytes plus 8 spare, as LIBRARY's rows.

    python benchmarks/stack_allowance.py qemu-m3 qemu-m4 qemu-m7 qemu-m55 qemu-an521-core qemu-rv32 qemu-m0 pico \
        pico2 nano33ble microbit microbit-v2 hifive1-revb
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from mcudeploy.boards import load_board
from mcudeploy.compile import compile_model
from mcudeploy.device import build, stack_bound
from mcudeploy.project import write_project

MODEL = str(Path(__file__).resolve().parents[2] / "shared" / "models" / "tflite" / "kws_dscnn_int8.tflite")


def measure(board_name: str, folder: Path) -> tuple[str, dict[str, int]]:
    board = load_board(board_name)
    project = write_project(compile_model(MODEL, board), folder / board_name)
    spec = build.firmware_build_spec(board, project)
    out = Path(spec["project_dir"]) / "firmware" / "build"
    out.mkdir(parents=True, exist_ok=True)
    objs = build._objects(spec, out)
    graph = stack_bound.call_graph(stack_bound.parse_ci(o.with_suffix(".ci").read_text()) for o in objs)
    defined = {f.label for f in graph.values() if f.frame is not None}
    names = sorted(t for t, f in graph.items() if f.frame is None and t not in defined
                   and t != stack_bound.INDIRECT_NODE)
    elf = out / "allowance.elf"
    keep = [f"-Wl,-u,{n}" for n in names]
    proc = build._link({**spec, "ldflags": spec["ldflags"] + keep}, objs, spec["sizing_linker_script"], elf)
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    objdump = spec["cc"].removesuffix("gcc") + "objdump"
    frames = stack_bound.library_frames(elf, objdump, names)
    missing = sorted(set(names) - set(frames))
    if missing:
        print(f"{board_name}: not in the linked firmware: {', '.join(missing)}", file=sys.stderr)
    return spec["cc"], frames


def main(boards: list[str]) -> None:
    table: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in boards:
            cc, frames = measure(name, Path(folder))
            row = table.setdefault(cc, {})
            for fn, n in frames.items():
                row[fn] = max(row.get(fn, 0), -(-n // 8) * 8 + 8)
    print(json.dumps({cc: dict(sorted(row.items())) for cc, row in table.items()}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:] or ["qemu-m4"])
