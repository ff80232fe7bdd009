"""A channel shuffle of a Concat becomes one Concat (ShuffleNet's units).

torch exports channel_shuffle(x, g) as Reshape(x, [N, g, C/g, ...]) -> Transpose(0, 2, 1, ...) ->
Reshape([N, C, ...]), and in ShuffleNetV2 x is the Concat of the unit's g branches. Run as written,
that is the Concat's copy of the branches that are not written in place, then the Transpose's copy
of all of it. The Transpose's output, [N, C/g, g, ...], is the branches side by side along axis 2:

    Concat(b_1 .. b_g, axis=1) -> Reshape -> Transpose(0, 2, 1, ...)
        == Concat(Reshape(b_1, [N, C/g, 1, ...]) .. Reshape(b_g, ...), axis=2)

so the shuffle is one Concat of views (each branch copied once into its interleaved place) and the
final Reshape reads its output as before. The values are the same bytes: exact in float and int8.
"""
from __future__ import annotations

from typing import Optional

from mcudeploy.ir import Graph, Node
from mcudeploy.passes.graph_edit import eliminate_dead


def _sole_user(graph: Graph, tensor: str, op: str) -> Optional[Node]:
    users = graph.users(tensor)
    if tensor in graph.outputs or len(users) != 1 or users[0].op != op:
        return None
    return users[0]


def _match(graph: Graph, concat: Node) -> Optional[tuple[Node, Node, int]]:
    """(first Reshape, Transpose, groups) when `concat` feeds a channel shuffle of its own inputs."""
    x = graph[concat.outputs[0]]
    rank, groups = len(x.shape), len(concat.inputs)
    if rank < 3 or groups < 2 or concat.attr("axis", 0) % rank != 1 or x.shape[1] % groups:
        return None
    part = x.shape[1] // groups
    if any(graph[i].shape[1] != part for i in concat.inputs):
        return None
    split = _sole_user(graph, concat.outputs[0], "Reshape")
    if split is None or graph[split.outputs[0]].shape != x.shape[:1] + (groups, part) + x.shape[2:]:
        return None
    swap = _sole_user(graph, split.outputs[0], "Transpose")
    if swap is None or tuple(swap.attr("perm") or ()) != (0, 2, 1) + tuple(range(3, rank + 1)):
        return None
    t = graph[swap.outputs[0]]
    if swap.outputs[0] in graph.outputs or t.dtype != x.dtype or t.quant != x.quant:
        return None
    return split, swap, groups


def lower_channel_shuffle(graph: Graph) -> Graph:
    tensors = dict(graph.tensors)
    replace: dict[str, list[Node]] = {}
    removed: set[str] = set()
    for concat in graph.nodes:
        if concat.op != "Concat" or concat.name in removed:
            continue
        found = _match(graph, concat)
        if found is None:
            continue
        split, swap, groups = found
        views, inputs = [], []
        for k, name in enumerate(concat.inputs):
            t = graph[name]
            view = f"{swap.outputs[0]}/branch{k}"
            tensors[view] = t.with_(name=view, shape=t.shape[:2] + (1,) + t.shape[2:], kind="activation")
            views.append(Node(f"{swap.name}/branch{k}", "Reshape", (name,), (view,),
                              {"allowzero": 0, "shape": tensors[view].shape}))
            inputs.append(view)
        replace[concat.name] = views + [Node(concat.name, "Concat", tuple(inputs), swap.outputs, {"axis": 2})]
        removed |= {split.name, swap.name}
    if not replace:
        return graph
    nodes = []
    for n in graph.nodes:
        if n.name in replace:
            nodes += replace[n.name]
        elif n.name not in removed:
            nodes.append(n)
    return eliminate_dead(graph.replace(nodes=tuple(nodes), tensors=tensors))
