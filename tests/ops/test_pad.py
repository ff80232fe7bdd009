"""Pad: numpy reference against onnxruntime (float exact, int8 QDQ exact), the C kernel against the
reference on strided views and through the host build."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry

from .onnx_helpers import (check_strided_c, compile_graph, host_run, int8_input, make_model,
                           ort_run, ref_run, single_node)


def pad_model(shape, pads, mode="constant", value=None, axes=None, opset=19, qdq=None):
    extra = [("pads", np.array(pads, np.int64))]
    if value is not None or axes is not None:
        extra.append(("value", None if value is None else np.array(value, np.float32)))
    if axes is not None:
        extra.append(("axes", np.array(axes, np.int64)))
    return make_model("Pad", {"mode": mode}, shape, opset=opset, extra_inputs=extra, qdq=qdq)


CASES = [
    # (shape, pads, mode, value, axes, opset)
    ((1, 3, 5, 6), [0, 0, 1, 2, 0, 0, 2, 1], "constant", None, None, 11),
    ((1, 3, 5, 6), [0, 0, 1, 2, 0, 0, 2, 1], "constant", 1.5, None, 13),
    ((1, 3, 5, 6), [0, 1, 1, 2, 0, 2, 2, 1], "constant", -2.0, None, 19),
    ((1, 3, 5, 6), [0, 0, 2, 3, 0, 0, 4, 5], "reflect", None, None, 13),
    ((1, 3, 5, 6), [0, 0, 2, 3, 0, 0, 4, 1], "edge", None, None, 13),
    ((1, 3, 5, 6), [0, 0, 2, 3, 0, 0, 4, 5], "wrap", None, None, 19),
    ((1, 3, 5, 6), [0, 0, -1, 2, 0, 0, 1, -2], "constant", 0.5, None, 13),
    ((1, 3, 5, 6), [0, 0, -1, 2, 0, 0, 1, -2], "edge", None, None, 13),
    ((1, 3, 5, 6), [1, 2, 0, 1], "constant", 3.0, [2, -1], 18),
    ((1, 3, 5, 6), [2, 3, 1, 0], "reflect", None, [-2, 3], 18),
    ((2, 7), [1, 2, 3, 0], "constant", None, None, 13),
    ((9,), [2, 3], "reflect", None, None, 13),
    ((1, 4, 11), [0, 0, 2, 0, 0, 3], "edge", None, None, 13),
    ((1, 2, 3, 4, 5), [0, 0, 1, 1, 1, 0, 0, 1, 2, 0], "constant", 0.25, None, 13),
]


@pytest.mark.parametrize("shape,pads,mode,value,axes,opset", CASES)
def test_float_matches_onnxruntime(shape, pads, mode, value, axes, opset):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    model = pad_model(shape, pads, mode, value, axes, opset)
    np.testing.assert_array_equal(ref_run(model, x), ort_run(model, x))


def test_opset2_attributes():
    shape = (1, 2, 3, 4)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    model = make_model("Pad", dict(mode="constant", pads=[0, 0, 1, 2, 0, 0, 2, 1], value=0.5), shape, opset=10)
    np.testing.assert_array_equal(ref_run(model, x), ort_run(model, x))


@pytest.mark.parametrize("shape,pads,mode,value,axes,opset", CASES)
def test_int8_matches_onnxruntime(shape, pads, mode, value, axes, opset):
    rng = np.random.default_rng(2)
    x = int8_input(rng, shape)
    model = pad_model(shape, pads, mode, value, axes, opset, qdq=(0.05, 7, 0.05, 7))
    graph = compile_graph(model)
    single_node(graph, "Pad", "int8")
    np.testing.assert_array_equal(ref_run(model, x), ort_run(model, x))


@pytest.mark.parametrize("mode,value", [("constant", 7), ("edge", None), ("reflect", None), ("wrap", None)])
def test_int32(mode, value, tmp_path):
    shape = (2, 3, 4)
    rng = np.random.default_rng(6)
    x = rng.integers(-1000, 1000, shape).astype(np.int32)
    extra = [("pads", np.array([0, 1, 2, 1, 0, 3], np.int64))]
    if value is not None:
        extra.append(("value", np.array(value, np.int32)))
    model = make_model("Pad", {"mode": mode}, shape, extra_inputs=extra, dtype=TensorProto.INT32)
    np.testing.assert_array_equal(ref_run(model, x), ort_run(model, x))
    check_strided_c(tmp_path, model, x)
    np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))


def test_int8_pad_value_is_the_zero_point():
    model = pad_model((1, 2, 3, 3), [0, 0, 1, 1, 0, 0, 1, 1], qdq=(0.1, -5, 0.1, -5))
    y = ref_run(model, np.full((1, 2, 3, 3), 9, np.int8))
    assert y[0, 0, 0, 0] == -5 and y[0, 0, 1, 1] == 9


def test_int8_declines_different_quantization():
    """Pad cannot requantize: with different scales it stays in float between Dequantize/Quantize."""
    model = pad_model((1, 2, 3, 3), [0, 0, 1, 1, 0, 0, 1, 1], qdq=(0.1, 0, 0.05, 0))
    graph = compile_graph(model)
    assert "Pad" in [n.op for n in graph.nodes]
    assert graph[graph.node(next(n.name for n in graph.nodes if n.op == "Pad")).inputs[0]].dtype == "float32"
    x = int8_input(np.random.default_rng(3), (1, 2, 3, 3))
    np.testing.assert_array_equal(ref_run(model, x), ort_run(model, x))


def test_tensor_expression():
    model = pad_model((1, 3, 5, 6), [0, 0, 1, 2, 0, 0, 2, 1])
    graph = compile_graph(model)
    e = registry.get("Pad").expr(graph, graph.nodes[0])
    dims = e.inputs[0]
    assert [d.kind for d in dims] == ["identity", "identity", "window", "window"]
    assert (dims[2].axis, dims[2].kernel, dims[2].stride, dims[2].pad) == ("d2", "k2", 1, 1)
    assert e.axis("d2").extent == 8 and e.axis("k2").extent == 1
    graph = compile_graph(pad_model((1, 3, 5, 6), [0, 0, 1, 2, 0, 0, 2, 1], mode="reflect"))
    e = registry.get("Pad").expr(graph, graph.nodes[0])
    assert [d.kind for d in e.inputs[0]] == ["identity", "identity", "full", "full"]


def test_unsupported():
    shape = (1, 2, 3, 3)
    model = make_model("Pad", {}, shape, extra_inputs=[("pads", np.zeros(8, np.int64))])
    model.graph.initializer.pop()
    model.graph.input.append(helper.make_tensor_value_info("pads", TensorProto.INT64, [8]))
    with pytest.raises(UnsupportedError, match="pads must be a constant"):
        import_onnx(model)


C_CASES = [CASES[i] for i in (0, 2, 3, 4, 5, 6, 9, 11, 13)]


@pytest.mark.parametrize("shape,pads,mode,value,axes,opset", C_CASES)
def test_c_strided_views_match_reference(shape, pads, mode, value, axes, opset, tmp_path):
    rng = np.random.default_rng(4)
    check_strided_c(tmp_path, pad_model(shape, pads, mode, value, axes, opset),
                    rng.standard_normal(shape).astype(np.float32))
    check_strided_c(tmp_path, pad_model(shape, pads, mode, value, axes, opset, qdq=(0.05, 7, 0.05, 7)),
                    int8_input(rng, shape))


@pytest.mark.parametrize("shape,pads,mode,value,axes,opset", C_CASES[::2])
def test_host_build_matches_reference(shape, pads, mode, value, axes, opset):
    rng = np.random.default_rng(5)
    model = pad_model(shape, pads, mode, value, axes, opset)
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))
    model = pad_model(shape, pads, mode, value, axes, opset, qdq=(0.05, 7, 0.05, 7))
    x = int8_input(rng, shape)
    np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))
