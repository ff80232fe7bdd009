"""Gemm and MatMul: numpy reference against onnxruntime (float attribute combinations and
broadcast batches, hand-built and quantize_static QDQ int8 models), the C kernels against the
reference (whole models on the host, and the bare kernels on strided views), and the
declarations themselves (tensor expression, MACs, what int8 declines)."""
from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .gemm_graphs import int8_product
from .kernel_harness import needs_gcc, run_kernel
from .onnx_helpers import host_outputs, ort_outputs, run_model_on_host

OPSET, IR_VERSION = 13, 8

# --------------------------------------------------------------------------- model builders


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "gemm_test", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _randn(rng, shape, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale, np.float32)


def gemm_model(rng, m, k, n, attrs, c_shape, c_input=False, act=None):
    """Gemm with constant B and C (or C as a second graph input)."""
    a_shape = (k, m) if attrs.get("transA") else (m, k)
    b = _randn(rng, (n, k) if attrs.get("transB") else (k, n), 0.5)
    inits = [numpy_helper.from_array(b, "b")]
    inputs = [_vi("a", TensorProto.FLOAT, a_shape)]
    names = ["a", "b"]
    if c_shape is not None:
        names.append("c")
        if c_input:
            inputs.append(_vi("c", TensorProto.FLOAT, c_shape))
        else:
            inits.append(numpy_helper.from_array(_randn(rng, c_shape), "c"))
    out = "y" if act is None else "t"
    nodes = [helper.make_node("Gemm", names, [out], **attrs)]
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["t"], ["y"]))
    return _model(nodes, inputs, [_vi("y", TensorProto.FLOAT, None)], inits), a_shape


def matmul_model(a_shape, b_shape, b_value=None):
    """MatMul of two graph inputs, or of an input and a constant B."""
    inputs = [_vi("a", TensorProto.FLOAT, a_shape)]
    inits = []
    if b_value is None:
        inputs.append(_vi("b", TensorProto.FLOAT, b_shape))
    else:
        inits.append(numpy_helper.from_array(b_value, "b"))
    return _model([helper.make_node("MatMul", ["a", "b"], ["y"])], inputs, [_vi("y", TensorProto.FLOAT, None)], inits)


def _q8(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def _out_quant(real: np.ndarray, relu: bool) -> tuple[float, int]:
    lo, hi = min(float(real.min()), 0.0), max(float(real.max()), 0.0)
    if relu:
        lo = 0.0
    scale = (hi - lo) / 255.0
    return scale, int(np.clip(np.rint(-128 - lo / scale), -128, 127))


def qdq_product_model(rng, a_shape, k, n, per_channel=True, bias=True, act=None, op="MatMul", gemm_attrs=None,
                      a_q=(0.04, 5)):
    """int8 a -> DQ; int8 weights -> DQ (per column or per tensor); MatMul [-> Add(DQ int32 bias)]
    (or Gemm with the DQ'd bias as C) [-> Relu] -> QuantizeLinear -> int8 y. Returns (model, a)."""
    gemm_attrs = dict(gemm_attrs or {})
    trans_b = bool(gemm_attrs.get("transB", 0))
    trans_a = bool(gemm_attrs.get("transA", 0))
    s_a, z_a = a_q
    s_w = rng.uniform(0.002, 0.01, n) if per_channel else np.array(0.006)
    w = rng.integers(-127, 128, (n, k) if trans_b else (k, n)).astype(np.int8)
    b = rng.integers(-3000, 3000, n).astype(np.int32)
    a = rng.integers(-128, 128, a_shape).astype(np.int8)
    w_axis = 0 if trans_b else 1
    nodes = [helper.make_node("DequantizeLinear", ["a", "a_s", "a_z"], ["a_f"]),
             helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["w_f"],
                              **({"axis": w_axis} if per_channel else {}))]
    inits = [_q8("a_s", np.float32(s_a)), _q8("a_z", np.int8(z_a)), _q8("w", w),
             _q8("w_s", s_w.astype(np.float32)), _q8("w_z", np.zeros(s_w.shape, np.int8))]
    b_scale = (s_a * s_w).astype(np.float32)
    if bias:
        inits += [_q8("b", b), _q8("b_s", b_scale), _q8("b_z", np.zeros(b_scale.shape, np.int32))]
        nodes.append(helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["b_f"],
                                      **({"axis": 0} if per_channel else {})))
    cur = "mm"
    if op == "MatMul":
        nodes.append(helper.make_node("MatMul", ["a_f", "w_f"], ["mm"]))
        if bias:
            nodes.append(helper.make_node("Add", ["mm", "b_f"], ["biased"]))
            cur = "biased"
    else:
        nodes.append(helper.make_node("Gemm", ["a_f", "w_f"] + (["b_f"] if bias else []), ["mm"], **gemm_attrs))
    if act == "Relu":
        nodes.append(helper.make_node("Relu", [cur], ["act"]))
        cur = "act"
    # the real result, to pick an output scale that the values fill
    af = (a.astype(np.float64) - z_a) * s_a
    wf = w.astype(np.float64) * (s_w.reshape(1, -1) if (per_channel and not trans_b) else
                                 s_w.reshape(-1, 1) if per_channel else s_w)
    af = np.swapaxes(af, -1, -2) if trans_a else af
    real = float(gemm_attrs.get("alpha", 1.0)) * (af @ (wf.T if trans_b else wf))
    if bias:
        real = real + float(gemm_attrs.get("beta", 1.0)) * b * (s_a * s_w)
    s_y, z_y = _out_quant(real, act == "Relu")
    inits += [_q8("y_s", np.float32(s_y)), _q8("y_z", np.int8(z_y))]
    nodes.append(helper.make_node("QuantizeLinear", [cur, "y_s", "y_z"], ["y"]))
    model = _model(nodes, [_vi("a", TensorProto.INT8, a_shape)], [_vi("y", TensorProto.INT8, None)], inits)
    return model, a


