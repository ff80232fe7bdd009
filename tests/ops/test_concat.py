"""Concat: float and integer copies, int8/uint8 requantization, against onnxruntime; the C kernel
bit-exact with the numpy reference, also on strided views; tensor expression and errors."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.pipeline import lower
from mcudeploy.reference import run_reference

ROOT = Path(__file__).resolve().parents[2]
ELEM = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
        "int32": TensorProto.INT32, "int64": TensorProto.INT64}


def model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def ort_run(m, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def ref_run(m, feeds):
    graph = lower(import_onnx(m), check=True)
    return graph, run_reference(graph, feeds)


def host_run(m, feeds):
    from mcudeploy.device.host import run_model_on_host

    return run_model_on_host(m, [feeds])[0]


def concat_model(shapes, axis, dtype="float32"):
    names = [f"x{i}" for i in range(len(shapes))]
    ax = axis % len(shapes[0])
    out = list(shapes[0])
    out[ax] = sum(s[ax] for s in shapes)
    node = helper.make_node("Concat", names, ["y"], axis=axis)
    return model([node], [helper.make_tensor_value_info(n, ELEM[dtype], s) for n, s in zip(names, shapes)],
                 [helper.make_tensor_value_info("y", ELEM[dtype], out)])


def feeds_for(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    lo, hi = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-10**6, 10**6), "int64": (-10**12, 10**12)}[dtype]
    return {f"x{i}": rng.integers(lo, hi, size=s).astype(dtype) for i, s in enumerate(shapes)}


CASES = [
    ([(2, 3), (2, 5)], 1),
    ([(2, 3), (4, 3), (1, 3)], 0),
    ([(1, 4, 3, 3), (1, 2, 3, 3)], 1),
    ([(1, 4, 3, 3), (1, 4, 3, 2), (1, 4, 3, 1)], -1),
    ([(1, 2, 5, 3), (1, 2, 1, 3)], 2),
    ([(2, 1, 2, 1, 2, 3)] * 8, 4),
    ([(3,)] * 5, 0),
]


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("shapes,axis", CASES)
def test_concat_copy(shapes, axis, dtype):
    m = concat_model(shapes, axis, dtype)
    feeds = feeds_for(shapes, dtype, 0)
    want = ort_run(m, feeds)[0]
    _, (got,) = ref_run(m, feeds)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(host_run(m, feeds)[0], want)


def qdq_concat(shapes, axis, in_q, out_q, qtype=TensorProto.INT8):
    """x_i -Q(s_i,z_i)-> DQ -> Concat -> Q(s_o,z_o) -> DQ -> y."""
    npt = np.int8 if qtype == TensorProto.INT8 else np.uint8
    inits, nodes, dq = [], [], []
    for i, (s, z) in enumerate(in_q):
        inits += [numpy_helper.from_array(np.array(s, np.float32), f"s{i}"),
                  numpy_helper.from_array(np.array(z, npt), f"z{i}")]
        nodes += [helper.make_node("QuantizeLinear", [f"x{i}", f"s{i}", f"z{i}"], [f"q{i}"]),
                  helper.make_node("DequantizeLinear", [f"q{i}", f"s{i}", f"z{i}"], [f"d{i}"])]
        dq.append(f"d{i}")
    inits += [numpy_helper.from_array(np.array(out_q[0], np.float32), "so"),
              numpy_helper.from_array(np.array(out_q[1], npt), "zo")]
    nodes += [helper.make_node("Concat", dq, ["c"], axis=axis),
              helper.make_node("QuantizeLinear", ["c", "so", "zo"], ["cq"]),
              helper.make_node("DequantizeLinear", ["cq", "so", "zo"], ["y"])]
    ax = axis % len(shapes[0])
    out = list(shapes[0])
    out[ax] = sum(s[ax] for s in shapes)
    return model(nodes, [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s) for i, s in enumerate(shapes)],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)


def check_int8(m, feeds, scale, max_steps):
    graph, (got,) = ref_run(m, feeds)
    concat = [n for n in graph.nodes if n.op == "Concat"]
    assert len(concat) == 1 and graph[concat[0].outputs[0]].dtype in ("int8", "uint8"), "Concat was not lowered"
    want = ort_run(m, feeds)[0]
    steps = np.abs(got.astype(np.float64) - want) / scale
    assert steps.max() <= max_steps + 1e-3, steps.max()
    np.testing.assert_array_equal(host_run(m, feeds)[0], got)
    return steps


def test_int8_same_quant_is_exact_copy():
    shapes = [(1, 3, 4, 4), (1, 5, 4, 4)]
    m = qdq_concat(shapes, 1, [(0.02, -3)] * 2, (0.02, -3))
    feeds = {k: v * 2 for k, v in feeds_for(shapes, "float32", 1).items()}
    graph = lower(import_onnx(m))
    node = next(n for n in graph.nodes if n.op == "Concat")
    assert registry.get("Concat").kernel(graph, node).params.fields == (("axis", 1), ("count", 2))
    assert check_int8(m, feeds, 0.02, 0).max() == 0


@pytest.mark.parametrize("qtype", [TensorProto.INT8, TensorProto.UINT8])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_int8_requantized_inputs(axis, qtype):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    base = 0 if qtype == TensorProto.INT8 else 128
    in_q = [(0.031, base + 5), (0.0123, base - 20), (0.07, base)]
    out_q = (0.045, base + 2)
    m = qdq_concat(shapes, axis, in_q, out_q, qtype)
    rng = np.random.default_rng(2)
    feeds = {f"x{i}": (rng.standard_normal(s) * 2.5).astype(np.float32) for i, s in enumerate(shapes)}
    check_int8(m, feeds, out_q[0], 1)


def test_int8_mixed_copy_and_requant_and_saturation():
    """One input shares the output's quantization (copied), the others are requantized and clipped."""
    shapes = [(1, 2, 3, 3), (1, 1, 3, 3), (1, 3, 3, 3)]
    in_q = [(0.05, 0), (0.2, 10), (0.01, -100)]
    out_q = (0.05, 0)
    m = qdq_concat(shapes, 1, in_q, out_q)
    rng = np.random.default_rng(3)
    feeds = {f"x{i}": (rng.standard_normal(s) * 10).astype(np.float32) for i, s in enumerate(shapes)}
    graph = lower(import_onnx(m))
    node = next(n for n in graph.nodes if n.op == "Concat")
    fields = dict(registry.get("Concat").kernel(graph, node).params.fields)
    assert fields["shift"].values[0] == 0 and min(fields["shift"].values[1:]) > 0
    check_int8(m, feeds, out_q[0], 1)


