"""Sharing decided before placement: views, Concat inputs written into the output, Split outputs
as slices, in place. Each plan is run in byte arenas with the numpy references
(mcudeploy/memory/oracle.py) and must give the reference's outputs bit for bit."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph_builder import GraphBuilder
from random_graphs import random_graph, random_inputs, random_order
from mcudeploy.memory import METHODS, Area, contiguous, lifetimes, place
from mcudeploy.memory.alias import Slot
from mcudeploy.memory.oracle import run_in_arena
from mcudeploy.reference import run_reference


class G(GraphBuilder):
    def conv(self, x, out, cout, k=3):
        cin = self.tensors[x].shape[1]
        w = self.const(f"w_{out}", np.full((cout, cin, k, k), 0.1))
        return self.op("Conv", (x, w, ""), out, pads=(k // 2,) * 4)


def run_both(graph, order=None, regions=(Area("sram"),), method="greedy"):
    order = list(order or graph.nodes)
    lives = lifetimes(graph, order, 4)
    placement = place(lives, regions, method, 4, time_limit=2.0)
    x = {n: np.random.default_rng(1).standard_normal(graph[n].shape).astype(np.float32) for n in graph.inputs}
    for got, want in zip(run_in_arena(graph, order, lives, placement, x), run_reference(graph, x)):
        assert np.array_equal(got, want)
    return lives, placement


def test_concat_inputs_are_written_into_the_output():
    g = G()
    x = g.input("x", (1, 2, 4, 4))
    a = g.conv(x, "a", 3)
    b = g.conv(x, "b", 5)
    y = g.op("Concat", (a, b), "y", axis=1)
    graph = g.graph(g.conv(y, "z", 2))
    lives, _ = run_both(graph)
    assert "n_y" in lives.elided
    assert lives.buffer_of["a"] == lives.buffer_of["b"] == lives.buffer_of["y"] == "y"
    assert lives.slots["a"].offset == 0 and lives.slots["b"].offset == 3 * 16 * 4  # 3 channels of 4x4 floats
    assert lives.slots["a"].strides == lives.slots["b"].strides == (128, 16, 4, 1)
    y_buf = next(b for b in lives.buffers if b.name == "y")
    assert (y_buf.first, y_buf.last, y_buf.size) == (0, 3, 8 * 16 * 4)  # from a's conv to z's conv


def test_concat_along_width_gives_strided_slices():
    g = G()
    x = g.input("x", (2, 2, 3, 3))
    a = g.op("Relu", (x,), "a")
    b = g.op("Sigmoid", (x,), "b")
    y = g.op("Concat", (a, b), "y", axis=3)
    graph = g.graph(g.op("Sigmoid", (y,), "z"))
    lives, _ = run_both(graph)
    assert "n_y" in lives.elided
    assert lives.slots["b"].offset == 3 * 4 and lives.slots["b"].strides == (36, 18, 6, 1)
    assert not contiguous(graph["b"].shape, lives.slots["b"].strides)


@pytest.mark.parametrize("case", ["graph input", "constant", "twice", "requantize"])
def test_concat_stays_a_copy(case):
    g = G()
    x = g.input("x", (1, 2, 2, 2))
    a = g.op("Relu", (x,), "a")
    other = {"graph input": x, "constant": g.const("k", np.ones((1, 2, 2, 2))), "twice": a, "requantize": a}[case]
    y = g.op("Concat", (a, other), "y", axis=1)
    graph = g.graph(g.op("Sigmoid", (y,), "z"))
    if case == "requantize":
        from mcudeploy.ir import Quant
        tensors = dict(graph.tensors)
        tensors["a"] = tensors["a"].with_(quant=Quant((0.5,), (0,)))
        graph = graph.replace(tensors=tensors)
        lives = lifetimes(graph, graph.nodes, 4)
    else:
        lives, _ = run_both(graph)
    assert "n_y" not in lives.elided
    if case in ("graph input", "constant"):  # a qualifies alone: written into y, the other copied ("partial")
        assert lives.buffer_of["a"] == "y" and lives.slots["a"].offset == 0
    else:
        assert lives.buffer_of["a"] != lives.buffer_of["y"]


@pytest.mark.parametrize("case", ["graph input", "constant"])
def test_concat_without_partial_sharing_stays_a_copy(case):
    from mcudeploy.memory.alias import SHARING
    g = G()
    x = g.input("x", (1, 2, 2, 2))
    a = g.op("Relu", (x,), "a")
    other = {"graph input": x, "constant": g.const("k", np.ones((1, 2, 2, 2)))}[case]
    graph = g.graph(g.op("Sigmoid", (g.op("Concat", (a, other), "y", axis=1),), "z"))
    lives = lifetimes(graph, graph.nodes, 4, SHARING - {"partial"})
    assert "n_y" not in lives.elided and lives.buffer_of["a"] != lives.buffer_of["y"]


def test_partial_concat_writes_the_piece_and_copies_the_halo():
    # The gather of a kept halo: y = [last row of p0, p1] along H. p1 is written into y by its
    # producer; the Concat copies p0's row only. Run in the arena, the result is the reference's.
    g = G()
    x = g.input("x", (1, 2, 4, 4))
    p0 = g.op("Sigmoid", (x,), "p0")
    p1 = g.conv(x, "p1", 2, k=1)
    row = g.op("Slice", (p0,), "row", starts=(3,), ends=(4,), axes=(2,))
    y = g.op("Concat", (row, p1), "y", axis=2)
    graph = g.graph(g.conv(y, "z", 2, k=1))
    lives, _ = run_both(graph)
    assert "n_y" not in lives.elided  # it still copies the row
    assert lives.buffer_of["p1"] == "y" and lives.slots["p1"].offset == 1 * 4 * 4  # one row of 4 floats in
    assert lives.buffer_of["p0"] != "y"


def test_concat_that_would_raise_the_peak_stays_a_copy():
    # a (64 B) comes first, then t (1 KB) -> u (64 B) -> b = Sigmoid(u) in place, then y = [a, b].
    # As a copy, the peak is at u's step: a + t + u = 64 + 1024 + 64 = 1152 (y's step: a + b + y =
    # 256). Written into y, a would hold y's 128 B from the start: 128 + 1024 + 64 = 1216.
    g = G()
    x = g.input("x", (1, 1, 4, 4))
    a = g.op("Sigmoid", (x,), "a")
    t = g.conv(a, "t", 16, k=1)
    b = g.op("Sigmoid", (g.conv(t, "u", 1, k=1),), "b")
    y = g.op("Concat", (a, b), "y", axis=1)
    graph = g.graph(g.op("Sigmoid", (y,), "z"))
    lives, _ = run_both(graph)
    assert "n_y" not in lives.elided
    assert lives.lower_bound() == 1152


def test_split_outputs_are_slices_of_the_input():
    g = G()
    x = g.input("x", (1, 6, 2, 2))
    h = g.op("Sigmoid", (x,), "h")
    a, b = g.op("Split", (h,), ("a", "b"), axis=1, split=(2, 4))
    graph = g.graph(g.op("Relu", (a,), "ra"), g.op("Relu", (b,), "rb"))
    lives, _ = run_both(graph)
    assert "n_a" in lives.elided
    assert lives.buffer_of["a"] == lives.buffer_of["b"] == lives.buffer_of["h"]
    assert lives.slots["b"].offset == 2 * 4 * 4 and lives.slots["b"].strides == (24, 4, 2, 1)


def test_a_reshape_of_a_strided_slice_keeps_the_split():
    g = G()
    x = g.input("x", (2, 4, 2, 2))
    h = g.op("Sigmoid", (x,), "h")
    a, b = g.op("Split", (h,), ("a", "b"), axis=1, split=(1, 3))  # batch 2: a's slice is not contiguous
    r = g.op("Reshape", (a,), "r", shape=(2, 4))
    graph = g.graph(g.op("Relu", (r,), "z"), g.op("Relu", (b,), "w"))
    lives, _ = run_both(graph)
    assert "n_a" not in lives.elided
    assert contiguous(graph["a"].shape, lives.slots["a"].strides)


def test_graph_outputs_stay_contiguous():
    g = G()
    x = g.input("x", (2, 2, 2, 2))
    a = g.op("Relu", (x,), "a")
    b = g.op("Sigmoid", (x,), "b")
    y = g.op("Concat", (a, b), "y", axis=1)
    graph = g.graph(g.op("Sigmoid", (y,), "z"), "a")  # a is a graph output: its slice is strided
    lives, _ = run_both(graph)
    assert "n_y" not in lives.elided
    for name in graph.inputs + graph.outputs:
        assert contiguous(graph[name].shape, lives.slots[name].strides)


def test_in_place_rules():
    g = G()
    x = g.input("x", (1, 2, 2, 2))
    a = g.op("Relu", (x,), "a")  # x is read again later: a gets its own buffer
    b = g.op("Sigmoid", (a,), "b")  # a dies here: b takes a's buffer
    c = g.op("Add", (b, b), "c")  # both inputs in one buffer: never in place
    d = g.op("Add", (c, x), "d")  # c dies: d takes c's buffer
    graph = g.graph(d, g.op("Relu", (d,), "e"))  # d is a graph output: e may not overwrite it
    lives, _ = run_both(graph)
    bo = lives.buffer_of
    assert bo["a"] != bo["x"] and bo["b"] == bo["a"] and bo["c"] != bo["b"] and bo["d"] == bo["c"]
    assert bo["e"] != bo["d"]


@pytest.mark.parametrize("k,shared", [(1, True), (3, False)])
def test_depthwise_conv_in_place_only_for_1x1(k, shared):
    g = G()
    x = g.input("x", (1, 3, 4, 4))
    h = g.op("Sigmoid", (x,), "h")
    w = g.const("w", np.arange(3 * k * k, dtype=np.float32).reshape(3, 1, k, k) / 10)
    y = g.op("Conv", (h, w, ""), "y", group=3, pads=(k // 2,) * 4)
    graph = g.graph(g.op("Relu", (y,), "z"))
    lives, _ = run_both(graph)
    assert (lives.buffer_of["y"] == lives.buffer_of["h"]) == shared


def test_sharing_can_be_turned_off():
    g = G()
    x = g.input("x", (1, 2, 2, 2))
    a, b = g.op("Split", (g.op("Relu", (x,), "h"),), ("a", "b"), axis=1)
    y = g.op("Concat", (g.op("Sigmoid", (a,), "sa"), g.op("Sigmoid", (b,), "sb")), "y", axis=1)
    graph = g.graph(g.op("Reshape", (y,), "r", shape=(1, 8)))
    lives = lifetimes(graph, graph.nodes, 4, frozenset())
    assert lives.elided == {"n_r"}
    assert len(lives.buffers) == len(graph.tensors) - 1  # one buffer per tensor, but r is y reshaped
    assert lifetimes(graph, graph.nodes, 4).elided == {"n_r", "n_a", "n_y"}


NESTED_CONCAT = 720401  # a graph hypothesis found (see below)


def _nested_concat_plan():
    """t6 is written in place into its slice of t9 (Concat n6_concat); t9 sits in its slice of t13
    (Concat n10_concat), which also copies t6 again into a slice of its own."""
    graph = random_graph(NESTED_CONCAT, 14)
    order = random_order(graph, NESTED_CONCAT)
    lives = lifetimes(graph, order, 4)
    return graph, order, lives, place(lives, (Area("sram"),), "greedy", 4, time_limit=1.0)


def test_nested_concat_reads_an_input_inside_a_slice_it_skips():
    # n10_concat's kernel skips t9's slice (already in place), and t6 lies inside that slice: reading it
    # while writing the other slices is safe (the oracle once refused this plan as a hazard)
    graph, order, lives, placement = _nested_concat_plan()
    assert lives.slots["t6"].buffer == lives.slots["t9"].buffer == "t13"
    x = random_inputs(graph, NESTED_CONCAT)
    for got, want in zip(run_in_arena(graph, order, lives, placement, x, NESTED_CONCAT), run_reference(graph, x)):
        assert np.array_equal(got, want)


def test_oracle_refuses_a_concat_that_writes_over_an_input_it_still_copies():
    graph, order, lives, placement = _nested_concat_plan()
    # move t6 into in0's slice of t13, which n10_concat writes before it copies t6
    t13 = lives.slots["t13"]
    moved = dict(lives.slots, t6=Slot("t13", t13.offset + 16 * 4, t13.strides))
    x = random_inputs(graph, NESTED_CONCAT)
    with pytest.raises(AssertionError, match="n10_concat: output t13 overwrites input t6"):
        run_in_arena(graph, order, replace(lives, slots=moved), placement, x, NESTED_CONCAT)


@pytest.mark.parametrize("method", METHODS)
@given(seed=st.integers(0, 10 ** 6), two_regions=st.booleans())
@settings(max_examples=60, deadline=None)
def test_random_plans_compute_the_reference(method, seed, two_regions):
    graph = random_graph(seed, 14)
    order = random_order(graph, seed)
    lives = lifetimes(graph, order, 4)
    regions = (Area("sram", 256), Area("ccm", 1 << 20, dma=False)) if two_regions else (Area("sram"),)
    placement = place(lives, regions, method, 4, time_limit=1.0)
    x = random_inputs(graph, seed)
    for got, want in zip(run_in_arena(graph, order, lives, placement, x, seed), run_reference(graph, x)):
        assert np.array_equal(got, want)
    for name in graph.inputs + graph.outputs:
        assert contiguous(graph[name].shape, lives.slots[name].strides)
    size = {b.name: b.size for b in lives.buffers}
    for name, slot in lives.slots.items():
        t = graph[name]
        extent = sum((n - 1) * s for n, s in zip(t.shape, slot.strides)) + 1 if t.size else 0
        assert slot.offset + extent * t.nbytes // max(t.size, 1) <= size[slot.buffer]
    assert lives.lower_bound() == placement.lower_bound_bytes <= placement.arena_bytes


def test_lifetimes_are_deterministic():
    graph = random_graph(7, 30)
    order = random_order(graph, 7)
    a, b = lifetimes(graph, order, 4), lifetimes(graph, order, 4)
    assert a.buffers == b.buffers and a.slots == b.slots and a.elided == b.elided