# --------------------------------------------------------------------------- float against onnxruntime

# (id, M, K, N, attributes, C shape)
GEMM_CASES = [
    ("plain", 3, 4, 5, {}, None),
    ("bias_n", 3, 4, 5, {}, (5,)),
    ("transA", 4, 6, 3, {"transA": 1}, (1, 3)),
    ("transB", 2, 8, 7, {"transB": 1}, (2, 7)),
    ("transAB_alpha_beta", 5, 3, 4, {"transA": 1, "transB": 1, "alpha": 0.5, "beta": -2.0}, (5, 1)),
    ("scalar_c", 3, 5, 2, {"alpha": 2.0, "beta": 0.25}, ()),
    ("one_c", 1, 9, 6, {"transB": 1}, (1,)),
    ("beta0", 3, 4, 5, {"beta": 0.0}, (3, 5)),
]


def _gemm_case(case, seed):
    """A GEMM_CASES model, a random input A and the numpy reference's output on it."""
    _, m, k, n, attrs, c_shape = case
    rng = np.random.default_rng(seed)
    model, a_shape = gemm_model(rng, m, k, n, attrs, c_shape)
    a = _randn(rng, a_shape)
    return model, a, run_reference(lower(import_onnx(model)), [a])[0]


@pytest.mark.parametrize("case", GEMM_CASES, ids=[c[0] for c in GEMM_CASES])
def test_gemm_float_reference_matches_onnxruntime(case):
    model, a, got = _gemm_case(case, seed=1)
    np.testing.assert_allclose(got, ort_outputs(model, {"a": a})[0], rtol=1e-5, atol=1e-5)


def test_gemm_float_c_as_input_and_relu():
    rng = np.random.default_rng(2)
    model, a_shape = gemm_model(rng, 4, 6, 3, {"transB": 1, "beta": 0.5}, (4, 3), c_input=True, act="Relu")
    graph = lower(import_onnx(model))
    assert [n.op for n in graph.nodes] == ["Gemm"] and graph.nodes[0].attr("clip_min") == 0.0
    a, c = _randn(rng, a_shape), _randn(rng, (4, 3))
    got = run_reference(graph, [a, c])[0]
    np.testing.assert_allclose(got, ort_outputs(model, {"a": a, "c": c})[0], rtol=1e-5, atol=1e-5)
    assert got.min() == 0.0


