"""Sharing through the generated C on the host board: producers of every operator family write
straight into a Concat's (strided) slices, consumers read a Split's slices in place, and buffers
sit in several regions. The C with sharing must give the C without it bit for bit, and the numpy
reference (bit for bit in int8)."""
import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.boards import Region, load_board
from mcudeploy.codegen import write_project
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.memory import lifetimes, place
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference

X = (2, 4, 6, 6)  # batch 2: a channel slice of a Concat output is strided
RNG = np.random.default_rng(5)


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def model(nodes, inits, inputs, outputs, opset=17):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def weights(*shape):
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


N = helper.make_node
# producer of "a" from "x" (2, 4, 6, 6) -> (2, C, 6, 6), its initializers (C is 3 for these, else 4)
THREE = ("Conv", "ConvRelu", "SplitKernel")
PRODUCERS = {
    "Conv": ([N("Conv", ["x", "w", "bias"], ["a"], pads=[1, 1, 1, 1])],
             [const("w", weights(3, 4, 3, 3)), const("bias", weights(3))]),
    "ConvRelu": ([N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["a"])],
                 [const("w", weights(3, 4, 3, 3))]),
    "DepthwiseConv": ([N("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1], group=4)], [const("w", weights(4, 1, 3, 3))]),
    "MaxPool": ([N("MaxPool", ["x"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], []),
    "AveragePool": ([N("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], []),
    "Resize": ([N("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                N("Resize", ["p", "", "scales"], ["a"], mode="nearest")],
               [const("scales", np.array([1, 1, 2, 2], np.float32))]),
    "Transpose": ([N("Transpose", ["x"], ["a"], perm=[0, 1, 3, 2])], []),
    "Pad": ([N("MaxPool", ["x"], ["p"], kernel_shape=[3, 3]), N("Pad", ["p", "pads"], ["a"])],
            [const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))]),
    "Softmax": ([N("Softmax", ["x"], ["a"], axis=1)], []),
    "Sigmoid": ([N("Sigmoid", ["x"], ["a"])], []),
    "HardSwish": ([N("HardSwish", ["x"], ["a"])], []),
    "LeakyRelu": ([N("LeakyRelu", ["x"], ["a"], alpha=0.1)], []),
    "AddBroadcast": ([N("Add", ["x", "k"], ["a"])], [const("k", weights(1, 4, 1, 1))]),
    "Mul": ([N("Mul", ["x", "x"], ["a"])], []),
    "Sum": ([N("Sum", ["x", "x", "x"], ["a"])], []),
    "BatchNorm": ([N("BatchNormalization", ["x", "bn_s", "bn_b", "bn_m", "bn_v"], ["a"])],
                  [const("bn_s", weights(4)), const("bn_b", weights(4)), const("bn_m", weights(4)),
                   const("bn_v", np.abs(weights(4)) + 0.5)]),
    "SplitKernel": ([N("Split", ["x", "parts"], ["a", "rest"], axis=1), N("Relu", ["rest"], ["r"])],
                    [const("parts", np.array([3, 1], np.int64))]),
}


def concat_model(producer):
    """a = producer(x); y = [a, Tanh(x)] along channels; t = Sigmoid(y); [s1, s2] = Split(t);
    outputs: MaxPool(s1) and Relu(s2) (both read strided slices)."""
    nodes, inits = PRODUCERS[producer]
    nodes = nodes + [N("Tanh", ["x"], ["b"]), N("Concat", ["a", "b"], ["y"], axis=1), N("Sigmoid", ["y"], ["t"]),
                     N("Split", ["t", "cut"], ["s1", "s2"], axis=1),
                     N("MaxPool", ["s1"], ["o1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), N("Relu", ["s2"], ["o2"])]
    outputs = ["o1", "o2"] + (["r"] if producer == "SplitKernel" else [])
    channels = (3 if producer in THREE else 4) + 4
    return model(nodes, inits + [const("cut", np.array([2, channels - 2], np.int64))], [("x", X)], outputs)


def unshared(compiled):
    """The same compiled model with no Concat, Split or in-place sharing (views only)."""
    lives = lifetimes(compiled.graph, compiled.order, compiled.board.alignment, frozenset())
    return dataclasses.replace(compiled, lifetimes=lives, placement=place(lives, alignment=compiled.board.alignment))


def run_c(compiled, samples, tmp_path, name):
    return run_compiled_on_host(compiled, samples, tmp_path / name)


@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_producer_writes_into_a_concat_slice(producer, tmp_path):
    m = (concat_model(producer))
    compiled = compile_model(m, "host", options=CompileOptions(schedule_method="model"))
    concat = next(n for n in compiled.graph.nodes if n.op == "Concat")
    split = next(n for n in compiled.graph.nodes if n.op == "Split" and "t" in n.inputs[0:1])
    assert concat.name in compiled.lifetimes.elided, "the Concat was not absorbed"
    assert split.name in compiled.lifetimes.elided, "the Split was not turned into slices"
    samples = [{"x": RNG.standard_normal(X).astype(np.float32)} for _ in range(2)]
    shared = run_c(compiled, samples, tmp_path, "shared")
    copied = run_c(unshared(compiled), samples, tmp_path, "copied")
    for s, (got, want) in enumerate(zip(shared, copied)):
        ref = run_reference(compiled.graph, samples[s])
        for g, w, r in zip(got, want, ref):
            assert np.array_equal(g, w), "sharing changed the C result"
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    source = (tmp_path / "shared" / "model.c").read_text()
    assert "mcud_concat_" not in source and "no kernel, its tensors share memory" in source


def gemm_model():
    nodes = [N("Gemm", ["x", "w"], ["a"]), N("Sigmoid", ["x"], ["b"]), N("Concat", ["a", "b"], ["y"], axis=1),
             N("MatMul", ["y", "w2"], ["z"])]
    return model(nodes, [const("w", weights(8, 5)), const("w2", weights(13, 3))], [("x", (2, 8))], ["z"])


def matmul_model():
    nodes = [N("MatMul", ["x", "w"], ["a"]), N("Relu", ["x"], ["b"]), N("Concat", ["b", "a"], ["y"], axis=2),
             N("Softmax", ["y"], ["z"], axis=-1)]
    return model(nodes, [const("w", weights(8, 5))], [("x", (2, 3, 8))], ["z"])


@pytest.mark.parametrize("build", [gemm_model, matmul_model])
def test_matrix_products_write_into_a_concat_slice(build, tmp_path):
    compiled = compile_model(build(), "host", options=CompileOptions(schedule_method="model"))
    assert any(n.op == "Concat" and n.name in compiled.lifetimes.elided for n in compiled.graph.nodes)
    samples = [{n: RNG.standard_normal(compiled.graph[n].shape).astype(np.float32) for n in compiled.graph.inputs}]
    got, = run_c(compiled, samples, tmp_path, "shared")
    want, = run_c(unshared(compiled), samples, tmp_path, "copied")
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    np.testing.assert_allclose(got[0], run_reference(compiled.graph, samples[0])[0], rtol=1e-5, atol=1e-5)


def qdq_model():
    """int8: two Convs quantized to the same scale feed a Concat of that scale; then Split, each part
    max-pooled."""
    s_x, s_y = 0.05, 0.1

    def q(name, out, scale):
        return [N("QuantizeLinear", [name, scale, "z"], [out + "_q"]),
                N("DequantizeLinear", [out + "_q", scale, "z"], [out])]

    nodes = q("x", "xd", "s0")
    nodes += [N("DequantizeLinear", ["w1q", "ws"], ["w1"]), N("DequantizeLinear", ["w2q", "ws"], ["w2"]),
              N("Conv", ["xd", "w1"], ["c1"], pads=[1, 1, 1, 1]), N("Conv", ["xd", "w2"], ["c2"], pads=[1, 1, 1, 1])]
    nodes += q("c1", "a", "s1") + q("c2", "b", "s1")
    nodes += [N("Concat", ["a", "b"], ["y"], axis=1)] + q("y", "yd", "s1")
    nodes += [N("Split", ["yd", "cut"], ["p1", "p2"], axis=1)] + q("p1", "e1", "s1") + q("p2", "e2", "s1")
    # int8 readers of the slices that shrink them (the Split, int8 too, then costs no peak as slices)
    nodes += [N("MaxPool", ["e1"], ["m1"], kernel_shape=[2, 2], strides=[2, 2]),
              N("MaxPool", ["e2"], ["m2"], kernel_shape=[2, 2], strides=[2, 2])]
    nodes += q("m1", "o1", "s1") + q("m2", "o2", "s1")
    wq = lambda c: numpy_helper.from_array(RNG.integers(-60, 60, (c, 4, 3, 3)).astype(np.int8), f"w{c // 3}q")
    inits = [const("s0", np.float32(s_x)), const("s1", np.float32(s_y)), const("z", np.int8(0)),
             const("ws", np.float32(0.02)), wq(3), wq(6), const("cut", np.array([4, 5], np.int64))]
    return model(nodes, inits, [("x", X)], ["o1", "o2"])


def test_int8_concat_and_split_in_place_are_bit_exact(tmp_path):
    compiled = compile_model(qdq_model(), "host", options=CompileOptions(schedule_method="model"))
    ops = {n.op: n for n in compiled.graph.nodes}
    assert compiled.graph[ops["Concat"].outputs[0]].dtype == "int8"
    assert ops["Concat"].name in compiled.lifetimes.elided and ops["Split"].name in compiled.lifetimes.elided
    samples = [{"x": RNG.standard_normal(X).astype(np.float32)} for _ in range(3)]
    shared = run_c(compiled, samples, tmp_path, "shared")
    copied = run_c(unshared(compiled), samples, tmp_path, "copied")
    for sample, got, want in zip(samples, shared, copied):
        for g, w, r in zip(got, want, run_reference(compiled.graph, sample)):
            assert np.array_equal(g, w) and np.array_equal(g, r)


def two_region_board(first_bytes):
    host = load_board("host")
    regions = (Region("sram", first_bytes), Region("ccm", 1 << 20, section=".mcud_ccm", dma=False))
    return dataclasses.replace(host, regions=regions)


def test_two_regions_in_c(tmp_path):
    m = (concat_model("Conv"))
    one = compile_model(m, "host", options=CompileOptions(schedule_method="model"))
    board = two_region_board(one.placement.arena_bytes * 3 // 5)  # too small for the whole arena
    two = compile_model(m, board, options=CompileOptions(schedule_method="model"))
    assert two.placement.arenas["ccm"] > 0 and two.placement.arenas["sram"] <= board.regions[0].size
    io = {b.name for b in two.lifetimes.buffers if b.io}
    assert all(two.placement.regions[b] == "sram" for b in io), "graph I/O went to a region without DMA"
    samples = [{"x": RNG.standard_normal(X).astype(np.float32)}]
    got, = run_c(two, samples, tmp_path, "two")
    want, = run_c(one, samples, tmp_path, "one")
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    source = (tmp_path / "two" / "model.c").read_text()
    assert 'static uint8_t mcud_arena_ccm[' in source and 'section(".mcud_ccm")' in source
    assert f"static uint8_t mcud_arena[{two.placement.arenas['sram']}]" in source


def test_plan_lists_regions_and_tensor_slots(tmp_path):
    import json

    m = (concat_model("MaxPool"))
    compiled = compile_model(m, "host", options=CompileOptions(schedule_method="model"))
    plan = json.loads((write_project(compiled, tmp_path) / "plan.json").read_text())
    assert plan["regions"] == [{"name": "sram", "size": 1073741824, "arena_bytes": compiled.placement.arena_bytes},
                               {"name": "slow", "size": 1073741824, "arena_bytes": 0}]
    assert plan["placement"]["method"] == "exact" and plan["placement"]["proven_optimal"] is True
    assert {b["region"] for b in plan["buffers"]} == {"sram"}
    tensors = {t["name"]: t for t in plan["tensors"]}
    y = tensors["y"]
    buffers = {b["name"]: b for b in plan["buffers"]}
    assert tensors["a"]["buffer"] == y["buffer"] and tensors["a"]["offset"] == buffers[y["buffer"]]["offset"]
    assert tensors["b"]["offset"] == y["offset"] + 4 * 36 * 4  # after a's 4 channels of 6x6 floats
    assert tensors["b"]["strides"] == y["strides"] == [288, 36, 6, 1]
    assert not next(o for o in plan["order"] if o["op"] == "Concat")["kernel"]
