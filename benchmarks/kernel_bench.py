"""mcudeploy's int8 kernels in guest instructions, next to CMSIS-NN and plain C (issue 6).

Per layer of the issue's table: a one-layer int8 QDQ model of that exact shape (random data,
per-channel weights, built by the int8 conformance cases' own builders), compiled for the
board and timed with ``measure_model``; the figure is the Conv/Gemm operator's own
instructions, not the QuantizeLinear in front of it. Per whole model: every int8 model in
MODELS/onnx and MODELS/tflite (the .tflite computing as TFLite Micro does, bit for bit), its total
instructions, its MACs (the operators' ``macs`` summed) and instructions per MAC, next to
CMSIS-NN's figure for KWS. Mobile-net pieces (issue 17): the zoo's int8 MobileNetV3-Small and
EfficientNet-B0 (tests/zoo.py), per operator kind its instructions per element and, for the
activations (HardSwish, HardSigmoid, Swish) and the squeeze-excite Mul, their instructions per MAC of
the convolution whose output they read, next to that convolution's own instructions per MAC.

    python benchmarks/kernel_bench.py [--board qemu-m4] [--models DIR] [--json] [--cached] [--check]
                                      [--scratch always|fit] [--only layers|models|mobile]

A layer alone is always at its arena's peak, where the compiler trades a fast kernel's
scratch for a slower kernel that needs none; by default the layers keep their scratch (as
CMSIS-NN, measured with its buffer), ``--scratch fit`` shows the compiler's own choice. Whole
models are measured as compiled.

Under QEMU with ``-icount shift=0`` one tick is 40 guest instructions: counts, not cycles.
Each run measures afresh in a temporary timing cache; ``--cached`` uses the board's usual
cache (``$MCUDEPLOY_CACHE``), so unchanged kernels are not measured again. ``--check`` exits
with 1 when an acceptance target of the issue is missed.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the int8 conformance cases' model builders

from conformance.test_int8_cases import conv, gemm, quantized  # noqa: E402

from mcudeploy import compile as pipeline  # noqa: E402
from mcudeploy.device.measure import measure_model  # noqa: E402
from mcudeploy.ops import registry  # noqa: E402
from mcudeploy.compile import compile_model  # noqa: E402
from mcudeploy.simulate.timing_cache import TimingCache  # noqa: E402

DEFAULT_MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))
SEED = 0

# Published reference figures, not our measurements: issue 6, "Reference figures" (QEMU
# mps2-an386 -icount shift=0, arm-none-eabi-gcc 12.2 -O3 for cortex-m4 hard float, CMSIS-NN at
# commit 99f736a). Instructions per call: (MACs, CMSIS-NN, plain C with run-time shapes).
REFERENCE = {
    "KWS conv 10x4 s2, 49x10x1 -> 25x5x64": (320_000, 1_111_176, 8_664_056),
    "KWS depthwise 3x3, 25x5x64": (72_000, 599_612, 1_625_132),
    "KWS pointwise 64->64 on 25x5": (512_000, 1_068_928, 3_884_212),
    "VWW conv 3x3 s2, 96x96x3 -> 48x48x8": (497_664, 3_063_016, 8_152_376),
    "VWW depthwise 3x3, 48x48x8": (165_888, 1_651_108, 3_923_716),
    "VWW pointwise 8->16 on 48x48": (294_912, 1_954_932, 5_554_412),
    "VWW pointwise 128->128 on 6x6": (589_824, 1_079_168, 4_005_588),
    "fully connected 640->128": (81_920, 160_052, 497_704),
}
WHOLE_KWS = ("kws_dscnn_int8.onnx", 2_656_768, 7_838_988, 30_756_052)

# Acceptance targets of issue 6.
KWS_MAX_INSTRUCTIONS = 7_050_000
TABLE_MAX_RATIO = 0.9
MAX_INSTRUCTIONS_PER_MAC = 3.0
PER_MAC_MODELS = ("vww_mobilenetv1_int8.onnx", "ic_resnet8_int8.onnx", "ad_autoencoder_int8.onnx")

# The layers, NCHW as ONNX has them; padding as in the reference models (kws_dscnn: 10x4 with
# pads 4,1,5,1; vww_mobilenetv1: 3x3 stride 2 with pads 0,0,1,1). Relu as in the models.
LAYERS = {
    "KWS conv 10x4 s2, 49x10x1 -> 25x5x64":
        conv(cin=1, cout=64, hw=(49, 10), k=(10, 4), strides=[2, 2], pads=[4, 1, 5, 1], relu=True),
    "KWS depthwise 3x3, 25x5x64": conv(cin=64, cout=64, group=64, hw=(25, 5), pads=[1, 1, 1, 1], relu=True),
    "KWS pointwise 64->64 on 25x5": conv(cin=64, cout=64, hw=(25, 5), k=(1, 1), relu=True),
    "VWW conv 3x3 s2, 96x96x3 -> 48x48x8":
        conv(cin=3, cout=8, hw=(96, 96), strides=[2, 2], pads=[0, 0, 1, 1], relu=True),
    "VWW depthwise 3x3, 48x48x8": conv(cin=8, cout=8, group=8, hw=(48, 48), pads=[1, 1, 1, 1], relu=True),
    "VWW pointwise 8->16 on 48x48": conv(cin=8, cout=16, hw=(48, 48), k=(1, 1), relu=True),
    "VWW pointwise 128->128 on 6x6": conv(cin=128, cout=128, hw=(6, 6), k=(1, 1), relu=True),
    "fully connected 640->128": gemm(m=1, k=640, n=128),
}


@dataclass(frozen=True)
class Row:
    name: str
    macs: int
    instructions: int
    kernel: str
    cmsis: Optional[int] = None
    plain_c: Optional[int] = None

    @property
    def per_mac(self) -> float:
        return self.instructions / self.macs if self.macs else float("nan")

    @property
    def ratio(self) -> Optional[float]:
        return self.instructions / self.cmsis if self.cmsis else None

    def as_dict(self) -> dict:
        return {"name": self.name, "macs": self.macs, "instructions": self.instructions, "kernel": self.kernel,
                "instructions_per_mac": round(self.per_mac, 3), "cmsis_nn": self.cmsis, "plain_c": self.plain_c,
                "ratio_to_cmsis_nn": None if self.ratio is None else round(self.ratio, 4)}


def model_macs(compiled) -> int:
    graph = compiled.graph
    return sum(registry.get(n.op).macs(graph, n) for n in graph.nodes)


def instructions(measurement, index: int) -> int:
    """Guest instructions of one operator (ticks x instructions per tick; ticks on a real board)."""
    ticks = measurement.ops[index].ticks
    ipt = measurement.instructions_per_tick
    return round(ticks * ipt) if ipt else ticks


@contextlib.contextmanager
def scratch_policy(policy: str):
    """``fit``: the compiler's own choice, which drops a fast kernel's scratch (for a slower one
    that needs none) where it would raise the arena's peak -- alone, a layer always is at its
    peak. ``always``: every kernel keeps its scratch, as CMSIS-NN was measured with its buffer."""
    if policy == "fit" or not hasattr(pipeline, "fit_scratch"):
        yield
        return
    saved = pipeline.fit_scratch
    pipeline.fit_scratch = lambda graph, order, *args, **kwargs: (graph, tuple(order))
    try:
        yield
    finally:
        pipeline.fit_scratch = saved


def measure_layer(name: str, board: str, cache: TimingCache, repeat: int, scratch: str = "always") -> Row:
    build, op = LAYERS[name]
    model, _ = quantized(build, seed=SEED + list(LAYERS).index(name) + 1)
    with scratch_policy(scratch):
        compiled = compile_model(model, board)
    m = measure_model(compiled, repeat=repeat, cache=cache)
    (index,) = [o.index for o in m.ops if o.label.startswith(f"{op}:")]
    macs, cmsis, plain = REFERENCE[name]
    node = next(n for n in compiled.graph.nodes if f"{n.op}: {n.name}" == m.ops[index].label)
    ours = registry.get(node.op).macs(compiled.graph, node)
    if ours != macs:
        raise SystemExit(f"layer '{name}' has {ours:,} MACs, the issue's table {macs:,}: the shape is wrong")
    return Row(name, macs, instructions(m, index), m.ops[index].kernel, cmsis, plain)


def measure_whole(path: Path, board: str, cache: TimingCache, repeat: int) -> Row:
    compiled = compile_model(path, board)
    m = measure_model(compiled, repeat=repeat, cache=cache)
    total = sum(instructions(m, o.index) for o in m.ops)
    cmsis = plain = None
    if path.stem == Path(WHOLE_KWS[0]).stem:  # the .onnx and the .tflite
        cmsis, plain = WHOLE_KWS[2], WHOLE_KWS[3]
    return Row(path.name, model_macs(compiled), total, "", cmsis, plain)


MOBILE_MODELS = ("mobilenetv3_small", "efficientnet_b0")
MOBILE_OPS = ("HardSwish", "HardSigmoid", "Swish", "Sigmoid", "Mul")


@dataclass(frozen=True)
class PieceRow:
    """One operator kind of a mobile model: its calls, elements written, instructions; of those calls
    that read a convolution's output, their instructions and the convolutions' MACs and instructions."""

    model: str
    op: str
    calls: int
    elements: int
    instructions: int
    paired_instructions: int
    conv_macs: int
    conv_instructions: int

    def as_dict(self) -> dict:
        return {"model": self.model, "op": self.op, "calls": self.calls, "elements": self.elements,
                "instructions": self.instructions,
                "instructions_per_element": round(self.instructions / self.elements, 3),
                "instructions_per_conv_mac": round(self.paired_instructions / self.conv_macs, 4)
                if self.conv_macs else None,
                "conv_instructions_per_mac": round(self.conv_instructions / self.conv_macs, 3)
                if self.conv_macs else None}


def measure_mobile(board: str, cache: TimingCache, repeat: int, workdir: Path) -> list[PieceRow]:
    """The mobile pieces of the zoo's int8 models, measured as compiled (see the module's doc)."""
    import zoo

    rows = []
    for name in MOBILE_MODELS:
        _, qdq, _ = zoo.MOBILE_BUILDERS[name](workdir / name)
        compiled = compile_model(qdq, board)
        graph = compiled.graph
        m = measure_model(compiled, repeat=repeat, cache=cache)
        by_label = {o.label: o for o in m.ops}
        labels = {f"{n.op}: {n.name}": n for n in graph.nodes}
        ins = {n.name: instructions(m, by_label[label].index) for label, n in labels.items() if label in by_label}
        for op in MOBILE_OPS + ("Conv",):
            nodes = [n for n in graph.nodes if n.op == op and n.name in ins]
            if not nodes:
                continue
            pairs = [(n, n if op == "Conv" else graph.producer(n.inputs[0])) for n in nodes]
            pairs = [(n, c) for n, c in pairs if c is not None and c.op == "Conv" and c.name in ins]
            rows.append(PieceRow(name, op, len(nodes), sum(graph[n.outputs[0]].size for n in nodes),
                                 sum(ins[n.name] for n in nodes), sum(ins[n.name] for n, _ in pairs),
                                 sum(registry.get("Conv").macs(graph, c) for _, c in pairs),
                                 sum(ins[c.name] for _, c in pairs)))
    return rows


MATMUL_MAX_RATIO = 1.5  # issue 17: a product of two activations per MAC, against the constant-weight kernel's


@dataclass(frozen=True)
class KernelRow:
    """One kernel function of the zoo's int8 transformer encoder: its calls, MACs and instructions."""

    op: str
    kernel: str
    calls: int
    macs: int
    instructions: int

    def as_dict(self) -> dict:
        return {"op": self.op, "kernel": self.kernel, "calls": self.calls, "macs": self.macs,
                "instructions": self.instructions,
                "instructions_per_mac": round(self.instructions / self.macs, 3) if self.macs else None}


