"""``--int8-input``: a graph input that only QuantizeLinear reads is taken quantized.

onnxruntime's quantizer keeps a model's input float and quantizes it first (x -> QuantizeLinear ->
DequantizeLinear -> ...). On a microcontroller the sensor data can arrive as int8 directly, and a
float input is four times the bytes of the int8 one (it often sets the arena's peak). This pass
gives such an input the type and the (per-tensor) scale and zero point of its QuantizeLinear,
under the input's own name, and drops the QuantizeLinear: what read its output reads the input.
model.h documents the scale and zero point (MCUD_INPUT<i>_SCALE, MCUD_INPUT<i>_ZERO_POINT), and
``run --check`` feeds onnxruntime, which runs the model as it is, the input dequantized
(QuantizeLinear gives back the same codes).

Inputs that are not quantized stay as they are; a model with no quantized input, or whose
quantized input is also read as float or quantized per channel or with two scales, is refused
with one sentence.
"""
from __future__ import annotations

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Quant
from mcudeploy.passes.graph_edit import eliminate_dead


def take_int8_inputs(graph: Graph) -> Graph:
    tensors = dict(graph.tensors)
    renames: dict[str, str] = {}
    dropped: set[str] = set()
    for name in graph.model_inputs():
        t = graph[name]
        readers = graph.users(name)
        quantizers = [n for n in readers if n.op == "QuantizeLinear"]
        if t.dtype != "float32" or not quantizers:
            continue
        other = next((n for n in readers if n.op != "QuantizeLinear"), None)
        if other is not None:
            raise UnsupportedError(f"--int8-input: input {name} is also read as float by node {other.name} ({other.op}); "
                                   f"only an input that QuantizeLinear alone reads can be taken quantized")
        params = {(n.attr("scale"), n.attr("zero_point"), n.attr("qdtype")) for n in quantizers}
        if len(params) != 1:
            raise UnsupportedError(f"--int8-input: input {name} is quantized {len(params)} different ways")
        scale, zero_point, qdtype = params.pop()
        if len(scale) != 1:
            raise UnsupportedError(f"--int8-input: input {name} is quantized per channel; an integer input needs one "
                                   f"scale and zero point")
        tensors[name] = t.with_(dtype=qdtype, quant=Quant(tuple(scale), tuple(zero_point)))
        for n in quantizers:
            renames[n.outputs[0]] = name
            dropped.add(n.name)
    if not renames:
        raise UnsupportedError("--int8-input: no input of the model is quantized (read by QuantizeLinear): it takes "
                               "its inputs as they are")
    nodes = tuple(n.with_(inputs=tuple(renames.get(i, i) for i in n.inputs)) for n in graph.nodes
                  if n.name not in dropped)
    outputs = tuple(renames.get(o, o) for o in graph.outputs)
    for old in renames:
        tensors.pop(old, None)
    return eliminate_dead(graph.replace(tensors=tensors, nodes=nodes, outputs=outputs))
