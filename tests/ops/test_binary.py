"""Add, Sub, Mul, Div, Sum (its other arities: test_variadic.py): numpy reference against onnxruntime (float, and hand-built QDQ int8
models), the C kernels against the reference (whole models on the host, and the bare kernels
on strided views inside bigger buffers), and the declarations themselves."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .kernel_harness import needs_gcc, run_kernel
from .onnx_helpers import host_outputs, ort_outputs

OPSET, IR_VERSION = 13, 8

# --------------------------------------------------------------------------- model builders


def _model(nodes, inputs, outputs, inits=(), opset=OPSET) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "binary_test", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def _names(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


def float_model(op: str, shapes, act=None) -> onnx.ModelProto:
    names = _names(len(shapes))
    out = "y" if act is None else "t"
    nodes = [helper.make_node(op, names, [out])]
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["t"], ["y"]))
    return _model(nodes, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


def qdq_model(op: str, shapes, in_q, out_q, act=None) -> onnx.ModelProto:
    """int8 inputs -> DequantizeLinear -> op [-> Relu] -> QuantizeLinear -> int8 output."""
    names = _names(len(shapes))
    nodes, inits = [], []
    for name, (s, z) in zip(names, in_q):
        inits += [numpy_helper.from_array(np.array(s, np.float32), f"{name}_s"),
                  numpy_helper.from_array(np.array(z, np.int8), f"{name}_z")]
        nodes.append(helper.make_node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_f"]))
    out = "f" if act is None else "t"
    nodes.append(helper.make_node(op, [f"{n}_f" for n in names], [out]))
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["t"], ["f"]))
    inits += [numpy_helper.from_array(np.array(out_q[0], np.float32), "y_s"),
              numpy_helper.from_array(np.array(out_q[1], np.int8), "y_z")]
    nodes.append(helper.make_node("QuantizeLinear", ["f", "y_s", "y_z"], ["y"]))
    return _model(nodes, [helper.make_tensor_value_info(n, TensorProto.INT8, s) for n, s in zip(names, shapes)],
                  [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)


def _floats(rng, shapes, op):
    xs = [np.asarray(rng.standard_normal(s), np.float32) for s in shapes]
    if op == "Div":  # keep divisors away from 0
        xs[1] = np.asarray(np.sign(xs[1]) * (np.abs(xs[1]) + 0.5), np.float32)
    return xs


def _int8s(rng, shapes):
    return [np.asarray(rng.integers(-128, 128, s), np.int8) for s in shapes]


# (id, shapes): numpy broadcasting of rank 1 to 4
SHAPES = [
    ("same4d", [(2, 3, 4, 5), (2, 3, 4, 5)]),
    ("scalar", [(2, 3, 4), ()]),
    ("rank1", [(7,), (1,)]),
    ("row", [(3, 5), (5,)]),
    ("col", [(4, 1), (1, 6)]),
    ("channel", [(1, 8, 4, 4), (8, 1, 1)]),
    ("both", [(2, 1, 4, 1), (3, 1, 5)]),
    ("lowrank_first", [(5,), (2, 3, 5)]),
]
FLOAT_OPS = ["Add", "Sub", "Mul", "Div"]


# --------------------------------------------------------------------------- float against onnxruntime


@pytest.mark.parametrize("op", FLOAT_OPS)
@pytest.mark.parametrize("case", SHAPES, ids=[c[0] for c in SHAPES])
def test_float_reference_matches_onnxruntime(op, case):
    shapes = case[1]
    xs = _floats(np.random.default_rng(1), shapes, op)
    model = float_model(op, shapes)
    feeds = dict(zip(_names(len(xs)), xs))
    expected = ort_outputs(model, feeds)[0]
    got = run_reference(lower(import_onnx(model)), xs)[0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shapes", [[(3, 4)], [(3, 4), (4,)], [(2, 1, 4), (3, 1), (1,), (2, 3, 4)],
                                    [(2, 5)] * 8])
def test_float_sum_matches_onnxruntime(shapes):
    xs = _floats(np.random.default_rng(len(shapes)), shapes, "Sum")
    model = float_model("Sum", shapes)
    expected = ort_outputs(model, dict(zip(_names(len(xs)), xs)))[0]
    got = run_reference(lower(import_onnx(model)), xs)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_float_add_relu_is_fused_and_matches_onnxruntime():
    shapes = [(1, 4, 3, 3), (1, 4, 3, 3)]
    xs = _floats(np.random.default_rng(3), shapes, "Add")
    model = float_model("Add", shapes, act="Relu")
    graph = lower(import_onnx(model))
    assert [n.op for n in graph.nodes] == ["Add"]
    assert graph.nodes[0].attr("clip_min") == 0.0
    got = run_reference(graph, xs)[0]
    np.testing.assert_allclose(got, ort_outputs(model, dict(zip(_names(2), xs)))[0], rtol=1e-6, atol=1e-6)
    assert got.min() == 0.0


# --------------------------------------------------------------------------- int8 against onnxruntime

# (id, op, shapes, input (scale, zero point) per input, output (scale, zero point), activation)
INT8_CASES = [
    ("add_same", "Add", [(1, 8, 4, 4), (1, 8, 4, 4)], [(0.05, 3), (0.031, -10)], (0.07, -5), None),
    ("add_bcast", "Add", [(2, 3, 5), (3, 1)], [(0.02, 0), (0.11, 7)], (0.09, 1), None),
    ("add_relu", "Add", [(1, 6, 3, 3), (1, 6, 3, 3)], [(0.04, -128), (0.05, 4)], (0.06, -128), "Relu"),
    ("add_small_out", "Add", [(64,), (64,)], [(0.1, 0), (0.1, 0)], (0.01, 0), None),
    ("sub", "Sub", [(4, 6), (6,)], [(0.03, 5), (0.02, -3)], (0.04, 2), None),
    ("sub_scalar", "Sub", [(2, 3, 4), ()], [(0.03, 5), (0.5, 0)], (0.05, 0), None),
    ("mul", "Mul", [(3, 7), (3, 7)], [(0.05, 2), (0.04, -6)], (0.1, 3), None),
    ("mul_bcast", "Mul", [(2, 4, 3), (4, 1)], [(0.02, -20), (0.015, 9)], (0.002, -4), None),
    # squeeze-excite: a per-channel scale broadcast over H x W, either operand first (one value per row)
    ("mul_se", "Mul", [(1, 8, 5, 6), (1, 8, 1, 1)], [(0.04, -7), (1 / 255, -128)], (0.03, 5), None),
    ("mul_se_first", "Mul", [(1, 8, 1, 1), (1, 8, 5, 6)], [(1 / 255, -128), (0.04, -7)], (0.03, 5), "Relu"),
    ("mul_shift_below_33", "Mul", [(3, 7), (1,)], [(0.5, 1), (0.6, -2)], (0.1, 0), None),  # 3.0: shift 29
    ("sum3", "Sum", [(2, 5), (5,), (2, 1)], [(0.03, 1), (0.02, -4), (0.05, 0)], (0.08, -2), None),
    ("sum1", "Sum", [(9,)], [(0.03, 11)], (0.02, -1), None),
]


def _int8_case(case, seed):
    _, op, shapes, in_q, out_q, act = case
    model = qdq_model(op, shapes, in_q, out_q, act)
    xs = _int8s(np.random.default_rng(seed), shapes)
    return model, xs


@pytest.mark.parametrize("case", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_reference_matches_onnxruntime(case):
    model, xs = _int8_case(case, seed=4)
    graph = lower(import_onnx(model))
    assert [n.op for n in graph.nodes] == [case[1]], "the QDQ pattern must lower to one int8 node"
    assert graph[graph.nodes[0].outputs[0]].dtype == "int8"
    got = run_reference(graph, xs)[0]
    expected = ort_outputs(model, dict(zip(_names(len(xs)), xs)))[0]
    assert got.shape == expected.shape and got.dtype == np.int8
    diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
    assert diff.max() <= 2
    # off by one only where onnxruntime's float result sits next to a rounding tie
    assert np.mean(diff == 0) >= 0.85, f"only {np.mean(diff == 0):.1%} of the outputs agree exactly"


def test_int8_div_stays_float():
    model = qdq_model("Div", [(4,), (4,)], [(0.05, 0), (0.05, 0)], (0.1, 0))
    graph = lower(import_onnx(model))
    div = [n for n in graph.nodes if n.op == "Div"]
    assert len(div) == 1 and graph[div[0].outputs[0]].dtype == "float32"
    xs = [np.array([10, -20, 30, 40], np.int8), np.array([5, 7, -9, 100], np.int8)]
    got = run_reference(graph, xs)[0]
    expected = ort_outputs(model, dict(zip(_names(2), xs)))[0]
    assert np.abs(got.astype(int) - expected.astype(int)).max() <= 1


@settings(max_examples=60, deadline=None)
@given(st.floats(0.001, 1.0), st.floats(0.001, 1.0), st.floats(0.001, 1.0),
       st.integers(-128, 127), st.integers(-128, 127), st.integers(-128, 127), st.sampled_from(["Add", "Sub"]))
def test_int8_add_is_the_real_result_rounded(s_a, s_b, s_y, z_a, z_b, z_y, op):
    """The weighted sum rounds once, half to even: at most one step from the exactly rounded real
    value, and only where that value is within a hair of a tie."""
    a = np.arange(-128, 128, dtype=np.int8)
    b = np.roll(a, 37)
    graph, _ = _int8_graph(op, [(256,), (256,)], [(s_a, z_a), (s_b, z_b)], (s_y, z_y))
    got = run_reference(graph, [a, b])[0].astype(np.int64)
    sign = 1 if op == "Add" else -1
    real = ((a.astype(np.float64) - z_a) * s_a + sign * (b.astype(np.float64) - z_b) * s_b) / s_y
    exact = np.clip(np.rint(real) + z_y, -128, 127)
    assert np.abs(got - exact).max() <= 1


# --------------------------------------------------------------------------- C on the host, whole models


@pytest.mark.parametrize("op", FLOAT_OPS)
@pytest.mark.parametrize("case", [SHAPES[0], SHAPES[4], SHAPES[6]], ids=[SHAPES[i][0] for i in (0, 4, 6)])
def test_float_c_matches_reference(op, case):
    shapes = case[1]
    xs = _floats(np.random.default_rng(5), shapes, op)
    model = float_model(op, shapes, act="Relu" if op == "Add" else None)
    expected = run_reference(lower(import_onnx(model)), xs)[0]
    got = host_outputs(model, [dict(zip(_names(len(xs)), xs))])[0][0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_float_sum_c_matches_reference():
    shapes = [(2, 1, 4), (3, 1), (1,), (2, 3, 4)]
    xs = _floats(np.random.default_rng(6), shapes, "Sum")
    model = float_model("Sum", shapes)
    expected = run_reference(lower(import_onnx(model)), xs)[0]
    got = host_outputs(model, [dict(zip(_names(len(xs)), xs))])[0][0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_c_matches_reference_bit_exact(case):
    model, xs = _int8_case(case, seed=6)
    xs2 = _int8s(np.random.default_rng(7), case[2])
    graph = lower(import_onnx(model))
    samples = [dict(zip(_names(len(x)), x)) for x in (xs, xs2)]
    got = host_outputs(model, samples)
    for sample, out in zip((xs, xs2), got):
        np.testing.assert_array_equal(out[0], run_reference(graph, sample)[0])


# --------------------------------------------------------------------------- bare kernels on strided views


def _int8_graph(op, shapes, in_q, out_q, clip=None) -> tuple[Graph, Node]:
    """An int8 element-wise node as the QDQ lowering produces it, built directly."""
    names = _names(len(shapes))
    tensors = {n: Tensor(n, tuple(s), "int8", "input", Quant((float(q[0]),), (int(q[1]),)))
               for n, s, q in zip(names, shapes, in_q)}
    attrs = {} if clip is None else {"clip_min": clip[0], "clip_max": clip[1]}
    node = Node("n", op, tuple(names), ("y",), attrs)
    shape, dtype = registry.get(op).infer(Graph("g", tensors, (), tuple(names), ()), node)[0]
    tensors["y"] = Tensor("y", shape, dtype, "output", Quant((float(out_q[0]),), (int(out_q[1]),)))
    return Graph("g", tensors, (node,), tuple(names), ("y",)), node


def _float_graph(op, shapes, clip=None) -> tuple[Graph, Node]:
    names = _names(len(shapes))
    tensors = {n: Tensor(n, tuple(s), "float32", "input") for n, s in zip(names, shapes)}
    attrs = {} if clip is None else {"clip_min": clip[0], "clip_max": clip[1]}
    node = Node("n", op, tuple(names), ("y",), attrs)
    shape, dtype = registry.get(op).infer(Graph("g", tensors, (), tuple(names), ()), node)[0]
    tensors["y"] = Tensor("y", shape, dtype, "output")
    return Graph("g", tensors, (node,), tuple(names), ("y",)), node


@needs_gcc
@pytest.mark.parametrize("case", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_kernel_on_strided_views_is_bit_exact(tmp_path, case):
    _, op, shapes, in_q, out_q, act = case
    graph, node = _int8_graph(op, shapes, in_q, out_q, clip=(0.0, 0.3) if act else None)
    assert registry.get(op).accepts_int8(graph, node)
    xs = _int8s(np.random.default_rng(8), shapes)
    expected = run_reference(graph, xs)[0]
    got = run_kernel(tmp_path, registry.get(op).kernel(graph, node), graph, dict(zip(graph.inputs, xs)),
                     {"x0": 1, "x1": 2, "x2": 1, "y": 1})[0]
    np.testing.assert_array_equal(got, expected)


@needs_gcc
@pytest.mark.parametrize("op", FLOAT_OPS + ["Sum"])
@pytest.mark.parametrize("case", [SHAPES[1], SHAPES[5], SHAPES[6], SHAPES[7]],
                         ids=[SHAPES[i][0] for i in (1, 5, 6, 7)])
def test_float_kernel_on_strided_views(tmp_path, op, case):
    shapes = case[1] + ([(1, 1)] if op == "Sum" else [])
    graph, node = _float_graph(op, shapes, clip=(-0.8, 1.5))
    xs = _floats(np.random.default_rng(9), shapes, op)
    expected = run_reference(graph, xs)[0]
    got = run_kernel(tmp_path, registry.get(op).kernel(graph, node), graph, dict(zip(graph.inputs, xs)),
                     {"x0": 2, "x1": 1, "y": 1})[0]
    np.testing.assert_array_equal(got, expected)  # the same float32 operations in the same order


@needs_gcc
def test_inplace_kernel_reads_before_it_writes(tmp_path):
    """The output may take over input 0's buffer: the kernel then reads and writes one array."""
    graph, node = _int8_graph("Add", [(3, 8), (8,)], [(0.05, 3), (0.03, -1)], (0.06, 2))
    assert registry.get("Add").inplace(graph, node) == 0
    xs = _int8s(np.random.default_rng(10), [(3, 8), (8,)])
    expected = run_reference(graph, xs)[0]
    got = run_kernel(tmp_path, registry.get("Add").kernel(graph, node), graph, dict(zip(graph.inputs, xs)),
                     inplace={"y": "x0"})[0]  # y's view is x0's
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------- integers without quantization

