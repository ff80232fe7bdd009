"""Fold a Relu or Clip into the operator that produces its input (float, or int8 when the
activation does not change the quantization), so it costs a clamp in that kernel's epilogue."""
from __future__ import annotations

from mcudeploy.ir import Graph
from mcudeploy.ops import registry
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
