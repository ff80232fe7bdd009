"""mcudeploy's 16x8 kernels (TFLite's int16 activations, int8 weights) in guest instructions per MAC.

Per layer: one 16x8 operator of that shape in IR (random data, per-channel weights, an int64 or int32 bias
as TFLite writes them), compiled for the board with every kernel keeping its scratch, timed with
``measure_model``; the figure is the operator's own instructions (QEMU ``-icount shift=0``: one tick is 40
guest instructions) and its instructions per MAC.

    python benchmarks/int16_bench.py [--board qemu-m4] [--json]

On qemu-m4 (instructions per MAC), the plain loops (mcud_conv_s16, mcud_gemm_s16 reading B through its view)
before the Cortex-M DSP paths, then the kernel the compiler picks now:

    conv 3x3, 12x12x16 -> 12x12x16              14.67  ->  3.49  mcud_conv_s16_fast
    conv 3x3 int32 sum, 12x12x16 -> 12x12x16    14.37  ->  3.44  mcud_conv_s16_fast
    depthwise 3x3, 24x24x32                     23.79  -> 12.30  mcud_conv_s16_dw
    pointwise 32 -> 32 on 12x12                 43.70  ->  5.54  mcud_conv_s16_fast
    conv 10x4, 49x10x1 -> 40x7x16               14.72  ->  4.47  mcud_conv_s16_fast
    fully connected 256 -> 64                    8.29  ->  2.18  mcud_gemm_s16 (packed weights)

(mcud_conv_s16_fast on the depthwise 3x3, where a column serves one channel's 9 products: 52.)
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcudeploy.device.measure import measure_model  # noqa: E402
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant  # noqa: E402
from mcudeploy.ops import registry  # noqa: E402
from mcudeploy.pipeline import compile_graph  # noqa: E402
from mcudeploy.simulate.timing_cache import TimingCache  # noqa: E402


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
    compiled = compile_graph(graph, board, scratch="keep")
    m = measure_model(compiled, repeat=3, cache=cache)
    node = graph.nodes[0]
    (op,) = [o for o in m.ops if o.kernel]
    ipt = m.instructions_per_tick
    instructions = round(op.ticks * ipt) if ipt else op.ticks
    macs = registry.get(node.op).macs(graph, node)
    return {"layer": name, "kernel": op.kernel, "macs": macs, "instructions": instructions,
            "per_mac": round(instructions / macs, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="qemu-m4")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mcud-int16-bench-") as tmp:
        cache = TimingCache(args.board, Path(tmp))
        rows = [measure(name, args.board, cache) for name in LAYERS]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'layer':44s} {'kernel':22s} {'MACs':>9s} {'instructions':>13s} {'per MAC':>8s}")
    for r in rows:
        print(f"{r['layer']:44s} {r['kernel']:22s} {r['macs']:9,d} {r['instructions']:13,d} {r['per_mac']:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