INT_TYPES = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "int16": TensorProto.INT16,
             "int32": TensorProto.INT32, "int64": TensorProto.INT64}


def _ints(rng, shape, dtype, nonzero=False):
    info = np.iinfo(dtype)
    x = np.asarray(rng.integers(int(info.min) + 1, int(info.max) + 1, shape, dtype=np.int64)).astype(dtype)
    if nonzero:
        x[x == 0] = 1
    return x


@pytest.mark.parametrize("dtype", sorted(INT_TYPES))
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_plain_integers_match_onnxruntime(op, dtype):
    """Full-range values: Add/Sub/Mul wrap around, Div truncates toward zero."""
    rng = np.random.default_rng(11)
    shapes = [(3, 4), (4,)]
    xs = [_ints(rng, s, dtype, nonzero=(i == 1 and op == "Div")) for i, s in enumerate(shapes)]
    model = _model([helper.make_node(op, ["x0", "x1"], ["y"])],
                   [helper.make_tensor_value_info(n, INT_TYPES[dtype], s) for n, s in zip(_names(2), shapes)],
                   [helper.make_tensor_value_info("y", INT_TYPES[dtype], None)], opset=14)  # 14: all integer types
    got = run_reference(lower(import_onnx(model)), xs)[0]
    expected = ort_outputs(model, dict(zip(_names(2), xs)))[0]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@needs_gcc
