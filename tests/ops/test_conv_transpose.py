"""ConvTranspose: the numpy reference against a literal transcription of TensorFlow Lite Micro's scatter
(reference_ops::TransposeConv and reference_integer_ops::TransposeConv), the C kernels against the reference
on strided views, pieces along batch and output channels, and the declaration (tensor expression,
refusals)."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry, requant
from mcudeploy.ops.base import Dim
from mcudeploy.partition import Cut, split
from mcudeploy.compile import compile_graph
from mcudeploy.reference import run_reference

from .kernel_harness import Place, channels_last, needs_gcc, run_kernel

OP = registry.get("ConvTranspose")

# (id, input NHWC, output channels, kernel, stride, begin pads, output H and W, fused activation)
CASES = [
    ("3x3-s2-same", (1, 5, 6, 3), 4, (3, 3), (2, 2), (0, 0), (10, 12), None),
    ("2x2-s2-valid", (2, 4, 3, 2), 3, (2, 2), (2, 2), (0, 0), (8, 6), None),
    ("5x5-s1-relu", (1, 4, 4, 2), 5, (5, 5), (1, 1), (2, 2), (4, 4), (0.0, float("inf"))),
    ("3x2-s21", (1, 5, 4, 3), 2, (3, 2), (2, 1), (1, 0), (9, 5), None),
    ("odd-output", (1, 5, 6, 4), 3, (3, 3), (2, 2), (1, 1), (9, 11), None),
    ("output-padding", (1, 3, 3, 2), 2, (1, 1), (2, 2), (0, 0), (6, 6), None),
    ("1-wide", (1, 1, 7, 3), 4, (1, 5), (1, 2), (0, 2), (1, 14), None),
]


def _graph(case, dtype: str, bias: bool = True, seed: int = 0) -> tuple[Graph, Node, dict]:
    """One ConvTranspose in IR (NCHW, weights (C_in, C_out, KH, KW)) and an input, quantized as TFLite's."""
    _, (n, h, w, c), oc, (kh, kw), stride, pads, (oh, ow), act = case
    rng = np.random.default_rng(seed)
    end = [stride[i] * ((h, w)[i] - 1) + (kh, kw)[i] - pads[i] - (oh, ow)[i] for i in range(2)]
    attrs = {"group": 1, "strides": stride, "dilations": (1, 1), "pads": (*pads, *(max(e, 0) for e in end)),
             "output_padding": tuple(max(-e, 0) for e in end)}
    if act is not None:
        attrs.update(clip_min=act[0], clip_max=act[1])
    tensors = {}
    if dtype == "float32":
        x = rng.uniform(-2, 2, (n, c, h, w)).astype(np.float32)
        tensors["w"] = constant("w", rng.normal(0, 0.5, (c, oc, kh, kw)).astype(np.float32))
        if bias:
            tensors["b"] = constant("b", rng.normal(0, 0.5, oc).astype(np.float32))
        qx = qy = None
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max + 1, (n, c, h, w)).astype(dtype)
        sw = tuple(float(s) for s in rng.uniform(0.002, 0.01, oc))
        tensors["w"] = constant("w", rng.integers(-127, 128, (c, oc, kh, kw)).astype(np.int8),
                                Quant(sw, (0,) * oc, 1))
        sx, zx = (0.03, 5) if dtype == "int8" else (0.0005, 0)
        if bias:
            wide = dtype == "int16"
            tensors["b"] = constant("b", rng.integers(-5000, 5000, oc).astype(np.int64 if wide else np.int32),
                                    Quant(tuple(sx * s for s in sw), (0,) * oc, 0))
        qx = Quant((sx,), (zx,))
        qy = Quant((0.05,), (-3,)) if dtype == "int8" else Quant((0.002,), (0,))
    tensors["x"] = Tensor("x", x.shape, dtype, "input", qx)
    tensors["y"] = Tensor("y", (n, oc, oh, ow), dtype, "output", qy)
    node = Node("ct", "ConvTranspose", ("x", "w", "b" if bias else ""), ("y",), attrs)
    graph = Graph("ct", tensors, [node], ["x"], ["y"], arithmetic="tflite")
    (shape, got), = OP.infer(graph, node)
    assert shape == (n, oc, oh, ow) and got == dtype
    assert dtype == "float32" or OP.accepts_int8(graph, node)
    return graph, node, {"x": x}


