"""What firmware needs to know about a model's inputs and outputs: shape, layout, type and
quantization, as the lowered graph tells them.

An int8 input read through a layout operator (an NHWC input's Transpose, KWS's Reshape) carries
no quantization of its own after QDQ lowering: the operator's output does, and it is the input's
too (a layout operator moves values and changes none).
"""
from __future__ import annotations

from typing import Optional

from mcudeploy.ir import CTYPES, Graph, Quant
from mcudeploy.ops.read_input import READ_INPUT, streamed_input

LAYOUT_OPS = ("Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze")  # move values, change none
# operators whose ONNX definition puts channels second (N, C, spatial...)
CHANNELS_FIRST_OPS = ("Conv", "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "BatchNormalization",
                      "Resize", "Upsample")
SPATIAL = {3: "W", 4: "HW", 5: "DHW"}


def quantization(graph: Graph, name: str) -> Optional[Quant]:
    """A tensor's quantization; for an integer input that only layout operators read (an NHWC
    input's Transpose), the quantization of what they make of it."""
    t = graph[name]
    while t.quant is None and t.dtype != "float32":
        users = graph.users(t.name)
        if len(users) != 1 or users[0].op not in LAYOUT_OPS or graph[users[0].outputs[0]].dtype != t.dtype:
            return None
        t = graph[users[0].outputs[0]]
        if t.quant is not None and t.quant.per_channel:
            return None
    return t.quant


def _channels_last(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The NHWC shape of the NCHW ``shape`` (and NWC, NDHWC alike)."""
    return (shape[0], *shape[2:], shape[1])


def _layout_name(rank: int, last: bool) -> str:
    return "N" + SPATIAL[rank] + "C" if last else "NC" + SPATIAL[rank]


def _layout(shape: tuple[int, ...], seen: list[tuple[int, ...]]) -> str:
    """``shape`` against the shapes an image operator sees it as (after layout operators)."""
    if len(shape) not in SPATIAL or not seen:
        return ""
    if all(s == shape for s in seen):
        return _layout_name(len(shape), last=False)
    if all(len(s) == len(shape) and _channels_last(s) == shape for s in seen):
        return _layout_name(len(shape), last=True)
    return ""


def input_layout(graph: Graph, name: str) -> str:
    """"NCHW" or "NHWC" (NCW/NWC, NCDHW/NDHWC) when image operators read the input, through layout
    operators or not; "" when nothing says (a vector, or a tensor no image operator reads)."""
    seen, todo = [], [name]
    while todo:
        t = todo.pop()
        for user in graph.users(t):
            if user.op in CHANNELS_FIRST_OPS and user.inputs[0] == t:
                seen.append(graph[t].shape)
            elif user.op in LAYOUT_OPS:
                todo.append(user.outputs[0])
    return _layout(graph[name].shape, seen)


def output_layout(graph: Graph, name: str) -> str:
    """As input_layout, for an output: the image operator that makes it, through layout operators."""
    t = name
    while True:
        producer = graph.producer(t)
        if producer is None:
            return ""
        if producer.op in CHANNELS_FIRST_OPS:
            return _layout(graph[name].shape, [graph[t].shape])
        if producer.op not in LAYOUT_OPS:
            return ""
        t = producer.inputs[0]


QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def io_facts(graph: Graph, name: str, kind: str) -> dict:
    """The facts of one input or output, as plain values for templates."""
    t = graph[name]
    q = quantization(graph, name)
    if name in graph.streamed:  # its readers are ReadInput nodes, which recorded its layout (passes/stream_input.py)
        layout = next((n.attr("layout", "") for n in graph.nodes if n.op == READ_INPUT
                       and streamed_input(graph, n) == name), "")
    else:
        layout = input_layout(graph, name) if kind == "input" else output_layout(graph, name)
    quantized = q is not None and not q.per_channel and t.dtype in QRANGE
    return {"name": name, "shape": list(t.shape), "rank": len(t.shape), "elements": int(t.size),
            "nbytes": t.nbytes, "dtype": t.dtype, "ctype": CTYPES[t.dtype], "layout": layout,
            "quantized": quantized, "scale": float(q.scale[0]) if quantized else None,
            "zero_point": int(q.zero_point[0]) if quantized else None,
            "qmin": QRANGE[t.dtype][0] if quantized else None, "qmax": QRANGE[t.dtype][1] if quantized else None}