@pytest.mark.parametrize("dtype", sorted(INT_TYPES))
def test_plain_integer_kernels_are_bit_exact(tmp_path, dtype):
    """All four operations on strided views, including x / 0 = 0 and MIN / -1 = MIN."""
    rng = np.random.default_rng(12)
    info = np.iinfo(dtype)
    a = _ints(rng, (4, 6), dtype)
    b = _ints(rng, (6,), dtype)
    b[:3] = (0, 1, 2)
    if info.min < 0:
        # INT64_MIN has no C literal (codegen's c_int writes -9223372036854775808LL), so int64 stops one short
        a[0, 3], b[3] = (info.min if dtype != "int64" else info.min + 1), -1
    for op in FLOAT_OPS:
        tensors = {"x0": Tensor("x0", (4, 6), dtype, "input"), "x1": Tensor("x1", (6,), dtype, "input"),
                   "y": Tensor("y", (4, 6), dtype, "output")}
        node = Node("n", op, ("x0", "x1"), ("y",))
        graph = Graph("g", tensors, (node,), ("x0", "x1"), ("y",))
        expected = run_reference(graph, [a, b])[0]
        got = run_kernel(tmp_path, registry.get(op).kernel(graph, node), graph, {"x0": a, "x1": b},
                         {"x0": 1, "x1": 2, "y": 1})[0]
        np.testing.assert_array_equal(got, expected, err_msg=op)
    assert run_reference(graph, [a, b])[0][0, 0] == 0  # Div by zero (b[0] == 0)


