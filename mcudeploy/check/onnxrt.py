"""onnxruntime as the check's oracle: the model's outputs, and the value of every tensor the
lowered graph keeps under its ONNX name, from one run with graph optimisations disabled.

The lowering keeps ONNX names: an integer operator's output is the output of the QuantizeLinear
it absorbed (mcudeploy/passes/qdq.py), a fused Relu/Clip's output or a folded BatchNormalization's
output is the fused operator's. So onnxruntime shows every lowered tensor once each is made a graph
output; a tensor it cannot show (none in the models tested) is left to the local comparison to
compute from its producer (check/local.py).
"""
from __future__ import annotations

import os
from typing import Sequence, Union

import numpy as np
import onnx
from onnx import helper

from mcudeploy.frontend.onnx_import import ONNX_DTYPES, load_model
from mcudeploy.ir import Graph

Model = Union[str, os.PathLike, onnx.ModelProto]
ELEM_TYPES = {dtype: elem for elem, dtype in ONNX_DTYPES.items()}


def session_of(model: onnx.ModelProto):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def model_proto(model: Model) -> onnx.ModelProto:
    return model if isinstance(model, onnx.ModelProto) else load_model(model)


def run_onnxruntime(model: Model, samples, input_shapes=None) -> list[list[np.ndarray]]:
    """The model's outputs on each sample (dict input name -> array), in graph order."""
    session = session_of(model_proto(model))
    return [session.run(None, dict(s)) for s in samples]


def quantized_from(model: Model) -> dict[str, str]:
    """ONNX tensor a QuantizeLinear makes -> the float tensor it rounds (what onnxruntime computed
    before rounding: an integer operator's output in real numbers)."""
    return {n.output[0]: n.input[0] for n in model_proto(model).graph.node if n.op_type == "QuantizeLinear"}


def onnx_feeds(model: onnx.ModelProto, graph: Graph, sample: dict) -> dict[str, np.ndarray]:
    """The sample as the ONNX model takes it: an input the model has as float but the graph as
    quantized integers (lowered with --int8-input) is fed dequantized, which the model's
    QuantizeLinear turns back into the same codes."""
    floats = {vi.name for vi in model.graph.input if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}
    feeds = {}
    for name, value in sample.items():
        t = graph.tensors.get(name)
        if name in floats and t is not None and t.dtype != "float32" and t.quant is not None:
            scale, zero = t.quant.single()
            value = ((np.asarray(value).astype(np.int64) - zero).astype(np.float32) * np.float32(scale))
        feeds[name] = value
    return feeds


def tensor_values(model: Model, graph: Graph, samples: Sequence[dict]) -> list[dict[str, np.ndarray]]:
    """Per sample, onnxruntime's value of the graph's inputs and outputs, of every activation of
    ``graph`` (the model lowered) that is a tensor of the ONNX model, shaped as ``graph`` declares,
    and of the float tensor each QuantizeLinear among them rounds (quantized_from)."""
    proto = model_proto(model)
    made = {o for n in proto.graph.node for o in n.output if o}
    shown = {o.name for o in proto.graph.output}
    ours = [n for n, t in graph.tensors.items() if not t.is_const and n in made]
    before = quantized_from(proto)
    floats = [before[n] for n in ours if n in before and before[n] in made]
    wanted = [n for n in dict.fromkeys(ours + floats) if n not in shown]
    exposed = onnx.ModelProto()
    exposed.CopyFrom(proto)
    typed = {v.name: v for v in onnx.shape_inference.infer_shapes(proto).graph.value_info}
    for name in wanted:
        if name in typed:
            elem = typed[name].type.tensor_type.elem_type
        else:  # a tensor of the graph, or the float one a QuantizeLinear rounds (shape inference does not type
            elem = ELEM_TYPES[graph[name].dtype] if name in graph.tensors else onnx.TensorProto.FLOAT  # com.microsoft's)
        exposed.graph.output.append(helper.make_tensor_value_info(name, elem, None))
    session = session_of(exposed)
    names = [o.name for o in exposed.graph.output]
    out = []
    for sample in samples:
        values = dict(zip(names, session.run(None, onnx_feeds(proto, graph, sample))))
        values.update(sample)
        out.append({n: np.asarray(v).reshape(graph[n].shape) if n in graph.tensors else np.asarray(v)
                     for n, v in values.items()})
    return out
