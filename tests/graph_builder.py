"""A tiny float32 graph builder for the tests: inputs, constants and operators added by name, each
output's shape and type from its operator's rule."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node, Tensor, verify
from mcudeploy.ops import registry


class GraphBuilder:
    def __init__(self):
        self.tensors, self.nodes, self.inputs = {}, [], []

    def input(self, name, shape):
        self.tensors[name] = Tensor(name, tuple(shape), "float32", "input")
        self.inputs.append(name)
        return name

    def const(self, name, data):
        self.tensors[name] = Tensor(name, data.shape, "float32", "constant", None, np.asarray(data, np.float32))
        return name

    def op(self, op, inputs, outputs, **attrs):
        """The node ``n_<first output>``; its output's name, or the names of several ("" for an absent input)."""
        outputs = (outputs,) if isinstance(outputs, str) else tuple(outputs)
        node = Node(f"n_{outputs[0]}", op, tuple(inputs), outputs, attrs)
        scope = Graph("s", {i: self.tensors[i] for i in inputs if i}, (), (), ())
        for name, (shape, dtype) in zip(outputs, registry.get(op).infer(scope, node)):
            self.tensors[name] = Tensor(name, tuple(shape), dtype)
        self.nodes.append(node)
        return outputs[0] if len(outputs) == 1 else outputs

    def graph(self, *outputs):
        """The verified graph with these outputs."""
        tensors = dict(self.tensors)
        for o in outputs:
            tensors[o] = tensors[o].with_(kind="output")
        return verify(Graph("g", tensors, tuple(self.nodes), tuple(self.inputs), tuple(outputs)))
