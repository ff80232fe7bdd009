"""Index arithmetic of a cut (mcudeploy/partition/ranges.py), and the piece hooks it feeds: a
windowed operator cut anywhere, with any stride, dilation and padding at either border, computes
exactly the rows of the whole one."""
from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcudeploy.ir import Graph, Node, Tensor, verify
from mcudeploy.ops import registry
from mcudeploy.partition import Cut, split
from mcudeploy.partition.ranges import Read, balanced, cover, window_read
from mcudeploy.reference import run_reference


def test_balanced_ranges_tile_the_axis_with_sizes_one_apart():
    assert balanced(10, 4) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    for extent in range(1, 40):
        for pieces in range(1, extent + 1):
            ranges = balanced(extent, pieces)
            assert ranges[0][0] == 0 and ranges[-1][1] == extent
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            sizes = {hi - lo for lo, hi in ranges}
            assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_window_read_turns_rows_clipped_at_either_border_into_pads():
    # 3x3, stride 1, pad 1 on 8 rows: the first piece reads a padded row above, the last one below
    assert window_read(0, 2, 8, 1, 1, 1, 3) == Read(0, 3, (1, 0))
    assert window_read(2, 4, 8, 1, 1, 1, 3) == Read(1, 5, (0, 0))
    assert window_read(6, 8, 8, 1, 1, 1, 3) == Read(5, 8, (0, 1))
    # stride 2, dilation 2, kernel 3, pad 2 on 16 rows (8 outputs): rows o*2 - 2 ... o*2 + 2
    assert window_read(0, 3, 16, 2, 2, 2, 3) == Read(0, 7, (2, 0))
    assert window_read(5, 8, 16, 2, 2, 2, 3) == Read(8, 16, (0, 1))
    # a window entirely in the padding reads nothing
    assert window_read(0, 1, 4, 1, 1, 3, 2).lo == window_read(0, 1, 4, 1, 1, 3, 2).hi


def test_cover_prefers_one_piece_then_the_fewest_parts():
    tiles = [(0, 4), (4, 8), (8, 12)]
    assert cover(tiles, 5, 7) == [(1, 5, 7)]
    assert cover(tiles, 3, 9) == [(0, 3, 4), (1, 4, 8), (2, 8, 9)]
    overlapping = [(0, 5), (3, 9), (7, 12)]
    assert cover(overlapping, 4, 8, prefer=1) == [(1, 4, 8)]
    assert cover(overlapping, 0, 12) == [(0, 0, 5), (1, 5, 9), (2, 9, 12)]
    assert cover([(0, 4), (6, 8)], 2, 7) is None


def _one_node(op: str, x_shape, attrs, weights=None) -> Graph:
    rng = np.random.default_rng(3)
    tensors = {"x": Tensor("x", x_shape, "float32", "input")}
    inputs = ["x"]
    if weights is not None:
        tensors["w"] = Tensor("w", weights, "float32", "constant", None,
                              rng.standard_normal(weights).astype(np.float32))
        inputs.append("w")
    node = Node("n", op, tuple(inputs), ("y",), attrs)
    (shape, dtype), = registry.get(op).infer(Graph("s", tensors, (), (), ()), node)
    tensors["y"] = Tensor("y", tuple(shape), dtype, "output")
    return verify(Graph("one", tensors, (node,), ("x",), ("y",)))


geometry = st.fixed_dictionaries({
    "h": st.integers(3, 19), "k": st.integers(1, 4), "s": st.integers(1, 3), "d": st.integers(1, 2),
    "pb": st.integers(0, 3), "pe": st.integers(0, 3), "pieces": st.integers(2, 5),
    "halo": st.sampled_from(("keep", "recompute")),
})


def _split_matches(graph: Graph, axis: str, pieces: int, halo: str) -> None:
    extent = registry.get(graph.nodes[0].op).expr(graph, graph.nodes[0]).axis(axis).extent
    assume(extent >= pieces)
    x = {"x": np.random.default_rng(0).standard_normal(graph["x"].shape).astype(np.float32)}
    got = run_reference(split(graph, (Cut((("n", axis),), pieces, halo),)), x)
    assert np.array_equal(got[0], run_reference(graph, x)[0])


@settings(max_examples=60, derandomize=True, deadline=None)
@given(g=geometry)
def test_conv_piece_computes_its_rows_exactly(g):
    span = (g["k"] - 1) * g["d"] + 1
    assume(g["h"] + g["pb"] + g["pe"] >= span and max(g["pb"], g["pe"]) < span)
    graph = _one_node("Conv", (1, 2, g["h"], 5), {"strides": (g["s"], 1), "dilations": (g["d"], 1),
                                                  "pads": (g["pb"], 1, g["pe"], 1)}, (3, 2, g["k"], 3))
    _split_matches(graph, "oh", g["pieces"], g["halo"])


@settings(max_examples=80, derandomize=True, deadline=None)
@given(g=geometry, kind=st.sampled_from(("MaxPool", "AveragePool")), ceil=st.booleans(), include=st.booleans())
def test_pool_piece_computes_its_rows_exactly(g, kind, ceil, include):
    """ceil_mode and count_include_pad included: the last piece keeps the pool's own end padding."""
    assume(max(g["pb"], g["pe"]) < g["k"] and g["h"] + g["pb"] + g["pe"] >= (g["k"] - 1) * g["d"] + 1)
    attrs = {"kernel_shape": (g["k"], 2), "strides": (g["s"], 1), "dilations": (g["d"], 1),
             "pads": (g["pb"], 0, g["pe"], 0), "ceil_mode": int(ceil)}
    if kind == "AveragePool":
        attrs["count_include_pad"] = int(include)
    graph = _one_node(kind, (1, 2, g["h"], 4), attrs)
    _split_matches(graph, "oh", g["pieces"], g["halo"])
