"""Run a graph with every operator's numpy reference: the bit-exact oracle for the C kernels.

A stateful graph (Graph.states) computes from its inputs and its states' values at the start of the call
(their initial values unless given); ``run_sequence`` carries them from one sample to the next, as the C
and TensorFlow Lite Micro do."""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, Graph
from mcudeploy.ops import registry
from mcudeploy.ops.read_input import READ_INPUT, streamed_input


def run_reference(graph: Graph, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
                  state: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
    """The model's outputs (Graph.model_outputs) on these inputs (and states, see evaluate)."""
    values = evaluate(graph, inputs, state)
    return [values[o] for o in graph.model_outputs()]


def run_sequence(graph: Graph, samples: Sequence[Sequence[np.ndarray] | Mapping[str, np.ndarray]]) -> list[list]:
    """The model's outputs on each sample in turn, each call starting from the states the one before left
    (the first from their initial values): per sample, per model output."""
    state, out = None, []
    for sample in samples:
        values = evaluate(graph, sample, state)
        out.append([values[o] for o in graph.model_outputs()])
        state = next_state(graph, values)
    return out


def next_state(graph: Graph, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The states' values after a call whose tensors hold ``values`` (evaluate's)."""
    return {s: values[v] for s, v in graph.state_updates()}


def arguments(graph: Graph, node, value: Callable[[str], np.ndarray]) -> list:
    """The values a node's reference takes, ``value(name)`` giving a tensor's: its inputs' (None for
    an absent one), or, for a ReadInput, the whole streamed input's (it names no input)."""
    if node.op == READ_INPUT:
        return [value(streamed_input(graph, node))]
    return [value(i) if i else None for i in node.inputs]


def evaluate(graph: Graph, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
             state: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The value of every tensor of the graph (constants included) on these inputs (a sequence: the model's,
    Graph.model_inputs, in order); a state's value at the start of the call is ``state``'s, else its input's
    if given, else its initial value."""
    if not isinstance(inputs, Mapping):
        inputs = dict(zip(graph.model_inputs(), inputs))
    inputs = {**{s: graph[s].data for s in graph.states}, **inputs, **(state or {})}
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
