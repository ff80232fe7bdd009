"""mcudeploy's 16x8 kernels (TFLite's int16 activations, int8 weights) in guest instructions per MAC.

Per layer: one 16x8 operator of that shape in IR (random data, per-channel weights, an int64 or int32 bias
as TFLite writes them), compiled for the board with every kernel keeping its scratch, timed with
``measure_model``; the figure is the operator's own instructions (QEMU ``-icount shift=0``: one tick is 40
guest instructions) and its instructions per MAC.

    python benchmarks/int16_bench.py [--board qemu-m4] [--json] [--only layers|model] [--cmsis-nn PATH]

On qemu-m4 (instructions per MAC), the plain loops (mcud_conv_s16, mcud_gemm_s16 reading B through its view)
before the Cortex-M DSP paths, then the kernel the compiler picks now:

    conv 3x3, 12x12x16 -> 12x12x16              14.67  ->  3.49  mcud_conv_s16_fast
    conv 3x3 int32 sum, 12x12x16 -> 12x12x16    14.37  ->  3.44  mcud_conv_s16_fast
    depthwise 3x3, 24x24x32                     23.79  -> 12.30  mcud_conv_s16_dw
    pointwise 32 -> 32 on 12x12                 43.70  ->  5.54  mcud_conv_s16_fast
    conv 10x4, 49x10x1 -> 40x7x16               14.72  ->  4.47  mcud_conv_s16_fast
    fully connected 256 -> 64                    8.29  ->  2.18  mcud_gemm_s16 (packed weights)

(mcud_conv_s16_fast on the depthwise 3x3, where a column serves one channel's 9 products: 52.)

``--only model``: the Keras corpus's DS-CNN (tests/keras_corpus/dscnn_gap-int16.tflite, 16x8) against the same
network exported int8 (dscnn_gap-int8.tflite), each compiled for the board as ``mcudeploy compile`` would (the
compiler's own kernels and scratch) and timed whole with ``measure_model``: per operator and in all, guest
instructions and their ratio, and the arenas. Both exports have the same 13 operators in the same order.
With a CMSIS-NN checkout (``--cmsis-nn PATH`` or ``MCUDEPLOY_CMSIS_NN=PATH``), a column more: CMSIS-NN's _s16
kernels on the same layers, shapes and quantization, counted the same way (benchmarks/cmsis_s16.py).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcudeploy.device.measure import measure_model  # noqa: E402
from mcudeploy.device.runner import timed_nodes  # noqa: E402
from mcudeploy.frontend import import_model  # noqa: E402
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant  # noqa: E402
from mcudeploy.ops import registry  # noqa: E402
from mcudeploy.compile import compile_graph, lower  # noqa: E402
from mcudeploy.plan import CompileOptions  # noqa: E402
from mcudeploy.simulate.timing_cache import TimingCache  # noqa: E402

import cmsis_s16  # noqa: E402  (benchmarks/, beside this file)


def conv(x_shape, cout, kernel, group=1, pads=(0, 0, 0, 0), accumulator="int64", seed=0) -> Graph:
    rng = np.random.default_rng(seed)
    n, c, h, w = x_shape
    sw = tuple(float(s) for s in rng.uniform(0.002, 0.01, cout))
    tensors = {"x": Tensor("x", x_shape, "int16", "input", Quant((0.0004,), (0,))),
               "w": constant("w", rng.integers(-127, 128, (cout, c // group, *kernel)).astype(np.int8),
                             Quant(sw, (0,) * cout, 0)),
               "b": constant("b", rng.integers(-40000, 40000, cout).astype(
                   np.int64 if accumulator == "int64" else np.int32))}
    node = Node("conv", "Conv", ("x", "w", "b"), ("y",), {"group": group, "kernel_shape": kernel, "pads": pads,
                                                          "accumulator": accumulator})
    tensors["y"] = Tensor("y", (1,), "int16", "output", Quant((0.003,), (0,)))
    graph = Graph("conv16", tensors, [node], ["x"], ["y"], arithmetic="tflite")
    (shape, _), = registry.get("Conv").infer(graph, node)
    return graph.replace(tensors={**tensors, "y": Tensor("y", shape, "int16", "output", Quant((0.003,), (0,)))})


def fully_connected(m, k, n, seed=0) -> Graph:
    rng = np.random.default_rng(seed)
    sw = tuple(float(s) for s in rng.uniform(0.002, 0.01, n))
    tensors = {"a": Tensor("a", (m, k), "int16", "input", Quant((0.0003,), (0,))),
               "w": constant("w", rng.integers(-127, 128, (n, k)).astype(np.int8), Quant(sw, (0,) * n, 0)),
               "b": constant("b", rng.integers(-90000, 90000, n).astype(np.int64)),
               "y": Tensor("y", (m, n), "int16", "output", Quant((0.02,), (0,)))}
    node = Node("fc", "Gemm", ("a", "w", "b"), ("y",), {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1,
                                                        "accumulator": "int64"})
    return Graph("fc16", tensors, [node], ["a"], ["y"], arithmetic="tflite")


LAYERS = {
    "conv 3x3, 12x12x16 -> 12x12x16": lambda: conv((1, 16, 12, 12), 16, (3, 3), pads=(1, 1, 1, 1)),
    "conv 3x3 int32 sum, 12x12x16 -> 12x12x16": lambda: conv((1, 16, 12, 12), 16, (3, 3), pads=(1, 1, 1, 1),
                                                             accumulator="int32"),
    "depthwise 3x3, 24x24x32": lambda: conv((1, 32, 24, 24), 32, (3, 3), group=32, pads=(1, 1, 1, 1)),
    "pointwise 32 -> 32 on 12x12": lambda: conv((1, 32, 12, 12), 32, (1, 1)),
    "conv 10x4, 49x10x1 -> 40x7x16": lambda: conv((1, 1, 49, 10), 16, (10, 4)),
    "fully connected 256 -> 64": lambda: fully_connected(1, 256, 64),
}


def measure(name: str, board: str, cache: TimingCache) -> dict:
    graph = LAYERS[name]()
    compiled = compile_graph(graph, board, options=CompileOptions(scratch="keep"))
    m = measure_model(compiled, repeat=3, cache=cache)
    node = graph.nodes[0]
    (op,) = [o for o in m.ops if o.kernel]
    ipt = m.instructions_per_tick
    instructions = round(op.ticks * ipt) if ipt else op.ticks
    macs = registry.get(node.op).macs(graph, node)
    return {"layer": name, "kernel": op.kernel, "macs": macs, "instructions": instructions,
            "per_mac": round(instructions / macs, 2)}


CORPUS = ROOT / "tests" / "keras_corpus"
MODELS = {"int8": CORPUS / "dscnn_gap-int8.tflite", "int16": CORPUS / "dscnn_gap-int16.tflite"}


def _layer(graph, node) -> str:
    """"Conv 10x4 /2 1x49x10 -> 64x25x5", "Conv dw 3x3 64x25x5 -> 64x25x5": an operator by its shapes."""
    x, y = graph[node.inputs[0]].shape, graph[node.outputs[0]].shape
    if node.op != "Conv":
        return f"{node.op} {'x'.join(map(str, x[1:]))} -> {'x'.join(map(str, y[1:]))}"
    k = "x".join(map(str, node.attrs.get("kernel_shape", ())))
    dw = " dw" if node.attrs.get("group", 1) > 1 else ""
    stride = max(node.attrs.get("strides", (1,)) or (1,))
    return f"Conv{dw} {k}{f' /{stride}' if stride > 1 else ''} {'x'.join(map(str, x[1:]))} -> " \
        f"{'x'.join(map(str, y[1:]))}"


PLANS = {"int8": ("int8", "fit"), "16x8": ("int16", "fit"), "16x8 keep": ("int16", "keep")}


def measure_models(board: str, cache: TimingCache, cmsis: Optional[Path] = None) -> dict:
    """Per plan: the arena and, per timed operator, its layer, kernel, MACs and instructions. "int8" and "16x8"
    are compiled as `mcudeploy compile` does (scratch "fit": a kernel whose working memory would raise the peak
    runs its scratch-free variant); "16x8 keep" keeps every kernel's scratch (what tune also times)."""
    out = {}
    for plan, (dtype, scratch) in PLANS.items():
        compiled = compile_graph(lower(import_model(MODELS[dtype])), board, options=CompileOptions(scratch=scratch))
        m = measure_model(compiled, repeat=3, cache=cache)
        ipt = m.instructions_per_tick
        nodes = timed_nodes(compiled)
        ops = []
        for o in m.ops:
            node = nodes[o.index]
            ops.append({"layer": _layer(compiled.graph, node), "kernel": o.kernel,
                        "macs": registry.get(node.op).macs(compiled.graph, node),
                        "instructions": round(o.ticks * ipt) if ipt else o.ticks})
        out[plan] = {"arena_bytes": compiled.placement.arena_bytes, "ops": ops,
                      "instructions": sum(o["instructions"] for o in ops)}
    if cmsis is not None:
        calls = cmsis_s16.measure(cmsis, lower(import_model(MODELS["int16"])), board, MODELS["int16"].name)
        ops = out["16x8"]["ops"]
        if len(calls) != len(ops):
            raise SystemExit(f"{len(calls)} CMSIS-NN calls for {len(ops)} timed operators; compare them by hand")
        out["CMSIS-NN"] = {"arena_bytes": None, "instructions": sum(c["instructions"] for c in calls),
                           "ops": [{**c, "layer": o["layer"], "macs": o["macs"],
                                    "kernel": c["function"].removeprefix("arm_")} for c, o in zip(calls, ops)]}
    return out


