"""Evaluate an ONNX node whose inputs are all known, with onnx's own reference evaluator."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper


def evaluate_node(node: onnx.NodeProto, values: Sequence[np.ndarray], opset: int) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    inputs = [f"in{i}" if name else "" for i, name in enumerate(node.input)]
    outputs = [f"out{i}" for i in range(len(node.output))]
    clone = helper.make_node(node.op_type, inputs, outputs, domain=node.domain)
    clone.attribute.extend(node.attribute)
    inits = [numpy_helper.from_array(np.asarray(v), f"in{i}") for i, v in enumerate(values) if inputs[i]]
    graph = helper.make_graph([clone], "fold", [], [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
                                                    for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    results = ReferenceEvaluator(model).run(None, {})
    return [np.asarray(r) for r in results]
