"""Transformer blocks as older exporters leave them, recognised as one operator each.

- LayerNormalization, as torch exports it below opset 17:
  m = ReduceMean(x) -> d = Sub(x, m) -> Pow(d, 2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(d, .)
  [-> Mul(scale)] [-> Add(bias)], both ReduceMeans over the same trailing axes with keepdims.
- Gelu (exact, erf form), as torch exports it below opset 20:
  Div(x, sqrt 2) (or Mul(x, 1/sqrt 2)) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5), or with x * 0.5 first.

Only float chains whose inner tensors nobody else reads are rewritten; scale, bias, epsilon and
the numbers 2, sqrt 2, 1 and 0.5 must be constants. A chain interleaved with QuantizeLinear /
DequantizeLinear pairs (an int8 model that quantized the Sub, Mul or Add) is not one operator in
onnxruntime's arithmetic either, so it stays as it is (every piece has a kernel).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from mcudeploy.ir import Graph, Node, constant
from mcudeploy.passes.graph_edit import eliminate_dead


class _Match:
    def __init__(self, graph: Graph):
        self.g = graph

    def only_user(self, tensor: str, op: str) -> Optional[Node]:
        """The single reader of an inner tensor, if it is an `op`."""
        users = self.g.users(tensor)
        if tensor in self.g.outputs or len(users) != 1 or users[0].op != op:
            return None
        return users[0]

    def scalar(self, name: str) -> Optional[float]:
        if not name or not self.g.is_const(name) or self.g[name].size != 1 or self.g[name].dtype != "float32":
            return None
        return float(np.ravel(self.g[name].data)[0])

    def other(self, node: Node, tensor: str) -> Optional[str]:
        """The input of a two-input node that is not `tensor` (None if `tensor` is not one of them)."""
        if len(node.inputs) != 2 or tensor not in node.inputs:
            return None
        return node.inputs[1] if node.inputs[0] == tensor else node.inputs[0]

    def is_value(self, name: Optional[str], value: float, rel: float = 1e-6) -> bool:
        v = self.scalar(name) if name else None
        return v is not None and abs(v - value) <= rel * abs(value)


def _trailing_axes(graph: Graph, node: Node) -> Optional[int]:
    """The first axis of a keepdims ReduceMean over the trailing axes of its input, else None."""
    rank = len(graph[node.inputs[0]].shape)
    axes = node.attr("axes")
    if not node.attr("keepdims", 1) or axes is None or not axes:
        return None
    axes = sorted(a % rank for a in axes)
    return axes[0] if axes == list(range(axes[0], rank)) else None


def _layernorm(m: _Match, mean: Node, tensors: dict) -> Optional[tuple[Node, list[Node]]]:
    g = m.g
    x = mean.inputs[0]
    axis = _trailing_axes(g, mean)
    if axis is None or g[x].dtype != "float32":
        return None
    sub = m.only_user(mean.outputs[0], "Sub")
    if sub is None or sub.inputs != (x, mean.outputs[0]):
        return None
    d = sub.outputs[0]
    users = g.users(d)
    if d in g.outputs or len(users) != 2 or {u.op for u in users} != {"Pow", "Div"}:
        return None
    pow_, div = sorted(users, key=lambda u: u.op != "Pow")
    if pow_.inputs[0] != d or not m.is_value(pow_.inputs[1], 2.0, 0.0) or div.inputs[0] != d:
        return None
    var = m.only_user(pow_.outputs[0], "ReduceMean")
    if var is None or _trailing_axes(g, var) != axis:
        return None
    add = m.only_user(var.outputs[0], "Add")
    eps = m.scalar(m.other(add, var.outputs[0])) if add is not None else None
    if eps is None or eps < 0:
        return None
    sqrt = m.only_user(add.outputs[0], "Sqrt")
    if sqrt is None or div.inputs[1] != sqrt.outputs[0] or len(g.users(sqrt.outputs[0])) != 1 \
            or sqrt.outputs[0] in g.outputs:
        return None
    chain, out = [mean, sub, pow_, var, add, sqrt, div], div.outputs[0]
    affine = {}
    for op in ("Mul", "Add"):
        nxt = m.only_user(out, op)
        param = m.other(nxt, out) if nxt is not None else None
        if param is None or not g.is_const(param) or g[param].dtype != "float32" \
                or g[nxt.outputs[0]].shape != g[x].shape:
            break
        affine[op] = param
        chain.append(nxt)
        out = nxt.outputs[0]
    scale = affine.get("Mul")
    if scale is None:
        scale = f"{div.name}/layernorm_scale"
        tensors[scale] = constant(scale, np.ones(g[x].shape[axis:], np.float32))
    fused = Node(div.name, "LayerNormalization", (x, scale, affine.get("Add", "")), (out,),
                 {"axis": axis, "epsilon": eps})
    return fused, chain


def _gelu(m: _Match, erf: Node) -> Optional[tuple[Node, list[Node]]]:
    g = m.g
    scaled = g.producer(erf.inputs[0])
    if scaled is None or scaled.op not in ("Div", "Mul") or m.only_user(scaled.outputs[0], "Erf") is None:
        return None
    x = scaled.inputs[0]
    factor = math.sqrt(2.0) if scaled.op == "Div" else 1 / math.sqrt(2.0)
    if g[x].dtype != "float32" or not m.is_value(scaled.inputs[1], factor):
        return None
    add = m.only_user(erf.outputs[0], "Add")
    if add is None or not m.is_value(m.other(add, erf.outputs[0]), 1.0, 0.0):
        return None
    mul = m.only_user(add.outputs[0], "Mul")
    other = m.other(mul, add.outputs[0]) if mul is not None else None
    if other is None:
        return None
    if other == x:  # x * (1 + erf) * 0.5
        half = m.only_user(mul.outputs[0], "Mul")
        if half is None or not m.is_value(m.other(half, mul.outputs[0]), 0.5, 0.0):
            return None
        chain, out = [scaled, erf, add, mul, half], half.outputs[0]
    else:  # (x * 0.5) * (1 + erf)
        half = g.producer(other)
        if half is None or half.op != "Mul" or m.other(half, x) is None or not m.is_value(m.other(half, x), 0.5, 0.0) \
                or m.only_user(other, "Mul") is None:
            return None
        chain, out = [half, scaled, erf, add, mul], mul.outputs[0]
    if g[out].shape != g[x].shape:
        return None
    return Node(erf.name, "Gelu", (x,), (out,), {"approximate": "none"}), chain


def fuse_transformer_patterns(graph: Graph) -> Graph:
    m = _Match(graph)
    tensors = dict(graph.tensors)
    fused: dict[str, Node] = {}  # name of the chain's last node -> the fused node
    removed: set[str] = set()
    for node in graph.nodes:
        if node.name in removed:
            continue
        found = (_layernorm(m, node, tensors) if node.op == "ReduceMean" else
                 _gelu(m, node) if node.op == "Erf" else None)
        if found is None or any(n.name in removed for n in found[1]):
            continue
        new, chain = found
        fused[chain[-1].name] = new
        removed.update(n.name for n in chain)
    if not fused:
        return graph
    nodes = tuple(fused[n.name] if n.name in fused else n for n in graph.nodes
                  if n.name in fused or n.name not in removed)
    return eliminate_dead(graph.replace(nodes=nodes, tensors=tensors))
