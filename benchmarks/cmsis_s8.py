"""CMSIS-NN's int8 kernels on whole int8 models, in guest instructions and instruction classes under QEMU (issue 42:
the kernels a published latency ran, counted on the same emulator as mcudeploy's).

From a lowered int8 graph (shapes, zero points, per-channel scales, int32 biases) ``layers`` builds one CMSIS-NN
call per operator, as TensorFlow Lite Micro's CMSIS-NN kernels make them: arm_convolve_wrapper_s8,
arm_depthwise_conv_wrapper_s8, arm_avgpool_s8, arm_fully_connected_s8, arm_elementwise_add_s8 and arm_softmax_s8
(Reshape and the input's layout view are no calls: CMSIS-NN works on NHWC data, as the .tflite file does; an ONNX
model's Transpose of its NHWC input to NCHW is that view too; its MatMul's weights are transposed to TFLite's
layout). A mean over height and width (Keras's global average pooling, TFLite's MEAN) has no CMSIS-NN kernel
(TensorFlow Lite Micro runs its own reference MEAN): it is counted as arm_avgpool_s8 over the whole plane, which
sums as that MEAN does but leaves out its requantization to the output's scale (one multiply per channel), so the
values after it are not TFLite's (the kernels after it, a fully connected layer and a softmax in the Keras corpus,
take about as many instructions on any values). Each tensor gets a buffer of its own, so residual networks run as
they are; where a buffer lies changes no instruction count. ``measure`` renders the calls into one firmware
(cmsis_s8/harness.c.j2: weights in CMSIS-NN's layouts, multipliers as TFLite's QuantizeMultiplier makes them),
builds and runs it on the board's QEMU (cmsis_nn.py) and, with ``trace``, also runs it under
``-d in_asm,exec,nochain`` to count each call's instruction classes (mcudeploy/estimate/trace.py), which cycles_bench.py
weights for a real board (mcudeploy/estimate/cycles.py).
"""
from __future__ import annotations

import dataclasses
import math
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Optional

import jinja2
import numpy as np

from cmsis_nn import build, quantize_multiplier, run
from mcudeploy.boards import load_board
from mcudeploy.device import qemu
from mcudeploy.estimate import flash
from mcudeploy.estimate.cores import CORES
from mcudeploy.estimate.trace import disassemble, op_counts

HERE = Path(__file__).resolve().parent / "cmsis_s8"
VIEWS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "TransposeView")  # no call: a view of NHWC data
ADD_LEFT_SHIFT = 20  # TFLite Micro's int8 ADD


@dataclasses.dataclass
class Layer:
    function: str
    instructions: int
    counts: Optional[Counter]  # instruction classes (with ``trace``)
    label: str = ""  # "<op> <node name>" of the lowered graph


def _q(t, value: float) -> int:
    """``value`` quantized to ``t``'s int8 grid, clamped."""
    return int(max(-128, min(127, round(value / t.quant.scale[0]) + t.quant.zero_point[0])))


def _act(node, y) -> tuple[int, int]:
    lo, hi = node.attrs.get("clip_min"), node.attrs.get("clip_max")
    return (-128 if lo is None else max(-128, _q(y, lo))), (127 if hi is None or math.isinf(hi) else _q(y, hi))


def _nhwc(shape) -> tuple[int, int, int]:
    """(h, w, c) of an NCHW shape, or of a 2-D (1, c) one."""
    return (shape[2], shape[3], shape[1]) if len(shape) == 4 else (1, 1, shape[-1])


def _softmax(x, beta: float) -> dict:
    """arm_softmax_s8's multiplier, shift and diff_min as TFLite Micro's SoftmaxPrepare makes them
    (PreprocessSoftmaxScaling with 5 integer bits, CalculateInputRadius)."""
    real = min(beta * x.quant.scale[0] * (1 << 26), float((1 << 31) - 1))
    m, shift = quantize_multiplier(real)
    radius = math.floor(31.0 * (1 << 26) / (1 << shift))
    return {"mult": m, "shift": shift, "diff_min": -radius}


