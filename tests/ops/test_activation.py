"""Unary activations: the numpy reference against onnxruntime (float, and int8/uint8 QDQ models
over every input code), the C kernels against the reference (whole models on the host and the
bare kernels on strided views), and the declarations (tables, expression, in place, errors)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.activation import lut_table
from mcudeploy.ops.base import Dim
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .kernel_harness import needs_gcc, run_unary_kernel
from .onnx_helpers import host_outputs, ort_outputs

IR_VERSION = 8


def _model(nodes, inputs, outputs, inits, opset) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "activation_test", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def _op_node(case, src: str, dst: str) -> tuple[list, list]:
    """The activation node of a case and its constant inputs (Clip 11+ min/max)."""
    _, op, attrs, opset = case
    attrs = dict(attrs)
    inits, inputs = [], [src]
    if op == "Clip" and opset >= 11:
        for key in ("min", "max"):
            if key in attrs:
                value = attrs.pop(key)
                name = f"clip_{key}"
                if value is not None:
                    inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
                inputs.append(name if value is not None else "")
        while inputs[-1] == "":
            inputs.pop()
    return [helper.make_node(op, inputs, [dst], **attrs)], inits


def float_model(case, shape) -> onnx.ModelProto:
    nodes, inits = _op_node(case, "x", "y")
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits, case[3])


# (id, op, attributes (Clip 11+: min/max become inputs; None = absent), opset)
CASES = [
    ("relu", "Relu", {}, 13),
    ("clip10_attrs", "Clip", {"min": -0.5, "max": 1.5}, 10),
    ("clip7_default", "Clip", {}, 7),
    ("clip13_both", "Clip", {"min": 0.0, "max": 6.0}, 13),
    ("clip13_max_only", "Clip", {"min": None, "max": 0.7}, 13),
    ("clip11_min_only", "Clip", {"min": -1.0}, 11),
    ("clip13_none", "Clip", {}, 13),
    ("leaky_default", "LeakyRelu", {}, 13),
    ("leaky_alpha", "LeakyRelu", {"alpha": 0.3}, 13),
    ("sigmoid", "Sigmoid", {}, 13),
    ("tanh", "Tanh", {}, 13),
    ("hard_sigmoid_default", "HardSigmoid", {}, 13),
    ("hard_sigmoid_attrs", "HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 13),
    ("hard_swish", "HardSwish", {}, 14),
    ("erf", "Erf", {}, 13),
    ("gelu", "Gelu", {}, 20),
    ("gelu_tanh", "Gelu", {"approximate": "tanh"}, 20),
    ("sqrt", "Sqrt", {}, 13),
    ("swish", "Swish", {}, 24),
    ("swish_alpha", "Swish", {"alpha": 0.7}, 24),
]
IDS = [c[0] for c in CASES]
# Sqrt of a negative real is NaN, which no table holds: its int8 form is tested on codes that are all >= 0
INT8_CASES = [c for c in CASES if c[1] != "Sqrt"]
INT8_IDS = [c[0] for c in INT8_CASES]


def _float_input(seed: int, shape=(2, 3, 5, 7)) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float_reference_matches_onnxruntime(case):
    x = _float_input(1)
    model = float_model(case, x.shape)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == [case[1]]
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- int8 / uint8 QDQ models


def qdq_model(case, shape, dtype="int8", s_x=0.05, z_x=3) -> tuple[onnx.ModelProto, float, int]:
    """q x -> DequantizeLinear -> op -> QuantizeLinear -> q y, the output scale set from the real
    range the op produces over every input code."""
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    codes = np.arange(lo, hi + 1)
    real = ort_outputs(float_model(case, [codes.size]), {"x": ((codes - z_x) * s_x).astype(np.float32)})[0]
    r_lo, r_hi = min(float(real.min()), 0.0), max(float(real.max()), 0.0)
    s_y = float(np.float32(max(r_hi - r_lo, 1e-3) / 255))
    z_y = int(np.clip(np.rint(lo - r_lo / s_y), lo, hi))
    elem = TensorProto.INT8 if dtype == "int8" else TensorProto.UINT8
    np_type = np.int8 if dtype == "int8" else np.uint8
    nodes, inits = _op_node(case, "x_f", "y_f")
    nodes = ([helper.make_node("DequantizeLinear", ["x", "s_x", "z_x"], ["x_f"])] + nodes +
             [helper.make_node("QuantizeLinear", ["y_f", "s_y", "z_y"], ["y"])])
    inits += [numpy_helper.from_array(np.array(s_x, np.float32), "s_x"),
              numpy_helper.from_array(np.array(z_x, np_type), "z_x"),
              numpy_helper.from_array(np.array(s_y, np.float32), "s_y"),
              numpy_helper.from_array(np.array(z_y, np_type), "z_y")]
    model = _model(nodes, [helper.make_tensor_value_info("x", elem, shape)],
                   [helper.make_tensor_value_info("y", elem, None)], inits, max(case[3], 10))
    return model, s_y, z_y


def _all_codes(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype).reshape(1, 16, 16)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("case", INT8_CASES, ids=INT8_IDS)
def test_int8_reference_matches_onnxruntime_on_every_code(case, dtype):
    z_x = 3 if dtype == "int8" else 131
    model, _, _ = qdq_model(case, [1, 16, 16], dtype, z_x=z_x)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == [case[1]] and graph[graph.nodes[0].inputs[0]].dtype == dtype
    x = _all_codes(dtype)
    got, expected = run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0]
    diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
    # The table is computed in float64, onnxruntime in float32: they can only disagree on ties.
    assert diff.max() <= 1, f"off by {diff.max()} steps"
    assert np.mean(diff > 0) <= 0.05


@pytest.mark.parametrize("then", ["Relu", "Clip"])
def test_a_relu_folded_after_the_activation_is_in_its_table(then):
    """DequantizeLinear, Tanh, Relu (or Clip to [-0.2, 0.5]), QuantizeLinear becomes one int8 Tanh whose
    clip_min/clip_max the table applies to the function's value, as the float chain does."""
    clip = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("lo", -0.2), ("hi", 0.5))]
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s_x"), numpy_helper.from_array(np.int8(3), "z_x"),
             numpy_helper.from_array(np.array(1 / 128, np.float32), "s_y"), numpy_helper.from_array(np.int8(-5), "z_y")]
    act = helper.make_node(then, ["t"] if then == "Relu" else ["t", "lo", "hi"], ["r"])
    nodes = [helper.make_node("DequantizeLinear", ["x", "s_x", "z_x"], ["x_f"]),
             helper.make_node("Tanh", ["x_f"], ["t"]), act,
             helper.make_node("QuantizeLinear", ["r", "s_y", "z_y"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 16, 16])],
                   [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits + clip, 13)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["Tanh"] and graph.nodes[0].attr("clip_min") is not None
    x = _all_codes("int8")
    np.testing.assert_array_equal(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0])