def measure_transformer(board: str, cache: TimingCache, repeat: int, workdir: Path,
                        scratch: str = "always") -> list[KernelRow]:
    """The zoo's int8 2-layer transformer encoder, measured whole, by operator and kernel function
    (``scratch`` as for the layers: "fit" lets the compiler trade a kernel's scratch for a slower
    scratch-free one where it raises the peak)."""
    import zoo

    _, qdq, _ = zoo.transformer(workdir / "transformer")
    with scratch_policy(scratch):
        compiled = compile_model(qdq, board)
    graph = compiled.graph
    m = measure_model(compiled, repeat=repeat, cache=cache)
    nodes = {f"{n.op}: {n.name}": n for n in graph.nodes}
    rows: dict = {}
    for o in m.ops:
        n = nodes[o.label]
        key = (n.op, o.kernel)
        calls, macs, ins = rows.get(key, (0, 0, 0))
        rows[key] = (calls + 1, macs + registry.get(n.op).macs(graph, n), ins + instructions(m, o.index))
    out = [KernelRow(op, kernel, *v) for (op, kernel), v in sorted(rows.items())]
    total = KernelRow("(the whole encoder)", "", sum(r.calls for r in out), sum(r.macs for r in out),
                      sum(r.instructions for r in out))
    return out + [total]


