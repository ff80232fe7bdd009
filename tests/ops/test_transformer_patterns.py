"""mcudeploy/passes/transformer.py: torch's decomposed LayerNormalization and erf-Gelu become one
operator each (the lowered graph is that operator, it agrees with onnxruntime on the decomposed
model, and the C with the reference), and chains that differ are left as they are and still run."""
from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.frontend import import_onnx
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference

from .onnx_helpers import host_outputs, ort_outputs

SHAPE = (1, 6, 16)


class _Chain:
    def __init__(self):
        self.nodes, self.inits = [], []

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op, inputs, out, **attrs):
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=out, **attrs))
        return out

    def model(self, opset, outputs=("y",)):
        graph = helper.make_graph(self.nodes, "pattern", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                                  [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                                  self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _reduce_mean(c, x, out, opset, axes):
    if opset >= 18:
        return c.op("ReduceMean", [x, c.const(f"{out}_axes", np.array(axes, np.int64))], out)
    return c.op("ReduceMean", [x], out, axes=list(axes))


def layernorm_chain(opset=13, axes=(-1,), scale=True, bias=True, eps=1e-5, out_inner=False):
    """torch.onnx.export's LayerNorm below opset 17."""
    rng = np.random.default_rng(0)
    norm = SHAPE[len(SHAPE) - len(axes):]
    c = _Chain()
    m = _reduce_mean(c, "x", "mean", opset, axes)
    d = c.op("Sub", ["x", m], "d")
    p = c.op("Pow", [d, c.const("two", np.array(2.0, np.float32))], "p")
    v = _reduce_mean(c, p, "var", opset, axes)
    e = c.op("Add", [v, c.const("eps", np.array(eps, np.float32))], "ve")
    s = c.op("Sqrt", [e], "std")
    y = c.op("Div", [d, s], "y" if not (scale or bias) else "n")
    if scale:
        y = c.op("Mul", [y, c.const("g", (1 + 0.2 * rng.standard_normal(norm)).astype(np.float32))],
                 "y" if not bias else "ns")
    if bias:
        y = c.op("Add", [c.const("b", (0.1 * rng.standard_normal(norm)).astype(np.float32)), y], "y")
    return c.model(opset, ("y", "std") if out_inner else ("y",))


def gelu_chain(order="torch", mul_form=False, one=1.0):
    c = _Chain()
    if mul_form:
        a = c.op("Mul", ["x", c.const("k", np.array(1 / math.sqrt(2), np.float32))], "a")
    else:
        a = c.op("Div", ["x", c.const("k", np.array(math.sqrt(2), np.float32))], "a")
    e = c.op("Erf", [a], "e")
    b = c.op("Add", [e, c.const("one", np.array(one, np.float32))], "b")
    if order == "torch":
        xb = c.op("Mul", ["x", b], "xb")
        c.op("Mul", [xb, c.const("half", np.array(0.5, np.float32))], "y")
    else:
        h = c.op("Mul", [c.const("half", np.array(0.5, np.float32)), "x"], "h")
        c.op("Mul", [h, b], "y")
    return c.model(13)


def _x(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(SHAPE) * 3 + 1).astype(np.float32)


def _checks(model, op, x):
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == [op]
    got = run_reference(graph, [x])[0]
    np.testing.assert_allclose(got, ort_outputs(model, {"x": x})[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(host_outputs(model, [{"x": x}])[0][0], got, rtol=1e-5, atol=1e-5)
    return graph


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("scale,bias", [(True, True), (True, False), (False, False)], ids=["affine", "scale", "none"])
def test_decomposed_layernorm_is_one_operator(opset, scale, bias):
    graph = _checks(layernorm_chain(opset, scale=scale, bias=bias, eps=1e-3), "LayerNormalization", _x(1))
    node = graph.nodes[0]
    assert node.attr("axis") == 2 and node.attr("epsilon") == pytest.approx(1e-3)


def test_decomposed_layernorm_over_two_axes():
    graph = _checks(layernorm_chain(axes=(1, 2)), "LayerNormalization", _x(2))
    assert graph.nodes[0].attr("axis") == 1


def test_layernorm_chain_with_an_inner_output_stays_decomposed():
    model = layernorm_chain(out_inner=True)
    graph = lower(import_onnx(model), check=True)
    ops = {n.op for n in graph.nodes}
    assert "LayerNormalization" not in ops and {"Pow", "Sqrt", "Div"} <= ops
    x = _x(3)
    want = ort_outputs(model, {"x": x})
    for got, ref, w in zip(host_outputs(model, [{"x": x}])[0], run_reference(graph, [x]), want):
        np.testing.assert_allclose(ref, w, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_layernorm_over_leading_axes_is_not_fused():
    """ReduceMean over axis 1 of a rank-3 tensor is not a LayerNormalization (whose rows are trailing)."""
    model = layernorm_chain(axes=(1,), scale=False, bias=False)
    graph = lower(import_onnx(model), check=True)
    assert "LayerNormalization" not in {n.op for n in graph.nodes}
    x = _x(4)
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("order,mul_form", [("torch", False), ("half_first", False), ("torch", True)],
                         ids=["torch", "half_first", "mul_form"])
def test_decomposed_gelu_is_one_operator(order, mul_form):
    graph = _checks(gelu_chain(order, mul_form), "Gelu", _x(5))
    assert graph.nodes[0].attr("approximate") == "none"


def test_gelu_lookalike_stays_decomposed():
    model = gelu_chain(one=0.9)
    graph = lower(import_onnx(model), check=True)
    assert [n.op for n in graph.nodes] == ["Div", "Erf", "Add", "Mul", "Mul"]
    x = _x(6)
    np.testing.assert_allclose(run_reference(graph, [x])[0], ort_outputs(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_int8_model_of_the_decomposed_forms_runs(tmp_path):
    """The decomposed LayerNormalization and Gelu quantized by onnxruntime's quantize_static (which puts
    QuantizeLinear/DequantizeLinear pairs inside the chains it quantizes): whatever is fused or left, the
    reference is within two output steps of onnxruntime and the C equals the reference bit for bit."""
    import zoo

    rng = np.random.default_rng(9)
    c = _Chain()
    m = c.op("ReduceMean", ["x"], "mean", axes=[-1])
    d = c.op("Sub", ["x", m], "d")
    v = c.op("ReduceMean", [c.op("Pow", [d, c.const("two", np.array(2.0, np.float32))], "p")], "var", axes=[-1])
    s = c.op("Sqrt", [c.op("Add", [v, c.const("eps", np.array(1e-5, np.float32))], "ve")], "std")
    n = c.op("Mul", [c.op("Div", [d, s], "n"), c.const("g", (1 + 0.2 * rng.standard_normal(16)).astype(np.float32))],
             "ns")
    h = c.op("MatMul", [n, c.const("w", (rng.standard_normal((16, 16)) / 4).astype(np.float32))], "h")
    e = c.op("Erf", [c.op("Div", [h, c.const("k", np.array(math.sqrt(2), np.float32))], "a")], "e")
    xb = c.op("Mul", [h, c.op("Add", [e, c.const("one", np.array(1.0, np.float32))], "b")], "xb")
    c.op("Mul", [xb, c.const("half", np.array(0.5, np.float32))], "y")
    float_model = c.model(13)
    model = zoo.quantize(float_model, {"x": SHAPE}, tmp_path)
    graph = lower(import_onnx(model), check=True)
    scale = float(next(numpy_helper.to_array(t) for t in model.graph.initializer
                       if t.name == next(nd.input[1] for nd in model.graph.node if nd.output[0] == "y")))
    xs = [_x(seed) for seed in (10, 11, 12)]
    for x, c_out in zip(xs, host_outputs(model, [{"x": x} for x in xs])):
        ref = run_reference(graph, [x])[0]
        assert np.abs(ref - ort_outputs(model, {"x": x})[0]).max() <= 2 * scale + 1e-6
        np.testing.assert_array_equal(c_out[0], ref)