# (id, A shape, B shape)
MATMUL_CASES = [
    ("2d", (3, 4), (4, 5)),
    ("vec_mat", (4,), (4, 5)),
    ("mat_vec", (3, 4), (4,)),
    ("vec_vec", (6,), (6,)),
    ("batch_a", (2, 3, 4), (4, 5)),
    ("batch_b", (3, 4), (2, 4, 5)),
    ("batch_bcast", (2, 1, 3, 4), (5, 4, 6)),
    ("batch_vec", (2, 3, 4), (4,)),
    ("vec_batch", (4,), (3, 4, 2)),
]


@pytest.mark.parametrize("const_b", [False, True], ids=["input_b", "const_b"])
@pytest.mark.parametrize("case", MATMUL_CASES, ids=[c[0] for c in MATMUL_CASES])
def test_matmul_float_reference_matches_onnxruntime(case, const_b):
    _, a_shape, b_shape = case
    rng = np.random.default_rng(3)
    a, b = _randn(rng, a_shape), _randn(rng, b_shape)
    model = matmul_model(a_shape, b_shape, b if const_b else None)
    feeds = {"a": a} if const_b else {"a": a, "b": b}
    got = run_reference(lower(import_onnx(model)), list(feeds.values()))[0]
    expected = ort_outputs(model, feeds)[0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- int8 against onnxruntime

# (id, op, A shape, K, N, per channel, bias, activation, Gemm attributes, IR op after lowering)
INT8_CASES = [
    ("matmul_bias", "MatMul", (1, 64), 64, 16, False, True, None, None, "Gemm"),
    ("matmul_bias_pc_relu", "MatMul", (3, 40), 40, 12, True, True, "Relu", None, "Gemm"),
    ("matmul_nobias", "MatMul", (2, 24), 24, 10, True, False, None, None, "MatMul"),
    ("matmul_batch_nobias", "MatMul", (2, 3, 16), 16, 8, True, False, None, None, "MatMul"),
    ("matmul_vec_nobias", "MatMul", (16,), 16, 8, False, False, "Relu", None, "MatMul"),
    ("gemm_transB", "Gemm", (2, 32), 32, 10, True, True, None, {"transB": 1}, "Gemm"),
    ("gemm_transA", "Gemm", (20, 3), 20, 6, False, True, None, {"transA": 1}, "Gemm"),
    ("gemm_alpha_beta", "Gemm", (4, 16), 16, 5, True, True, None, {"alpha": 0.5, "beta": 2.0}, "Gemm"),
    ("gemm_nobias_relu", "Gemm", (1, 48), 48, 7, True, False, "Relu", {"transB": 1}, "Gemm"),
]


def _int8_case(case, seed):
    _, op, a_shape, k, n, per_channel, bias, act, attrs, _ = case
    return qdq_product_model(np.random.default_rng(seed), a_shape, k, n, per_channel, bias, act, op, attrs)


@pytest.mark.parametrize("case", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_reference_matches_onnxruntime(case):
    model, a = _int8_case(case, seed=4)
    graph = lower(import_onnx(model))
    assert [n.op for n in graph.nodes] == [case[-1]], "the QDQ pattern must lower to one int8 node"
    assert graph[graph.nodes[0].outputs[0]].dtype == "int8"
    got = run_reference(graph, [a])[0]
    expected = ort_outputs(model, {"a": a})[0]
    assert got.shape == expected.shape and got.dtype == np.int8
    diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
    assert diff.max() <= 2
    assert np.mean(diff == 0) >= 0.9, f"only {np.mean(diff == 0):.1%} of the outputs agree exactly"


def test_int8_quantize_static_mlp_matches_onnxruntime(tmp_path):
    """A float MLP (MatMul + Add + Relu, then MatMul + Add) quantized by onnxruntime itself."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(5)
    w1, b1 = _randn(rng, (20, 16), 0.3), _randn(rng, (16,), 0.1)
    w2, b2 = _randn(rng, (16, 6), 0.3), _randn(rng, (6,), 0.1)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h1"]), helper.make_node("Add", ["h1", "b1"], ["h2"]),
             helper.make_node("Relu", ["h2"], ["h3"]), helper.make_node("MatMul", ["h3", "w2"], ["h4"]),
             helper.make_node("Add", ["h4", "b2"], ["y"])]
    inits = [numpy_helper.from_array(v, n) for n, v in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))]
    float_model = _model(nodes, [_vi("x", TensorProto.FLOAT, (1, 20))], [_vi("y", TensorProto.FLOAT, (1, 6))], inits)
    samples = [_randn(rng, (1, 20)) for _ in range(16)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"x": s} for s in samples)

        def get_next(self):
            return next(self.it, None)

    onnx.save(float_model, tmp_path / "f.onnx")
    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    model = onnx.load(tmp_path / "q.onnx")
    graph = lower(import_onnx(model))
    # onnxruntime quantizes MatMul and the bias Add separately: int8 MatMul, int8 Add of a constant
    assert [n.op for n in graph.nodes] == ["QuantizeLinear", "MatMul", "Add", "MatMul", "Add", "DequantizeLinear"]
    assert all(graph[n.outputs[0]].dtype == "int8" for n in graph.nodes[1:5])
    y_scale = graph[graph.nodes[4].outputs[0]].quant.scale[0]
    for x in samples[:4]:
        got = run_reference(graph, [x])[0]
        expected = ort_outputs(model, {"x": x})[0]
        assert np.abs(got - expected).max() <= 2 * y_scale + 1e-6
    if shutil.which("gcc") is not None:
        outs = run_model_on_host(model, [{"x": x} for x in samples[:4]])
        for x, out in zip(samples[:4], outs):
            np.testing.assert_array_equal(out[0], run_reference(graph, [x])[0])


def test_int8_matmul_of_two_activations_is_int8():
    """(The batched forms and their kernel: test_matmul_int8.py.)"""
    rng = np.random.default_rng(6)
    nodes = [helper.make_node("DequantizeLinear", [n, "s", "z"], [n + "_f"]) for n in ("a", "b")]
    nodes += [helper.make_node("MatMul", ["a_f", "b_f"], ["mm"]),
              helper.make_node("QuantizeLinear", ["mm", "ys", "z"], ["y"])]
    inits = [_q8("s", np.float32(0.05)), _q8("z", np.int8(0)), _q8("ys", np.float32(0.5))]
    model = _model(nodes, [_vi("a", TensorProto.INT8, (3, 4)), _vi("b", TensorProto.INT8, (4, 2))],
                   [_vi("y", TensorProto.INT8, None)], inits)
    graph = lower(import_onnx(model))
    assert [(n.op, graph[n.outputs[0]].dtype) for n in graph.nodes] == [("MatMul", "int8")]
    a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in ((3, 4), (4, 2)))
    got = run_reference(graph, [a, b])[0]
    assert np.abs(got.astype(int) - ort_outputs(model, {"a": a, "b": b})[0].astype(int)).max() <= 1


# --------------------------------------------------------------------------- C on the host, whole models


@pytest.mark.parametrize("case", GEMM_CASES, ids=[c[0] for c in GEMM_CASES])
def test_gemm_float_c_matches_reference(case):
    model, a, expected = _gemm_case(case, seed=7)
    np.testing.assert_allclose(host_outputs(model, [{"a": a}])[0][0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", MATMUL_CASES, ids=[c[0] for c in MATMUL_CASES])
def test_matmul_float_c_matches_reference(case):
    _, a_shape, b_shape = case
    rng = np.random.default_rng(8)
    a, b = _randn(rng, a_shape), _randn(rng, b_shape)
    model = matmul_model(a_shape, b_shape)
    expected = run_reference(lower(import_onnx(model)), [a, b])[0]
    got = host_outputs(model, [{"a": a, "b": b}])[0][0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_c_matches_reference_bit_exact(case):
    model, a = _int8_case(case, seed=9)
    graph = lower(import_onnx(model))
    a2 = np.random.default_rng(10).integers(-128, 128, a.shape).astype(np.int8)
    got = host_outputs(model, [{"a": a}, {"a": a2}])
    for sample, out in zip((a, a2), got):
        np.testing.assert_array_equal(out[0], run_reference(graph, [sample])[0])


# --------------------------------------------------------------------------- bare kernels on strided views


def _float_graph(op, a_shape, b_shape, attrs=None, c_shape=None, clip=None, seed=0):
    """A float Gemm/MatMul with every operand a graph input (so each gets a strided view)."""
    rng = np.random.default_rng(seed)
    names = ["a", "b"] + (["c"] if c_shape is not None else [])
    shapes = [a_shape, b_shape] + ([c_shape] if c_shape is not None else [])
    tensors = {n: Tensor(n, tuple(s), "float32", "input") for n, s in zip(names, shapes)}
    node_attrs = dict(attrs or {})
    if clip is not None:
        node_attrs.update(clip_min=clip[0], clip_max=clip[1])
    node = Node("n", op, tuple(names), ("y",), node_attrs)
    shape, dtype = registry.get(op).infer(Graph("g", tensors, (), tuple(names), ()), node)[0]
    tensors["y"] = Tensor("y", shape, dtype, "output")
    graph = Graph("g", tensors, (node,), tuple(names), ("y",))
    return graph, node, {n: _randn(rng, s) for n, s in zip(names, shapes)}


STRIDED_FLOAT = [
    ("gemm", "Gemm", (3, 5), (5, 4), {}, (4,)),
    ("gemm_tt", "Gemm", (5, 3), (4, 5), {"transA": 1, "transB": 1, "alpha": 0.7, "beta": 1.5}, (3, 4)),
    ("gemm_col_c", "Gemm", (2, 6), (3, 6), {"transB": 1}, (2, 1)),
    ("matmul_batch", "MatMul", (2, 1, 3, 4), (3, 4, 2), {}, None),
    ("matmul_vec", "MatMul", (4,), (2, 4, 3), {}, None),
    ("matmul_bias", "MatMul", (2, 3, 4), (4, 5), {}, (5,)),
]


@needs_gcc
@pytest.mark.parametrize("case", STRIDED_FLOAT, ids=[c[0] for c in STRIDED_FLOAT])
def test_float_kernel_on_strided_views(tmp_path, case):
    _, op, a_shape, b_shape, attrs, c_shape = case
    graph, node, values = _float_graph(op, a_shape, b_shape, attrs, c_shape, clip=(-1.5, 2.0), seed=11)
    expected = run_reference(graph, [values[n] for n in graph.inputs])[0]
    got = run_kernel(tmp_path, registry.get(op).kernel(graph, node), graph, values,
                     {"a": 1, "b": 2, "c": 1, "y": 1})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


STRIDED_INT8 = [
    ("gemm_pc", "Gemm", (3, 20), 20, 6, {}, True, True),
    ("gemm_transB_pt", "Gemm", (2, 17), 17, 5, {"transB": 1}, False, True),
    ("gemm_transA_nobias", "Gemm", (9, 4), 9, 3, {"transA": 1}, True, False),
    ("matmul_batch", "MatMul", (2, 3, 8), 8, 4, {}, True, False),
    ("matmul_vec", "MatMul", (12,), 12, 5, {}, False, False),
]


@needs_gcc
@pytest.mark.parametrize("case", STRIDED_INT8, ids=[c[0] for c in STRIDED_INT8])
@pytest.mark.parametrize("clip", [None, (0.0, 6.0)], ids=["noclip", "clip"])
def test_int8_kernel_on_strided_views_is_bit_exact(tmp_path, case, clip):
    _, op, a_shape, k, n, attrs, per_channel, bias = case
    graph, node, a = int8_product(op, a_shape, k, n, attrs, per_channel, bias, clip, seed=12)
    assert registry.get(op).accepts_int8(graph, node)
    expected = run_reference(graph, [a])[0]
    got = run_kernel(tmp_path, registry.get(op).kernel(graph, node), graph, {"a": a}, {"a": 1, "y": 2})[0]
    np.testing.assert_array_equal(got, expected)


@needs_gcc
def test_int8_kernel_contiguous_fast_path_is_bit_exact(tmp_path):
    """transB with dense views: the k loop reads both operands with stride 1."""
    graph, node, a = int8_product("Gemm", (4, 33), 33, 7, {"transB": 1}, True, True, seed=13, z_a=-128)
    expected = run_reference(graph, [a])[0]
    got = run_kernel(tmp_path, registry.get("Gemm").kernel(graph, node), graph, {"a": a})[0]
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------- declarations


def test_gemm_expr_follows_the_transposes():
    graph, node, _ = _float_graph("Gemm", (5, 3), (4, 5), {"transA": 1, "transB": 1}, (3, 1))
    e = registry.get("Gemm").expr(graph, node)
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [("d0", 3, "spatial"), ("d1", 4, "spatial"),
                                                            ("k", 5, "reduction")]
    assert e.inputs[0] == (Dim.identity("k"), Dim.identity("d0"))
    assert e.inputs[1] == (Dim.identity("d1"), Dim.identity("k"))
    assert e.inputs[2] == (Dim.identity("d0"), Dim.broadcast())
    assert e.outputs[0] == (Dim.identity("d0"), Dim.identity("d1"))
    assert registry.get("Gemm").macs(graph, node) == 3 * 4 * 5


def test_matmul_expr_broadcasts_batches():
    graph, node, _ = _float_graph("MatMul", (2, 1, 3, 4), (5, 4, 6))
    e = registry.get("MatMul").expr(graph, node)
    assert [(a.name, a.extent) for a in e.axes] == [("d0", 2), ("d1", 5), ("d2", 3), ("d3", 6), ("k", 4)]
    assert e.inputs[0] == (Dim.identity("d0"), Dim.broadcast(), Dim.identity("d2"), Dim.identity("k"))
    assert e.inputs[1] == (Dim.identity("d1"), Dim.identity("k"), Dim.identity("d3"))
    assert registry.get("MatMul").macs(graph, node) == 2 * 5 * 3 * 6 * 4
    graph, node, _ = _float_graph("MatMul", (4,), (3, 4, 2))
    e = registry.get("MatMul").expr(graph, node)
    assert [(a.name, a.extent) for a in e.axes] == [("d0", 3), ("d1", 2), ("k", 4)]
    assert e.inputs == ((Dim.identity("k"),), (Dim.identity("d0"), Dim.identity("k"), Dim.identity("d1")))


def test_int8_declines_what_it_cannot_do():
    op = registry.get("Gemm")
    graph, node, _ = int8_product("Gemm", (2, 8), 8, 4)
    assert op.accepts_int8(graph, node)
    t = dict(graph.tensors)
    w = t["w"]
    asym = graph.replace(tensors={**t, "w": w.with_(quant=Quant(w.quant.scale, (1,) * 4, 1))})
    assert not op.accepts_int8(asym, node)  # asymmetric weights
    along_k = graph.replace(tensors={**t, "w": w.with_(quant=Quant(tuple(np.full(8, 0.01)), (0,) * 8, 0))})
    assert not op.accepts_int8(along_k, node)  # per-channel along K, not along the output columns
    moving = graph.replace(tensors={**t, "w": Tensor("w", w.shape, "int8", "input", w.quant)})
    assert not op.accepts_int8(moving, node)  # B computed at run time
    negative = node.with_(attrs={"alpha": -1.0})
    assert not op.accepts_int8(graph, negative)


def test_unsupported_cases_are_explained():
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                   [_vi("a", TensorProto.FLOAT, (3, 4)), _vi("b", TensorProto.FLOAT, (5, 6))],
                   [_vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(UnsupportedError, match="inner dimensions"):
        import_onnx(model)
    model = _model([helper.make_node("Gemm", ["a", "b", "c"], ["y"])],
                   [_vi("a", TensorProto.FLOAT, (3, 4)), _vi("b", TensorProto.FLOAT, (4, 5)),
                    _vi("c", TensorProto.FLOAT, (2, 5))], [_vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(UnsupportedError, match="broadcast"):
        import_onnx(model)
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                   [_vi("a", TensorProto.FLOAT, (1, 1, 1, 1, 1, 2, 3)), _vi("b", TensorProto.FLOAT, (3, 2))],
                   [_vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(UnsupportedError, match="rank 7"):
        import_onnx(model)
