"""Fold an inference BatchNormalization into the float Conv that produces its input.

y = a[c] * conv(x, W, bias)[c] + b[c] = conv(x, W * a[oc], bias * a + b): the weights are
[OC, IC/group, kh, kw] whatever the group count, so every output channel scales its own
weights. The new weights and bias are computed in float64 and rounded to float32 once. A
BatchNormalization that cannot be folded (its Conv has other readers, is quantized, carries a
fused activation, or there is no Conv) stays and runs its own kernel.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node, constant
from mcudeploy.ops.batchnorm import affine
from mcudeploy.passes.graph_edit import eliminate_dead


def _foldable_conv(graph: Graph, bn: Node) -> Node | None:
    src = bn.inputs[0]
    conv = graph.producer(src)
    if conv is None or conv.op != "Conv" or src in graph.outputs or len(graph.users(src)) != 1:
        return None
    if conv.attr("clip_min") is not None or conv.attr("clip_max") is not None:
        return None
    w = conv.inputs[1]
    bias = conv.inputs[2] if len(conv.inputs) > 2 else ""
    if graph[conv.inputs[0]].dtype != "float32" or not graph.is_const(w) or graph[w].dtype != "float32":
        return None
    if bias and (not graph.is_const(bias) or graph[bias].dtype != "float32"):
        return None
    if graph[w].shape[0] != graph[src].shape[1]:
        return None
    return conv


def _fresh(names, base: str) -> str:
    name, i = base, 1
    while name in names:
        i += 1
        name = f"{base}_{i}"
    return name


def fold_batchnorm(graph: Graph) -> Graph:
    tensors = dict(graph.tensors)
    replaced: dict[str, Node] = {}  # Conv name -> folded Conv
    dropped: set[str] = set()  # BatchNormalization names
    for bn in graph.nodes:
        if bn.op != "BatchNormalization" or bn.attr("clip_min") is not None or bn.attr("clip_max") is not None:
            continue
        conv = _foldable_conv(graph, bn)
        if conv is None:
            continue
        a, b = affine(graph, bn)
        w = graph[conv.inputs[1]].data.astype(np.float64)
        w = w * a.reshape((-1,) + (1,) * (w.ndim - 1))
        bias = conv.inputs[2] if len(conv.inputs) > 2 else ""
        old_bias = graph[bias].data.astype(np.float64) if bias else np.zeros_like(a)
        w_name = _fresh(tensors, f"{conv.inputs[1]}/bn_folded")
        tensors[w_name] = constant(w_name, w.astype(np.float32))
        b_name = _fresh(tensors, f"{bias or conv.name + '/bias'}/bn_folded")
        tensors[b_name] = constant(b_name, (old_bias * a + b).astype(np.float32))
        replaced[conv.name] = conv.with_(inputs=(conv.inputs[0], w_name, b_name), outputs=bn.outputs)
        dropped.add(bn.name)
    if not dropped:
        return graph
    nodes = tuple(replaced.get(n.name, n) for n in graph.nodes if n.name not in dropped)
    return eliminate_dead(graph.replace(nodes=nodes, tensors=tensors))