def test_table_is_dequantize_function_quantize():
    """Golden: Relu with s_x = 0.1, z_x = -10 onto s_y = 0.05, z_y = -128: code q maps to
    clip(rint(max(0, (q + 10) * 0.1) / 0.05) - 128) = max(-128, min(127, 2 * (q + 10) - 128))
    for q >= -10; ties round to even (0.25 / 0.1 = 2.5 -> 2)."""
    table = lut_table(lambda v: np.maximum(v, 0.0), 0.1, -10, 0.05, -128, "int8")
    q = np.arange(-128, 128)
    expected = np.where(q >= -10, np.clip(2 * (q + 10) - 128, -128, 127), -128)
    np.testing.assert_array_equal(table, expected)
    halves = lut_table(lambda v: v, 0.25, 0, 0.1, 0, "int8")
    assert halves[128 + 1] == 2 and halves[128 + 3] == 8  # 2.5 -> 2, 7.5 -> 8


# --------------------------------------------------------------------------- int16 QDQ models (opset 21)

INT16_CASES = [  # (id, op, attributes, (s_x, z_x, s_y, z_y))
    ("relu", "Relu", {}, (1e-4, 0, 6e-5, 0)),
    ("relu_asym", "Relu", {}, (7.7e-5, -40, 4.2e-5, -26823)),
    ("leaky_relu", "LeakyRelu", {"alpha": 0.3}, (1e-4, 0, 1e-4, 0)),  # alpha's multiplier needs a right shift
    ("leaky_relu_asym", "LeakyRelu", {"alpha": 0.1}, (7.7e-5, -40, 4.2e-5, -26823)),
    ("clip", "Clip", {"min": -0.5, "max": 1.5}, (1e-4, 3, 1e-4, 3)),  # Clip: input and output quantized alike
]


