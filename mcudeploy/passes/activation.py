"""Fold a Relu or Clip into the operator that produces its input (float, or int8 when the
activation does not change the quantization), so it costs a clamp in that kernel's epilogue; fuse
SiLU written as Mul(x, Sigmoid(x)) into one Swish."""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ir import Graph
from mcudeploy.ops import registry
from mcudeploy.ops.activation import LUT_DTYPES
from mcudeploy.ops.requant import QRANGE
from mcudeploy.passes.graph_edit import eliminate_dead
from mcudeploy.passes.qdq import _merge_clip, activation_bounds


def fuse_activations(graph: Graph) -> Graph:
    nodes = list(graph.nodes)
    index = {n.name: i for i, n in enumerate(nodes)}
    tensors = dict(graph.tensors)
    removed = set()
    for act in graph.nodes:
        if act.op not in ("Relu", "Clip"):
            continue
        src = act.inputs[0]
        producer = graph.producer(src)
        if producer is None or producer.name in removed or src in graph.outputs or len(graph.users(src)) != 1:
            continue
        if not getattr(registry.get(producer.op), "fuses_activation", False):
            continue
        t_in, t_out = tensors[src], tensors[act.outputs[0]]
        if t_in.dtype != t_out.dtype or (t_in.dtype != "float32" and t_in.quant != t_out.quant):
            continue
        current = nodes[index[producer.name]]
        fused = current.with_(outputs=(act.outputs[0],) + current.outputs[1:],
                              attrs=_merge_clip(dict(current.attrs), activation_bounds(act)))
        nodes[index[producer.name]] = fused
        removed.add(act.name)
    if not removed:
        return graph
    return eliminate_dead(graph.replace(nodes=tuple(n for n in nodes if n.name not in removed), tensors=tensors))


def fuse_swish(graph: Graph) -> Graph:
    """Mul(x, Sigmoid(x)), SiLU as exports write it, becomes one Swish: one pass over x instead of two
    and no gate tensor. float: the same float operations (x * (1 / (1 + exp(-x)))). int8: the gate is a
    function of x's code, so the product is too; its table is the two operators' own arithmetic run on
    every code (Sigmoid's table, then Mul's requantization), bit for bit what they computed apart."""
    nodes = list(graph.nodes)
    tensors = dict(graph.tensors)
    removed, fused = set(), {}
    for mul in graph.nodes:
        if mul.op != "Mul" or len(mul.inputs) != 2:
            continue
        for x, gate in (mul.inputs, mul.inputs[::-1]):
            sig = graph.producer(gate)
            if (sig is not None and sig.op == "Sigmoid" and sig.inputs[0] == x and x != gate
                    and gate not in graph.outputs and len(graph.users(gate)) == 1):
                attrs = _swish_attrs(graph, x, sig, mul)
                if attrs is not None:
                    fused[mul.name] = mul.with_(op="Swish", inputs=(x,), attrs=attrs)
                    removed.add(sig.name)
                break
    if not fused:
        return graph
    nodes = [fused.get(n.name, n) for n in nodes if n.name not in removed]
    return eliminate_dead(graph.replace(nodes=tuple(nodes), tensors=tensors))


def _swish_attrs(graph: Graph, x: str, sig, mul) -> dict | None:
    """The fused Swish's attributes, or None where the pair cannot be one table or one float pass."""
    tx, tg, ty = graph[x], graph[sig.outputs[0]], graph[mul.outputs[0]]
    if tx.shape != ty.shape:
        return None
    if tx.dtype == tg.dtype == ty.dtype == "float32":
        no_clip = mul.attr("clip_min") in (None, -math.inf) and mul.attr("clip_max") in (None, math.inf)
        return {"alpha": 1.0} if no_clip else None
    swish = registry.get("Swish")
    if tx.dtype not in LUT_DTYPES or not (tx.dtype == tg.dtype == ty.dtype):
        return None
    if not (swish.accepts_int8(graph, sig) and swish.accepts_int8(graph, mul.with_(inputs=(x,)))):
        return None
    lo, hi = QRANGE[tx.dtype]
    codes = np.arange(lo, hi + 1).astype(tx.dtype)
    flat = {t.name: t.with_(shape=(codes.size,)) for t in (tx, tg, ty)}
    line = graph.replace(tensors={**graph.tensors, **flat})
    gate = registry.get("Sigmoid").reference(line, sig, [codes])[0]
    ordered = [codes if i == x else gate for i in mul.inputs]
    table = registry.get("Mul").reference(line, mul, ordered)[0]
    return {"alpha": 1.0, "table": tuple(int(v) for v in table)}
