"""Softmax: the numpy reference against onnxruntime (float for opset 13 and the coerced 2-D
semantics of earlier opsets; int8/uint8 QDQ models within two steps), the C kernels against the
reference (whole models on the host, bare kernels on strided and in-place views), the
integer arithmetic on a hand-checked case, and the declaration."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.ops.softmax import exp_table, inv_scale
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .kernel_harness import needs_gcc, run_unary_kernel
from .onnx_helpers import host_outputs, ort_outputs

IR_VERSION = 8


def _model(nodes, inputs, outputs, inits, opset) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "softmax_test", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def _attrs(axis):
    return {} if axis is None else {"axis": axis}


def float_model(shape, axis, opset) -> onnx.ModelProto:
    return _model([helper.make_node("Softmax", ["x"], ["y"], **_attrs(axis))],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [], opset)


# (id, shape, axis (None: the opset's default), opset)
FLOAT_CASES = [
    ("rank2_default", (3, 10), None, 13),
    ("last_axis", (2, 3, 7), -1, 13),
    ("middle_axis", (2, 5, 4, 3), 1, 13),
    ("first_axis", (4, 6), 0, 13),
    ("rank3_axis0", (3, 4, 5), 0, 13),
    ("rank3_axis1_negative", (3, 4, 5), -2, 13),
    ("rank4_axis2", (2, 3, 4, 5), 2, 13),
    ("rank4_axis0", (3, 2, 4, 2), -4, 13),
    ("legacy_default_coerced", (2, 3, 4, 5), None, 11),
    ("legacy_axis2_coerced", (2, 3, 4, 5), 2, 11),
    ("legacy_last", (2, 3, 6), -1, 11),
    ("legacy_axis0_all", (3, 4), 0, 11),
]
FLOAT_IDS = [c[0] for c in FLOAT_CASES]


def _float_input(seed: int, shape) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float32)


@pytest.mark.parametrize("case", FLOAT_CASES, ids=FLOAT_IDS)
def test_float_reference_matches_onnxruntime(case):
    _, shape, axis, opset = case
    model = float_model(shape, axis, opset)
    x = _float_input(1, shape)
    graph = lower(import_onnx(model), check=True)
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- int8 / uint8 QDQ models


def qdq_model(shape, axis, opset, dtype, s_x, z_x, s_y, z_y) -> onnx.ModelProto:
    elem = TensorProto.INT8 if dtype == "int8" else TensorProto.UINT8
    np_type = np.int8 if dtype == "int8" else np.uint8
    nodes = [helper.make_node("DequantizeLinear", ["x", "s_x", "z_x"], ["x_f"]),
             helper.make_node("Softmax", ["x_f"], ["y_f"], **_attrs(axis)),
             helper.make_node("QuantizeLinear", ["y_f", "s_y", "z_y"], ["y"])]
    inits = [numpy_helper.from_array(np.array(s_x, np.float32), "s_x"),
             numpy_helper.from_array(np.array(z_x, np_type), "z_x"),
             numpy_helper.from_array(np.array(s_y, np.float32), "s_y"),
             numpy_helper.from_array(np.array(z_y, np_type), "z_y")]
    return _model(nodes, [helper.make_tensor_value_info("x", elem, shape)],
                  [helper.make_tensor_value_info("y", elem, None)], inits, opset)


# (id, shape, axis, opset, dtype, s_x, z_x, s_y, z_y)
INT8_CASES = [
    ("classifier", (1, 10), -1, 13, "int8", 0.1, 5, 1 / 256, -128),
    ("classifier_u8", (1, 12), -1, 13, "uint8", 0.08, 128, 1 / 256, 0),
    ("wide_scale", (2, 16), -1, 13, "int8", 0.5, 0, 1 / 255, -128),
    ("tiny_scale", (2, 16), -1, 13, "int8", 0.005, -3, 1 / 256, -128),
    ("long_row", (1, 1000), -1, 13, "int8", 0.05, 0, 1 / 256, -128),
    ("long_row_fine_out", (1, 1000), -1, 13, "int8", 0.05, 0, 0.01 / 255, -128),
    ("odd_out_scale", (3, 7), 1, 13, "int8", 0.07, 10, 0.0041, -120),
    ("middle_axis", (2, 6, 3, 4), 1, 13, "int8", 0.06, 0, 1 / 256, -128),
    ("rank3_axis0", (5, 3, 4), 0, 13, "int8", 0.08, 3, 1 / 256, -128),
    ("rank4_axis2", (2, 3, 7, 4), -2, 13, "int8", 0.05, -4, 1 / 256, -128),
    ("legacy_coerced", (2, 3, 4, 5), 1, 11, "int8", 0.1, 2, 0.002, -128),
]
INT8_IDS = [c[0] for c in INT8_CASES]


def _int8_input(seed: int, shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("case", INT8_CASES, ids=INT8_IDS)
def test_int8_reference_matches_onnxruntime(case):
    _, shape, axis, opset, dtype, *q = case
    model = qdq_model(shape, axis, opset, dtype, *q)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["Softmax"] and graph[graph.nodes[0].inputs[0]].dtype == dtype
    for seed in range(3):
        x = _int8_input(seed, shape, dtype)
        if seed == 2:  # one dominant value per row: outputs near 0 and 1
            x = np.where(np.arange(x.size).reshape(shape) % 7 == 0, np.iinfo(dtype).max, x).astype(dtype)
        got, expected = run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0]
        diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
        assert diff.max() <= 2, f"off by {diff.max()} quantization steps"
        assert np.mean(diff > 1) <= 0.01


def test_int8_arithmetic_by_hand():
    """Golden: s_x = ln(2), so EXP[d] = 2^(24-d). Row [4, 3, 3, 2]: e = 2^24 * (1, 1/2, 1/2, 1/4),
    sum = 2^24 * 2.25. With s_y = 1/256 (M = 2^24) and z_y = -128:
    y = round(256 * (1/2.25, 0.5/2.25, 0.5/2.25, 0.25/2.25)) - 128
      = round(113.78, 56.89, 56.89, 28.44) - 128 = (-14, -71, -71, -100)."""
    s_x = float(np.log(2.0))
    table = exp_table(s_x)
    assert table[0] == 2 ** 24 and table[1] == 2 ** 23 and table[24] == 1 and table[26] == 0
    assert inv_scale(1 / 256) == 2 ** 24
    graph = Graph("g", {"x": Tensor("x", (1, 4), "int8", "input", Quant((s_x,), (0,))),
                        "y": Tensor("y", (1, 4), "int8", "output", Quant((1 / 256,), (-128,)))},
                  (Node("sm", "Softmax", ("x",), ("y",), {"axis": -1}),), ("x",), ("y",))
    got = run_reference(graph, [np.array([[4, 3, 3, 2]], np.int8)])[0]
    np.testing.assert_array_equal(got, [[-14, -71, -71, -100]])


def test_int8_rounds_ties_to_even_like_onnxruntime():
    """A uniform row of 512 at s_y = 1/256: every output is exactly 0.5 steps above z_y, which
    QuantizeLinear rounds to even (z_y) and the integer kernel must too; 256 values give 1 step."""
    for n, expected in ((512, -128), (256, -127), (1024, -128)):
        model = qdq_model((1, n), -1, 13, "int8", 0.1, 0, 1 / 256, -128)
        x = np.full((1, n), 17, np.int8)
        got = run_reference(lower(import_onnx(model)), [x])[0]
        np.testing.assert_array_equal(got, ort_outputs(model, {"x": x})[0])
        assert np.all(got == expected)


def test_int8_declines_unsupported_quantization():
    op = registry.get("Softmax")
    node = Node("sm", "Softmax", ("x",), ("y",), {"axis": -1})

    def graph(qx, qy, y_dtype="int8"):
        return Graph("g", {"x": Tensor("x", (1, 8), "int8", "input", qx),
                           "y": Tensor("y", (1, 8), y_dtype, "output", qy)}, (node,), ("x",), ("y",))

    good = Quant((0.1,), (0,)), Quant((1 / 256,), (-128,))
    assert op.accepts_int8(graph(*good), node)
    assert not op.accepts_int8(graph(good[0], Quant((1e-6,), (0,))), node)  # 2^16 / s_y overflows int32
    assert not op.accepts_int8(graph(good[0], good[1], "uint8"), node)
    assert not op.accepts_int8(graph(Quant((0.1, 0.2), (0, 0), 1), good[1]), node)


# --------------------------------------------------------------------------- C on the host, whole models


@pytest.mark.parametrize("case", FLOAT_CASES, ids=FLOAT_IDS)
def test_float_c_matches_reference(case):
    _, shape, axis, opset = case
    model = float_model(shape, axis, opset)
    x = _float_input(2, shape)
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_allclose(got, run_reference(lower(import_onnx(model)), [x])[0], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", INT8_CASES, ids=INT8_IDS)
def test_int8_c_matches_reference_bit_exact(case):
    _, shape, axis, opset, dtype, *q = case
    model = qdq_model(shape, axis, opset, dtype, *q)
    graph = lower(import_onnx(model))
    samples = [_int8_input(seed, shape, dtype) for seed in (5, 6)]
    samples.append(np.full(shape, np.iinfo(dtype).min, dtype))  # every row uniform
    got = host_outputs(model, [{"x": x} for x in samples])
    for x, out in zip(samples, got):
        np.testing.assert_array_equal(out[0], run_reference(graph, [x])[0])


def test_int8_c_rounds_ties_to_even():
    model = qdq_model((2, 512), -1, 13, "int8", 0.1, 0, 1 / 256, -128)
    x = np.full((2, 512), 17, np.int8)
    x[1, 256:] = -128  # second row: 256 values of e^0 and 256 of e^-14.5: not a tie
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_array_equal(got, run_reference(lower(import_onnx(model)), [x])[0])
    assert np.all(got[0] == -128)


# --------------------------------------------------------------------------- bare kernels on strided views


def _graph(shape, attrs, dtype, quant=(None, None)) -> tuple[Graph, Node]:
    node = Node("sm", "Softmax", ("x",), ("y",), attrs)
    return Graph("g", {"x": Tensor("x", shape, dtype, "input", quant[0]),
                       "y": Tensor("y", shape, dtype, "output", quant[1])}, (node,), ("x",), ("y",)), node


STRIDED = [("axis1", {"axis": 1}), ("last", {"axis": -1}), ("coerced", {"axis": 1, "coerce_2d": True})]


@needs_gcc
@pytest.mark.parametrize("name,attrs", STRIDED, ids=[s[0] for s in STRIDED])
@pytest.mark.parametrize("inplace", [False, True], ids=["strided", "inplace"])
def test_float_kernel_on_strided_views(tmp_path, name, attrs, inplace):
    graph, node = _graph((2, 3, 4), attrs, "float32")
    x = _float_input(3, (2, 3, 4))
    call = registry.get("Softmax").kernel(graph, node)
    got = run_unary_kernel(tmp_path, call, graph, x, pad=0 if inplace else 2, inplace=inplace)
    np.testing.assert_allclose(got, run_reference(graph, [x])[0], rtol=1e-6, atol=1e-7)


@needs_gcc
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("name,attrs", STRIDED, ids=[s[0] for s in STRIDED])
@pytest.mark.parametrize("inplace", [False, True], ids=["strided", "inplace"])
def test_int8_kernel_on_strided_views_is_bit_exact(tmp_path, name, attrs, dtype, inplace):
    zy = -128 if dtype == "int8" else 0
    graph, node = _graph((3, 5, 4), attrs, dtype, (Quant((0.09,), (1,)), Quant((1 / 256,), (zy,))))
    x = _int8_input(4, (3, 5, 4), dtype)
    call = registry.get("Softmax").kernel(graph, node)
    got = run_unary_kernel(tmp_path, call, graph, x, pad=0 if inplace else 1, inplace=inplace)
    np.testing.assert_array_equal(got, run_reference(graph, [x])[0])


# --------------------------------------------------------------------------- the declaration


def test_expr_marks_the_reduced_dims_full():
    op = registry.get("Softmax")
    graph, node = _graph((2, 5, 4), {"axis": 1}, "float32")
    e = op.expr(graph, node)
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [("d0", 2, "spatial"), ("r1", 5, "reduction"),
                                                             ("d2", 4, "spatial")]
    assert e.inputs == ((Dim.identity("d0"), Dim.full(), Dim.identity("d2")),)
    assert e.outputs == e.inputs
    graph, node = _graph((2, 5, 4), {"axis": 1, "coerce_2d": True}, "float32")
    assert op.expr(graph, node).inputs == ((Dim.identity("d0"), Dim.full(), Dim.full()),)
    assert op.inplace(graph, node) == 0


def test_opset_decides_the_semantics():
    for opset, expect in ((11, {"axis": 1, "coerce_2d": True}), (13, {"axis": -1})):
        graph = import_onnx(float_model((2, 3, 4), None, opset))
        assert dict(graph.nodes[0].attrs) == expect
