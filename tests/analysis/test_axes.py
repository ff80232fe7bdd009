"""The axis connection graph (mcudeploy.analysis): edges from tensor expressions, components,
segments, and `plan --show-axes`."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mcudeploy.analysis import axis_graph, components, crossing, cuttable, segments
from mcudeploy.cli import main
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.compile import lower
from tests.shared_models import MODELS, need_models

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the generated graphs come from benchmarks/graphs.py
from benchmarks.graphs import Builder, make  # noqa: E402


def _keys(edges):
    return {(e.producer.node, e.producer.axis, e.consumer.node, e.consumer.axis) for e in edges}


def _component_of(graph, node, axis):
    return next(c for c in components(graph) if any(m.node == node and m.axis == axis for m in c.members))


def test_matmul_gives_the_four_edges_of_the_issue():
    # C[m,n] = sum_k A[m,k] B[k,n], with A and B produced by operators: A.s1->C.m, A.s2->C.k, B.s1->C.k, B.s2->C.n
    b = Builder("matmul", "float32")
    a = b.relu(b.input((6, 5)))
    bb = b.relu(b.input((5, 7)))
    c = b.op("MatMul", (a, bb))
    g = b.finish([c])
    pa, pb, mm = (n.name for n in g.nodes)
    _, edges = axis_graph(g)
    assert _keys(edges) == {(pa, "d0", mm, "d0"), (pa, "d1", mm, "k"), (pb, "d0", mm, "k"), (pb, "d1", mm, "d1")}
    assert all(e.window is None for e in edges)
    k = _component_of(g, mm, "k")  # A's columns and B's rows are one component through k
    assert {(m.node, m.axis) for m in k.members} == {(pa, "d1"), (pb, "d0"), (mm, "k")}
    assert k.crosses_reduction
    m = _component_of(g, mm, "d0")
    assert m.nodes == (pa, mm) and not m.crosses_reduction


def test_window_edges_carry_the_halo_and_flatten_breaks_the_chain():
    b = Builder("cnn", "float32")
    x = b.conv(b.input((1, 3, 16, 16)), 8, 3)
    y = b.conv(x, 8, 3, stride=2)
    z = b.op("Identity", (y,))
    g = b.finish([b.classifier(b.relu(z))])
    names = [n.name for n in g.nodes]
    c0, c1, ident, relu = names[:4]
    h = _component_of(g, c0, "oh")
    assert h.nodes == (c0, c1, ident, relu, names[4])  # through Identity and Relu to the global pool
    edge = next(e for e in h.edges if e.consumer.node == c1)
    # window of 3 taps, stride 2, pad 1: neighbouring pieces share (3 - 1) * 1 + 1 - 2 = 1 input row
    assert edge.window == {"kernel": "kh", "size": 3, "stride": 2, "dilation": 1, "pad": 1, "halo": 1}
    assert edge.tensor == g.nodes[0].outputs[0] and edge.dim == 2
    # the global pool reads H whole: its axis is the reduction rh, the chain's last member
    assert [(m.extent, m.kind) for m in h.members] == [(16, "spatial")] + [(8, "spatial")] * 3 + [(8, "reduction")]
    assert h.crosses_reduction
    assert not {names[-2], names[-1]} & set(h.nodes)  # neither Flatten nor Gemm
    segs = segments(g, h)
    # cuttable members: c0 (16), c1, Identity, Relu (8 each), and the pool's reduction axis rh, along which
    # its pieces accumulate (Op.partial): it can only end a segment, as its output does not follow rh
    pool = h.members[-1]
    assert (h.members[0], h.members[1]) in segs and tuple(h.members[:4]) in segs
    assert all(len(s) >= 2 and all(cuttable(g, m) for m in s) for s in segs)
    assert all(pool not in s[:-1] for s in segs)
    # the runs of length >= 2 of a chain of 5 but those that start or end at the Identity
    assert [[m.node for m in seg] for seg in segs] == [[c0, c1], [c0, c1, ident, relu], [c0, c1, ident, relu, pool.node],
                                                       [c1, ident, relu], [c1, ident, relu, pool.node],
                                                       [relu, pool.node]]


def test_flatten_of_a_feature_map_breaks_h_and_identity_passes_it():
    b = Builder("flat", "float32")
    x = b.op("Identity", (b.conv(b.input((1, 2, 6, 6)), 4, 3),))
    f = b.op("Flatten", (x,), axis=1)  # (1, 4, 6, 6) -> (1, 144): C, H and W merge
    g = b.finish([b.op("Gemm", (f, b._const((144, 10), "float32")))])
    conv, ident, flat, gemm = (n.name for n in g.nodes)
    h = _component_of(g, conv, "oh")
    assert h.nodes == (conv, ident)
    _, edges = axis_graph(g)
    # Flatten's merged dim is `full` on both sides and its extent-1 batch input dim `broadcast`:
    # nothing reaches it from the feature map, and only the (extent-1) row axis goes on to the Gemm
    assert {(p, pa, c, ca) for p, pa, c, ca in _keys(edges) if c in (flat, gemm)} == {(flat, "d0", gemm, "d0")}


def test_kws_spatial_axis_connects_its_conv_chain():
    need_models()
    g = lower(import_onnx(MODELS / "onnx" / "kws_dscnn_int8.onnx"))
    convs = [n.name for n in g.nodes if n.op == "Conv"]
    h = _component_of(g, convs[0], "oh")
    assert set(convs) <= set(h.nodes)
    assert all(m.axis == "oh" for m in h.members if m.node in convs)
    gemm = next(n.name for n in g.nodes if n.op == "Gemm")
    assert gemm not in h.nodes
    windows = [e.window for e in h.edges if e.window]
    assert {w["halo"] for w in windows} >= {0, 2}  # 1x1 pointwise and 3x3 depthwise convolutions
    longest = max(segments(g, h), key=len)
    assert {m.node for m in longest} >= set(convs)


@pytest.mark.parametrize("model", ["kws_dscnn_int8", "vww_mobilenetv1_int8", "ic_resnet8_int8",
                                   "ad_autoencoder_int8"])
def test_shared_models_partition(model):
    need_models()
    g = lower(import_onnx(MODELS / "onnx" / f"{model}.onnx"))
    _check_partition(g)
    for c in crossing(g):
        _check_segments(g, c, segments(g, c, max_len=6))


def test_resnet_residual_blocks_can_be_cut_whole():
    need_models()
    g = lower(import_onnx(MODELS / "onnx" / "ic_resnet8_int8.onnx"))
    add = next(n for n in g.nodes if n.op == "Add")
    h = _component_of(g, add.name, "d2")
    segs = segments(g, h, max_len=8)
    _check_segments(g, h, segs)  # convex: a segment holding the block's input and its Add holds the branch
    branch = {g.producer(i).name for i in add.inputs}
    assert any({add.name} | branch <= {m.node for m in s} for s in segs)


def _check_partition(g):
    refs, edges = axis_graph(g)
    exprs = {n.name: registry.get(n.op).expr(g, n) for n in g.nodes}
    assert [(r.node, r.axis) for r in refs] == [(n.name, a.name) for n in g.nodes for a in exprs[n.name].axes]
    for e in edges:
        producer = g.producer(e.tensor)
        assert producer is not None and producer.name == e.producer.node
        assert e.consumer.node in {n.name for n in g.users(e.tensor)}
        assert 0 <= e.dim < len(g[e.tensor].shape)
    comps = components(g)
    members = [m for c in comps for m in c.members]
    assert sorted(members, key=refs.index) == list(refs) and len(set(members)) == len(refs)
    assert [c.index for c in comps] == list(range(len(comps)))
    order = {n.name: i for i, n in enumerate(g.nodes)}
    for c in comps:
        assert [order[m.node] for m in c.members] == sorted(order[m.node] for m in c.members)
        inside = set(c.members)
        assert all(e.producer in inside and e.consumer in inside for e in c.edges)
    assert sum(len(c.edges) for c in comps) == len(edges)


def _check_segments(g, c, segs):
    assert len(set(segs)) == len(segs)
    for s in segs:
        assert len(s) >= 2 and all(cuttable(g, m) for m in s) and set(s) <= set(c.members)
        assert len({m.node for m in s}) == len(s)
        assert not any(registry.get(g.node(m.node).op).view for m in (s[0], s[-1]))
        inside = set(s)
        links = [(e.producer, e.consumer) for e in c.edges if e.producer in inside and e.consumer in inside]
        reached, todo = {s[0]}, [s[0]]
        while todo:  # connected through its own edges
            m = todo.pop()
            for a, b in links:
                for x, y in ((a, b), (b, a)):
                    if x == m and y not in reached:
                        reached.add(y)
                        todo.append(y)
        assert reached == inside
        succ = {}
        for e in c.edges:
            if cuttable(g, e.producer) and cuttable(g, e.consumer):
                succ.setdefault(e.producer, set()).add(e.consumer)

        def below(m):
            seen, todo = {m}, [m]
            while todo:
                for n in succ.get(todo.pop(), ()):
                    if n not in seen:
                        seen.add(n)
                        todo.append(n)
            return seen
        down = {m: below(m) for m in c.members if cuttable(g, m)}
        for u in s:  # convex: whatever lies on a path between two members is a member
            for v in s:
                between = {w for w in down[u] if v in down[w]}
                assert between <= inside


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(["randwire", "nas", "unet"]), ops=st.integers(8, 40), seed=st.integers(0, 50))
def test_generated_graphs(family, ops, seed):
    g = make(family, ops, seed)
    _check_partition(g)
    for c in crossing(g):
        _check_segments(g, c, segments(g, c, max_len=4))


def test_show_axes_prints_the_components(capsys):
    need_models()
    assert main(["plan", str(MODELS / "onnx" / "kws_dscnn_int8.onnx"), "-b", "host", "--show-axes"]) == 0
    out = capsys.readouterr().out
    assert "components cross more than one operator" in out
    assert "window kh=3, stride 1, pad 1, halo 2" in out
    assert "arena" not in out  # the plan itself is not printed with --show-axes


def test_a_densely_wired_graph_has_a_bounded_reproducible_set_of_segments():
    """A randomly wired network has exponentially many connected convex sets (40 operators: 64,935
    segments, 60: the search did not finish enumerating them). Each growth step keeps an even sample
    of at most GROWN_PER_STEP, so the set stays bounded, the same on every call, still valid, and
    still holds long segments."""
    from mcudeploy.analysis.axes import GROWN_PER_STEP

    g = make("randwire", 40, 0)
    for c in crossing(g):
        segs = segments(g, c)
        cuttable_members = [m for m in c.members if cuttable(g, m)]
        assert len(segs) <= GROWN_PER_STEP * len(cuttable_members)
        assert segs == segments(g, c)
        _check_segments(g, c, segs[::max(1, len(segs) // 200)])
        if len(cuttable_members) > 20:
            assert max(len(s) for s in segs) >= len(cuttable_members) // 2