def int16_qdq_model(case) -> onnx.ModelProto:
    _, op, attrs, (s_x, z_x, s_y, z_y) = case
    nodes, inits = _op_node(("", op, attrs, 21), "x_f", "y_f")
    nodes = ([helper.make_node("DequantizeLinear", ["x", "s_x", "z_x"], ["x_f"])] + nodes +
             [helper.make_node("QuantizeLinear", ["y_f", "s_y", "z_y"], ["y"])])
    inits += [numpy_helper.from_array(np.array(s, np.float32), n) for n, s in (("s_x", s_x), ("s_y", s_y))]
    inits += [numpy_helper.from_array(np.array(z, np.int16), n) for n, z in (("z_x", z_x), ("z_y", z_y))]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT16, [1, 256, 256])],
                  [helper.make_tensor_value_info("y", TensorProto.INT16, None)], inits, 21)


@pytest.mark.parametrize("case", INT16_CASES, ids=[c[0] for c in INT16_CASES])
def test_int16_qdq_is_onnxruntime_but_at_ties_and_the_c_the_reference(case):
    """An ONNX model's int16 Relu, LeakyRelu and Clip run TFLite's piecewise kernel with a single rounding (the
    right shift folded into the multiplier): on every int16 code within one step of onnxruntime and the nearest
    step to the exact value but at near-ties (TFLite's double rounding is 0.625 steps off at ~6% of the codes of
    leaky_relu_asym)."""
    _, op, attrs, (s_x, z_x, s_y, z_y) = case
    model = int16_qdq_model(case)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == [op] and graph[graph.nodes[0].inputs[0]].dtype == "int16"
    x = np.arange(-32768, 32768).astype(np.int16).reshape(1, 256, 256)
    got, expected = run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0]
    assert np.abs(got.astype(np.int32) - expected.astype(np.int32)).max() <= 1
    real = (x.astype(np.float64) - z_x) * np.float32(s_x)
    real = {"Relu": np.maximum(real, 0.0), "Clip": np.clip(real, attrs.get("min"), attrs.get("max")),
            "LeakyRelu": np.where(real >= 0, real, real * np.float32(attrs.get("alpha")))}[op]
    exact = np.clip(real / np.float32(s_y) + z_y, -32768, 32767)
    assert np.abs(got - exact).max() <= 0.5 + 1e-3
    np.testing.assert_array_equal(host_outputs(model, [{"x": x}])[0][0], got)


def test_int16_clip_of_two_quantizations_stays_float():
    """TFLite's RELU6 kernel clamps the input's codes and reads no output scale."""
    model = int16_qdq_model(("clip", "Clip", {"min": -0.5, "max": 1.5}, (1e-4, 0, 2e-4, 0)))
    graph = lower(import_onnx(model))
    clip = next(n for n in graph.nodes if n.op == "Clip")
    assert graph[clip.inputs[0]].dtype == "float32"