def model_lines(result: dict) -> list[str]:
    plans = list(result)
    base = result[plans[0]]
    if any([o["layer"] for o in result[p]["ops"]] != [o["layer"] for o in base["ops"]] for p in plans):
        raise SystemExit("the int8 and 16x8 DS-CNN no longer have the same operators; compare them by hand")
    head = "".join(f" {p:>10s}" for p in plans)
    out = [f"{'operator':36s} {'MACs':>8s}{head} {'16x8/int8':>9s}  kernels ({' / '.join(plans)})"]
    for i, x in enumerate(base["ops"]):
        row = [result[p]["ops"][i] for p in plans]
        ratio = row[1]["instructions"] / x["instructions"] if x["instructions"] else float("nan")
        out.append(f"{x['layer']:36s} {x['macs']:8,d}" + "".join(f" {r['instructions']:10,d}" for r in row) +
                   f" {ratio:9.2f}  {' / '.join(r['kernel'] for r in row)}")
    macs = sum(o["macs"] for o in base["ops"])
    total = [result[p]["instructions"] for p in plans]
    out.append(f"{'whole model':36s} {macs:8,d}" + "".join(f" {t:10,d}" for t in total) +
               f" {total[1] / total[0]:9.2f}  (" + ", ".join(f"{t / macs:.2f}" for t in total) + " per MAC)")
    arenas = [result[p]["arena_bytes"] for p in plans]
    out.append(f"{'arena bytes':36s} {'':8s}" + "".join(f" {a:10,d}" if a is not None else f" {'':10s}"
                                                         for a in arenas) + f" {arenas[1] / arenas[0]:9.2f}")
    if "CMSIS-NN" in result:
        notes = sorted({o["note"] for o in result["CMSIS-NN"]["ops"] if o["note"]})
        keep, cmsis = result["16x8 keep"]["instructions"], result["CMSIS-NN"]["instructions"]
        out.append(f"16x8 keep / CMSIS-NN: {keep / cmsis:.2f} (16x8 as compiled: "
                   f"{result['16x8']['instructions'] / cmsis:.2f}); CMSIS-NN built {cmsis_s16.OPT} with "
                   f"ARM_MATH_DSP, its scratch given")
        out += [f"CMSIS-NN: {n}" for n in notes]
    else:
        out.append(cmsis_s16.HOW)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="qemu-m4")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", choices=("layers", "model"), help="the one-layer graphs or the DS-CNN (default: both)")
    ap.add_argument("--cmsis-nn", metavar="PATH", help=f"a CMSIS-NN checkout to compare the DS-CNN with "
                    f"(default: ${cmsis_s16.ENV})")
    args = ap.parse_args(argv)
    cmsis = cmsis_s16.checkout(args.cmsis_nn)
    result: dict = {}
    with tempfile.TemporaryDirectory(prefix="mcud-int16-bench-") as tmp:
        cache = TimingCache(args.board, Path(tmp))
        if args.only in (None, "layers"):
            result["layers"] = [measure(name, args.board, cache) for name in LAYERS]
        if args.only in (None, "model"):
            result["dscnn"] = measure_models(args.board, cache, cmsis)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    if "layers" in result:
        print(f"{'layer':44s} {'kernel':22s} {'MACs':>9s} {'instructions':>13s} {'per MAC':>8s}")
        for r in result["layers"]:
            print(f"{r['layer']:44s} {r['kernel']:22s} {r['macs']:9,d} {r['instructions']:13,d} "
                  f"{r['per_mac']:8.2f}")
    if "dscnn" in result:
        print(f"{chr(10) if 'layers' in result else ''}the Keras corpus's DS-CNN on {args.board}, 16x8 against int8 "
              f"(guest instructions per call)")
        print("\n".join(model_lines(result["dscnn"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