def test_int8_rounding_matches_ort_off_ties():
    """Away from exact .5 ties the integer requantization equals onnxruntime's float path."""
    shapes = [(64,), (64,)]
    in_q, out_q = [(0.013, 3), (0.029, -7)], (0.017, 1)
    m = qdq_concat(shapes, 0, in_q, out_q)
    x = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    steps = check_int8(m, {"x0": x, "x1": x[::-1].copy()}, out_q[0], 1)
    assert (steps > 0.5).sum() <= 2


# --------------------------------------------------------------------------- expression and errors


def test_concat_expr_axis_is_full():
    m = concat_model([(1, 4, 3, 3), (1, 2, 3, 3)], 1)
    graph = import_onnx(m)
    e = registry.get("Concat").expr(graph, graph.nodes[0])
    assert [a.extent for a in e.axes] == [1, 6, 3, 3]
    dims = (Dim.identity("d0"), Dim.full(), Dim.identity("d2"), Dim.identity("d3"))
    assert e.inputs == (dims, dims) and e.outputs == (dims,)


def test_concat_too_many_inputs():
    with pytest.raises(UnsupportedError, match="at most 8"):
        import_onnx(concat_model([(2,)] * 9, 0))


def test_concat_shape_mismatch():
    node = helper.make_node("Concat", ["x0", "x1"], ["y"], axis=1)
    m = helper.make_model(helper.make_graph(
        [node], "t", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, (2, 3)),
                      helper.make_tensor_value_info("x1", TensorProto.FLOAT, (3, 3))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError, match="Concat of shapes"):
        import_onnx(m)


# --------------------------------------------------------------------------- C kernel on strided views


class View(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int32 * 6),
                ("stride", ctypes.c_int32 * 6)]


