"""The exact method: a proof on a graph small enough to check by hand, and never worse than a
heuristic on the small generated graphs."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the generated graphs come from benchmarks/graphs.py

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from benchmarks.graphs import make  # noqa: E402
from mcudeploy.ir import Graph, Node, Tensor, constant, verify  # noqa: E402
from mcudeploy.compile import compile_model  # noqa: E402
from mcudeploy.schedule import schedule  # noqa: E402


def two_branches() -> Graph:
    """x (1x1x4x4 float32, 64 B) feeds two branches, each a wide 1x1 convolution to 16 channels
    (1,024 B) and a narrow one back to 1 channel (64 B); an Add joins them (it may work in place).
    The model's order runs both wide convolutions first."""
    t = {"x": Tensor("x", (1, 1, 4, 4), "float32", "input")}
    nodes = []
    for branch in "ab":
        t[f"w{branch}1"] = constant(f"w{branch}1", np.ones((16, 1, 1, 1), np.float32))
        t[f"w{branch}2"] = constant(f"w{branch}2", np.ones((1, 16, 1, 1), np.float32))
        t[f"{branch}1"] = Tensor(f"{branch}1", (1, 16, 4, 4), "float32")
        t[f"{branch}2"] = Tensor(f"{branch}2", (1, 1, 4, 4), "float32")
    nodes = [Node("a1", "Conv", ("x", "wa1"), ("a1",)), Node("b1", "Conv", ("x", "wb1"), ("b1",)),
             Node("a2", "Conv", ("a1", "wa2"), ("a2",)), Node("b2", "Conv", ("b1", "wb2"), ("b2",)),
             Node("add", "Add", ("a2", "b2"), ("y",))]
    t["y"] = Tensor("y", (1, 1, 4, 4), "float32", "output")
    return verify(Graph("two_branches", t, tuple(nodes), ("x",), ("y",)))


def test_exact_proves_the_hand_derived_optimum():
    # Model order a1 b1 a2 b2 add: at b1, x + a1 + b1 = 64 + 1,024 + 1,024 = 2,112 bytes are live.
    # Any order: take the second of the two wide convolutions to run. While it runs, its input x
    # (64) and its output (1,024) are live, and so is the other branch's wide output or its narrow
    # one (at least 64: that branch has started and the Add, which needs both, has not run), so
    # the peak is at least 64 + 1,024 + 64 = 1,152. Depth first (a1 a2 b1 b2 add) reaches it:
    # 1,088 at a1, 1,152 at a2 (x, a1, a2), 1,152 at b1 (x, a2, b1), 1,152 at b2, 128 at add.
    graph = two_branches()
    assert schedule(graph, "model").peak_bytes == 2112
    s = schedule(graph, "exact", time_limit=10)
    assert s.peak_bytes == 1152
    assert s.proven_optimal and s.bound_bytes == 1152
    assert [n.name for n in s.order][-1] == "add"


SMALL = [("randwire", 30, 2), ("randwire", 40, 0), ("nas", 40, 0), ("nas", 36, 1), ("unet", 40, 2)]


@pytest.mark.parametrize("family, ops, seed", SMALL)
def test_exact_is_never_worse_than_a_heuristic(family, ops, seed):
    graph = make(family, ops, seed, "int8" if seed % 2 else "float32")
    exact = schedule(graph, "exact", time_limit=10)
    for method in ("model", "rpo", "bfs", "dfs", "refine"):
        other = schedule(graph, method, time_limit=2)
        assert exact.peak_bytes <= other.peak_bytes, method
        assert exact.bound_bytes <= other.peak_bytes, method


def test_compile_uses_the_optimal_order():
    compiled = compile_model(two_branches_onnx(), "host")  # schedule "auto" by default
    assert compiled.schedule.method == "auto" and compiled.schedule.proven_optimal
    assert compiled.order == compiled.schedule.order
    assert compiled.lifetimes.lower_bound() == 1152  # the model's order would need 2,112 (see above)


def two_branches_onnx():
    """The graph of two_branches() as an ONNX model, written in memory."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.ones(s, np.float32), n) for n, s in
             (("wa1", (16, 1, 1, 1)), ("wb1", (16, 1, 1, 1)), ("wa2", (1, 16, 1, 1)), ("wb2", (1, 16, 1, 1)))]
    nodes = [helper.make_node("Conv", ["x", "wa1"], ["a1"]), helper.make_node("Conv", ["x", "wb1"], ["b1"]),
             helper.make_node("Conv", ["a1", "wa2"], ["a2"]), helper.make_node("Conv", ["b1", "wb2"], ["b2"]),
             helper.make_node("Add", ["a2", "b2"], ["y"])]
    g = helper.make_graph(nodes, "two_branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