def transformer_lines(rows: list[KernelRow], board: str, scratch: str) -> list[str]:
    out = [f"the zoo's int8 transformer encoder on {board} (2 layers, d=64, 4 heads, sequence 32), by kernel; "
           f"scratch {scratch}",
           f"{'operator':<20} {'kernel':<24} {'calls':>5} {'MACs':>10} {'instructions':>13} {'/MAC':>7}"]
    for r in rows:
        per = r.as_dict()["instructions_per_mac"]
        out.append(f"{r.op:<20} {r.kernel:<24} {r.calls:>5} {r.macs:>10,} {r.instructions:>13,} {_n(per, '.2f'):>7}")
    return out


def matmul_acceptance(rows: list[KernelRow]) -> list[tuple[str, bool]]:
    """A MatMul of two activations (mcud_matmul_s8*) per MAC against a constant-weight one (mcud_gemm_s8)."""
    act = [r for r in rows if r.op == "MatMul" and r.kernel.startswith("mcud_matmul_s8")]
    const = [r for r in rows if r.op == "MatMul" and r.kernel == "mcud_gemm_s8"]
    if not act or not const:
        return []
    a = sum(r.instructions for r in act) / sum(r.macs for r in act)
    c = sum(r.instructions for r in const) / sum(r.macs for r in const)
    return [(f"MatMul of two activations {a:.2f} <= {MATMUL_MAX_RATIO} x the constant-weight kernel's {c:.2f} "
             f"instructions per MAC", a <= MATMUL_MAX_RATIO * c)]