# --------------------------------------------------------------------------- declarations


def test_expr_marks_broadcast_dimensions():
    graph, node = _float_graph("Add", [(2, 1, 4, 1), (3, 1, 5)])
    e = registry.get("Add").expr(graph, node)
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [("d0", 2, "spatial"), ("d1", 3, "spatial"),
                                                            ("d2", 4, "spatial"), ("d3", 5, "spatial")]
    assert e.inputs[0] == (Dim.identity("d0"), Dim.broadcast(), Dim.identity("d2"), Dim.broadcast())
    assert e.inputs[1] == (Dim.identity("d1"), Dim.broadcast(), Dim.identity("d3"))
    assert e.outputs[0] == tuple(Dim.identity(f"d{i}") for i in range(4))
    assert registry.get("Add").macs(graph, node) == 2 * 3 * 4 * 5


def test_inplace_takes_an_input_of_the_output_shape():
    graph, node = _float_graph("Mul", [(4,), (3, 4)])
    assert registry.get("Mul").inplace(graph, node) == 1
    graph, node = _float_graph("Sub", [(4, 1), (1, 3)])
    assert registry.get("Sub").inplace(graph, node) is None
    tensors = dict(graph.tensors)
    tensors["c"] = constant("c", np.ones((2, 3), np.float32))
    tensors["y"] = tensors["y"].with_(shape=(2, 3))
    g = graph.replace(tensors=tensors)
    assert registry.get("Add").inplace(g, Node("n", "Add", ("c", "x1"), ("y",))) is None  # never a constant


