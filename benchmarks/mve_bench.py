"""Helium (issue 40): mcudeploy's MVE kernels on qemu-m55 against its DSP kernels on qemu-m4 and against CMSIS-NN's
MVE kernels on the same qemu-m55, per MLPerf Tiny int8 model (the TFLite files), in guest instructions.

- **qemu-m4** and **qemu-m55**: the sum of ``measure_model``'s per-operator ticks of each board's own default plan
  (``compile_model(path, board)``: the memory objective), times the board's instructions per tick (40 on qemu-m4's
  25 MHz timer, 31.25 on qemu-m55's 32 MHz one; QEMU ``-icount shift=0``). Timed in a fresh timing cache.
- **CMSIS-NN MVE**: CMSIS-NN's int8 kernels built for ``-mcpu=cortex-m55`` (ARM_MATH_MVEI, from
  ``__ARM_FEATURE_MVE``) into the whole-model harness of cmsis_s8.py, linked into the an547's memories as
  mcudeploy's firmware is, and run on the same QEMU: the sum of its per-layer instructions. Only when a checkout is
  named (``--cmsis-nn PATH`` or ``MCUDEPLOY_CMSIS_NN``; nothing is vendored).

    python benchmarks/mve_bench.py [--models DIR] [--only kws,vww] [--cmsis-nn PATH] [--no-m4] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

import cmsis_s8  # noqa: E402
from cmsis_nn import checkout, how  # noqa: E402
from mcudeploy.compile import compile_model, lower  # noqa: E402
from mcudeploy.device.measure import measure_model  # noqa: E402
from mcudeploy.frontend import import_model  # noqa: E402
from mcudeploy.simulate.timing_cache import TimingCache  # noqa: E402

MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
TINY = {"kws": "kws_dscnn_int8", "vww": "vww_mobilenetv1_int8", "resnet8": "ic_resnet8_int8",
        "ad": "ad_autoencoder_int8"}


def mcudeploy_instructions(path: Path, board: str, cache_root: Path) -> int:
    m = measure_model(compile_model(str(path), board), repeat=1, cache=TimingCache(board, cache_root))
    return round(m.total_ticks * m.instructions_per_tick)


def row(path: Path, cmsis, m4: bool, cache_root: Path) -> dict:
    out = {"model": path.stem, "qemu-m55": mcudeploy_instructions(path, "qemu-m55", cache_root)}
    if m4:
        out["qemu-m4"] = mcudeploy_instructions(path, "qemu-m4", cache_root)
    if cmsis is not None:
        layers = cmsis_s8.measure(cmsis, lower(import_model(path)), "qemu-m55", path.name)
        out["cmsis-nn-mve"] = sum(layer.instructions for layer in layers)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=MODELS)
    ap.add_argument("--only", default=",".join(TINY), help=f"comma-separated, of {', '.join(TINY)}")
    ap.add_argument("--cmsis-nn", help="a CMSIS-NN checkout (default: $MCUDEPLOY_CMSIS_NN)")
    ap.add_argument("--no-m4", action="store_true", help="skip qemu-m4 (no M4/M55 ratio)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cmsis = checkout(args.cmsis_nn)
    if cmsis is None:
        print(how("CMSIS-NN's MVE kernels are"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcud-mve-bench-") as tmp:
        for key in args.only.split(","):
            rows.append(row(args.models / "tflite" / f"{TINY[key]}.tflite", cmsis, not args.no_m4, Path(tmp)))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| model | qemu-m4 | qemu-m55 | m4 / m55 | CMSIS-NN MVE (qemu-m55) | mcudeploy / CMSIS-NN |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        m55, m4, cm = r["qemu-m55"], r.get("qemu-m4"), r.get("cmsis-nn-mve")
        ratio = f"{m4 / m55:.2f}x" if m4 else "-"
        versus = f"{m55 / cm:.3f}" if cm else "-"
        print(f"| {r['model']} | {f'{m4:,}' if m4 else '-'} | {m55:,} | {ratio} | {f'{cm:,}' if cm else '-'} | {versus} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
