"""Gather with constant indices: the reference against onnxruntime (axes, index ranks, negative
indices; int8 QDQ bit for bit, as data is only moved), the C against the reference (host models and
the bare kernel on strided views); Gather of a constant and the Shape / Gather / Unsqueeze / Concat /
Equal / Where chains exporters leave folded at import; indices computed at run time refused."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx

from .onnx_helpers import (check_strided_c, compile_graph, host_outputs, host_run, make_model, ort_outputs, ort_run,
                           ref_run, single_node)

# (id, input shape, axis, indices)
CASES = [
    ("rows", (5, 4), 0, np.array([4, 0, 2, 2], np.int64)),
    ("scalar_index", (2, 6, 8), 1, np.array(3, np.int64)),
    ("index_matrix", (2, 6, 8), 1, np.array([[0, 5], [1, -1], [2, 2]], np.int64)),
    ("last_axis_negative", (1, 3, 4, 5), -1, np.array([-1, 0, -5], np.int64)),
    ("first_of_rank1", (7,), 0, np.array([6, 1], np.int32)),
]
IDS = [c[0] for c in CASES]


def _model(case, qdq=None):
    _, shape, axis, idx = case
    return make_model("Gather", {"axis": axis}, shape, 13, [("indices", idx)], qdq=qdq)


def _x(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float_reference_matches_onnxruntime(case):
    model, x = _model(case), _x(1, case[1])
    np.testing.assert_array_equal(ref_run(model, x), ort_run(model, x))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float_c_matches_reference(case):
    model, x = _model(case), _x(2, case[1])
    np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_int8_moves_codes_bit_for_bit(case):
    model = _model(case, qdq=(0.05, 3, 0.05, 3))
    x = np.random.default_rng(3).integers(-128, 128, case[1]).astype(np.int8)
    single_node(compile_graph(model), "Gather", "int8")
    got = ref_run(model, x)
    np.testing.assert_array_equal(got, ort_run(model, x))
    np.testing.assert_array_equal(host_run(model, x), got)


def test_int8_with_another_output_quantization_stays_float():
    model = _model(CASES[0], qdq=(0.05, 3, 0.1, 0))
    graph = compile_graph(model)
    gather, = [n for n in graph.nodes if n.op == "Gather"]
    assert graph[gather.inputs[0]].dtype == "float32"
    x = np.random.default_rng(4).integers(-128, 128, CASES[0][1]).astype(np.int8)
    np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))


@pytest.mark.parametrize("case", [CASES[2], CASES[3]], ids=[CASES[2][0], CASES[3][0]])
def test_kernel_on_strided_views(tmp_path, case):
    check_strided_c(tmp_path, _model(case), _x(5, case[1]))


def test_indices_computed_at_run_time_are_refused():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, [2])
    graph = helper.make_graph([helper.make_node("Gather", ["x", "i"], ["y"], name="emb")], "t", [x, i],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(UnsupportedError, match=r"node emb \(Gather\) is not supported: Gather needs constant indices"):
        import_onnx(model)


def test_out_of_range_index_is_refused():
    with pytest.raises(Exception, match=r"index outside \[-5, 5\)"):
        import_onnx(make_model("Gather", {"axis": 0}, (5, 4), 13, [("indices", np.array([5], np.int64))]))


# --------------------------------------------------------------------------- folded at import


def test_embedding_of_a_constant_index_is_folded():
    """Gather(constant table, constant position) + x: only the Add is left, with the row as a constant."""
    table = np.random.default_rng(6).standard_normal((10, 8)).astype(np.float32)
    inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array([3, 7], np.int64), "pos")]
    nodes = [helper.make_node("Gather", ["table", "pos"], ["rows"]), helper.make_node("Add", ["x", "rows"], ["y"])]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    lowered = compile_graph(model)
    assert [n.op for n in lowered.nodes] == ["Add"]
    x = _x(7, (2, 8))
    np.testing.assert_array_equal(host_run(model, x), x + table[[3, 7]])


def test_shape_chains_and_where_equal_are_folded():
    """What torch.onnx.export leaves around a reshape: Shape -> Gather -> Unsqueeze -> Concat, and
    Where(Equal(shape, 0), ...) fixing the target. All constant at import; the Reshape and Relu remain."""
    one = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    inits = [one("i0", 0), one("i1", 1), one("ax", [0]), one("minus1", [-1]), one("zero", [0, 0]),
             one("ones", [1, 1])]
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "i0"], ["batch"], axis=0),
        helper.make_node("Gather", ["shape", "i1"], ["seq"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "ax"], ["batch1"]),
        helper.make_node("Unsqueeze", ["seq", "ax"], ["seq1"]),
        helper.make_node("Concat", ["batch1", "seq1"], ["bs"], axis=0),
        helper.make_node("Equal", ["bs", "zero"], ["is_zero"]),
        helper.make_node("Where", ["is_zero", "ones", "bs"], ["bs_fixed"]),
        helper.make_node("Concat", ["bs_fixed", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    lowered = compile_graph(model)
    assert [n.op for n in lowered.nodes] == ["Reshape", "Relu"]
    x = _x(8, (2, 4, 3, 2))
    got = host_outputs(model, [{"x": x}])[0][0]
    assert got.shape == (2, 4, 6)
    np.testing.assert_array_equal(got, ort_outputs(model, {"x": x})[0])