# --------------------------------------------------------------------------- C on the host, whole models


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float_c_matches_reference(case):
    x = _float_input(2, (1, 4, 6, 5))
    x.flat[:3] = (0.0, -0.0, 100.0)
    model = float_model(case, x.shape)
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_allclose(got, run_reference(lower(import_onnx(model)), [x])[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("case", INT8_CASES, ids=INT8_IDS)
def test_int8_c_matches_reference_bit_exact(case, dtype):
    model, _, _ = qdq_model(case, [1, 16, 16], dtype, s_x=0.03, z_x=-5 if dtype == "int8" else 120)
    x = _all_codes(dtype)
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_array_equal(got, run_reference(lower(import_onnx(model)), [x])[0])


# --------------------------------------------------------------------------- bare kernels on strided views


def _single_op_graph(op: str, attrs: dict, shape, dtype: str, quant=None) -> tuple[Graph, Node]:
    qx, qy = quant if quant else (None, None)
    tensors = [Tensor("x", shape, dtype, "input", qx), Tensor("y", shape, dtype, "output", qy)]
    node = Node("n", op, ("x",), ("y",), attrs)
    return Graph("g", {t.name: t for t in tensors}, (node,), ("x",), ("y",)), node


STRIDED = [("Relu", {}), ("Clip", {"min": -0.5, "max": 0.25}), ("LeakyRelu", {"alpha": 0.2}), ("Sigmoid", {}),
           ("Tanh", {}), ("HardSigmoid", {"alpha": 0.2, "beta": 0.5}), ("HardSwish", {}), ("Erf", {}), ("Gelu", {}),
           ("Gelu", {"approximate": "tanh"}), ("Sqrt", {}), ("Swish", {"alpha": 0.7})]


@needs_gcc
@pytest.mark.parametrize("op,attrs", STRIDED, ids=[s[0] + "".join(s[1].values()) if s[0] == "Gelu" else s[0]
                                                   for s in STRIDED])
@pytest.mark.parametrize("inplace", [False, True], ids=["strided", "inplace"])
def test_float_kernel_on_strided_views(tmp_path, op, attrs, inplace):
    graph, node = _single_op_graph(op, attrs, (2, 3, 4), "float32")
    x = _float_input(3, (2, 3, 4))
    call = registry.get(op).kernel(graph, node)
    got = run_unary_kernel(tmp_path, call, graph, x, pad=0 if inplace else 2, inplace=inplace)
    np.testing.assert_allclose(got, run_reference(graph, [x])[0], rtol=1e-6, atol=1e-7)


@needs_gcc
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("inplace", [False, True], ids=["strided", "inplace"])
@pytest.mark.parametrize("shape", [(4, 8, 8), (3, 5, 7)], ids=["256", "105"])  # 105: the dense loop's tail of 1
def test_lut_kernel_on_strided_views_is_bit_exact(tmp_path, dtype, inplace, shape):
    quant = (Quant((0.04,), (7,)), Quant((1 / 255,), (-128 if dtype == "int8" else 0,)))
    graph, node = _single_op_graph("Sigmoid", {}, shape, dtype, quant)
    x = np.roll(_all_codes(dtype).ravel(), 75)[:int(np.prod(shape))].reshape(shape)
    call = registry.get("Sigmoid").kernel(graph, node)
    assert call.fn == f"mcud_lut_{'s8' if dtype == 'int8' else 'u8'}"
    got = run_unary_kernel(tmp_path, call, graph, x, pad=0 if inplace else 1, inplace=inplace)
    np.testing.assert_array_equal(got, run_reference(graph, [x])[0])


# --------------------------------------------------------------------------- the declarations


def test_expr_inplace_and_macs():
    graph, node = _single_op_graph("Tanh", {}, (1, 3, 4), "float32")
    op = registry.get("Tanh")
    e = op.expr(graph, node)
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [("d0", 1, "spatial"), ("d1", 3, "spatial"),
                                                             ("d2", 4, "spatial")]
    assert e.inputs == ((Dim.identity("d0"), Dim.identity("d1"), Dim.identity("d2")),)
    assert e.outputs == e.inputs
    assert op.inplace(graph, node) == 0
    assert op.macs(graph, node) == 12


def test_int8_declines_per_channel_or_mixed_types():
    op = registry.get("Relu")
    per_channel = (Quant((0.1, 0.2, 0.3), (0, 0, 0), 1), Quant((0.1,), (0,)))
    graph, node = _single_op_graph("Relu", {}, (1, 3, 4), "int8", per_channel)
    assert not op.accepts_int8(graph, node)
    graph, node = _single_op_graph("Relu", {}, (1, 3, 4), "int8", (Quant((0.1,), (0,)), Quant((0.1,), (0,))))
    assert op.accepts_int8(graph, node)
    mixed = graph.replace(tensors={**graph.tensors, "y": graph["y"].with_(dtype="uint8")})
    assert not op.accepts_int8(mixed, node)


def test_clip_with_computed_bound_is_rejected():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    lo = helper.make_tensor_value_info("lo", TensorProto.FLOAT, [])
    model = _model([helper.make_node("Clip", ["x", "lo"], ["y"])], [x, lo],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [], 13)
    with pytest.raises(UnsupportedError, match="constant min"):
        import_onnx(model)


def test_int8_sqrt_only_where_every_code_is_non_negative():
    """Codes whose real value is >= 0 lower to a table (within one step of onnxruntime, the C bit for bit);
    a zero point inside the range would give NaN for the codes below it, so the Sqrt stays in float."""
    case = ("sqrt", "Sqrt", {}, 13)
    model, _, _ = qdq_model(case, [1, 16, 16], "int8", s_x=0.05, z_x=-128)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["Sqrt"] and graph[graph.nodes[0].inputs[0]].dtype == "int8"
    x = _all_codes("int8")
    got = run_reference(graph, [x])[0]
    assert np.abs(got.astype(np.int32) - ort_outputs(model, {"x": x})[0].astype(np.int32)).max() <= 1
    np.testing.assert_array_equal(host_outputs(model, [{"x": x}])[0][0], got)
    graph, node = _single_op_graph("Sqrt", {}, (1, 3, 4), "int8", (Quant((0.05,), (3,)), Quant((0.05,), (-128,))))
    assert not registry.get("Sqrt").accepts_int8(graph, node)


# --------------------------------------------------------------------------- SiLU as exported: Mul(x, Sigmoid(x))


def silu_model(quantized: bool, shape=(1, 16, 16), s_x=0.06, z_x=-9) -> onnx.ModelProto:
    """x -> Sigmoid -> Mul(x, .) as torch exports SiLU; quantized: int8 QDQ around each operator as
    quantize_static writes it (the gate and the product with their own scales)."""
    if not quantized:
        nodes = [helper.make_node("Sigmoid", ["x"], ["g"]), helper.make_node("Mul", ["x", "g"], ["y"])]
        return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [], 13)
    params = {"x": (s_x, z_x), "g": (1 / 255, -128), "y": (0.035, -120)}
    inits = [t for n, (s, z) in params.items() for t in (numpy_helper.from_array(np.array(s, np.float32), f"s_{n}"),
                                                         numpy_helper.from_array(np.array(z, np.int8), f"z_{n}"))]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s_x", "z_x"], ["x_f"]),
             helper.make_node("Sigmoid", ["x_f"], ["g_f"]),
             helper.make_node("QuantizeLinear", ["g_f", "s_g", "z_g"], ["g_q"]),
             helper.make_node("DequantizeLinear", ["g_q", "s_g", "z_g"], ["g_d"]),
             helper.make_node("Mul", ["x_f", "g_d"], ["y_f"]),
             helper.make_node("QuantizeLinear", ["y_f", "s_y", "z_y"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT8, shape)],
                  [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits, 13)


@pytest.mark.parametrize("quantized", [False, True], ids=["float", "int8"])
def test_silu_is_one_swish_computing_what_the_pair_did(quantized):
    """Mul(x, Sigmoid(x)) lowers to one Swish; on every int8 code it gives the Sigmoid table then
    the Mul's requantization bit for bit (the two operators' own references, run unfused), and
    onnxruntime's values; the host C equals the reference."""
    from mcudeploy.passes.activation import fuse_swish
    from mcudeploy.compile import PASSES

    model = silu_model(quantized)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["Swish"]
    x = _all_codes("int8") if quantized else _float_input(4, (1, 16, 16))
    unfused_graph = import_onnx(model)  # every pass but the fusion
    for _, run in PASSES:
        unfused_graph = unfused_graph if run is fuse_swish else run(unfused_graph)
    assert [n.op for n in unfused_graph.nodes] == ["Sigmoid", "Mul"]
    got = run_reference(graph, [x])[0]
    np.testing.assert_array_equal(got, run_reference(unfused_graph, [x])[0])
    want = ort_outputs(model, {"x": x})[0]
    if quantized:
        assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    c = host_outputs(model, [{"x": x}])[0][0]
    if quantized:
        np.testing.assert_array_equal(c, got)
    else:
        np.testing.assert_allclose(c, got, rtol=1e-6, atol=1e-7)


def test_silu_gate_read_elsewhere_is_not_fused():
    """A Sigmoid whose output has another reader stays: fusing would compute the gate twice."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["g"]), helper.make_node("Mul", ["x", "g"], ["y"]),
             helper.make_node("Add", ["y", "g"], ["z"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 8))],
                   [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], [], 13)
    assert [n.op for n in lower(import_onnx(model)).nodes] == ["Sigmoid", "Mul", "Add"]
