"""Tiny ONNX models for the device tests, built with onnx.helper and seeded weights."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save(graph, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def matmul(path: Path, rows: int, k: int = 64, n: int = 32, seed: int = 0) -> Path:
    """Y[rows, n] = Relu(X[rows, k] @ W[k, n]): twice the rows is exactly twice the multiply-adds."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["P"], name="matmul"), helper.make_node("Relu", ["P"], ["Y"], name="relu")],
        f"matmul_{rows}", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [rows, k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [rows, n])], [w])
    return _save(graph, path)


def big_relu(path: Path, elements: int) -> Path:
    """One float Relu on a large vector: the arena holds `elements` floats (in place)."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"], name="relu")], "big_relu",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, elements])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, elements])])
    return _save(graph, path)