def test_fuses_activation_is_declared():
    assert all(getattr(registry.get(op), "fuses_activation", False) for op in ("Add", "Sub", "Mul", "Sum"))


def test_int8_declines_what_it_cannot_do():
    graph, node = _int8_graph("Div", [(4,), (4,)], [(0.1, 0), (0.1, 0)], (0.1, 0))
    assert not registry.get("Div").accepts_int8(graph, node)
    graph, node = _int8_graph("Add", [(4,), (4,)], [(100.0, 0), (0.1, 0)], (1e-5, 0))
    assert not registry.get("Add").accepts_int8(graph, node)  # a scale ratio beyond the 64-bit sum
    tensors = dict(graph.tensors)
    tensors["x1"] = tensors["x1"].with_(quant=Quant((0.1, 0.2, 0.3, 0.4), (0, 0, 0, 0), 0))
    assert not registry.get("Add").accepts_int8(graph.replace(tensors=tensors), node)


def test_unsupported_cases_are_explained():
    with pytest.raises(UnsupportedError, match="do not broadcast"):
        import_onnx(float_model("Add", [(2, 3), (4,)]))
    model = _model([helper.make_node("Add", ["a", "b"], ["y"])],
                   [helper.make_tensor_value_info("a", TensorProto.INT32, (3,)),
                    helper.make_tensor_value_info("b", TensorProto.INT64, (3,))],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    with pytest.raises(UnsupportedError, match="mixed int32, int64"):
        import_onnx(model)


# --------------------------------------------------------------------------- Pow (float only)


def _pow_inputs(rng, shapes):
    """Positive bases (a negative base with a fractional exponent is NaN everywhere) and exponents in [-2, 3]."""
    base = np.asarray(np.abs(rng.standard_normal(shapes[0])) + 0.1, np.float32)
    return [base, np.asarray(rng.uniform(-2, 3, shapes[1]), np.float32)]


@pytest.mark.parametrize("case", SHAPES, ids=[c[0] for c in SHAPES])
def test_pow_reference_matches_onnxruntime(case):
    shapes = case[1]
    xs = _pow_inputs(np.random.default_rng(13), shapes)
    model = float_model("Pow", shapes)
    expected = ort_outputs(model, dict(zip(_names(2), xs)))[0]
    np.testing.assert_allclose(run_reference(lower(import_onnx(model)), xs)[0], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [SHAPES[0], SHAPES[1], SHAPES[6]], ids=[SHAPES[i][0] for i in (0, 1, 6)])
def test_pow_c_matches_reference(case):
    shapes = case[1]
    xs = _pow_inputs(np.random.default_rng(14), shapes)
    model = float_model("Pow", shapes)
    expected = run_reference(lower(import_onnx(model)), xs)[0]
    got = host_outputs(model, [dict(zip(_names(2), xs))])[0][0]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@needs_gcc
def test_pow_kernel_on_strided_views(tmp_path):
    shapes = [(1, 8, 4, 4), (8, 1, 1)]
    graph, node = _float_graph("Pow", shapes, clip=(-0.8, 1.5))
    xs = _pow_inputs(np.random.default_rng(15), shapes)
    got = run_kernel(tmp_path, registry.get("Pow").kernel(graph, node), graph, dict(zip(graph.inputs, xs)),
                     {"x0": 2, "x1": 1, "y": 1})[0]
    np.testing.assert_allclose(got, run_reference(graph, xs)[0], rtol=1e-6, atol=1e-7)


def test_int8_pow_stays_float():
    model = qdq_model("Pow", [(4,), (4,)], [(0.05, 0), (0.05, 0)], (0.1, 0))
    graph = lower(import_onnx(model))
    pow_node, = [n for n in graph.nodes if n.op == "Pow"]
    assert graph[pow_node.inputs[0]].dtype == "float32"
