"""Issue 23, acceptance 3: chains that end in an average of whole maps, cut along the rows the
average reduces, compute bit for bit what the unsplit graph does. The average's pieces add their
rows to a running sum (mcudeploy/ops/accumulate.py), so the segment's whole last map never exists.

Random chains (convolutions, depthwise ones, strides, Relu, MaxPool; float32, QDQ int8 and
TFLite int8), ending in GlobalAveragePool or an AveragePool whose window is the map, sometimes
followed by a classifier; every segment that ends at the average may be cut, into any number of
pieces (half the time each node its own count, Cut.counts), with halos kept or recomputed. The
numpy reference always; generated C on the host for a few (each builds a program; float C
against the unsplit graph's C, as float C and numpy differ in rounding)."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from split_cases import random_counts, random_inputs, same, with_random_weights
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.ops import registry
from mcudeploy.partition import Cut, SplitError, check_cut, mechanisms, split
from mcudeploy.compile import compile_graph
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference
from mcudeploy.search.space import segments

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.graphs import Builder  # noqa: E402

SETTINGS = settings(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = ("float32", "int8", "int8-tflite")


def chain(seed: int, kind: str):
    """A random chain ending in an average of whole maps (and perhaps a classifier)."""
    rng = random.Random(seed)
    b = Builder(f"chain{seed}", "float32" if kind == "float32" else "int8")
    h = b.input((1, rng.choice((2, 3, 4)), rng.randint(6, 14), rng.randint(2, 7)))
    def stride(choices):  # 2 only while the map keeps two rows after it: an average of one row has nothing to cut
        s = rng.choice(choices)
        return s if b.shape(h)[2] >= 3 else 1

    for _ in range(rng.randint(1, 4)):
        layer = rng.choice(("conv", "conv", "dw", "relu", "maxpool"))
        if layer == "conv":
            h = b.conv(h, rng.choice((4, 8)), rng.choice((1, 3)), stride=stride((1, 1, 2)))
        elif layer == "dw":
            h = b.conv(h, 0, 3, stride=stride((1, 2)), depthwise=True)
        elif layer == "relu":
            h = b.relu(h)
        else:
            h = b.pool(h, "MaxPool", 3, 1)
    if rng.random() < 0.5:
        out = b.classifier(h)
    elif rng.random() < 0.5:
        out = b.op("GlobalAveragePool", (h,), **{"global": 1})
    else:
        out = b.op("AveragePool", (h,), kernel_shape=b.shape(h)[2:], strides=(1, 1), pads=(0, 0, 0, 0))
    g = with_random_weights(b.finish([out]), seed)
    return g.replace(arithmetic="tflite") if kind == "int8-tflite" else g


def reduction_cut(graph, rng: random.Random):
    """A random valid cut of a segment that ends at the average, or None."""
    def ends_in_a_sum(seg):
        node = graph.node(seg.axes[-1][0])
        return registry.get(node.op).partial(graph, node, seg.axes[-1][1]) is not None

    segs = [s for s in segments(graph) if ends_in_a_sum(s)]
    rng.shuffle(segs)
    for seg in segs:
        cut = Cut(seg.axes, rng.randint(2, seg.extent), rng.choice(("keep", "recompute")))
        if check_cut(graph, cut) is None:
            return random_counts(graph, cut, rng) if rng.random() < 0.5 else cut
    return None


def check(seed: int, kind: str, in_c: bool):
    graph = chain(seed, kind)
    cut = reduction_cut(graph, random.Random(seed))
    assert cut is not None, "a chain ending in an average always has a segment ending at it"
    pieces = split(graph, (cut,))
    sums = [n for n in pieces.nodes if n.op == "AvgPoolSum"]
    assert len(sums) == cut.count(cut.axes[-1][0]) and sum(n.op == "AvgPoolFinish" for n in pieces.nodes) == 1
    x = random_inputs(graph, seed)
    want = run_reference(graph, x)
    assert same(run_reference(pieces, x), want), f"reference differs for {cut}"
    if in_c:  # float C agrees with numpy only within rounding: there, the unsplit graph's C is the yardstick
        got = run_compiled_on_host(compile_graph(pieces, "host",
                                                 options=CompileOptions(placement_method="greedy")), [x])[0]
        if kind == "float32":
            want = run_compiled_on_host(compile_graph(graph, "host",
                                                      options=CompileOptions(placement_method="greedy")), [x])[0]
        assert same(got, want), f"host C differs for {cut}"


@pytest.mark.parametrize("kind", KINDS)
@settings(SETTINGS, max_examples=25)
@given(seed=st.integers(0, 2 ** 20))
def test_reduction_cut_is_exact_on_reference(kind, seed):
    check(seed, kind, in_c=False)


@pytest.mark.parametrize("kind", KINDS)
@settings(SETTINGS, max_examples=2)
@given(seed=st.integers(0, 2 ** 20))
def test_reduction_cut_is_exact_in_c(kind, seed):
    check(seed, kind, in_c=True)


def test_a_max_over_whole_maps_is_not_cut_along_its_reduction():
    b = Builder("maxed", "int8")
    h = b.conv(b.input((1, 2, 8, 4)), 4, 3)
    g = with_random_weights(b.finish([b.op("GlobalMaxPool", (h,), **{"global": 1})]))
    conv, pool = (n.name for n in g.nodes)
    with pytest.raises(SplitError, match="reduction axis its pieces cannot accumulate over"):
        split(g, (Cut(((conv, "oh"), (pool, "rh")), 2),))


def test_the_average_cannot_be_read_inside_its_own_cut():
    b = Builder("reread", "float32")
    h = b.conv(b.input((1, 2, 8, 4)), 4, 3)
    avg = b.op("GlobalAveragePool", (h,), **{"global": 1})
    g = with_random_weights(b.finish([b.op("Add", (h, avg))]))
    conv, pool, add = (n.name for n in g.nodes)
    reason = check_cut(g, Cut(((conv, "oh"), (pool, "rh"), (add, "d2")), 2))
    assert reason is not None and f"reads {g.nodes[1].outputs[0]} inside the cut" in reason


def test_mechanisms_name_what_a_scheme_relies_on():
    """What split_bench prints per tuned model: a running sum, and how overlapping rows of a tensor
    cut in the segment are had (the first convolution's window over the graph input is a slice)."""
    b = Builder("named", "int8")
    h = b.conv(b.conv(b.input((1, 2, 10, 4)), 4, 3), 4, 3)
    g = with_random_weights(b.finish([b.op("GlobalAveragePool", (h,), **{"global": 1})]))
    first, second, pool = (n.name for n in g.nodes)
    whole = ((first, "oh"), (second, "oh"), (pool, "rh"))
    assert mechanisms(g, (Cut(whole, 3, "keep"),)) == ("reduction", "halo-keep")
    assert mechanisms(g, (Cut(whole, 3, "recompute"),)) == ("reduction", "recompute")
    assert mechanisms(g, (Cut(whole[1:], 3, "recompute"),)) == ("reduction",)
    assert mechanisms(g, (Cut(whole[:1] + whole[1:2], 2, "keep"),)) == ("halo-keep",)
    assert mechanisms(g, ()) == ()
    b = Builder("pointwise", "int8")
    g = with_random_weights(b.finish([b.conv(b.conv(b.input((1, 2, 10, 4)), 4, 1), 4, 1)]))
    assert mechanisms(g, (Cut(tuple((n.name, "oh") for n in g.nodes), 2, "keep"),)) == ("strips",)
