"""Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose, Split: numpy reference and host C
against onnxruntime, the C kernels on strided views, tensor expressions, and errors."""
from __future__ import annotations

import ctypes
import itertools
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
from mcudeploy.ops.shape import reshape_expr
from mcudeploy.pipeline import lower
from mcudeploy.reference import run_reference

ROOT = Path(__file__).resolve().parents[2]
ELEM = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
        "int32": TensorProto.INT32, "int64": TensorProto.INT64}


# --------------------------------------------------------------------------- helpers


def model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, ELEM[dtype], shape)


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


def random(dtype, shape, rng):
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    lo, hi = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-10**6, 10**6), "int64": (-10**12, 10**12)}[dtype]
    return rng.integers(lo, hi, size=shape).astype(dtype)


def check_exact(m, feeds):
    """Reference and host C equal onnxruntime exactly (data movement only)."""
    want = ort_run(m, feeds)
    _, got = ref_run(m, feeds)
    c = host_run(m, feeds)
    for w, g, h in zip(want, got, c):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(h, w)


def one_op(op_type, dtype, in_shape, out_shapes, inits=(), opset=13, extra_inputs=(), **attrs):
    outs = [f"y{i}" for i in range(len(out_shapes))]
    node = helper.make_node(op_type, ["x", *extra_inputs], outs, **attrs)
    return model([node], [vi("x", dtype, in_shape)], [vi(o, dtype, s) for o, s in zip(outs, out_shapes)],
                 inits, opset)