def layers(graph) -> tuple[list[dict], list[dict], int]:
    """One CMSIS-NN call per operator of a lowered int8 graph (template data), the buffers, and the input's."""
    buffers: dict[str, int] = {}
    sizes: list[dict] = []

    def buffer(name: str) -> int:
        if name not in buffers:
            buffers[name] = len(sizes)
            sizes.append({"index": len(sizes), "name": name, "elems": int(np.prod(graph[name].shape))})
        return buffers[name]

    out = []
    for node in graph.nodes:
        if node.op in VIEWS or (node.op == "Transpose" and node.inputs[0] in graph.inputs
                                and tuple(node.attrs.get("perm", ())) == (0, 3, 1, 2)):
            buffers[node.outputs[0]] = buffer(node.inputs[0])
            continue
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if x.dtype != "int8" or y.dtype != "int8":
            raise SystemExit(f"{node.name}: CMSIS-NN's int8 kernels take int8 tensors, not {x.dtype} -> {y.dtype}")
        lo, hi = _act(node, y)
        (h, w, c), (oh, ow, oc) = _nhwc(x.shape), _nhwc(y.shape)
        base = {"index": len(out), "label": f"{node.op} {node.name}", "weights": [], "bias": [], "multipliers": [],
                "shifts": [], "src": buffer(node.inputs[0]), "dst": buffer(node.outputs[0]), "act_min": lo,
                "act_max": hi, "in_offset": -x.quant.zero_point[0], "out_offset": y.quant.zero_point[0],
                "in_h": h, "in_w": w, "in_c": c, "out_h": oh, "out_w": ow, "out_c": oc}
        if node.op == "Conv":
            wt = graph[node.inputs[1]]
            dw = node.attrs.get("group", 1) > 1
            if dw and node.attrs["group"] != c or oc != c and dw:
                raise SystemExit(f"{node.name}: a grouped convolution that is not depthwise with multiplier 1")
            weights = np.asarray(wt.data)
            weights = weights[:, 0].transpose(1, 2, 0) if dw else weights.transpose(0, 2, 3, 1)  # 1HWC, OHWI
            bias = (np.asarray(graph[node.inputs[2]].data) if len(node.inputs) > 2 and node.inputs[2]
                    else np.zeros(oc, np.int64))
            scales = np.broadcast_to(np.asarray(wt.quant.scale, dtype=np.float64), (oc,))
            mult = [quantize_multiplier(x.quant.scale[0] * s / y.quant.scale[0]) for s in scales]
            (kh, kw), (sh, sw) = node.attrs["kernel_shape"], node.attrs.get("strides", (1, 1))
            pads = node.attrs.get("pads", (0, 0, 0, 0))
            base.update(kind="dw" if dw else "conv",
                        function="arm_depthwise_conv_wrapper_s8" if dw else "arm_convolve_wrapper_s8",
                        k_h=kh, k_w=kw, stride_h=sh, stride_w=sw, pad_h=pads[0], pad_w=pads[1],
                        weights=weights.reshape(-1).tolist(), bias=bias.astype(np.int64).tolist(),
                        multipliers=[m for m, _ in mult], shifts=[s for _, s in mult])
        elif node.op == "AveragePool":
            (kh, kw), (sh, sw) = node.attrs["kernel_shape"], node.attrs.get("strides", (1, 1))
            pads = node.attrs.get("pads", (0, 0, 0, 0))
            base.update(kind="avgpool", function="arm_avgpool_s8", k_h=kh, k_w=kw, stride_h=sh, stride_w=sw,
                        pad_h=pads[0], pad_w=pads[1])
        elif node.op == "ReduceMean" and len(x.shape) == 4 and tuple(node.attrs.get("axes", ())) == (2, 3):
            # no CMSIS-NN mean: arm_avgpool_s8 over the whole plane, without MEAN's requantization (the docstring)
            base.update(kind="avgpool", function="arm_avgpool_s8", k_h=h, k_w=w, stride_h=1, stride_w=1,
                        pad_h=0, pad_w=0)
        elif node.op == "Gemm" and not node.attrs.get("transA", 0) and graph[node.inputs[1]].data is not None:
            wt = graph[node.inputs[1]]
            mult = [quantize_multiplier(x.quant.scale[0] * s / y.quant.scale[0]) for s in wt.quant.scale]
            bias = graph[node.inputs[2]].data if len(node.inputs) > 2 and node.inputs[2] else None
            weights = np.asarray(wt.data)  # (out, in), as TFLite's FULLY_CONNECTED; an ONNX MatMul's is (in, out)
            weights = weights if node.attrs.get("transB", 0) else weights.T
            base.update(kind="fc", function="arm_fully_connected_s8", in_c=weights.shape[1], out_c=weights.shape[0],
                        weights=weights.reshape(-1).tolist(),
                        bias=[] if bias is None else np.asarray(bias).astype(np.int64).tolist(),
                        multipliers=[m for m, _ in mult], shifts=[s for _, s in mult])
        elif node.op == "Add":
            x2 = graph[node.inputs[1]]
            if tuple(x2.shape) != tuple(x.shape):
                raise SystemExit(f"{node.name}: arm_elementwise_add_s8 adds tensors of one shape, not broadcasts")
            twice = 2 * max(x.quant.scale[0], x2.quant.scale[0])
            reals = (x.quant.scale[0] / twice, x2.quant.scale[0] / twice,
                     twice / ((1 << ADD_LEFT_SHIFT) * y.quant.scale[0]))
            mult = [quantize_multiplier(r) for r in reals]
            base.update(kind="add", function="arm_elementwise_add_s8", src2=buffer(node.inputs[1]),
                        in2_offset=-x2.quant.zero_point[0], left_shift=ADD_LEFT_SHIFT,
                        multipliers=[m for m, _ in mult], shifts=[s for _, s in mult],
                        elems=int(np.prod(x.shape)))
        elif node.op == "Softmax":
            base.update(kind="softmax", function="arm_softmax_s8", **_softmax(x, node.attrs.get("beta", 1.0)))
        else:
            raise SystemExit(f"{node.name}: no CMSIS-NN int8 kernel is mapped for {node.op} (benchmarks/cmsis_s8.py)")
        out.append(base)
    return out, sizes, buffers[graph.inputs[0]]


