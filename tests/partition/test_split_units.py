"""The split rewrite on small chains: keep and recompute give the same outputs (recompute adds
MACs, keep adds none), channel cuts slice weights and per-channel scales, pieces and slices are
named after the original, invalid cuts are refused in one sentence, and compile_model takes a
scheme."""
from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from split_cases import bottleneck, random_inputs, rows_cut
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.ir import verify
from mcudeploy.partition import Cut, SplitError, check_cut, describe, macs, split
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference


def outputs_equal(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("dtype", ("int8", "float32"))
def test_keep_and_recompute_compute_the_same_outputs(dtype):
    graph = bottleneck(dtype, hw=16)
    x = random_inputs(graph)
    want = run_reference(graph, x)
    keep, recompute = (split(graph, (rows_cut(graph, 4, halo),)) for halo in ("keep", "recompute"))
    assert outputs_equal(run_reference(keep, x), want)
    assert outputs_equal(run_reference(recompute, x), want)
    assert macs(keep) == macs(graph)  # the halo is copied from the neighbours, not computed again
    assert macs(recompute) > macs(graph)
    assert any(n.op == "Concat" and n.name.endswith("#gather") for n in keep.nodes)
    assert not any(n.name.endswith("#gather") for n in recompute.nodes)


def test_pieces_are_named_after_the_original_and_described():
    graph = bottleneck("int8", hw=16)
    scheme = (rows_cut(graph, 4, "recompute"),)
    pieces = split(graph, scheme)
    verify(pieces)
    rows = describe(graph, pieces, scheme)
    assert [r["node"] for r in rows] == [n.name for n in graph.nodes]
    for r in rows:
        assert r["piece_nodes"] == [f"{r['node']}#p{j}" for j in range(4)]
        assert r["pieces"] == 4 and r["halo"] == "recompute" and r["piece_macs"] >= r["macs"]
    out = graph.outputs[0]
    assert out in pieces.tensors and pieces.producer(out).op == "Concat"  # reassembled under its own name
    assert {f"{out}#p{j}" for j in range(4)} <= set(pieces.tensors)
    slices = [n for n in pieces.nodes if n.op == "Slice"]
    assert slices and all(re.fullmatch(r".+@\d:\d+:\d+#slice", n.name) for n in slices)


def test_a_channel_cut_slices_weights_bias_and_per_channel_scales():
    graph = bottleneck("int8", hw=8)
    first, relu, dw = graph.nodes[:3]
    cut = Cut(((first.name, "oc"), (relu.name, "d1"), (dw.name, "oc")), 3)
    pieces = split(graph, (cut,))
    x = random_inputs(graph)
    assert outputs_equal(run_reference(pieces, x), run_reference(graph, x))
    w = pieces.node(f"{first.name}#p1").inputs[1]
    assert pieces[w].shape[0] == 8 and len(pieces[w].quant.scale) == 8  # 24 channels in 3 pieces
    assert pieces.node(f"{dw.name}#p2").attrs["group"] == 8


def test_split_graph_runs_in_c_on_host():
    graph = bottleneck("int8", hw=16)
    pieces = split(graph, (rows_cut(graph, 3, "keep"),))
    from mcudeploy.compile import compile_graph

    x = random_inputs(graph)
    got = run_compiled_on_host(compile_graph(pieces, "host"), [x])[0]
    assert outputs_equal(got, run_reference(graph, x))


def _one_sentence(message: str) -> bool:
    return "\n" not in message and len(message) < 300 and not re.search(r"\.\s+\S", message.rstrip("."))


@pytest.mark.parametrize("make_cut, words", [
    (lambda g: Cut(((g.nodes[0].name, "oh"),), 1), "at least 2 pieces"),
    (lambda g: Cut(((g.nodes[0].name, "oh"),), 2, "sideways"), "halo"),
    (lambda g: Cut((), 2), "names no node"),
    (lambda g: Cut((("nowhere", "oh"),), 2), "no node 'nowhere'"),
    (lambda g: Cut(((g.nodes[0].name, "oh"), (g.nodes[0].name, "oh")), 2), "twice"),
    (lambda g: Cut(((g.nodes[0].name, "zz"),), 2), "no loop axis 'zz'"),
    (lambda g: Cut(((g.nodes[0].name, "ic"),), 2), "reduction axis"),
    (lambda g: Cut(((g.nodes[0].name, "oh"),), 9), "fewer than 9 pieces"),
    (lambda g: Cut(((g.nodes[0].name, "oh"), (g.nodes[1].name, "d3")), 2), "not connected"),
])
def test_invalid_cuts_are_refused_in_one_sentence(make_cut, words):
    graph = bottleneck("int8", hw=8)
    cut = make_cut(graph)
    reason = check_cut(graph, cut)
    assert reason is not None and words in reason and _one_sentence(reason)
    with pytest.raises(SplitError) as err:
        split(graph, (cut,))
    assert words in str(err.value) and _one_sentence(str(err.value))


def test_a_scheme_must_name_each_node_once():
    graph = bottleneck("int8", hw=8)
    with pytest.raises(SplitError, match="named by cuts 0 and 1"):
        split(graph, (Cut(((graph.nodes[0].name, "oh"),), 2), Cut(((graph.nodes[0].name, "ow"),), 2)))


def test_two_cuts_apply_one_after_the_other():
    graph = bottleneck("int8", hw=16)
    a, b, c, d, e = (n.name for n in graph.nodes)
    scheme = (Cut(((a, "oh"), (b, "d2")), 2, "recompute"), Cut(((c, "ow"), (d, "d3"), (e, "ow")), 4, "keep"))
    x = random_inputs(graph)
    assert outputs_equal(run_reference(split(graph, scheme), x), run_reference(graph, x))


def _onnx_chain() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"], name="relu1"),
             helper.make_node("MaxPool", ["b"], ["c"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["c", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2])]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])], [w1, w2])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_compile_model_takes_a_scheme():
    model = _onnx_chain()
    plain = compile_model(model, "host")
    names = [n.name for n in plain.graph.nodes]
    axes = {"Conv": "oh", "MaxPool": "oh", "Relu": "d2"}
    scheme = (Cut(tuple((n.name, axes[n.op]) for n in plain.graph.nodes), 2, "recompute"),)
    cut = compile_model(model, "host", options=CompileOptions(scheme=scheme))
    assert all(n.name not in names for n in cut.graph.nodes if n.op in axes)
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    assert outputs_equal(run_compiled_on_host(cut, [x])[0], run_compiled_on_host(plain, [x])[0])
