"""Evaluate an ONNX node whose inputs are all known, with onnx's own reference evaluator."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper


def _one_node_model(node: onnx.NodeProto, values: Sequence[np.ndarray], opset: int) -> onnx.ModelProto:
    inputs = [f"in{i}" if name else "" for i, name in enumerate(node.input)]
    outputs = [f"out{i}" for i in range(len(node.output))]
    clone = helper.make_node(node.op_type, inputs, outputs, domain=node.domain)
    clone.attribute.extend(node.attribute)
    inits = [numpy_helper.from_array(np.asarray(v), f"in{i}") for i, v in enumerate(values) if inputs[i]]
    graph = helper.make_graph([clone], "fold", [], [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
                                                    for o in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def output_shapes(node: onnx.NodeProto, values: Sequence[np.ndarray], opset: int) -> list[Optional[tuple[int, ...]]]:
    """The shape of each output as onnx's shape inference predicts it before evaluation (None where it
    cannot tell), so that a folded node that would allocate gigabytes is refused before it does."""
    shapes: list[Optional[tuple[int, ...]]] = [None] * len(node.output)
    try:
        inferred = onnx.shape_inference.infer_shapes(_one_node_model(node, values, opset), data_prop=True)
    except Exception:  # noqa: BLE001  (inference of a damaged node fails in many ways; evaluation will tell)
        inferred = None
    if inferred is not None:
        for k, vi in enumerate(inferred.graph.output[:len(shapes)]):
            t = vi.type.tensor_type
            if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
                shapes[k] = tuple(int(d.dim_value) for d in t.shape.dim)
    if node.op_type == "Expand" and shapes[0] is None and len(values) == 2:  # shape inference leaves it open
        try:
            shapes[0] = tuple(int(d) for d in np.broadcast_shapes(np.shape(values[0]),
                                                                   tuple(int(d) for d in np.ravel(values[1]))))
        except (ValueError, TypeError, OverflowError):
            pass
    return shapes


def evaluate_node(node: onnx.NodeProto, values: Sequence[np.ndarray], opset: int) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    results = ReferenceEvaluator(_one_node_model(node, values, opset)).run(None, {})
    return [np.asarray(r) for r in results]
