"""A tensor dropped while it is idle and made again before its next use: ``recompute``.

Where the producer of an idle tensor is cheap and its own inputs are still live when the tensor is
needed again (a residual branch's Relu of a tensor kept anyway, a normalisation of a skip), running
the producer a second time costs less than copying the tensor out and back. ``recompute`` clones
the producer right before the next use, under a new name (attribute "recompute" names the node it
repeats); the consumers from there on read the clone's output, and the first output dies at its
last use before. Like a move, it leaves an ordinary graph for lifetimes, placement and code.
"""
from __future__ import annotations

from typing import Optional, Sequence

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.offload.moves import COPY, fresh_name
from mcudeploy.ops import registry

RECOMPUTE = "recompute"  # attribute of a clone: the node it repeats


def recomputable(graph: Graph, order: Sequence[Node], tensor: str, before: int) -> Optional[Node]:
    """The producer of ``tensor`` if running it again right before step ``before`` needs nothing that
    is not live there anyway: one output, a kernel (not a view or a copy), and every input a
    constant or read again at ``before`` or later (so the clone extends no lifetime); else None."""
    producer = next((n for n in order if tensor in n.outputs), None)
    if producer is None or len(producer.outputs) != 1 or producer.op == COPY:
        return None
    op = registry.get(producer.op)
    if op.view or op.subview:
        return None
    for i in producer.inputs:
        if not i or graph[i].is_const or i in graph.outputs:
            continue
        if not any(i in n.inputs for n in order[before:]):
            return None
    return producer


def recompute(graph: Graph, order: Sequence[Node], tensor: str, before: int) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order with ``tensor``'s producer run again right before step ``before``, whose
    output the nodes from ``before`` on read instead."""
    order = tuple(order)
    producer = recomputable(graph, order, tensor, before)
    if producer is None:
        raise MCUDeployError(f"tensor {tensor} cannot be recomputed before step {before}: its producer needs an input "
                             f"that is not live there, or is not a kernel of one output")
    again = fresh_name(graph, f"{tensor}@again")
    clone = producer.with_(name=fresh_name(graph, f"{producer.name}@again"), outputs=(again,),
                           attrs={**producer.attrs, RECOMPUTE: producer.name})
    renamed = {n.name: n.with_(inputs=tuple(again if i == tensor else i for i in n.inputs))
               for n in order[before:] if tensor in n.inputs}
    new_order = order[:before] + (clone,) + tuple(renamed.get(n.name, n) for n in order[before:])
    scheduled = {n.name for n in order}
    nodes = new_order + tuple(n for n in graph.nodes if n.name not in scheduled)
    return graph.replace(tensors={**graph.tensors, again: graph[tensor].with_(name=again)}, nodes=nodes), new_order
