"""Graphs the simulator tests share."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def conv_chain_model(average: bool = False):
    """X[1,4,12,12] -> Conv 3x3 -> Relu -> Conv 1x1 -> MaxPool 2x2 (float32): three timed kernels;
    with ``average`` a GlobalAveragePool in place of the MaxPool."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "W1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32), "W2")
    nodes = [helper.make_node("Conv", ["X", "W1"], ["A"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["A"], ["B"], name="relu"),
             helper.make_node("Conv", ["B", "W2"], ["C"], name="conv2"),
             helper.make_node("GlobalAveragePool", ["C"], ["Y"], name="pool") if average else
             helper.make_node("MaxPool", ["C"], ["Y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])]
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4, 12, 12])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 8, 1, 1] if average else [1, 8, 6, 6])
    graph = helper.make_graph(nodes, "conv_chain", [x], [y], [w1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model
