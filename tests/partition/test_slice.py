"""Slice (mcudeploy/ops/slice.py) and its sharing in mcudeploy/memory/alias.py: the output is always
a window of its input's slot (offset, the input's strides), composes (a Slice of a Slice, of a
tensor placed inside a Concat), and a Reshape of a non-contiguous window is refused."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_builder import GraphBuilder
from ops.onnx_helpers import run_model_on_host
from mcudeploy.errors import UnsupportedError
from mcudeploy.memory import Area, lifetimes, place
from mcudeploy.memory.oracle import run_in_arena
from mcudeploy.reference import run_reference
from mcudeploy.schedule.problem import build


class G(GraphBuilder):
    def slice(self, x, out, starts, ends, axes):
        return self.op("Slice", (x,), out, starts=tuple(starts), ends=tuple(ends), axes=tuple(axes))


def plan(graph):
    order = list(graph.nodes)
    lives = lifetimes(graph, order, 4)
    placement = place(lives, (Area("sram"),), "greedy", 4, time_limit=2.0)
    x = {n: np.random.default_rng(1).standard_normal(graph[n].shape).astype(np.float32) for n in graph.inputs}
    for got, want in zip(run_in_arena(graph, order, lives, placement, x), run_reference(graph, x)):
        assert np.array_equal(got, want)
    return lives


def test_slice_reference_resolves_negative_and_clamped_bounds():
    g = G()
    x = g.input("x", (2, 5, 6))
    y = g.slice(x, "y", (-4, 1), (99, -1), (1, 2))
    graph = g.graph(y)
    assert graph["y"].shape == (2, 4, 4)
    v = np.arange(60, dtype=np.float32).reshape(2, 5, 6)
    assert np.array_equal(run_reference(graph, [v])[0], v[:, 1:5, 1:5])


def test_slice_is_a_window_of_its_input_and_runs_no_kernel():
    g = G()
    x = g.input("x", (1, 4, 8, 8))
    y = g.op("Relu", (g.slice(x, "s", (2,), (6,), (2,)),), "y")
    lives = plan(g.graph(y))
    assert lives.slots["s"].buffer == lives.slots["x"].buffer
    assert lives.slots["s"].offset == 2 * 8 * 4  # two rows of 8 floats
    assert lives.slots["s"].strides == (256, 64, 8, 1)
    assert "n_s" in lives.elided


def test_slices_compose_offsets_add_up():
    g = G()
    x = g.input("x", (1, 4, 8, 8))
    a = g.slice(x, "a", (1, 2), (4, 8), (1, 2))  # channels 1..3, rows 2..7
    b = g.slice(a, "b", (1, 3), (3, 5), (2, 3))  # rows 3..4, columns 3..4 of x
    y = g.op("Relu", (b,), "y")
    lives = plan(g.graph(y))
    assert lives.slots["b"].buffer == lives.slots["x"].buffer
    assert lives.slots["b"].offset == (1 * 64 + 3 * 8 + 3) * 4
    assert lives.slots["b"].strides == (256, 64, 8, 1)


def test_slice_of_a_tensor_placed_in_a_concat():
    g = G()
    x = g.input("x", (1, 2, 6, 4))
    p = g.op("Relu", (x,), "p")
    q = g.op("Sigmoid", (x,), "q")
    c = g.op("Concat", (p, q), "c", axis=2)  # p and q are written into c's rows 0..5 and 6..11
    s = g.slice(q, "s", (2,), (5,), (2,))  # rows 2..4 of q: rows 8..10 of c
    y = g.op("Add", (c, g.op("Concat", (s, s, s, s), "t", axis=2)), "y")
    lives = plan(g.graph(y))
    assert lives.slots["q"].buffer == lives.slots["c"].buffer
    assert lives.slots["s"].buffer == lives.slots["c"].buffer
    assert lives.slots["s"].offset == lives.slots["q"].offset + 2 * 4 * 4


def test_a_reshape_of_a_non_contiguous_slice_is_refused():
    """By the memory planner; the compiler makes such a window a copy first (mcudeploy/passes/slices.py)."""
    g = G()
    x = g.input("x", (1, 4, 8, 8))
    y = g.op("Flatten", (g.slice(x, "s", (2,), (6,), (2,)),), "y", axis=1)
    with pytest.raises(UnsupportedError, match="not contiguous"):
        lifetimes(g.graph(y), list(g.nodes), 4)


def test_a_reshape_of_a_contiguous_slice_shares_it():
    g = G()
    x = g.input("x", (1, 4, 8, 8))
    f = g.op("Flatten", (g.slice(x, "s", (1,), (3,), (1,)),), "f", axis=1)  # channels 1..2: contiguous
    lives = plan(g.graph(g.op("Relu", (f,), "y")))
    assert lives.slots["f"].buffer == lives.slots["x"].buffer and lives.slots["f"].offset == 64 * 4


def test_the_scheduler_counts_a_slice_in_its_input_buffer():
    g = G()
    x = g.input("x", (1, 4, 8, 8))
    y = g.op("Relu", (g.slice(x, "s", (2,), (6,), (2,)),), "y")
    problem = build(g.graph(y), 4)
    holding = [b for b in problem.buffers if "s" in b.tensors]
    assert len(holding) == 1 and "x" in holding[0].tensors and holding[0].size == 4 * 64 * 4


def test_onnx_slice_with_constant_bounds_imports_and_runs_on_host(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 6])
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
             (("starts", [1, -6]), ("ends", [3, 2**62]), ("axes", [1, 3]), ("steps", [1, 1]))]
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "slice", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    v = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = run_model_on_host(model, [{"x": v}], workdir=tmp_path)[0][0]
    assert np.array_equal(got, np.maximum(v[:, 1:3, :, 2:], 0))
