"""Small seeded random graphs that exercise every kind of sharing: views (Reshape, Flatten),
Concat along any axis (nested too), Split, in-place element-wise operators and a 1x1 depthwise
Conv, and operators that copy (Transpose, MaxPool, a 3x3 Conv). float32, batch 1 or 2 (a batch
of 2 makes channel slices non-contiguous). Shapes come from each operator's own rule."""
from __future__ import annotations

import random

import numpy as np

from mcudeploy.ir import Graph, Node, Tensor, verify
from mcudeploy.ops import registry


class _Builder:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []

    def input(self, shape) -> str:
        name = f"in{len(self.inputs)}"
        self.tensors[name] = Tensor(name, tuple(shape), "float32", "input")
        self.inputs.append(name)
        return name

    def const(self, data: np.ndarray) -> str:
        name = f"c{len(self.tensors)}"
        self.tensors[name] = Tensor(name, data.shape, "float32", "constant", None, data.astype(np.float32))
        return name

    def op(self, op: str, inputs, outputs: int = 1, **attrs) -> list[str]:
        outs = tuple(f"t{len(self.tensors) + i}" for i in range(outputs))
        node = Node(f"n{len(self.nodes)}_{op.lower()}", op, tuple(inputs), outs, attrs)
        scope = Graph("scope", {i: self.tensors[i] for i in inputs if i}, (), (), ())
        for name, (shape, dtype) in zip(outs, registry.get(op).infer(scope, node)):
            self.tensors[name] = Tensor(name, tuple(shape), dtype)
        self.nodes.append(node)
        return list(outs)

    def shape(self, t: str) -> tuple[int, ...]:
        return self.tensors[t].shape


def _step(b: _Builder, live: list[str]) -> None:
    rng = b.rng
    x = rng.choice(live)
    shape = b.shape(x)
    kind = rng.choice(("relu", "sigmoid", "add", "concat", "concat", "split", "split", "reshape", "transpose",
                       "pool", "dw1", "conv3"))
    if kind in ("relu", "sigmoid"):
        live += b.op("Relu" if kind == "relu" else "Sigmoid", [x])
    elif kind == "add":
        same = [t for t in live if b.shape(t) == shape]
        live += b.op("Add", [x, rng.choice(same)])
    elif kind == "concat":
        axis = rng.randrange(len(shape))
        same = [t for t in live if len(b.shape(t)) == len(shape) and t != x and all(
            a == c for i, (a, c) in enumerate(zip(b.shape(t), shape)) if i != axis)]
        parts = [x] + rng.sample(same, min(len(same), rng.randint(1, 3)))
        rng.shuffle(parts)
        live += b.op("Concat", parts, axis=axis)
    elif kind == "split":
        axes = [i for i, n in enumerate(shape) if n >= 2]
        if axes:
            axis = rng.choice(axes)
            cut = rng.randint(1, shape[axis] - 1)
            live += b.op("Split", [x], outputs=2, axis=axis, split=(cut, shape[axis] - cut))
    elif kind == "reshape" and len(shape) == 4:
        live += b.op("Reshape", [x], shape=(shape[0], shape[1] * shape[2], shape[3], 1))
    elif kind == "transpose":
        perm = list(range(len(shape)))
        rng.shuffle(perm)
        live += b.op("Transpose", [x], perm=tuple(perm))
    elif kind == "pool" and len(shape) == 4 and min(shape[2:]) >= 1:
        live += b.op("MaxPool", [x], kernel_shape=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1))
    elif kind in ("dw1", "conv3") and len(shape) == 4:
        c = shape[1]
        if kind == "dw1":
            w = b.const(np.asarray([rng.uniform(-1, 1) for _ in range(c)]).reshape(c, 1, 1, 1))
            live += b.op("Conv", [x, w, ""], group=c)
        else:
            w = b.const(np.asarray([rng.uniform(-1, 1) for _ in range(c * c * 9)]).reshape(c, c, 3, 3))
            live += b.op("Conv", [x, w, ""], pads=(1, 1, 1, 1))


def random_graph(seed: int, ops: int = 12) -> Graph:
    rng = random.Random(seed)
    b = _Builder(rng)
    batch = rng.choice((1, 1, 2))
    live = [b.input((batch, rng.randint(1, 4), rng.randint(2, 5), rng.randint(2, 5))) for _ in range(rng.randint(1, 2))]
    while len(b.nodes) < ops:
        _step(b, live)
    produced = [o for n in b.nodes for o in n.outputs]
    read = {i for n in b.nodes for i in n.inputs}
    outputs = [t for t in produced if t not in read] or produced[-1:]
    extra = [t for t in produced if t not in outputs]
    outputs += rng.sample(extra, min(len(extra), rng.randint(0, 2)))  # outputs read by later nodes too
    tensors = dict(b.tensors)
    for o in outputs:
        tensors[o] = tensors[o].with_(kind="output")
    nodes = tuple(b.nodes)
    return verify(Graph(f"random{seed}", tensors, nodes, tuple(b.inputs), tuple(outputs)))


def random_order(graph: Graph, seed: int) -> list[Node]:
    """A random topological order of the graph's nodes."""
    rng = random.Random(seed)
    producer = {o: n for n in graph.nodes for o in n.outputs}
    waiting = {n.name: {producer[i].name for i in n.inputs if i in producer} for n in graph.nodes}
    by_name = {n.name: n for n in graph.nodes}
    order, done = [], set()
    while len(order) < len(graph.nodes):
        ready = sorted(name for name, deps in waiting.items() if name not in done and deps <= done)
        pick = rng.choice(ready)
        order.append(by_name[pick])
        done.add(pick)
    return order


def random_inputs(graph: Graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(graph[n].shape).astype(np.float32) for n in graph.inputs}
