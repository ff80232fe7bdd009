"""MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool: numpy reference against onnxruntime
(float, and int8 QDQ within one step), the C kernels against the reference (bit-exact for int8)
through the host build and on strided views."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.reference import run_reference

from .kernel_harness import Place, run_kernel
from .onnx_helpers import (check_float, check_int8, check_strided_c, compile_graph, host_run,
                           int8_input, make_model, ort_run, qparams, ref_run, single_node)

# --------------------------------------------------------------------------- cases

POOL_CASES = [
    # (op, x_shape, attrs)
    ("MaxPool", (1, 3, 9, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", (2, 2, 8, 7), dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("MaxPool", (1, 2, 10, 9), dict(kernel_shape=[3, 2], strides=[2, 1], pads=[0, 1, 2, 0], ceil_mode=1)),
    ("MaxPool", (1, 2, 11, 10), dict(kernel_shape=[3, 3], strides=[2, 3], dilations=[2, 1], ceil_mode=1)),
    ("MaxPool", (1, 2, 9, 10), dict(kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 2])),
    ("MaxPool", (1, 3, 9, 8), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    ("MaxPool", (1, 3, 8, 9), dict(kernel_shape=[2, 4], strides=[3, 2], auto_pad="SAME_LOWER")),
    ("MaxPool", (1, 3, 9, 8), dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="VALID")),
    ("MaxPool", (1, 4, 17), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("MaxPool", (2, 3, 16), dict(kernel_shape=[4], strides=[3], ceil_mode=1)),
    ("AveragePool", (1, 3, 9, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", (1, 3, 9, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", (1, 2, 10, 9), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[0, 1, 2, 0], ceil_mode=1)),
    ("AveragePool", (1, 2, 10, 9), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[0, 1, 2, 0], ceil_mode=1,
                                        count_include_pad=1)),
    ("AveragePool", (1, 2, 11, 8), dict(kernel_shape=[3, 3], strides=[3, 2], ceil_mode=1, count_include_pad=1)),
    ("AveragePool", (2, 2, 8, 8), dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("AveragePool", (1, 3, 9, 8), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    ("AveragePool", (1, 3, 9, 8), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER",
                                       count_include_pad=1)),
    ("AveragePool", (1, 3, 8, 9), dict(kernel_shape=[2, 4], strides=[1, 2], auto_pad="SAME_LOWER")),
    ("AveragePool", (1, 3, 9, 8), dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="VALID")),
    ("AveragePool", (1, 2, 10, 10), dict(kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", (1, 2, 10, 10), dict(kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 1],
                                         count_include_pad=1)),
    ("AveragePool", (1, 4, 17), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("AveragePool", (1, 4, 17), dict(kernel_shape=[3], strides=[2], pads=[1, 1], count_include_pad=1)),
    ("AveragePool", (2, 3, 16), dict(kernel_shape=[4], strides=[3], ceil_mode=1)),
    ("AveragePool", (1, 8, 7, 7), dict(kernel_shape=[7, 7])),
    ("GlobalAveragePool", (1, 8, 7, 5), {}),
    ("GlobalAveragePool", (2, 5, 12), {}),
    ("GlobalMaxPool", (1, 8, 7, 5), {}),
    ("GlobalMaxPool", (2, 5, 12), {}),
]
IDS = [f"{op}-{'x'.join(map(str, s))}-{i}" for i, (op, s, _) in enumerate(POOL_CASES)]


def _random_cases(count, seed=7):
    """More attribute combinations, drawn with a fixed seed."""
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        op = ("MaxPool", "AveragePool")[len(cases) % 2]
        k = [int(v) for v in rng.integers(1, 4, 2)]
        s = [int(v) for v in rng.integers(1, 4, 2)]
        d = [int(v) for v in rng.integers(1, 3, 2)]
        pads = [int(rng.integers(0, k[i % 2])) for i in range(4)]
        attrs = dict(kernel_shape=k, strides=s, dilations=d, pads=pads, ceil_mode=int(rng.integers(0, 2)))
        if op == "AveragePool":
            attrs["count_include_pad"] = int(rng.integers(0, 2))
        shape = (1, 2, int(rng.integers(5, 12)), int(rng.integers(5, 12)))
        if any(shape[2 + i] + pads[i] + pads[i + 2] < (k[i] - 1) * d[i] + 1 for i in range(2)):
            continue
        cases.append((op, shape, attrs))
    return cases


RANDOM_CASES = _random_cases(24)


@pytest.mark.parametrize("op,shape,attrs", POOL_CASES + RANDOM_CASES,
                         ids=IDS + [f"random-{i}" for i in range(len(RANDOM_CASES))])
def test_float_matches_onnxruntime(op, shape, attrs):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    check_float(make_model(op, attrs, shape), x)


@pytest.mark.parametrize("op,shape,attrs", POOL_CASES + RANDOM_CASES[:8],
                         ids=IDS + [f"random-{i}" for i in range(8)])
def test_int8_matches_onnxruntime(op, shape, attrs):
    rng = np.random.default_rng(1)
    sx, zx = qparams(rng)
    sy, zy = qparams(rng)
    x = int8_input(rng, shape)
    check_int8(make_model(op, attrs, shape, qdq=(sx, zx, sy, zy)), x, op)


@pytest.mark.parametrize("op", ["MaxPool", "GlobalMaxPool"])
def test_int8_max_with_equal_quantization_is_exact(op):
    rng = np.random.default_rng(2)
    shape = (1, 4, 9, 9)
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]) if op == "MaxPool" else {}
    model = make_model(op, attrs, shape, qdq=(0.05, 3, 0.05, 3))
    x = int8_input(rng, shape)
    graph = compile_graph(model)
    call = registry.get(op).kernel(graph, single_node(graph, op, "int8"))
    assert dict(call.params.fields)["requant"] == 0
    np.testing.assert_array_equal(run_reference(graph, [x])[0], ort_run(model, x))


def test_int8_average_rounds_once():
    """With s_x == s_y the int8 average is sum / count rounded to a nearest integer (either one at a tie)."""
    rng = np.random.default_rng(3)
    shape = (1, 3, 8, 8)
    x = int8_input(rng, shape)
    model = make_model("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), shape, qdq=(0.02, 0, 0.02, 0))
    got = ref_run(model, x).astype(np.int64)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones((8, 8), np.int64), 1)
    for i in range(8):
        for j in range(8):
            s = xp[:, :, i:i + 3, j:j + 3].sum(axis=(2, 3))
            n = ones[i:i + 3, j:j + 3].sum()
            assert np.all(np.abs(got[:, :, i, j] - s / n) <= 0.5)


def test_fused_relu_float_and_int8():
    rng = np.random.default_rng(4)
    shape = (1, 3, 8, 8)
    attrs = dict(kernel_shape=[2, 2], strides=[2, 2])
    x = rng.standard_normal(shape).astype(np.float32)
    nodes = [helper.make_node("AveragePool", ["x"], ["t"], **attrs), helper.make_node("Relu", ["t"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
    graph = compile_graph(model)
    assert [n.op for n in graph.nodes] == ["AveragePool"]
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_run(model, x), rtol=1e-6, atol=1e-6)
    # int8: DQ -> AveragePool -> Relu -> Q; zero point 10 so the clamp matters
    inits = [numpy_helper.from_array(np.array(v, t), n) for v, t, n in
             ((0.05, np.float32, "sx"), (0, np.int8, "zx"), (0.03, np.float32, "sy"), (10, np.int8, "zy"))]
    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             helper.make_node("AveragePool", ["xf"], ["t"], **attrs), helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
    xq = int8_input(rng, shape)
    got = check_int8(model, xq, "AveragePool")
    assert got.min() == 10


def test_tensor_expression_and_macs():
    model = make_model("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 2]),
                       (1, 4, 9, 9))
    graph = compile_graph(model)
    node = graph.nodes[0]
    op = registry.get("MaxPool")
    e = op.expr(graph, node)
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [
        ("n", 1, "spatial"), ("c", 4, "spatial"), ("oh", 5, "spatial"), ("ow", 4, "spatial"),
        ("kh", 3, "reduction"), ("kw", 3, "reduction")]
    h, w = e.inputs[0][2], e.inputs[0][3]
    assert (h.kind, h.axis, h.kernel, h.stride, h.dilation, h.pad) == ("window", "oh", "kh", 2, 1, 1)
    assert (w.kind, w.axis, w.kernel, w.stride, w.dilation, w.pad) == ("window", "ow", "kw", 2, 2, 1)
    assert op.macs(graph, node) == 1 * 4 * 5 * 4 * 9
    graph = compile_graph(make_model("GlobalAveragePool", {}, (1, 4, 6, 5)))
    e = registry.get("GlobalAveragePool").expr(graph, graph.nodes[0])
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [
        ("n", 1, "spatial"), ("c", 4, "spatial"), ("rh", 6, "reduction"), ("rw", 5, "reduction")]
    assert [d.kind for d in e.outputs[0]] == ["identity", "identity", "broadcast", "broadcast"]


def test_unsupported():
    from mcudeploy.errors import UnsupportedError

    model = make_model("MaxPool", dict(kernel_shape=[2, 2]), (1, 2, 4, 4), outputs=2)
    model.graph.output.append(helper.make_tensor_value_info("extra1", TensorProto.INT64, None))
    with pytest.raises(UnsupportedError, match="Indices"):
        import_onnx(model)
    with pytest.raises(UnsupportedError, match="rank 5"):
        import_onnx(make_model("MaxPool", dict(kernel_shape=[2, 2, 2]), (1, 2, 4, 4, 4)))


# --------------------------------------------------------------------------- C kernels

C_CASES = [POOL_CASES[i] for i in (0, 2, 3, 6, 8, 11, 13, 14, 17, 20, 21, 23, 25, 26, 27, 28, 29)]


@pytest.mark.parametrize("op,shape,attrs", C_CASES)
def test_c_strided_views_match_reference(op, shape, attrs, tmp_path):
    rng = np.random.default_rng(5)
    check_strided_c(tmp_path, make_model(op, attrs, shape), rng.standard_normal(shape).astype(np.float32))
    sx, zx = qparams(rng)
    sy, zy = qparams(rng)
    check_strided_c(tmp_path, make_model(op, attrs, shape, qdq=(sx, zx, sy, zy)), int8_input(rng, shape))


@pytest.mark.parametrize("op,shape,attrs", C_CASES[::2])
def test_host_build_matches_reference(op, shape, attrs):
    rng = np.random.default_rng(6)
    model = make_model(op, attrs, shape)
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(host_run(model, x), ref_run(model, x), rtol=1e-5, atol=1e-5)
    sx, zx = qparams(rng)
    sy, zy = qparams(rng)
    model = make_model(op, attrs, shape, qdq=(sx, zx, sy, zy))
    x = int8_input(rng, shape)
    np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))


# TFLite's int8 average (mcud_avgpool_s8_tfl): windows summed as runs of consecutive codes where the rows are
# dense (the whole window as one run where it spans whole rows that follow one another), tap by tap elsewhere
TFL_AVG_CASES = [
    ((1, 3, 25, 5), dict(kernel_shape=[25, 5])),  # global: one run of 125 codes per channel
    ((1, 2, 9, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),  # runs of 2 and 3 per row
    ((2, 2, 8, 8), dict(kernel_shape=[2, 8], strides=[2, 1])),  # whole rows, two at a time
    ((1, 2, 10, 10), dict(kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 1])),  # dilated: tap by tap
    ((1, 4, 17), dict(kernel_shape=[5], strides=[2], pads=[2, 2])),
]


@pytest.mark.parametrize("shape,attrs", TFL_AVG_CASES)
@pytest.mark.parametrize("place", [Place(), Place(pad=1), Place(pad=1, step=2)], ids=["dense", "padded", "stepped"])
def test_tflite_int8_average_runs_match_reference(shape, attrs, place, tmp_path):
    rng = np.random.default_rng(11)
    s, z = qparams(rng)
    graph = dataclasses.replace(compile_graph(make_model("AveragePool", attrs, shape, qdq=(s, z, s, z))),
                                arithmetic="tflite")
    node = graph.nodes[0]
    call = registry.get(node.op).kernel(graph, node)
    assert call.fn == "mcud_avgpool_s8_tfl"
    x = rng.integers(-128, 128, shape).astype(np.int8)
    got = run_kernel(tmp_path, call, graph, {node.inputs[0]: x}, {node.inputs[0]: place, node.outputs[0]: place})[0]
    np.testing.assert_array_equal(got, run_reference(graph, [x])[0])
