"""Small ONNX models for the operator tests and the three ways to run them: onnxruntime (graph
optimizations off, so it computes what the model says), the numpy reference of the lowered
graph, and the host build of the generated C.

The second half serves the tests of one-input operators (pool, pad, resize): a model of one
operator on input "x", and checks of the reference and of the bare kernel against it."""
from __future__ import annotations

import shutil

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from .kernel_harness import Place, run_kernel
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.compile import lower
from mcudeploy.reference import run_reference


def ort_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def host_outputs(model: onnx.ModelProto, samples: list[dict]) -> list[list[np.ndarray]]:
    """The outputs of each sample through the host build; skips where gcc is missing."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    return run_model_on_host(model, samples)


def run_model_on_host(model, samples, input_shapes=None, workdir=None) -> list[list[np.ndarray]]:
    """Compile a model for the host board, build it, and run it on each sample (dict input name -> array)."""
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.compile import compile_model

    return run_compiled_on_host(compile_model(model, "host", input_shapes=input_shapes), samples, workdir)


def checked_model(nodes, inputs, outputs, inits=(), opset=13) -> onnx.ModelProto:
    """A model of the nodes at IR version 8 that onnx.checker accepts."""
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def reference_outputs(model: onnx.ModelProto, feeds: dict):
    """The lowered graph and its reference outputs."""
    graph = lower(import_onnx(model), check=True)
    return graph, run_reference(graph, feeds)


# --------------------------------------------------------------------------- one operator on input x


def make_model(op, attrs, x_shape, opset=19, extra_inputs=(), dtype=TensorProto.FLOAT, qdq=None, outputs=1):
    """A one-operator model. extra_inputs: (name, array or None) constant inputs after x ("" when None).
    qdq=(sx, zx, sy, zy): int8 in and out, DequantizeLinear -> op -> QuantizeLinear."""
    inits, names = [], ["x"]
    for name, value in extra_inputs:
        if value is None:
            names.append("")
        else:
            inits.append(numpy_helper.from_array(np.asarray(value), name))
            names.append(name)
    nodes = []
    if qdq is not None:
        sx, zx, sy, zy = qdq
        inits += [numpy_helper.from_array(np.array(sx, np.float32), "sx"),
                  numpy_helper.from_array(np.array(zx, np.int8), "zx"),
                  numpy_helper.from_array(np.array(sy, np.float32), "sy"),
                  numpy_helper.from_array(np.array(zy, np.int8), "zy")]
        nodes.append(helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]))
        names[0] = "xf"
        out_names = ["yf"] + [f"extra{i}" for i in range(1, outputs)]
        nodes.append(helper.make_node(op, names, out_names, **attrs))
        nodes.append(helper.make_node("QuantizeLinear", ["yf", "sy", "zy"], ["y"]))
        dtype = TensorProto.INT8
    else:
        out_names = ["y"] + [f"extra{i}" for i in range(1, outputs)]
        nodes.append(helper.make_node(op, names, out_names, **attrs))
    x = helper.make_tensor_value_info("x", dtype, list(x_shape))
    y = helper.make_tensor_value_info("y", dtype, None)
    graph = helper.make_graph(nodes, f"{op.lower()}_test", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def ort_run(model, x):
    return ort_outputs(model, {"x": x})[0]


def compile_graph(model):
    return lower(import_onnx(model), check=True)


def ref_run(model, x):
    return run_reference(compile_graph(model), [x])[0]


def single_node(graph, op, dtype):
    """The graph is one node of op in dtype (so an int8 test really exercises the int8 path)."""
    assert [n.op for n in graph.nodes] == [op], [n.op for n in graph.nodes]
    assert graph[graph.nodes[0].inputs[0]].dtype == dtype
    return graph.nodes[0]



def host_run(model, x):
    return host_outputs(model, [{"x": x}])[0][0]


def qparams(rng):
    """A random per-tensor (scale, zero point) pair for int8."""
    return float(rng.uniform(0.01, 0.1)), int(rng.integers(-20, 21))


def int8_input(rng, shape):
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def check_strided_c(tmp_path, model, x):
    """The kernel on strided input and output views (garbage around them, every other element
    along the last dimension) agrees with the reference, and writes nothing else."""
    graph = compile_graph(model)
    node = graph.nodes[0]
    expect = run_reference(graph, [x])[0]
    strided = Place(pad=1, step=2)
    got = run_kernel(tmp_path, registry.get(node.op).kernel(graph, node), graph, {node.inputs[0]: x},
                     {node.inputs[0]: strided, node.outputs[0]: strided})[0]
    if expect.dtype == np.float32:
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, expect)


def check_float(model, x, rtol=1e-5, atol=1e-5):
    want = ort_run(model, x)
    got = ref_run(model, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return got


def check_int8(model, x, op, steps=1):
    graph = compile_graph(model)
    single_node(graph, op, "int8")
    want = ort_run(model, x).astype(np.int32)
    got = run_reference(graph, [x])[0]
    assert got.dtype == np.int8 and got.shape == want.shape
    diff = np.abs(got.astype(np.int32) - want)
    assert diff.max() <= steps, f"{diff.max()} steps off onnxruntime"
    return got