def _render(model: str, calls: list[dict], buffers: list[dict], input_buffer: int) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template("harness.c.j2").render(
        banner="Generated by benchmarks/cmsis_s8.py; do not edit.", model=model, scratch_bytes=64 * 1024,
        layers=calls, buffers=buffers, input=input_buffer)


def _symbols(elf: Path, names: tuple[str, ...]) -> dict[str, int]:
    text = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    found = {parts[2]: int(parts[0], 16) & ~1 for parts in (line.split() for line in text.splitlines())
             if len(parts) == 3 and parts[2] in names}
    return found


def measure(cmsis: Path, graph, board_name, model: str, trace: bool = False,
            caches: Optional[flash.FlashCaches] = None) -> list[Layer]:
    """Per operator of ``graph``: CMSIS-NN's function, its guest instructions on ``board_name``'s QEMU (a name, or
    the Board itself), and (with ``trace``) its instruction classes, with its reads of flash through ``caches`` where
    given."""
    board = load_board(board_name) if isinstance(board_name, str) else board_name
    if board.kind != "qemu":
        raise SystemExit(f"the CMSIS-NN comparison runs on an emulated board, not {board.name}")
    calls, buffers, input_buffer = layers(graph)
    ipt = qemu.instructions_per_tick(board)
    with tempfile.TemporaryDirectory(prefix="mcud-cmsis-s8-") as tmp:
        elf = build(cmsis, _render(model, calls, buffers, input_buffer), board, Path(tmp), "cmsis_s8")
        results = run(elf, board)
        counts: list[Optional[Counter]] = [None] * len(calls)
        if trace:
            log, reads = Path(tmp) / "qemu.log", Path(tmp) / "flash_reads.txt"
            syms = _symbols(elf, ("mcud_fw_op_begin", "mcud_fw_op_end"))
            plugin = () if caches is None else flash.qemu_args(board, caches, syms["mcud_fw_op_begin"],
                                                                syms["mcud_fw_op_end"], reads)
            run(elf, board, ("-d", "in_asm,exec,nochain", "-D", str(log), *plugin))
            march = CORES.get(board.core, {}).get("disassembler")  # QEMU cannot name MVE instructions
            counts = op_counts(log, syms["mcud_fw_op_begin"], syms["mcud_fw_op_end"],
                               disassemble(str(elf), march) if march else None)
            if caches is not None:
                counts = flash.merge(counts, flash.read_counts(reads, len(counts)))
            if len(counts) != len(calls):
                raise SystemExit(f"the CMSIS-NN trace holds {len(counts)} of {len(calls)} layers")
    if len(results) != len(calls):
        raise SystemExit(f"the CMSIS-NN harness reported {len(results)} of {len(calls)} layers")
    out = []
    for call, (ticks, status), c in zip(calls, results, counts):
        if status:
            raise SystemExit(f"{call['function']} (layer {call['index']}, {call['label']}) returned {status}")
        out.append(Layer(call["function"], round(ticks * ipt), c, call["label"]))
    return out


def main(argv=None) -> int:
    import argparse
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from cmsis_nn import checkout, how
    from mcudeploy.frontend import import_model
    from mcudeploy.compile import lower

    p = argparse.ArgumentParser(description="CMSIS-NN's int8 kernels on a model, per layer, under QEMU")
    p.add_argument("model", type=Path)
    p.add_argument("--board", default="qemu-m4")
    p.add_argument("--cmsis-nn", help="a CMSIS-NN checkout (default: $MCUDEPLOY_CMSIS_NN)")
    args = p.parse_args(argv)
    cmsis = checkout(args.cmsis_nn)
    if cmsis is None:
        raise SystemExit(how("CMSIS-NN's int8 kernels are"))
    rows = measure(cmsis, lower(import_model(args.model)), args.board, args.model.name)
    for i, r in enumerate(rows):
        print(f"{i:3d} {r.function:<34} {r.instructions:>12,}")
    print(f"total {sum(r.instructions for r in rows):,} guest instructions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
