"""MatMul of two int8 activations (attention's Q K^T and P V): the numpy reference against
onnxruntime (batched, broadcast batches, zero points on both sides), the C kernel bit for bit
against it (whole models on the host with the scratch kept and fitted away; the bare kernel on
strided views, with its scratch and without), a split along the batch, and the scratch the planner counts."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.ops.gemm import MATMUL_MAX_K, dynamic_scratch, layout
from mcudeploy.partition import Cut, check_cut, split
from mcudeploy.compile import compile_graph, lower
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference

from .kernel_harness import Place, needs_gcc, run_kernel
from .onnx_helpers import ort_outputs

# (id, A shape, B shape, (s_a, z_a), (s_b, z_b), (s_y, z_y))
CASES = [
    ("2d", (5, 12), (12, 7), (0.05, 3), (0.04, -7), (0.9, 2)),
    ("heads_qk", (1, 4, 8, 16), (1, 4, 16, 8), (0.03, -10), (0.03, 12), (0.6, -5)),
    ("heads_pv", (1, 4, 8, 8), (1, 4, 8, 16), (0.004, -128), (0.05, 1), (0.1, 0)),
    ("bcast_batch", (2, 3, 6, 9), (1, 9, 5), (0.02, 0), (0.06, 4), (0.5, 1)),
    ("vector_a", (10,), (3, 10, 6), (0.05, 5), (0.05, -5), (1.0, 0)),
    ("k_tail", (3, 7, 11), (3, 11, 13), (0.05, 1), (0.05, 2), (0.7, -3)),
    ("vector_b", (4, 6, 20), (20,), (0.05, -3), (0.05, 6), (1.0, 2)),
]
IDS = [c[0] for c in CASES]


def _model(a_shape, b_shape, qa, qb, qy) -> onnx.ModelProto:
    inits = []
    for name, (s, z) in (("a", qa), ("b", qb), ("y", qy)):
        inits += [numpy_helper.from_array(np.array(s, np.float32), f"{name}_s"),
                  numpy_helper.from_array(np.array(z, np.int8), f"{name}_z")]
    nodes = [helper.make_node("DequantizeLinear", [n, f"{n}_s", f"{n}_z"], [f"{n}_f"]) for n in ("a", "b")]
    nodes += [helper.make_node("MatMul", ["a_f", "b_f"], ["mm"]),
              helper.make_node("QuantizeLinear", ["mm", "y_s", "y_z"], ["y"])]
    graph = helper.make_graph(nodes, "matmul_int8", [helper.make_tensor_value_info("a", TensorProto.INT8, a_shape),
                                                     helper.make_tensor_value_info("b", TensorProto.INT8, b_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _inputs(seed, a_shape, b_shape):
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, s).astype(np.int8) for s in (a_shape, b_shape)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reference_matches_onnxruntime(case):
    _, a_shape, b_shape, *q = case
    model = _model(a_shape, b_shape, *q)
    graph = lower(import_onnx(model), check=True)
    assert [(n.op, graph[n.outputs[0]].dtype) for n in graph.nodes] == [("MatMul", "int8")]
    for seed in (1, 2):
        a, b = _inputs(seed, a_shape, b_shape)
        got, want = run_reference(graph, [a, b])[0], ort_outputs(model, {"a": a, "b": b})[0]
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.max() <= 1 and np.mean(diff == 0) >= 0.95, f"{diff.max()} steps, {np.mean(diff > 0):.1%} differ"
        assert np.ptp(want.astype(np.int32)) > 50, "the case uses too little of the int8 range"


@needs_gcc
@pytest.mark.parametrize("scratch", ("keep", "fit"))
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_c_matches_reference_on_host(case, scratch):
    """Whole models on the host board: with the scratch kept (mcud_matmul_s8, its scratch in the
    arena) and fitted (a lone MatMul's scratch would raise the peak: mcud_matmul_s8_direct)."""
    _, a_shape, b_shape, *q = case
    graph = lower(import_onnx(_model(a_shape, b_shape, *q)))
    compiled = compile_graph(graph, "host", options=CompileOptions(scratch=scratch))
    assert [n.attrs.get("scratch", 1) for n in compiled.order] == [1 if scratch == "keep" else 0]
    samples = [_inputs(seed, a_shape, b_shape) for seed in (3, 4)]
    outs = run_compiled_on_host(compiled, [{"a": a, "b": b} for a, b in samples])
    for (a, b), out in zip(samples, outs):
        np.testing.assert_array_equal(out[0], run_reference(graph, [a, b])[0])


# where the operands sit in memory: B with padded rows (b_k = N + 2, the packed path's word loads),
# B stored transposed (its memory order swaps the last two dims, as a K^T view would be: the packed
# path's byte gather), A with a step (rows not contiguous: the plain loop even with scratch)
PLACES = {
    "b_padded": {"a": Place(pad=1), "b": Place(pad=1)},
    "b_transposed": {"a": Place(pad=1), "b": "swap"},
    "a_stepped": {"a": Place(pad=1, step=2), "b": "swap"},
}


@needs_gcc
@pytest.mark.parametrize("where", sorted(PLACES))
@pytest.mark.parametrize("scratch", (1, 0), ids=("packed", "direct"))
@pytest.mark.parametrize("case", [CASES[i] for i in (1, 3, 5, 6)], ids=[CASES[i][0] for i in (1, 3, 5, 6)])
def test_kernel_on_strided_views(tmp_path, case, scratch, where):
    """The bare kernel, with its scratch (garbage-filled) and without, on views that are not plain
    row-major arrays, agrees with the reference bit for bit."""
    _, a_shape, b_shape, *q = case
    graph = lower(import_onnx(_model(a_shape, b_shape, *q)))
    (node,) = graph.nodes
    node = node.with_(attrs={**node.attrs, "scratch": scratch})
    graph = graph.replace(nodes=(node,))
    call = registry.get("MatMul").kernel(graph, node)
    assert call.fn == ("mcud_matmul_s8" if scratch else "mcud_matmul_s8_direct")
    assert call.scratch == registry.get("MatMul").scratch(graph, node) == \
        (dynamic_scratch(layout(graph, node)) if scratch else 0)
    a, b = _inputs(5, a_shape, b_shape)
    rank = len(b_shape)
    place = {**PLACES[where], "y": Place(pad=2)}
    if place["b"] == "swap":
        place["b"] = Place(pad=1, order=tuple(range(rank - 2)) + (rank - 1, rank - 2)) if rank >= 2 else Place(pad=1)
    got = run_kernel(tmp_path, call, graph, {"a": a, "b": b}, place)[0]
    np.testing.assert_array_equal(got, run_reference(graph, [a, b])[0])


def test_scratch_holds_one_batch_of_b_packed_and_its_column_terms():
    """K = 11 pads to 12: 12 x 13 bytes (156, a multiple of 4), then 13 int32 (52): 208 bytes."""
    _, a_shape, b_shape, *q = CASES[5]
    graph = lower(import_onnx(_model(a_shape, b_shape, *q)))
    (node,) = graph.nodes
    assert dynamic_scratch(layout(graph, node)) == 12 * 13 + 4 * 13 == 208


def test_split_along_heads_computes_the_same():
    _, a_shape, b_shape, *q = CASES[1]
    graph = lower(import_onnx(_model(a_shape, b_shape, *q)))
    (node,) = graph.nodes
    for axis in ("d1", "d2"):  # heads, rows of A
        cut = Cut(((node.name, axis),), 2, "keep")
        assert check_cut(graph, cut) is None
        a, b = _inputs(6, a_shape, b_shape)
        np.testing.assert_array_equal(run_reference(split(graph, (cut,)), [a, b])[0], run_reference(graph, [a, b])[0])


def test_k_beyond_the_int32_bound_stays_float():
    graph = lower(import_onnx(_model((2, MATMUL_MAX_K + 1), (MATMUL_MAX_K + 1, 3), *CASES[0][3:])))
    mm = [n for n in graph.nodes if n.op == "MatMul"]
    assert len(mm) == 1 and graph[mm[0].outputs[0]].dtype == "float32"
