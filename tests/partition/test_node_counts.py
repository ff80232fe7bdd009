"""Issue 23, per-node piece counts: a cut whose nodes take their own counts (Cut.counts), one a
multiple of the other along every edge, computes bit for bit what the unsplit graph does.

Random chains with stride-2 layers (convolutions, depthwise ones, MaxPool, Relu, a residual Add;
float32 and QDQ int8), sometimes ending in a whole-map average; a random segment along the rows
with random valid counts per node, halos kept or recomputed. The numpy reference always; the
generated C on the host for a few. Then the one-sentence errors of invalid counts, and the
search's per-node cuts (search/space.py), counts in proportion to each node's extent."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from split_cases import Builder, random_counts, random_inputs, same, with_random_weights
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.partition import Cut, SplitError, check_cut, cut_from_dict, cut_to_dict, describe, mechanisms, split
from mcudeploy.compile import compile_graph
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference
from mcudeploy.search import space

SETTINGS = settings(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def strided_chain(seed: int, dtype: str):
    """A random chain whose rows halve once or twice on the way."""
    rng = random.Random(seed)
    b = Builder(f"strided{seed}", dtype)
    h = b.input((1, rng.choice((2, 3)), rng.choice((16, 20, 24, 27)), rng.randint(4, 8)))
    layers = rng.randint(3, 6)
    strided = rng.randrange(1, layers)  # one stride-2 convolution at least, with a layer before it
    for i in range(layers):
        halves = min(b.shape(h)[2:]) >= 4  # strides apply to the columns too
        layer = rng.choice(("conv", "conv", "dw", "relu", "maxpool", "residual"))
        if i == strided:
            h = b.conv(h, rng.choice((2, 4)), rng.choice((1, 3)), stride=2)
        elif layer == "conv":
            h = b.conv(h, rng.choice((2, 4)), rng.choice((1, 3)), stride=rng.choice((1, 2, 2)) if halves else 1)
        elif layer == "dw":
            h = b.conv(h, 0, 3, stride=rng.choice((1, 2)) if halves else 1, depthwise=True)
        elif layer == "maxpool" and not halves:
            h = b.relu(h)
        elif layer == "relu":
            h = b.relu(h)
        elif layer == "maxpool":
            h = b.pool(h, "MaxPool", 2, 2)
        else:
            h = b.op("Add", (h, b.conv(h, 0, 3, depthwise=True)))
    if rng.random() < 0.3:
        h = b.op("GlobalAveragePool", (h,), **{"global": 1})
    return with_random_weights(b.finish([h]), seed)


def rows_segment(graph, rng: random.Random):
    """A random segment along the rows whose extents differ (the stride-2 layers inside it)."""
    segs = [s for s in space.segments(graph) if len(set(s.extents)) > 1 and s.axes[0][1] in ("oh", "d2")]
    return rng.choice(segs) if segs else None


def check(seed: int, dtype: str, in_c: bool) -> None:
    graph = strided_chain(seed, dtype)
    rng = random.Random(seed)
    seg = rows_segment(graph, rng)
    assert seg is not None, "a stride-2 convolution with a layer before it makes a segment whose rows differ"
    plain = Cut(seg.axes, 2, rng.choice(("keep", "recompute")))
    assert check_cut(graph, plain) is None
    cut = random_counts(graph, plain, rng)
    pieces = split(graph, (cut,))
    for name, _ in cut.axes:
        assert len([n for n in pieces.nodes if n.piece and n.piece.of == name and n.piece.index is not None]) \
            == cut.count(name)
    x = random_inputs(graph, seed)
    want = run_reference(graph, x)
    assert same(run_reference(pieces, x), want), f"reference differs for {cut}"
    if in_c:
        got = run_compiled_on_host(compile_graph(pieces, "host",
                                                 options=CompileOptions(placement_method="greedy")), [x])[0]
        if dtype == "float32":  # float C and numpy differ in rounding: the unsplit graph's C is the yardstick
            want = run_compiled_on_host(compile_graph(graph, "host",
                                                      options=CompileOptions(placement_method="greedy")), [x])[0]
        assert same(got, want), f"host C differs for {cut}"


@pytest.mark.parametrize("dtype", ("float32", "int8"))
@settings(SETTINGS, max_examples=30)
@given(seed=st.integers(0, 2 ** 20))
def test_per_node_counts_are_exact_on_reference(dtype, seed):
    check(seed, dtype, in_c=False)


@pytest.mark.parametrize("dtype, seed", [("float32", 5), ("int8", 12), ("int8", 14)])  # recompute, recompute, keep
def test_per_node_counts_are_exact_in_c(dtype, seed):
    check(seed, dtype, in_c=True)


def three_convs():
    """16 rows, then 8 (stride 2), then 8."""
    b = Builder("three", "int8")
    h = b.conv(b.conv(b.conv(b.input((1, 2, 16, 4)), 4, 3), 4, 3, stride=2), 4, 3)
    g = with_random_weights(b.finish([h]))
    return g, tuple((n.name, "oh") for n in g.nodes)


@pytest.mark.parametrize("counts, pieces, says", [
    ((4, 4, 3), 4, "node {1} is cut into 4 pieces and node {2}, which reads it, into 3: "
                   "neither is a multiple of the other"),
    ((6, 4, 2), 6, "node {0} is cut into 6 pieces and node {1}, which reads it, into 4: "
                   "neither is a multiple of the other"),
    ((16, 16, 8), 16, "axis 'oh' of node {1} (Conv) has extent 8, fewer than 16 pieces"),
    ((4, 0, 2), 4, "node {1} needs at least 1 piece, not 0"),
    ((4, 2), 4, "the cut names 3 nodes but gives piece counts (4, 2)"),
    ((4, 2, 2), 8, "the cut has 8 pieces but its most finely cut node has 4"),
])
def test_invalid_counts_are_one_sentence_naming_the_node(counts, pieces, says):
    g, axes = three_convs()
    names = [n for n, _ in axes]
    reason = check_cut(g, Cut(axes, pieces, "keep", counts))
    assert reason == says.format(*names)
    with pytest.raises(SplitError, match="^" + reason.replace("(", r"\(").replace(")", r"\)") + "$"):
        split(g, (Cut(axes, pieces, "recompute", counts),))


def test_one_node_whole_and_coarser_producers_are_allowed():
    """A node of 1 piece is computed whole inside the cut; a producer coarser than its consumer
    computes the hull of what several consumer pieces read (recompute) or tiles (keep)."""
    g, axes = three_convs()
    x = random_inputs(g, 3)
    want = run_reference(g, x)
    for counts in ((1, 4, 2), (2, 8, 4), (16, 8, 1), (4, 8, 8)):
        for halo in ("keep", "recompute"):
            cut = Cut.per_node(axes, counts, halo)
            assert check_cut(g, cut) is None, (counts, halo)
            assert same(run_reference(split(g, (cut,)), x), want), (counts, halo)


def test_counts_are_carried_through_dicts_keys_plans_and_mechanisms():
    g, axes = three_convs()
    cut = Cut.per_node(axes, (8, 4, 4), "recompute")
    assert cut.pieces == 8 and Cut.per_node(axes, (4, 4, 4)) == Cut(axes, 4)
    assert cut_from_dict(cut_to_dict(cut)) == cut
    old = {"axes": [list(a) for a in axes], "pieces": 4, "halo": "keep"}  # a plan.json before the counts
    assert cut_from_dict(old) == Cut(axes, 4) and cut_to_dict(Cut(axes, 4)) == old
    assert "8:4:4" in space.scheme_key((cut,)) and "8-4-4 pieces" in space.short((cut,))
    assert space.scheme_key((cut,)) != space.scheme_key((Cut(axes, 8, "recompute", (8, 4, 2)),))
    rows = describe(g, split(g, (cut,)), (cut,))
    assert [r["pieces"] for r in rows] == [8, 4, 4] == [len(r["piece_nodes"]) for r in rows]
    assert mechanisms(g, (cut,)) == ("recompute", "per-node")
    assert "per-node" not in mechanisms(g, (Cut(axes, 4, "recompute"),))


def test_the_search_proposes_counts_in_proportion_to_the_extents():
    g, axes = three_convs()
    seg = next(s for s in space.segments(g) if s.axes == axes)
    assert seg.extents == (16, 8, 8) and seg.extent == 8
    counts = space.piece_counts(seg)
    assert max(counts) == 16 and all(k <= 16 for k in counts)
    cuts = space.segment_cuts(g, seg, halos=("keep",))
    plain = [c for c in cuts if c.counts is None]
    per_node = [c for c in cuts if c.counts is not None]
    assert all(c.pieces <= seg.extent for c in plain)
    assert per_node and all(c.pieces > seg.extent for c in per_node)
    for c in per_node:  # the first node, twice the rows of the others, twice their pieces
        assert c.counts[0] == c.pieces and c.counts[1] == c.counts[2] == c.pieces // 2
