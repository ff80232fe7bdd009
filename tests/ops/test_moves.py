"""The data-moving kernels TFLite models brought (StridedSlice, BroadcastTo, GatherIndexed, GatherND, Cast,
Requantize, Pad's symmetric mode and int16) on strided views with garbage around them, against their numpy
references; Cast's conversions where C leaves them open; a Slice that must be contiguous becomes a copy,
one that need not stays a view."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry
from mcudeploy.ops.cast import cast
from mcudeploy.passes.slices import materialize_slices
from mcudeploy.reference import run_reference

from .kernel_harness import Place, needs_gcc, run_kernel

STRIDED = Place(pad=1, step=2)


def _graph(node: Node, tensors: list[Tensor], arithmetic: str = "tflite") -> Graph:
    ins = tuple(t.name for t in tensors if t.kind == "input")
    outs = tuple(t.name for t in tensors if t.kind == "output")
    return Graph("g", {t.name: t for t in tensors}, (node,), ins, outs, arithmetic=arithmetic)


def _check(tmp_path, graph: Graph, inputs: dict, place=None):
    node = graph.nodes[0]
    want = run_reference(graph, [inputs[n] for n in graph.inputs])
    call = registry.get(node.op).kernel(graph, node)
    place = place or {name: STRIDED for name in call.views if name}
    got = run_kernel(tmp_path, call, graph, inputs, place)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    return want


def _out(node: Node, tensors: list[Tensor], dtype: str, quant=None) -> Tensor:
    g = Graph("s", {t.name: t for t in tensors}, (), (), (), arithmetic="tflite")
    (shape, dt), = registry.get(node.op).infer(g, node)
    return Tensor(node.outputs[0], tuple(shape), dt, "output", quant)


@needs_gcc
@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
@pytest.mark.parametrize("begin,step,size", [
    ((1, 5, 0), (1, -1, 2), (2, 6, 3)),  # a dimension read backwards
    ((0, 1, 4), (2, 3, -2), (2, 2, 3)),  # steps, one negative on the last dimension
])
def test_strided_slice_on_strided_views(tmp_path, dtype, begin, step, size):
    x = Tensor("x", (3, 7, 5), dtype, "input")
    node = Node("s", "StridedSlice", ("x",), ("y",), {"begin": begin, "step": step, "size": size})
    graph = _graph(node, [x, _out(node, [x], dtype)])
    value = np.random.default_rng(0).integers(-100, 100, x.shape).astype(dtype)
    want = _check(tmp_path, graph, {"x": value})[0]
    np.testing.assert_array_equal(want, value[np.ix_(*(b + s * np.arange(k) for b, s, k in zip(begin, step, size)))])


@needs_gcc
def test_broadcast_to_repeats_dimensions_of_one_and_missing_ones(tmp_path):
    x = Tensor("x", (3, 1, 4), "int16", "input")
    node = Node("b", "BroadcastTo", ("x",), ("y",), {"shape": (2, 3, 5, 4)})
    graph = _graph(node, [x, _out(node, [x], "int16")])
    value = np.arange(12, dtype=np.int16).reshape(3, 1, 4)
    want = _check(tmp_path, graph, {"x": value})[0]
    np.testing.assert_array_equal(want, np.broadcast_to(value, (2, 3, 5, 4)))


@needs_gcc
@pytest.mark.parametrize("axis,batch,p_shape", [(1, 0, (2, 3)), (2, 1, (2, 4)), (0, 0, (5,))])
def test_gather_by_a_positions_tensor(tmp_path, axis, batch, p_shape):
    x = Tensor("x", (2, 6, 5), "float32", "input")
    p = Tensor("p", p_shape, "int32", "input")
    node = Node("g", "GatherIndexed", ("x", "p"), ("y",), {"axis": axis, "batch_dims": batch})
    graph = _graph(node, [x, p, _out(node, [x, p], "float32")])
    rng = np.random.default_rng(1)
    value = rng.standard_normal(x.shape).astype(np.float32)
    positions = rng.integers(-2, x.shape[axis] + 2, p_shape).astype(np.int32)  # some outside: clamped
    want = _check(tmp_path, graph, {"x": value, "p": positions})[0]
    if batch == 0:
        np.testing.assert_array_equal(want, np.take(value, np.clip(positions, 0, x.shape[axis] - 1), axis=axis))


@needs_gcc
@pytest.mark.parametrize("positions", [[[1, 2], [0, 5], [1, 0]], [[0, 7], [-1, 0]], [[1], [0]]])
def test_gather_nd_reads_row_major_offsets_as_tflite_micro(tmp_path, positions):
    x = Tensor("x", (2, 6, 5), "int8", "input")
    p = constant("p", np.array(positions, np.int32))
    node = Node("g", "GatherND", ("x", "p"), ("y",))
    graph = _graph(node, [x, p, _out(node, [x, p], "int8")])
    value = np.arange(60, dtype=np.int8).reshape(2, 6, 5)
    want = _check(tmp_path, graph, {"x": value}, {"x": STRIDED, "y": STRIDED})[0]
    flat = value.reshape((-1,) + value.shape[len(positions[0]):])
    counts = [int(np.prod(value.shape[j + 1:len(positions[0])])) for j in range(len(positions[0]))]
    rows = np.clip(np.array(positions) @ np.array(counts), 0, flat.shape[0] - 1)  # (0, 7) is row 1, 1
    np.testing.assert_array_equal(want, flat[rows])


@needs_gcc
@pytest.mark.parametrize("din,dout", [("float32", "int32"), ("float32", "int8"), ("int32", "float32"),
                                      ("int8", "int32"), ("int32", "int16"), ("bool", "float32"),
                                      ("int16", "int8"), ("uint32", "int32"), ("int32", "uint32"),
                                      ("uint32", "int8"), ("uint32", "float32"), ("int16", "uint32")])
def test_cast(tmp_path, din, dout):
    x = Tensor("x", (4, 6), din, "input")
    node = Node("c", "Cast", ("x",), ("y",), {"to": dout})
    graph = _graph(node, [x, Tensor("y", (4, 6), dout, "output")])
    rng = np.random.default_rng(2)
    if din == "float32":
        value = (rng.standard_normal(x.shape) * 200).astype(np.float32)
        value[0, :4] = [3e38, -3e38, 3e9, -2.9]  # beyond int32 (the harness writes no NaN)
    elif din == "bool":
        value = rng.integers(0, 2, x.shape).astype(np.bool_)
    else:
        info = np.iinfo(din)
        value = rng.integers(info.min, int(info.max) + 1, x.shape).astype(din)
    _check(tmp_path, graph, {"x": value})


def test_cast_rounds_toward_zero_saturates_and_wraps():
    x = np.array([2.9, -2.9, np.nan, 3e9, -3e9, 200.7, -129.5], np.float32)
    assert cast(x, "int32").tolist() == [2, -2, 0, 2**31 - 1, -2**31, 200, -129]
    assert cast(x, "int8").tolist() == [2, -2, 0, -1, 0, -56, 127]
    assert cast(np.array([300, -129], np.int32), "int8").tolist() == [44, 127]


@needs_gcc
@pytest.mark.parametrize("din,dout", [("int8", "int8"), ("int8", "int16"), ("int16", "int8"), ("int32", "int16")])
def test_requantize_on_strided_views_and_in_place(tmp_path, din, dout):
    x = Tensor("x", (3, 8), din, "input", Quant((0.05,), (3 if din == "int8" else 0,)))
    y = Tensor("y", (3, 8), dout, "output", Quant((0.031,), (-5 if dout == "int8" else 0,)))
    node = Node("q", "Requantize", ("x",), ("y",), {"qdtype": dout})
    graph = _graph(node, [x, y])
    info = np.iinfo(din)
    value = np.random.default_rng(3).integers(max(info.min, -40000), min(int(info.max), 40000) + 1,
                                             x.shape).astype(din)
    _check(tmp_path, graph, {"x": value})
    if din == dout:
        call = registry.get("Requantize").kernel(graph, node)
        got = run_kernel(tmp_path, call, graph, {"x": value}, {"x": 1}, inplace={"y": "x"})[0]
        np.testing.assert_array_equal(got, run_reference(graph, [value])[0])


@needs_gcc
@pytest.mark.parametrize("mode", ["symmetric", "reflect", "constant"])
def test_int16_pad_with_a_code(tmp_path, mode):
    x = Tensor("x", (2, 4, 3), "int16", "input", Quant((0.001,), (0,)))
    node = Node("p", "Pad", ("x",), ("y",), {"pads": (0, 3, 1, 0, 2, 2), "axes": None, "mode": mode, "value": 0.0,
                                            "code": -7})
    graph = _graph(node, [x, _out(node, [x], "int16", x.quant)])
    value = np.arange(24, dtype=np.int16).reshape(2, 4, 3)
    want = _check(tmp_path, graph, {"x": value})[0]
    numpy_mode = {"symmetric": "symmetric", "reflect": "reflect", "constant": "constant"}[mode]
    kw = {"constant_values": -7} if mode == "constant" else {}
    np.testing.assert_array_equal(want, np.pad(value, [(0, 0), (3, 2), (1, 2)], numpy_mode, **kw))


# ---------------------------------------------------------------- a Slice that cannot be a view


def _slice_graph(then: str) -> Graph:
    x = Tensor("x", (1, 4, 6, 6), "float32", "input")
    s = Tensor("s", (1, 4, 2, 6), "float32")
    nodes = [Node("slice", "Slice", ("x",), ("s",), {"starts": (1,), "ends": (3,), "axes": (2,)})]
    tensors = {"x": x, "s": s}
    if then == "Reshape":
        tensors["y"] = Tensor("y", (1, 48), "float32", "output")
        nodes.append(Node("r", "Reshape", ("s",), ("y",), {"shape": (1, 48), "allowzero": 0}))
    else:
        tensors["y"] = Tensor("y", (1, 4, 2, 6), "float32", "output")
        nodes.append(Node("r", "Relu", ("s",), ("y",)))
    return Graph("g", tensors, tuple(nodes), ("x",), ("y",))


def test_a_reshaped_window_that_is_not_contiguous_is_copied():
    graph = materialize_slices(_slice_graph("Reshape"))
    assert graph.nodes[0].op == "StridedSlice"
    x = np.random.default_rng(4).standard_normal((1, 4, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(run_reference(graph, [x])[0], x[:, :, 1:3, :].reshape(1, 48))


def test_a_window_a_kernel_reads_stays_a_view():
    assert materialize_slices(_slice_graph("Relu")).nodes[0].op == "Slice"


# ---------------------------------------------------------------- cut into pieces (mcudeploy/partition)


def _one_op(op: str, attrs: dict, x: Tensor, extra=()) -> Graph:
    node = Node("n", op, ("x",) + tuple(t.name for t in extra), ("y",), attrs)
    tensors = [x, *extra]
    q = x.quant if op != "Requantize" else Quant((0.03,), (-2,))
    return _graph(node, tensors + [_out(node, tensors, attrs.get("to", attrs.get("qdtype", x.dtype)), q)])


CUTS = [
    ("StridedSlice", {"begin": (0, 1, 6), "step": (1, 2, -1), "size": (2, 3, 7)}, "int8", ()),
    ("BroadcastTo", {"shape": (3, 6, 7)}, "int8", ()),
    ("GatherIndexed", {"axis": 2, "batch_dims": 0}, "int8", (constant("p", np.array([[6, 0], [3, 3]], np.int32)),)),
    ("GatherND", {}, "int8", (constant("p", np.array([[1, 2], [0, 5], [1, 1]], np.int32)),)),
    ("Cast", {"to": "float32"}, "int8", ()),
    ("Requantize", {"qdtype": "int8"}, "int8", ()),
]


@pytest.mark.parametrize("op,attrs,dtype,extra", CUTS, ids=[c[0] for c in CUTS])
def test_cut_along_every_axis_computes_the_same(op, attrs, dtype, extra):
    from mcudeploy.partition import Cut, check_cut, split

    shape = (1, 6, 7) if op == "BroadcastTo" else (2, 6, 7)
    x = Tensor("x", shape, dtype, "input", Quant((0.05,), (1,)))
    graph = _graph_with_relu(_one_op(op, attrs, x, extra))
    value = np.random.default_rng(5).integers(-128, 128, shape).astype(dtype)
    want = run_reference(graph, [value])
    node = graph.nodes[0]
    cut_any = False
    for axis in registry.get(op).expr(graph, node).axes:
        if axis.kind != "spatial" or axis.extent < 2:
            continue
        relu_axis = f"d{[a.name for a in registry.get(op).expr(graph, node).axes].index(axis.name)}"
        cut = Cut(((node.name, axis.name), ("relu", relu_axis)), 2)
        if check_cut(graph, cut) is not None:  # an axis the operator cannot be cut along: full, a reversed read
            continue
        got = run_reference(split(graph, (cut,)), [value])
        np.testing.assert_array_equal(got[0], want[0])
        cut_any = True
    assert cut_any


def _graph_with_relu(graph: Graph) -> Graph:
    """The operator's output through a Relu (of the output's type), so a cut has a consumer to follow."""
    y = graph[graph.outputs[0]]
    mid = y.with_(name="mid", kind="activation")
    node = graph.nodes[0].with_(outputs=("mid",))
    relu = Node("relu", "Relu", ("mid",), ("y",))
    tensors = {**{k: t for k, t in graph.tensors.items() if k != "y"}, "mid": mid, "y": y}
    return Graph("g", tensors, (node, relu), graph.inputs, ("y",), arithmetic="tflite")
