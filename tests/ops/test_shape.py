"""Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose, Split: numpy reference and host C
against onnxruntime, the C kernels on strided views, tensor expressions, and errors."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.base import Dim
from mcudeploy.ops.shape import reshape_expr

from .kernel_harness import Place, needs_gcc, run_kernel
from .onnx_helpers import checked_model, host_outputs, ort_outputs, reference_outputs

ELEM = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
        "int32": TensorProto.INT32, "int64": TensorProto.INT64}


# --------------------------------------------------------------------------- helpers


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, ELEM[dtype], shape)


def random(dtype, shape, rng):
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    lo, hi = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-10**6, 10**6), "int64": (-10**12, 10**12)}[dtype]
    return rng.integers(lo, hi, size=shape).astype(dtype)


def check_exact(m, feeds):
    """Reference and host C equal onnxruntime exactly (data movement only)."""
    want = ort_outputs(m, feeds)
    _, got = reference_outputs(m, feeds)
    c = host_outputs(m, [feeds])[0]
    for w, g, h in zip(want, got, c):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(h, w)


def one_op(op_type, dtype, in_shape, out_shapes, inits=(), opset=13, extra_inputs=(), **attrs):
    outs = [f"y{i}" for i in range(len(out_shapes))]
    node = helper.make_node(op_type, ["x", *extra_inputs], outs, **attrs)
    return checked_model([node], [vi("x", dtype, in_shape)], [vi(o, dtype, s) for o, s in zip(outs, out_shapes)],
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
    m = checked_model(nodes, [vi("x", "float32", (2, 3, 4))], [vi("y", "float32", (6, 4))],
                      [i64("s", (6, 4)), i64("ax", (0,))])
    check_exact(m, {"x": random("float32", (2, 3, 4), np.random.default_rng(4))})


def test_view_ops_are_views():
    for name in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"):
        assert registry.get(name).view
    for name in ("Transpose", "Split", "Concat"):
        assert not registry.get(name).view


def test_reshape_needs_constant_shape():
    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    s_input = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    m = checked_model([node], [vi("x", "float32", (2, 3)), s_input], [vi("y", "float32", (3, 2))])
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
        np.testing.assert_array_equal(reference_outputs(m, {"x": x})[1][0], ort_outputs(m, {"x": x})[0])


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 5)], ids=["rank3", "rank4"])
def test_transpose_every_permutation_through_the_c(dtype, shape):
    """Every permutation of a rank-3 and a rank-4 tensor, as one model with an output per permutation,
    through the host C: equal to onnxruntime element for element."""
    perms = list(itertools.permutations(range(len(shape))))
    nodes = [helper.make_node("Transpose", ["x"], [f"y{i}"], perm=list(p)) for i, p in enumerate(perms)]
    m = checked_model(nodes, [vi("x", dtype, shape)],
                      [vi(f"y{i}", dtype, tuple(shape[j] for j in p)) for i, p in enumerate(perms)])
    check_exact(m, {"x": random(dtype, shape, np.random.default_rng(7))})


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
    return checked_model(nodes, [vi("x", "float32", in_shape)], [vi("y", "float32", out_shape)], [*q, *inits])


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
    graph, _ = reference_outputs(m, {"x": np.zeros(shape, np.float32)})
    lowered = [n for n in graph.nodes if n.op == op]
    assert len(lowered) == 1 and graph[lowered[0].outputs[0]].dtype == "int8"
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32) * 3
    check_exact(m, {"x": x})


def test_int8_transpose_with_other_output_scale_stays_float():
    node = helper.make_node("Transpose", ["xd"], ["r"], perm=[1, 0])
    m = qdq_around([node], (3, 4), (4, 3), out_scale=0.1)
    graph, _ = reference_outputs(m, {"x": np.zeros((3, 4), np.float32)})
    t = next(n for n in graph.nodes if n.op == "Transpose")
    assert graph[t.outputs[0]].dtype == "float32"
    x = np.random.default_rng(9).standard_normal((3, 4)).astype(np.float32)
    check_exact(m, {"x": x})


def split_qdq(out_scales, shape=(1, 6, 3, 2)):
    """x -Q-> DQ -> Split(axis 1, 2 + 4) -> each part -Q-> DQ -> y_i at its own output scale."""
    q = [numpy_helper.from_array(np.array(0.05, np.float32), "s_in"), numpy_helper.from_array(np.array(3, np.int8), "z"),
         i64("sizes", (2, 4))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_in", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s_in", "z"], ["xd"]),
             helper.make_node("Split", ["xd", "sizes"], ["p0", "p1"], axis=1)]
    outs = []
    for i, scale in enumerate(out_scales):
        q.append(numpy_helper.from_array(np.array(scale, np.float32), f"s{i}"))
        nodes += [helper.make_node("QuantizeLinear", [f"p{i}", f"s{i}", "z"], [f"q{i}"]),
                  helper.make_node("DequantizeLinear", [f"q{i}", f"s{i}", "z"], [f"y{i}"])]
        outs.append(vi(f"y{i}", "float32", (1, (2, 4)[i], 3, 2)))
    return checked_model(nodes, [vi("x", "float32", shape)], outs, q)


@pytest.mark.parametrize("out_scales, dtype", [((0.05, 0.05), "int8"), ((0.05, 0.1), "float32")])
def test_int8_split_is_lowered_where_every_output_keeps_the_input_quantization(out_scales, dtype):
    """ShuffleNetV2's channel split (torch.chunk) as quantize_static writes it: each output read by its
    own QuantizeLinear. With the input's quantization on every output the Split runs on int8 (slices
    of its input, no kernel); an output quantized otherwise keeps it in float."""
    m = split_qdq(out_scales)
    graph, _ = reference_outputs(m, {"x": np.zeros((1, 6, 3, 2), np.float32)})
    split = next(n for n in graph.nodes if n.op == "Split")
    assert {graph[o].dtype for o in split.outputs} == {dtype}
    assert sum(n.op == "DequantizeLinear" for n in graph.nodes) == (2 if dtype == "int8" else 3)
    x = np.random.default_rng(10).standard_normal((1, 6, 3, 2)).astype(np.float32) * 3
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


@needs_gcc
@pytest.mark.parametrize("dtype,suffix", [("int8", "s8"), ("float32", "f32"), ("int16", "s16"), ("int32", "s32"),
                                          ("int64", "s64")])
def test_transpose_kernel_on_slices(tmp_path, dtype, suffix):
    x = np.random.default_rng(10).integers(-100, 100, size=(2, 4, 4, 3)).astype(dtype)
    perm = (3, 0, 2, 1)
    node = Node("t", "Transpose", ("x",), ("y",), {"perm": perm})
    graph = Graph("g", {"x": Tensor("x", x.shape, dtype, "input"), "y": Tensor("y", (3, 2, 4, 4), dtype, "output")},
                  (node,), ("x",), ("y",))
    call = registry.get("Transpose").kernel(graph, node)
    assert call.fn == f"mcud_transpose_{suffix}"
    strided = Place(pad=1, step=2)  # garbage around both, and every other element along the last dimension
    got = run_kernel(tmp_path, call, graph, {"x": x}, {"x": strided, "y": strided})[0]
    np.testing.assert_array_equal(got, np.transpose(x, perm))


@needs_gcc
def test_split_kernel_on_slices(tmp_path):
    x = np.random.default_rng(11).standard_normal((2, 7, 3)).astype(np.float32)
    parts = np.split(x, [2, 6], axis=1)
    outs = tuple(f"y{i}" for i in range(3))
    node = Node("s", "Split", ("x",), outs, {"axis": 1, "split": (2, 4, 1)})
    tensors = [Tensor("x", x.shape, "float32", "input")]
    tensors += [Tensor(n, p.shape, "float32", "output") for n, p in zip(outs, parts)]
    graph = Graph("g", {t.name: t for t in tensors}, (node,), ("x",), outs)
    got = run_kernel(tmp_path, registry.get("Split").kernel(graph, node), graph, {"x": x},
                     {"x": Place(pad=1, step=2), **{n: 1 for n in outs}})
    assert len(got) == 3
    for y, part in zip(got, parts):
        np.testing.assert_array_equal(y, part)


# --------------------------------------------------------------------------- channel shuffle (passes/shuffle.py)


def shuffle_model(dtype, channels=(3, 3), perm=(0, 2, 1, 3, 4), hw=(4, 5)):
    """Concat of the branches on axis 1, then torch's channel_shuffle: Reshape [N, g, C/g, H, W] ->
    Transpose(perm) -> Reshape [N, C, H, W] (ShuffleNetV2 as exported)."""
    g, c = len(channels), sum(channels)
    names = [f"b{k}" for k in range(g)]
    nodes = [helper.make_node("Concat", names, ["cat"], axis=1),
             helper.make_node("Reshape", ["cat", "s5"], ["r5"]),
             helper.make_node("Transpose", ["r5"], ["t"], perm=list(perm)),
             helper.make_node("Reshape", ["t", "s4"], ["y"])]
    five = [1, g, c // g, *hw]
    four = [1, c, *hw]
    return checked_model(nodes, [vi(n, dtype, (1, k, *hw)) for n, k in zip(names, channels)],
                         [vi("y", dtype, four)], [i64("s5", five), i64("s4", four)])


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("channels", [(3, 3), (2, 2, 2)], ids=["g2", "g3"])
def test_channel_shuffle_of_a_concat_is_one_concat(dtype, channels):
    """No Transpose: the branches are concatenated along a new axis 2, as views, in one Concat; the
    values are onnxruntime's exactly, in the reference and the C."""
    m = shuffle_model(dtype, channels)
    feeds = {f"b{k}": random(dtype, (1, c, 4, 5), np.random.default_rng(20 + k)) for k, c in enumerate(channels)}
    graph, _ = reference_outputs(m, feeds)
    assert [n.op for n in graph.nodes] == ["Reshape"] * len(channels) + ["Concat", "Reshape"]
    assert graph.nodes[-2].attr("axis") == 2
    check_exact(m, feeds)


@pytest.mark.parametrize("channels, perm", [((2, 4), (0, 2, 1, 3, 4)), ((3, 3), (0, 1, 2, 4, 3))],
                         ids=["unequal_branches", "other_perm"])
def test_other_transposes_of_a_concat_stay(channels, perm):
    m = shuffle_model("float32", channels, perm, hw=(4, 4))
    feeds = {f"b{k}": random("float32", (1, c, 4, 4), np.random.default_rng(30 + k)) for k, c in enumerate(channels)}
    graph, _ = reference_outputs(m, feeds)
    assert [n.op for n in graph.nodes].count("Transpose") == 1
    check_exact(m, feeds)
