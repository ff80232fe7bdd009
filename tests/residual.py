"""A small float residual block for tests of rewrites and stages: x -> a = Relu(Conv x) -> b = Conv a
-> c = Conv b -> y = a + c, so a waits idle while b and c run."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

SHAPE = (1, 8, 12, 12)


def residual_model(seed: int = 11):
    rng = np.random.default_rng(seed)

    def conv(name, src):
        w = numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), name + "_w")
        return helper.make_node("Conv", [src, w.name], [name], pads=[1, 1, 1, 1]), w
    nodes, inits = [], []
    for name, src in (("a0", "x"), ("b", "a"), ("c", "b")):
        n, w = conv(name, src)
        nodes.append(n)
        inits.append(w)
        if name == "a0":
            nodes.append(helper.make_node("Relu", ["a0"], ["a"]))
    nodes.append(helper.make_node("Add", ["a", "c"], ["y"]))
    return _model(nodes, inits, "residual")


def _model(nodes, inits, name):
    """A float model of ``nodes`` from x to y, both of SHAPE."""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def skip_model(seed: int = 12):
    """x -> a = Relu(Conv x) -> b = Conv a (4x the channels) -> c = Conv b -> d = Conv c -> e = Conv d
    -> y = a + e: a idles across the wide peak (b, c) and the two convolutions after it, where a copy of
    it back has room to start early."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    for name, src, cin, cout in (("a0", "x", 8, 8), ("b", "a", 8, 32), ("c", "b", 32, 8), ("d", "c", 8, 8),
                                 ("e", "d", 8, 8)):
        w = numpy_helper.from_array((rng.standard_normal((cout, cin, 3, 3)) * 0.1).astype(np.float32), name + "_w")
        nodes.append(helper.make_node("Conv", [src, w.name], [name], pads=[1, 1, 1, 1]))
        inits.append(w)
        if name == "a0":
            nodes.append(helper.make_node("Relu", ["a0"], ["a"]))
    nodes.append(helper.make_node("Add", ["a", "e"], ["y"]))
    return _model(nodes, inits, "skip")