def mobile_lines(rows: list[PieceRow], board: str) -> list[str]:
    out = [f"mobile-net pieces on {board} (zoo int8 models; /conv MAC: the calls that read a convolution's output, "
           f"per MAC of those convolutions)",
           f"{'model':<20} {'operator':<12} {'calls':>5} {'elements':>10} {'instructions':>13} {'/element':>9} "
           f"{'/conv MAC':>10} {'conv /MAC':>10}"]
    for r in rows:
        d = r.as_dict()
        out.append(f"{r.model:<20} {r.op:<12} {r.calls:>5} {r.elements:>10,} {r.instructions:>13,} "
                   f"{d['instructions_per_element']:>9.2f} {_n(d['instructions_per_conv_mac'], '.4f'):>10} "
                   f"{_n(d['conv_instructions_per_mac'], '.2f'):>10}")
    return out


def _n(v: Optional[float], fmt: str = ",.0f") -> str:
    return "–" if v is None else format(v, fmt)


def table_lines(layers: list[Row], models: list[Row], skipped: list[str], board: str) -> list[str]:
    out = [f"per layer on {board} (guest instructions per call; CMSIS-NN and plain C: issue 6, qemu-m4)",
           f"{'layer':<40} {'MACs':>9} {'mcudeploy':>11} {'/MAC':>6} {'CMSIS-NN':>11} {'plain C':>11} "
           f"{'vs CMSIS':>9}  kernel"]
    for r in layers:
        flag = "  ABOVE CMSIS-NN" if r.ratio is not None and r.ratio > 1.0 else ""
        out.append(f"{r.name:<40} {r.macs:>9,} {r.instructions:>11,} {r.per_mac:>6.2f} {_n(r.cmsis):>11} "
                   f"{_n(r.plain_c):>11} {_n(r.ratio, '.3f'):>9}  {r.kernel}{flag}")
    if layers:
        ours, cmsis, plain = (sum(r.instructions for r in layers), sum(r.cmsis for r in layers),
                              sum(r.plain_c for r in layers))
        macs = sum(r.macs for r in layers)
        out.append(f"{'sum over the table':<40} {macs:>9,} {ours:>11,} {ours / macs:>6.2f} {cmsis:>11,} "
                   f"{plain:>11,} {ours / cmsis:>9.3f}  (target <= {TABLE_MAX_RATIO})")
    if not models and not skipped:
        return out
    out += ["", f"whole models on {board} (as compiled)",
            f"{'model':<40} {'MACs':>11} {'mcudeploy':>13} {'/MAC':>6} {'CMSIS-NN':>11} {'vs CMSIS':>9}"]
    for r in models:
        out.append(f"{r.name:<40} {r.macs:>11,} {r.instructions:>13,} {r.per_mac:>6.2f} {_n(r.cmsis):>11} "
                   f"{_n(r.ratio, '.3f'):>9}")
    out += [f"{s} skipped" for s in skipped]
    return out