def _tflm_scatter(graph: Graph, node: Node, x: np.ndarray) -> np.ndarray:
    """TensorFlow Lite Micro's TransposeConv as written (NHWC, filter [OC, KH, KW, IC], loops over the input),
    on Python integers: the scratch summed in int32 (wrapping), per channel MultiplyByQuantizedMultiplier,
    or the int64 one at 16x8; floats in float32."""
    xn = x.transpose(0, 2, 3, 1)
    w = graph["w"].data.transpose(1, 2, 3, 0)  # (C_in, C_out, KH, KW) -> [OC, KH, KW, IC]
    b = graph["b"].data if "b" in graph.tensors else None
    n, h, wd, c = xn.shape
    oc, kh, kw, _ = w.shape
    _, _, oh, ow = graph["y"].shape
    sh, sw = node.attrs["strides"]
    ph, pw = node.attrs["pads"][:2]
    floats = x.dtype == np.float32
    zx = 0 if floats else graph["x"].quant.zero_point[0]
    acc = np.zeros((n, oh, ow, oc), np.float32 if floats else object)
    for bi in range(n):
        for iy in range(h):
            for ix in range(wd):
                for ic in range(c):
                    for fy in range(kh):
                        for fx in range(kw):
                            for o in range(oc):
                                y, xx = iy * sh - ph + fy, ix * sw - pw + fx
                                if 0 <= y < oh and 0 <= xx < ow:
                                    if floats:
                                        acc[bi, y, xx, o] += np.float32(xn[bi, iy, ix, ic] * w[o, fy, fx, ic])
                                    else:
                                        acc[bi, y, xx, o] += (int(xn[bi, iy, ix, ic]) - zx) * int(w[o, fy, fx, ic])
    if floats:
        out = acc + (b if b is not None else 0)
        lo, hi = requant.float_clip(node)
        return np.clip(out, lo, hi).astype(np.float32).transpose(0, 3, 1, 2)
    mult, shift = OP._requant(graph, node)
    lo, hi = requant.clip_range(node, graph["y"])
    out = np.zeros(acc.shape, np.int64)
    for idx in np.ndindex(acc.shape):
        o = idx[3]
        total = acc[idx] + (int(b[o]) if b is not None else 0)
        if x.dtype == np.int16:
            q = _tflite_requantize64_literal(total, int(mult[o]), 31 - int(shift[o]))
        else:
            total = (total + 2**31) % 2**32 - 2**31  # the int32 scratch wraps
            q = int(requant.tflite_requantize(np.array([total]), int(mult[o]), int(shift[o]))[0])
            q += graph["y"].quant.zero_point[0]
        out[idx] = min(max(q, lo), hi)
    return out.astype(x.dtype).transpose(0, 3, 1, 2)


def _tflite_requantize64_literal(x: int, mult: int, exponent: int) -> int:
    """MultiplyByQuantizedMultiplier(int64_t, int32_t, int) as TFLite writes it, on Python integers."""
    reduced = (mult + (1 << 15)) >> 16 if mult < 0x7FFF0000 else 0x7FFF
    total = 15 - exponent
    result = (x * reduced + (1 << (total - 1))) >> total
    return (result + 2**31) % 2**32 - 2**31


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_reference_is_tflite_micros_scatter(case, dtype):
    graph, node, inputs = _graph(case, dtype, bias=case[0] != "3x2-s21")
    got = run_reference(graph, inputs)[0]
    want = _tflm_scatter(graph, node, inputs["x"])
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@needs_gcc
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernel_on_strided_views(tmp_path, case, dtype):
    graph, node, inputs = _graph(case, dtype, seed=1)
    want = run_reference(graph, inputs)[0]
    place = {"x": Place(2, channels_last(4)), "y": Place(1, step=2)}
    got = run_kernel(tmp_path, OP.kernel(graph, node), graph, inputs, place)[0]
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@needs_gcc
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
def test_pieces_along_output_channels_and_batch(tmp_path, dtype):
    """Each piece reads its own slice of the weights, bias and per-channel scales: the same outputs, in numpy
    and in C."""
    case = ("pieces", (2, 4, 5, 3), 6, (3, 3), (2, 2), (1, 1), (7, 9), None)
    graph, node, inputs = _graph(case, dtype, seed=2)
    want = run_reference(graph, inputs)[0]
    for axis, pieces in (("oc", 3), ("n", 2)):
        cut = split(graph, (Cut(((node.name, axis),), pieces),))
        assert sum(n.op == "ConvTranspose" for n in cut.nodes) == pieces
        np.testing.assert_array_equal(run_reference(cut, inputs)[0], want)
        got = run_compiled_on_host(compile_graph(cut, "host"), [inputs], tmp_path)[0][0]
        if dtype == "float32":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(got, want)