def i64(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


# --------------------------------------------------------------------------- view operators


@pytest.mark.parametrize("in_shape,target,allowzero,out_shape", [
    ((2, 3, 4), (4, 6), 0, (4, 6)),
    ((2, 3, 4), (-1,), 0, (24,)),
    ((2, 3, 4), (0, -1), 0, (2, 12)),
    ((2, 3, 4), (0, 0, 2, 2), 0, (2, 3, 2, 2)),
    ((1, 8, 1, 1), (1, -1), 0, (1, 8)),
    ((2, 3, 4), (3, 2, 4), 1, (3, 2, 4)),
    ((6,), (1, 2, 1, 3, 1, 1), 0, (1, 2, 1, 3, 1, 1)),
])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_reshape(in_shape, target, allowzero, out_shape, dtype):
    rng = np.random.default_rng(0)
    kw = {"allowzero": allowzero} if allowzero else {}
    m = one_op("Reshape", dtype, in_shape, [out_shape], [i64("s", target)], opset=14, extra_inputs=["s"], **kw)
    check_exact(m, {"x": random(dtype, in_shape, rng)})


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis):
    shape = (2, 3, 4)
    out = (int(np.prod(shape[:axis % 4 if axis >= 0 else axis + 3])),)
    out = out + (24 // out[0],)
    m = one_op("Flatten", "float32", shape, [out], axis=axis)
    check_exact(m, {"x": random("float32", shape, np.random.default_rng(1))})


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("in_shape,axes,out_shape", [
    ((1, 3, 1, 4), (0, 2), (3, 4)),
    ((1, 3, 1, 4), (-2,), (1, 3, 4)),
    ((1, 3, 1, 4), None, (3, 4)),
])
def test_squeeze(opset, in_shape, axes, out_shape):
    if axes is None:
        m = one_op("Squeeze", "float32", in_shape, [out_shape], opset=opset)
    elif opset >= 13:
        m = one_op("Squeeze", "float32", in_shape, [out_shape], [i64("a", axes)], opset, ["a"])
    else:
        m = one_op("Squeeze", "float32", in_shape, [out_shape], opset=opset, axes=list(axes))
    check_exact(m, {"x": random("float32", in_shape, np.random.default_rng(2))})


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("in_shape,axes,out_shape", [
    ((3, 4), (0,), (1, 3, 4)),
    ((3, 4), (0, 3), (1, 3, 4, 1)),
    ((3, 4), (-1, 1), (3, 1, 4, 1)),
])
def test_unsqueeze(opset, in_shape, axes, out_shape):
    if opset >= 13:
        m = one_op("Unsqueeze", "uint8", in_shape, [out_shape], [i64("a", axes)], opset, ["a"])
    else:
        m = one_op("Unsqueeze", "uint8", in_shape, [out_shape], opset=opset, axes=list(axes))
    check_exact(m, {"x": random("uint8", in_shape, np.random.default_rng(3))})


def test_identity_and_chain_of_views():
    """Views feeding views feeding a kernel: aliases resolve through the chain."""
    nodes = [helper.make_node("Identity", ["x"], ["a"]),
             helper.make_node("Reshape", ["a", "s"], ["b"]),
             helper.make_node("Unsqueeze", ["b", "ax"], ["c"]),
             helper.make_node("Transpose", ["c"], ["d"], perm=[1, 0, 2]),
             helper.make_node("Flatten", ["d"], ["y"], axis=1)]
    m = model(nodes, [vi("x", "float32", (2, 3, 4))], [vi("y", "float32", (6, 4))],
              [i64("s", (6, 4)), i64("ax", (0,))])
    check_exact(m, {"x": random("float32", (2, 3, 4), np.random.default_rng(4))})


def test_view_ops_are_views():
    for name in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"):
        assert registry.get(name).view
    for name in ("Transpose", "Split", "Concat"):
        assert not registry.get(name).view


def test_reshape_needs_constant_shape():
    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    m = model([node], [vi("x", "float32", (2, 3)), helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
              [vi("y", "float32", (3, 2))])
    with pytest.raises(UnsupportedError, match="constant"):
        import_onnx(m)


def test_reshape_bad_target():
    m = one_op("Reshape", "float32", (2, 3), [(4, 2)], [i64("s", (4, 2))], extra_inputs=["s"])
    with pytest.raises(UnsupportedError, match="does not hold"):
        import_onnx(m)


# --------------------------------------------------------------------------- Transpose and Split


TRANSPOSE_CASES = [((5,), (0,)), ((3, 4), None), ((2, 3, 4), (0, 2, 1)), ((2, 3, 4, 5), (0, 3, 1, 2)),
                   ((2, 1, 3, 2, 2), (4, 2, 0, 3, 1)), ((2, 3, 1, 2, 2, 3), (5, 4, 3, 2, 1, 0)),
                   ((1, 8, 4, 4), (0, 2, 3, 1))]


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("shape,perm", TRANSPOSE_CASES)
def test_transpose(dtype, shape, perm):
    rng = np.random.default_rng(5)
    p = perm if perm is not None else tuple(reversed(range(len(shape))))
    kw = {"perm": list(perm)} if perm is not None else {}
    m = one_op("Transpose", dtype, shape, [tuple(shape[i] for i in p)], **kw)
    check_exact(m, {"x": random(dtype, shape, rng)})


def test_transpose_all_perms_4d():
    """Every permutation of a 4-D tensor through the reference (the C path is covered above)."""
    rng = np.random.default_rng(6)
    x = random("float32", (2, 3, 4, 5), rng)
    for perm in itertools.permutations(range(4)):
        m = one_op("Transpose", "float32", x.shape, [tuple(x.shape[i] for i in perm)], perm=list(perm))
        np.testing.assert_array_equal(ref_run(m, {"x": x})[1][0], ort_run(m, {"x": x})[0])


@pytest.mark.parametrize("opset,shape,axis,sizes,n", [
    (13, (4, 6), 1, None, 3),
    (13, (4, 6), 0, (1, 3), 2),
    (11, (2, 5, 3), 1, (2, 2, 1), 3),
    (13, (2, 5, 3), -1, (1, 1, 1), 3),
    (18, (2, 7), 1, None, 3),  # opset 18: the last part is smaller
])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_split(opset, shape, axis, sizes, n, dtype):
    ax = axis % len(shape)
    if sizes is None:
        part = -(-shape[ax] // n)
        parts = [min(part, shape[ax] - part * i) for i in range(n)]
    else:
        parts = list(sizes)
    outs = [shape[:ax] + (p,) + shape[ax + 1:] for p in parts]
    kw = {"axis": axis}
    inits, extra = [], []
    if sizes is not None and opset >= 13:
        inits, extra = [i64("sp", sizes)], ["sp"]
    elif sizes is not None:
        kw["split"] = list(sizes)
    if opset >= 18 and sizes is None:
        kw["num_outputs"] = n
    m = one_op("Split", dtype, shape, outs, inits, opset, extra, **kw)
    check_exact(m, {"x": random(dtype, shape, np.random.default_rng(7))})


# --------------------------------------------------------------------------- int8 through QDQ lowering


def qdq_around(op_nodes, in_shape, out_shape, inits=(), scale=0.05, zp=3, out_scale=None, out_zp=None):
    """x -Q-> DQ -> ops -> Q -> DQ -> y, float at the boundaries."""
    out_scale = scale if out_scale is None else out_scale
    out_zp = zp if out_zp is None else out_zp
    q = [numpy_helper.from_array(np.array(scale, np.float32), "s_in"),
         numpy_helper.from_array(np.array(zp, np.int8), "z_in"),
         numpy_helper.from_array(np.array(out_scale, np.float32), "s_out"),
         numpy_helper.from_array(np.array(out_zp, np.int8), "z_out")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s_in", "z_in"], ["xd"]),
             *op_nodes,
             helper.make_node("QuantizeLinear", ["r", "s_out", "z_out"], ["rq"]),
             helper.make_node("DequantizeLinear", ["rq", "s_out", "z_out"], ["y"])]
    return model(nodes, [vi("x", "float32", in_shape)], [vi("y", "float32", out_shape)], [*q, *inits])


@pytest.mark.parametrize("op", ["Reshape", "Transpose", "Flatten", "Unsqueeze"])
def test_int8_data_movement_is_lowered(op):
    shape = (1, 4, 3, 2)
    node, inits, out = {
        "Reshape": (helper.make_node("Reshape", ["xd", "s"], ["r"]), [i64("s", (4, 6))], (4, 6)),
        "Transpose": (helper.make_node("Transpose", ["xd"], ["r"], perm=[0, 2, 3, 1]), [], (1, 3, 2, 4)),
        "Flatten": (helper.make_node("Flatten", ["xd"], ["r"], axis=2), [], (4, 6)),
        "Unsqueeze": (helper.make_node("Unsqueeze", ["xd", "a"], ["r"]), [i64("a", (2,))], (1, 4, 1, 3, 2)),
    }[op]
    m = qdq_around([node], shape, out, inits)
    graph, _ = ref_run(m, {"x": np.zeros(shape, np.float32)})
    lowered = [n for n in graph.nodes if n.op == op]
    assert len(lowered) == 1 and graph[lowered[0].outputs[0]].dtype == "int8"
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32) * 3
    check_exact(m, {"x": x})


def test_int8_transpose_with_other_output_scale_stays_float():
    node = helper.make_node("Transpose", ["xd"], ["r"], perm=[1, 0])
    m = qdq_around([node], (3, 4), (4, 3), out_scale=0.1)
    graph, _ = ref_run(m, {"x": np.zeros((3, 4), np.float32)})
    t = next(n for n in graph.nodes if n.op == "Transpose")
    assert graph[t.outputs[0]].dtype == "float32"
    x = np.random.default_rng(9).standard_normal((3, 4)).astype(np.float32)
    check_exact(m, {"x": x})


# --------------------------------------------------------------------------- tensor expressions


def test_reshape_expr():
    e = reshape_expr((1, 8, 4, 4), (1, 8, 16))
    assert e.inputs[0] == (Dim.broadcast(), Dim.identity("d1"), Dim.full(), Dim.full())
    assert e.outputs[0] == (Dim.identity("d0"), Dim.identity("d1"), Dim.full())
    e = reshape_expr((2, 3, 4), (2, 3, 4))
    assert e.inputs[0] == tuple(Dim.identity(f"d{i}") for i in range(3))
    e = reshape_expr((6, 4), (2, 3, 4))
    assert e.inputs[0] == (Dim.full(), Dim.identity("d2"))
    assert e.outputs[0] == (Dim.full(), Dim.full(), Dim.identity("d2"))
    e = reshape_expr((3, 4), (1, 3, 1, 4))  # Unsqueeze
    assert e.inputs[0] == (Dim.identity("d1"), Dim.identity("d3"))
    e = reshape_expr((4, 6), (6, 4))
    assert e.inputs[0] == (Dim.full(), Dim.full())


def test_transpose_and_split_expr():
    m = one_op("Transpose", "float32", (2, 3, 4), [(4, 2, 3)], perm=[2, 0, 1])
    graph = import_onnx(m)
    node = graph.nodes[0]
    e = registry.get("Transpose").expr(graph, node)
    assert [a.extent for a in e.axes] == [4, 2, 3]
    assert e.inputs[0] == (Dim.identity("d1"), Dim.identity("d2"), Dim.identity("d0"))
    m = one_op("Split", "float32", (2, 6), [(2, 2), (2, 4)], [i64("sp", (2, 4))], 13, ["sp"], axis=1)
    graph = import_onnx(m)
    e = registry.get("Split").expr(graph, graph.nodes[0])
    assert e.inputs[0] == (Dim.identity("d0"), Dim.full())
    assert e.outputs == ((Dim.identity("d0"), Dim.full()),) * 2


# --------------------------------------------------------------------------- C kernels on strided views


class View(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int32 * 6),
                ("stride", ctypes.c_int32 * 6)]


def view_of(base: np.ndarray, sub: np.ndarray) -> View:
    """A view of `sub`, a numpy slice of the C-contiguous array `base`."""
    assert sub.base is base or sub is base
    v = View()
    v.data = sub.ctypes.data
    v.ndim = sub.ndim
    for d in range(sub.ndim):
        v.shape[d] = sub.shape[d]
        v.stride[d] = sub.strides[d] // sub.itemsize
    return v


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    lib = tmp_path_factory.mktemp("kernels") / "libshape.so"
    fw = ROOT / "firmware"
    subprocess.run(["gcc", "-std=c99", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
                    "-I", str(fw / "include"), str(fw / "kernels" / "shape.c"), "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib))


@pytest.mark.parametrize("dtype,suffix", [("int8", "s8"), ("float32", "f32"), ("int16", "s16"), ("int32", "s32"),
                                          ("int64", "s64")])
def test_transpose_kernel_on_slices(kernels, dtype, suffix):
    rng = np.random.default_rng(10)
    big_x = rng.integers(-100, 100, size=(3, 7, 9, 5)).astype(dtype)
    big_y = np.zeros((5, 4, 10, 9), dtype)
    x = big_x[1:3, 2:6, 1:9:2, 1:4]  # (2, 4, 4, 3), strided in every dimension
    perm = (3, 0, 2, 1)
    region = (slice(1, 4), slice(1, 3), slice(1, 9, 2), slice(2, 6))
    y = big_y[region]  # (3, 2, 4, 4)
    params = (ctypes.c_int32 * 6)(*perm, 4, 5)
    fn = getattr(kernels, f"mcud_transpose_{suffix}")
    fn(ctypes.byref(view_of(big_x, x)), ctypes.byref(view_of(big_y, y)), ctypes.byref(params))
    np.testing.assert_array_equal(y, np.transpose(x, perm))
    outside = np.ones(big_y.shape, bool)
    outside[region] = False
    assert not big_y[outside].any()


def test_split_kernel_on_slices(kernels):
    class SplitParams(ctypes.Structure):
        _fields_ = [("axis", ctypes.c_int32), ("count", ctypes.c_int32)]

    rng = np.random.default_rng(11)
    big_x = rng.standard_normal((4, 10, 6)).astype(np.float32)
    x = big_x[1:3, 1:8, ::2]  # (2, 7, 3)
    bigs = [np.zeros((3, 9, 5), np.float32) for _ in range(3)]
    ys = [b[1:3, :s, 1:4] for b, s in zip(bigs, (2, 4, 1))]
    views = [view_of(b, y) for b, y in zip(bigs, ys)]
    args = [ctypes.byref(v) for v in views] + [None] * 5
    kernels.mcud_split_f32(ctypes.byref(view_of(big_x, x)), *args, ctypes.byref(SplitParams(1, 3)))
    for y, part in zip(ys, np.split(x, [2, 6], axis=1)):
        np.testing.assert_array_equal(y, part)
    assert all(b[0].sum() == 0 and b[:, :, 0].sum() == 0 for b in bigs)


@pytest.mark.parametrize("cc,flags", [
    ("gcc", ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]),
    ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2"]),
])
@pytest.mark.parametrize("source", ["shape.c", "concat.c"])
def test_kernels_compile(cc, flags, source, tmp_path):
    import shutil

    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    fw = ROOT / "firmware"
    proc = subprocess.run([cc, *flags, "-I", str(fw / "include"), "-c", str(fw / "kernels" / source),
                           "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
