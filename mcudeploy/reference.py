"""Run a graph with every operator's numpy reference: the bit-exact oracle for the C kernels."""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, Graph
from mcudeploy.ops import registry
from mcudeploy.ops.stream import READ_INPUT, streamed_input


def run_reference(graph: Graph, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray]) -> list[np.ndarray]:
    values = evaluate(graph, inputs)
    return [values[o] for o in graph.outputs]


def arguments(graph: Graph, node, value: Callable[[str], np.ndarray]) -> list:
    """The values a node's reference takes, ``value(name)`` giving a tensor's: its inputs' (None for
    an absent one), or, for a ReadInput, the whole streamed input's (it names no input)."""
    if node.op == READ_INPUT:
        return [value(streamed_input(graph, node))]
    return [value(i) if i else None for i in node.inputs]


def evaluate(graph: Graph, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The value of every tensor of the graph (constants included) on these inputs."""
    if not isinstance(inputs, Mapping):
        inputs = dict(zip(graph.inputs, inputs))
    values: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        t = graph[name]
        if name not in inputs:
            raise MCUDeployError(f"no value given for input {name}")
        x = np.asarray(inputs[name])
        if x.shape != t.shape:
            raise MCUDeployError(f"input {name} has shape {x.shape}; the model expects {t.shape}")
        values[name] = x.astype(DTYPES[t.dtype], copy=False)
    for name, t in graph.tensors.items():
        if t.is_const:
            values[name] = t.data
    for node in graph.nodes:
        op = registry.get(node.op)
        results = op.reference(graph, node, arguments(graph, node, values.__getitem__))
        for out, value in zip(node.outputs, results):
            t = graph[out]
            value = np.asarray(value)
            if value.shape != t.shape or value.dtype != DTYPES[t.dtype]:
                raise AssertionError(f"reference of {node.name} ({node.op}) gave {value.dtype}{value.shape} for {out}, "
                                     f"declared {t.dtype}{t.shape}")
            values[out] = value
    return values
