"""CMSIS-NN's _s16 kernels on a 16x8 network's layers, in guest instructions under QEMU (issue 43, acceptance 4).

Nothing of CMSIS-NN is vendored: the user names a checkout (``MCUDEPLOY_CMSIS_NN=/path/to/CMSIS-NN`` or
``int16_bench.py --cmsis-nn PATH``). From the lowered 16x8 graph (shapes, per-channel scales, int64 biases)
``layers`` builds one CMSIS-NN call per timed operator: arm_convolve_wrapper_s16, arm_depthwise_conv_wrapper_s16,
arm_avgpool_s16 over the whole map for the MEAN, arm_fully_connected_s16, arm_softmax_s16. ``measure`` renders
them into one firmware (cmsis_s16/harness.c.j2: weights transposed to CMSIS-NN's NHWC layouts, multipliers as
TFLite's QuantizeMultiplier makes them), builds it with CMSIS-NN's sources for the board's CPU (the DSP path on
Cortex-M4: ``__ARM_FEATURE_DSP``, ARM_MATH_DSP), runs it under the board's QEMU with ``-icount`` and returns each
call's least ticks of REPEAT times the board's instructions per tick: the timer is mcudeploy's own
(firmware/runtime/timer_systick.c) and so is the start-up (firmware/runtime/startup.c), so the count is taken
as ``measure_model`` takes mcudeploy's.

Where CMSIS-NN's kernel does less than the model's operator, the row says so (``note``): the MEAN's input and
output scales differ, and arm_avgpool_s16 does not rescale; arm_fully_connected_s16 takes one multiplier, and
the model's dense layer has per-channel weights (the first channel's is used: the same instructions).
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

import jinja2
import numpy as np

from cmsis_nn import ENV, OPT, build, checkout, how, quantize_multiplier, run  # noqa: F401  (int16_bench's names)
from mcudeploy.boards import load_board
from mcudeploy.device import qemu

HERE = Path(__file__).resolve().parent / "cmsis_s16"
HOW = how("CMSIS-NN's _s16 kernels are")
REPEAT = 3


def _softmax(x_scale: float, beta: float) -> dict:
    """arm_softmax_s16's parameters as TFLite Micro makes them: the input rescaled to [-10, 0] in 16 bits, and
    its two 513-entry tables (exp on [-10, 0], 1/(1+x) on [0, 1]; sampled, without gen_lut's error correction)."""
    m, shift = quantize_multiplier(x_scale * beta / (10.0 / 65535.0))
    xs = np.linspace(-10.0, 0.0, 513)
    ones = np.linspace(0.0, 1.0, 513)
    exp = np.clip(np.round(np.exp(xs) * 32768), -32768, 32767).astype(int)
    inv = np.clip(np.round(1.0 / (1.0 + ones) * 32768), -32768, 32767).astype(int)
    return {"multiplier": m, "shift": shift, "exp_lut": exp.tolist(), "one_by_one_lut": inv.tolist()}


def _clip(node, dtype_max: int = 32767) -> tuple[int, int]:
    lo = node.attrs.get("clip_min")
    return (0 if lo is not None and lo >= 0 else -32768), dtype_max


def layers(graph) -> tuple[list[dict], Optional[dict]]:
    """One CMSIS-NN call per timed operator of a lowered 16x8 graph, as template data; and softmax's tables."""
    out, softmax = [], None
    for node in graph.nodes:
        if node.op in ("Reshape", "Flatten", "Squeeze"):
            continue
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        base = {"index": len(out), "label": node.op, "weights": [], "bias": [], "multipliers": [], "shifts": [],
                "note": ""}
        lo, hi = _clip(node)
        if node.op == "Conv":
            w = graph[node.inputs[1]]
            _, cin, h, wd = x.shape
            _, cout, oh, ow = y.shape
            kh, kw = node.attrs["kernel_shape"]
            dw = node.attrs.get("group", 1) > 1
            weights = np.asarray(w.data)
            # CMSIS-NN: conv filters OHWI, depthwise 1HWC (channel multiplier 1 here)
            weights = weights[:, 0].transpose(1, 2, 0) if dw else weights.transpose(0, 2, 3, 1)
            bias = np.asarray(graph[node.inputs[2]].data) if len(node.inputs) > 2 and node.inputs[2] else \
                np.zeros(cout, np.int64)
            mult = [quantize_multiplier(x.quant.scale[0] * s / y.quant.scale[0]) for s in w.quant.scale]
            sh, sw = node.attrs.get("strides", (1, 1))
            pads = node.attrs.get("pads", (0, 0, 0, 0))
            base.update(kind="dw" if dw else "conv", function="arm_depthwise_conv_wrapper_s16" if dw else
                        "arm_convolve_wrapper_s16", in_c=cin, in_h=h, in_w=wd, out_c=cout, out_h=oh, out_w=ow,
                        k_h=kh, k_w=kw, stride_h=sh, stride_w=sw, pad_h=pads[0], pad_w=pads[1],
                        weights=weights.reshape(-1).tolist(), bias=bias.astype(np.int64).tolist(),
                        multipliers=[m for m, _ in mult], shifts=[s for _, s in mult])
        elif node.op in ("ReduceMean", "GlobalAveragePool"):
            _, c, h, wd = x.shape
            base.update(kind="avgpool", function="arm_avgpool_s16", in_c=c, in_h=h, in_w=wd, out_c=c, k_h=h,
                        k_w=wd)
            if x.quant.scale[0] != y.quant.scale[0]:
                base["note"] = "arm_avgpool_s16 does not rescale (MEAN's scales differ)"
        elif node.op == "Gemm" and node.attrs.get("transB", 0):
            w = graph[node.inputs[1]]
            n, k = w.shape
            mult = [quantize_multiplier(x.quant.scale[0] * s / y.quant.scale[0]) for s in w.quant.scale]
            bias = graph[node.inputs[2]].data if len(node.inputs) > 2 and node.inputs[2] else None
            base.update(kind="fc", function="arm_fully_connected_s16", in_c=k, out_c=n,
                        weights=np.asarray(w.data).reshape(-1).tolist(),
                        bias=[] if bias is None else np.asarray(bias).astype(np.int64).tolist(),
                        multipliers=[m for m, _ in mult], shifts=[s for _, s in mult])
            if len(set(mult)) > 1:
                base["note"] = "one multiplier: arm_fully_connected_s16 is per-tensor (the first channel's)"
        elif node.op == "Softmax":
            base.update(kind="softmax", function="arm_softmax_s16", in_c=x.shape[-1])
            softmax = _softmax(x.quant.scale[0], node.attrs.get("beta", 1.0))
        else:
            raise SystemExit(f"no CMSIS-NN _s16 kernel is mapped for {node.op} (benchmarks/cmsis_s16.py)")
        base.update(act_min=lo, act_max=hi)
        out.append(base)
    return out, softmax


def _render(graph, model: str, calls: list[dict], softmax: Optional[dict]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    sizes = [int(np.prod(graph[t].shape)) for n in graph.nodes for t in (*n.inputs[:1], *n.outputs)]
    return env.get_template("harness.c.j2").render(
        banner="Generated by benchmarks/cmsis_s16.py; do not edit.", model=model, repeat=REPEAT,
        scratch_bytes=64 * 1024, activation_elems=max(sizes), input_elems=int(np.prod(graph[graph.inputs[0]].shape)),
        layers=calls, softmax=softmax)


def measure(cmsis: Path, graph, board_name: str, model: str) -> list[dict]:
    """Per timed operator of ``graph``: CMSIS-NN's function, its guest instructions, status and note."""
    board = load_board(board_name)
    if board.kind != "qemu":
        raise SystemExit(f"the CMSIS-NN comparison runs on an emulated board, not {board_name}")
    calls, softmax = layers(graph)
    with tempfile.TemporaryDirectory(prefix="mcud-cmsis-s16-") as tmp:
        elf = build(cmsis, _render(graph, model, calls, softmax), board, Path(tmp), "cmsis_s16")
        results = run(elf, board)
    if len(results) != len(calls):
        raise SystemExit(f"the CMSIS-NN harness reported {len(results)} of {len(calls)} layers")
    ipt = qemu.instructions_per_tick(board)
    out = []
    for call, (ticks, status) in zip(calls, results):
        if status:
            raise SystemExit(f"{call['function']} (layer {call['index']}) returned {status}")
        out.append({"function": call["function"], "instructions": round(ticks * ipt), "note": call["note"]})
    return out
