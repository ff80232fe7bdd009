"""LayerNormalization: the numpy reference against onnxruntime (float over several axes, with and
without B, with the Mean and InvStdDev outputs; int8 QDQ as quantize_static writes it, within one
step), the C kernel against the reference (whole models on the host, the bare kernel on strided
views, int8 bit for bit), and the refusals."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx

from .onnx_helpers import (check_float, check_int8, check_strided_c, compile_graph, host_run, make_model, ort_run,
                           ref_run, single_node)

OPSET = 17
# (id, input shape, axis, with bias)
CASES = [("last", (2, 8, 16), -1, True), ("last_no_bias", (1, 5, 12), -1, False), ("two_dims", (2, 3, 4, 5), 2, True),
         ("all", (3, 7), 0, True), ("rank1", (10,), 0, True)]
IDS = [c[0] for c in CASES]


def _params(shape, axis, seed):
    rng = np.random.default_rng(seed)
    norm = shape[axis % len(shape):]
    scale = (1 + 0.3 * rng.standard_normal(norm)).astype(np.float32)
    bias = (0.2 * rng.standard_normal(norm)).astype(np.float32)
    return scale, bias


def _float_model(shape, axis, with_bias, seed=0, outputs=1):
    scale, bias = _params(shape, axis, seed)
    extra = [("scale", scale)] + ([("bias", bias)] if with_bias else [])
    return make_model("LayerNormalization", {"axis": axis, "epsilon": 1e-3}, shape, OPSET, extra, outputs=outputs)


def _x(seed, shape):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2 + rng.standard_normal(shape[-1:])).astype(np.float32)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float_reference_matches_onnxruntime(case):
    _, shape, axis, with_bias = case
    check_float(_float_model(shape, axis, with_bias), _x(1, shape), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float_c_matches_reference(case):
    _, shape, axis, with_bias = case
    model, x = _float_model(shape, axis, with_bias), _x(2, shape)
    np.testing.assert_allclose(host_run(model, x), ref_run(model, x), rtol=1e-5, atol=1e-5)


def test_mean_and_inv_std_outputs():
    shape = (2, 4, 6)
    model = _float_model(shape, 1, True, outputs=3)
    model.graph.output.extend([helper.make_tensor_value_info(f"extra{i}", TensorProto.FLOAT, None) for i in (1, 2)])
    x = _x(3, shape)
    from .onnx_helpers import host_outputs, ort_outputs
    from mcudeploy.reference import run_reference
    want = ort_outputs(model, {"x": x})
    got = run_reference(compile_graph(model), [x])
    assert [g.shape for g in got] == [(2, 4, 6), (2, 1, 1), (2, 1, 1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    for c, r in zip(host_outputs(model, [{"x": x}])[0], got):
        np.testing.assert_allclose(c, r, rtol=1e-5, atol=1e-5)


def test_float_kernel_on_strided_views(tmp_path):
    shape = (2, 3, 8)
    check_strided_c(tmp_path, _float_model(shape, 1, True), _x(4, shape))


# --------------------------------------------------------------------------- int8


def qdq_model(shape, axis, sx=0.05, zx=3, sy=0.03, zy=-2, seed=0):
    """DequantizeLinear -> LayerNormalization -> QuantizeLinear with Scale an int8 constant and B an int32
    constant at scale s_x * s_scale, each behind its DequantizeLinear, as quantize_static writes them."""
    scale, bias = _params(shape, axis, seed)
    s_w = float(np.abs(scale).max() / 127)
    inits = [numpy_helper.from_array(np.array(v, t), n) for v, t, n in (
        (sx, np.float32, "sx"), (zx, np.int8, "zx"), (sy, np.float32, "sy"), (zy, np.int8, "zy"),
        (s_w, np.float32, "sw"), (0, np.int8, "zw"), (sx * s_w, np.float32, "sb"), (0, np.int32, "zb"))]
    inits += [numpy_helper.from_array(np.rint(scale / s_w).astype(np.int8), "wq"),
              numpy_helper.from_array(np.rint(bias / (sx * s_w)).astype(np.int32), "bq")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"]),
             helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["b"]),
             helper.make_node("LayerNormalization", ["xf", "w", "b"], ["yf"], axis=axis),
             helper.make_node("QuantizeLinear", ["yf", "sy", "zy"], ["y"])]
    graph = helper.make_graph(nodes, "ln_qdq", [helper.make_tensor_value_info("x", TensorProto.INT8, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)


def _q(seed, shape):
    return np.random.default_rng(seed).integers(-128, 128, size=shape).astype(np.int8)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_int8_reference_matches_onnxruntime(case):
    _, shape, axis, _ = case
    model = qdq_model(shape, axis)
    x = _q(5, shape)
    got = check_int8(model, x, "LayerNormalization")
    # the nearest step to onnxruntime almost everywhere (both round the same real value)
    assert np.mean(got.astype(np.int32) != ort_run(model, x)) <= 0.1


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_int8_c_matches_reference_bit_exact(case):
    _, shape, axis, _ = case
    model = qdq_model(shape, axis, sx=0.02, zx=-7, sy=0.05, zy=4, seed=1)
    for seed in (6, 7):
        x = _q(seed, shape)
        x.flat[:4] = (127, -128, 0, 127)
        np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))


def test_int8_constant_row_gives_bias():
    """A row of equal codes has no variance: every output is B (over s_y) plus z_y."""
    shape = (1, 16)
    model = qdq_model(shape, -1)
    x = np.full(shape, 9, np.int8)
    graph = compile_graph(model)
    single_node(graph, "LayerNormalization", "int8")
    got = host_run(model, x)
    np.testing.assert_array_equal(got, ref_run(model, x))
    _, bias = _params(shape, -1, 0)
    s_w = float(np.abs(_params(shape, -1, 0)[0]).max() / 127)
    want = np.clip(np.rint(np.rint(bias / (0.05 * s_w)) * 0.05 * s_w / 0.03) - 2, -128, 127)
    assert np.abs(got.astype(np.int32) - want).max() <= 1


def test_int8_kernel_on_strided_views(tmp_path):
    shape = (2, 3, 8)
    check_strided_c(tmp_path, qdq_model(shape, 2), _q(8, shape))


# --------------------------------------------------------------------------- refusals


def test_scale_computed_at_run_time_is_refused():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln")], "t", [x, s],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)
    with pytest.raises(UnsupportedError, match=r"node ln \(LayerNormalization\).*constant Scale"):
        import_onnx(model)


def test_scale_varying_over_rows_is_refused():
    model = make_model("LayerNormalization", {"axis": -1}, (3, 4), OPSET,
                       [("scale", np.ones((3, 4), np.float32))])
    with pytest.raises(UnsupportedError, match="varies outside the normalised dimensions"):
        import_onnx(model)


# --------------------------------------------------------------------------- split


def test_split_along_a_row_axis_computes_the_same(tmp_path):
    """Rows are independent: a cut of the sequence axis gives pieces on views whose C equals the unsplit
    reference bit for bit (int8); the normalised axis cannot be cut."""
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.ops import registry
    from mcudeploy.partition import Cut, check_cut, split
    from mcudeploy.compile import compile_graph as compile_plan
    from mcudeploy.reference import run_reference

    shape = (1, 12, 16)
    graph = compile_graph(qdq_model(shape, -1))
    (node,) = graph.nodes
    assert [a.name for a in registry.get("LayerNormalization").expr(graph, node).axes] == ["d0", "d1", "r2"]
    cut = Cut(((node.name, "d1"),), 3, "keep")
    assert check_cut(graph, cut) is None and check_cut(graph, Cut(((node.name, "r2"),), 2, "keep")) is not None
    pieces = split(graph, (cut,))
    assert sum(n.op == "LayerNormalization" for n in pieces.nodes) > 1
    x = _q(9, shape)
    want = run_reference(graph, [x])[0]
    np.testing.assert_array_equal(run_reference(pieces, [x])[0], want)
    got = run_compiled_on_host(compile_plan(pieces, "host"), [{"x": x}], tmp_path)[0][0]
    np.testing.assert_array_equal(got, want)