def acceptance(layers: list[Row], models: list[Row]) -> list[tuple[str, bool]]:
    """Issue 6's acceptance targets 1-3 against this run's figures (only those it measured)."""
    found = []
    kws = next((r for r in models if r.name == WHOLE_KWS[0]), None)
    if kws:
        found.append((f"KWS {kws.instructions:,} <= {KWS_MAX_INSTRUCTIONS:,} instructions",
                      kws.instructions <= KWS_MAX_INSTRUCTIONS))
    kws_tfl = next((r for r in models if r.name == Path(WHOLE_KWS[0]).stem + ".tflite"), None)
    if kws and kws_tfl:  # issue 18: TFLite's rounding costs no speed
        found.append((f"KWS from the .tflite {kws_tfl.instructions:,} <= the ONNX twin's {kws.instructions:,} "
                      f"instructions", kws_tfl.instructions <= kws.instructions))
    for r in layers:
        found.append((f"{r.name}: {r.instructions:,} <= CMSIS-NN {r.cmsis:,}", r.instructions <= r.cmsis))
    if len(layers) == len(LAYERS):
        ratio = sum(r.instructions for r in layers) / sum(r.cmsis for r in layers)
        found.append((f"table sum {ratio:.3f} <= {TABLE_MAX_RATIO} x CMSIS-NN", ratio <= TABLE_MAX_RATIO))
    for r in models:
        if r.name in PER_MAC_MODELS:
            found.append((f"{r.name}: {r.per_mac:.2f} <= {MAX_INSTRUCTIONS_PER_MAC} instructions per MAC",
                          r.per_mac <= MAX_INSTRUCTIONS_PER_MAC))
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--board", default="qemu-m4", help="an emulated or attached board (default qemu-m4)")
    p.add_argument("--models", type=Path, default=DEFAULT_MODELS, help="folder holding onnx/*.onnx")
    p.add_argument("--only", choices=("layers", "models", "mobile", "transformer"),
                   help="measure only the layers, the models, the mobile-net pieces or the transformer encoder")
    p.add_argument("--repeat", type=int, default=2, help="repetitions per operator (QEMU -icount: all equal)")
    p.add_argument("--scratch", choices=("always", "fit"), default="always",
                   help="layers and the transformer: keep every fast kernel's scratch (default, as CMSIS-NN) or let the compiler "
                        "drop it where it raises the peak, as it does alone")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    p.add_argument("--cached", action="store_true", help="reuse the board's timing cache instead of measuring afresh")
    p.add_argument("--check", action="store_true", help="exit with 1 when an acceptance target is missed")
    args = p.parse_args(argv)

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcud-kernel-bench-") as tmp:
        cache = TimingCache(args.board, None if args.cached else Path(tmp))
        layers = [] if args.only in ("models", "mobile", "transformer") else [
            measure_layer(n, args.board, cache, args.repeat, args.scratch) for n in LAYERS]
        models, skipped = [], []
        mobile = [] if args.only not in (None, "mobile") else measure_mobile(args.board, cache, args.repeat, Path(tmp))
        transformer = [] if args.only not in (None, "transformer") else measure_transformer(
            args.board, cache, args.repeat, Path(tmp), args.scratch)
        if args.only in (None, "models"):
            paths = sorted((args.models / "onnx").glob("*int8*.onnx")) + sorted(
                (args.models / "tflite").glob("*int8*.tflite"))
            if not paths:
                skipped.append(f"whole models: no int8 models in {args.models / 'onnx'} or {args.models / 'tflite'} "
                               f"(set --models or MCUDEPLOY_MODELS)")
            models = [measure_whole(path, args.board, cache, args.repeat) for path in paths]
    seconds = time.monotonic() - start
    checks = acceptance(layers, models) + matmul_acceptance(transformer)
    if args.json:
        print(json.dumps({"board": args.board, "scratch": args.scratch, "seconds": round(seconds, 1), "layers": [r.as_dict() for r in layers],
                          "models": [r.as_dict() for r in models], "skipped": skipped,
                          "mobile": [r.as_dict() for r in mobile],
                          "transformer": [r.as_dict() for r in transformer],
                          "acceptance": [{"target": t, "met": ok} for t, ok in checks]}, indent=1))
    else:
        for line in ((table_lines(layers, models, skipped, args.board) if layers or models or skipped else [])
                     + ([""] + mobile_lines(mobile, args.board) if mobile else [])
                     + ([""] + transformer_lines(transformer, args.board, args.scratch) if transformer else [])):
            print(line)
        print()
        for target, ok in checks:
            print(f"{'met   ' if ok else 'MISSED'} {target}")
        print(f"{seconds:.0f} s")
    return 1 if args.check and not all(ok for _, ok in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