class Params(ctypes.Structure):
    _fields_ = [("axis", ctypes.c_int32), ("count", ctypes.c_int32), ("out_zp", ctypes.c_int32),
                ("lo", ctypes.c_int32), ("hi", ctypes.c_int32), ("in_zp", ctypes.POINTER(ctypes.c_int32)),
                ("mult", ctypes.POINTER(ctypes.c_int32)), ("shift", ctypes.POINTER(ctypes.c_int32))]


def view_of(sub: np.ndarray) -> View:
    v = View()
    v.data = sub.ctypes.data
    v.ndim = sub.ndim
    for d in range(sub.ndim):
        v.shape[d] = sub.shape[d]
        v.stride[d] = sub.strides[d] // sub.itemsize
    return v


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    lib = tmp_path_factory.mktemp("kernels") / "libconcat.so"
    fw = ROOT / "firmware"
    subprocess.run(["gcc", "-std=c99", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
                    "-I", str(fw / "include"), str(fw / "kernels" / "concat.c"), str(fw / "kernels" / "shape.c"),
                    "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib))


def test_concat_kernel_on_slices_matches_reference(kernels):
    """Requantized int8 inputs read from and written to slices of bigger buffers, compared with
    the numpy reference of the same node."""
    from mcudeploy.ir import Graph, Node, Quant, Tensor

    rng = np.random.default_rng(4)
    bigs = [rng.integers(-128, 128, size=(3, 6, 8)).astype(np.int8) for _ in range(3)]
    xs = [bigs[0][1:3, 0:4, ::2], bigs[1][0:2, 1:3, 1:5], bigs[2][1:, 2:5, 3:7]]  # axis 1: 4 + 2 + 3
    big_y = np.zeros((4, 12, 7), np.int8)
    region = (slice(1, 3), slice(2, 11), slice(1, 5))
    y = big_y[region]
    quants = [Quant((0.03,), (4,)), Quant((0.05,), (-2,)), Quant((0.011,), (-60,))]
    out_q = Quant((0.05,), (-2,))
    tensors = [Tensor(f"x{i}", x.shape, "int8", "input", q) for i, (x, q) in enumerate(zip(xs, quants))]
    tensors.append(Tensor("y", y.shape, "int8", "output", out_q))
    node = Node("c", "Concat", ("x0", "x1", "x2"), ("y",), {"axis": 1})
    graph = Graph("g", {t.name: t for t in tensors}, (node,), ("x0", "x1", "x2"), ("y",))
    op = registry.get("Concat")
    assert op.accepts_int8(graph, node)
    want = op.reference(graph, node, [np.ascontiguousarray(x) for x in xs])[0]
    fields = dict(op.kernel(graph, node).params.fields)
    arr = {k: (ctypes.c_int32 * 3)(*fields[k].values) for k in ("in_zp", "mult", "shift")}
    p = Params(1, 3, fields["out_zp"], fields["lo"], fields["hi"],
               *(ctypes.cast(arr[k], ctypes.POINTER(ctypes.c_int32)) for k in ("in_zp", "mult", "shift")))
    views = [view_of(x) for x in xs]
    kernels.mcud_concat_s8(*(ctypes.byref(v) for v in views), *([None] * 5), ctypes.byref(view_of(y)),
                           ctypes.byref(p))
    np.testing.assert_array_equal(y, want)
    outside = np.ones(big_y.shape, bool)
    outside[region] = False
    assert not big_y[outside].any()


def test_concat_float_kernel_on_slices(kernels):
    rng = np.random.default_rng(5)
    big = rng.standard_normal((5, 9)).astype(np.float32)
    xs = [big[0:4:2, 1:4], big[1:3, 5:9]]
    big_y = np.zeros((4, 10), np.float32)
    y = big_y[1:3, 2:9]
    p = Params(1, 2)
    kernels.mcud_concat_f32(*(ctypes.byref(view_of(x)) for x in xs), *([None] * 6), ctypes.byref(view_of(y)),
                            ctypes.byref(p))
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=1))
    assert big_y[0].sum() == 0 and big_y[:, :2].sum() == 0 and big_y[:, 9].sum() == 0