def test_expr_splits_channels_not_space():
    graph, node, _ = _graph(CASES[0], "int8")
    e = OP.expr(graph, node)
    assert [(a.name, a.extent, a.kind) for a in e.axes] == [
        ("n", 1, "spatial"), ("oc", 4, "spatial"), ("oh", 10, "spatial"), ("ow", 12, "spatial"),
        ("ic", 3, "reduction"), ("kh", 3, "reduction"), ("kw", 3, "reduction")]
    assert e.inputs[0] == (Dim.identity("n"), Dim.identity("ic"), Dim.full(), Dim.full())
    assert e.inputs[1][:2] == (Dim.identity("ic"), Dim.identity("oc")) and e.inputs[2] == (Dim.identity("oc"),)
    assert OP.piece(graph, node, "oh", (0, 5), (0, 0)) is None
    assert OP.macs(graph, node) == 1 * 3 * 5 * 6 * 4 * 9


def test_refusals_are_one_sentence():
    graph, node, _ = _graph(CASES[0], "int8")
    assert not OP.accepts_int8(graph.replace(arithmetic="onnx"), node)  # TFLite's arithmetic only
    wide = graph.replace(tensors={**graph.tensors, "b": constant("b", graph["b"].data.astype(np.int64),
                                                                 graph["b"].quant)})
    with pytest.raises(UnsupportedError, match="needs an int32 bias"):
        OP.infer(wide, node)
    bad = Node("ct", "ConvTranspose", node.inputs, node.outputs, {**node.attrs, "pads": (9, 9, 9, 9)})
    with pytest.raises(UnsupportedError, match="output would be empty"):
        OP.infer(graph, bad)


# ---------------------------------------------------------------------------------------------- ONNX

ONNX_CASES = [  # (id, input shape, weights shape (C_in, C_out/group, KH, KW), attributes)
    ("stride2-pads-output-padding", (1, 3, 4, 5), (3, 2, 3, 3), dict(strides=[2, 2], pads=[1, 0, 0, 1],
                                                                     output_padding=[1, 1])),
    ("dilation-groups", (2, 4, 5, 4), (4, 3, 2, 3), dict(dilations=[2, 1], group=2, strides=[1, 2])),
    ("same-upper", (1, 2, 5, 6), (2, 3, 3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    ("output-shape", (1, 2, 4, 4), (2, 2, 3, 3), dict(strides=[3, 2], output_shape=[12, 9])),
    ("1d", (1, 3, 7), (3, 4, 5), dict(strides=[2], pads=[2, 1])),
]


@pytest.mark.parametrize("case", ONNX_CASES, ids=[c[0] for c in ONNX_CASES])
def test_onnx_float_matches_onnxruntime(case):
    from onnx import TensorProto, helper, numpy_helper

    from .onnx_helpers import host_outputs, ort_outputs

    _, x_shape, w_shape, attrs = case
    rng = np.random.default_rng(5)
    w = rng.normal(0, 0.5, w_shape).astype(np.float32)
    b = rng.normal(0, 0.5, w_shape[1] * attrs.get("group", 1)).astype(np.float32)
    g = helper.make_graph([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], "ct",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = rng.uniform(-2, 2, x_shape).astype(np.float32)
    want = ort_outputs(model, {"x": x})[0]
    got = host_outputs(model, [{"x": x}])[0][0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_onnx_qdq_stays_float_and_matches_onnxruntime():
    """An ONNX model's quantized ConvTranspose has no integer kernel (TFLite's arithmetic only): it computes in
    float between DequantizeLinear and QuantizeLinear, as onnxruntime does."""
    from onnx import TensorProto, helper, numpy_helper

    from .onnx_helpers import host_outputs, ort_outputs

    rng = np.random.default_rng(6)
    q = {"sx": (0.05, 3), "sw": (0.01, 0), "sy": (0.1, -2)}
    inits = [numpy_helper.from_array(rng.integers(-127, 128, (3, 2, 3, 3)).astype(np.int8), "wq")]
    for name, (scale, zero) in q.items():
        inits += [numpy_helper.from_array(np.array(scale, np.float32), name),
                  numpy_helper.from_array(np.array(zero, np.int8), "z" + name[1:])]
    nodes = [helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"]),
             helper.make_node("ConvTranspose", ["x", "w"], ["t"], strides=[2, 2]),
             helper.make_node("QuantizeLinear", ["t", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("xq", TensorProto.INT8, (1, 3, 4, 4))],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = rng.integers(-128, 128, (1, 3, 4, 4)).astype(np.int8)
    np.testing.assert_array_equal(host_outputs(model, [{"xq": x}])[0][0], ort_outputs(model, {"xq": x})[0])
