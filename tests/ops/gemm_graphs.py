"""Single Gemm/MatMul int8 graphs as the QDQ lowering produces them, built directly (shared by the
Gemm tests)."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry


def int8_product(op, a_shape, k, n, attrs=None, per_channel=True, bias=True, clip=None, seed=0, s_y=0.2,
                 z_a=-7) -> tuple[Graph, Node, np.ndarray]:
    """An int8 Gemm/MatMul of A (input "a") and a constant B, and a random A; s_y = 0.2 gives shifts
    >= 33, 0.0002 below. The bias is drawn with or without ``bias``, so A does not depend on it."""
    rng = np.random.default_rng(seed)
    attrs = dict(attrs or {})
    trans_b = bool(attrs.get("transB", 0))
    s_a, z_y = 0.03, 3
    s_w = rng.uniform(0.002, 0.01, n) if per_channel else np.array([0.006])
    w = rng.integers(-127, 128, (n, k) if trans_b else (k, n)).astype(np.int8)
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    w_quant = Quant(tuple(s_w), (0,) * len(s_w), (0 if trans_b else 1) if per_channel else None)
    tensors = {"a": Tensor("a", tuple(a_shape), "int8", "input", Quant((s_a,), (z_a,))), "w": constant("w", w, w_quant)}
    names = ["a", "w"]
    if bias:
        tensors["b"] = constant("b", b, Quant(tuple(s_a * np.broadcast_to(s_w, (n,))), (0,) * n, 0))
        names.append("b")
    if clip is not None:
        attrs.update(clip_min=clip[0], clip_max=clip[1])
    node = Node("n", op, tuple(names), ("y",), attrs)
    shape, dtype = registry.get(op).infer(Graph("g", tensors, (), ("a",), ()), node)[0]
    tensors["y"] = Tensor("y", shape, dtype, "output", Quant((s_y,), (z_y,)))
    graph = Graph("g", tensors, (node,), ("a",), ("y",))
    return graph, node, rng.integers(-128, 128, a_shape).astype(np.int8)
