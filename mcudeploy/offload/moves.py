"""A tensor moved to another memory region while it is idle, and back: ``move``.

A value that waits between two uses (a residual branch's input, a U-Net's skip) holds fast memory
for nothing. ``move`` copies it out to a slower region after one use and back before the next:
three buffers, each in one region for its whole life, hold the value in turn (the tensor in its
own region up to the copy out; the copy, pinned to the slow region by Tensor.region; the copy
back, read by every later consumer). So lifetimes, placement, code and simulator see an ordinary
graph with two Copy nodes, and a value lives in more than one region over time.

``stays`` reads the moves back from a compiled plan: per moved value, where it is at which steps.
Which tensors to move, when, and whether to run the producer again instead (recompute) is the
policy of the swap-or-recompute issue; this module is its mechanism.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops.copy_async import COPY_START, COPY_WAIT

COPY = "Copy"
COPIES = (COPY, COPY_START, COPY_WAIT)  # the operators a move inserts


@dataclass(frozen=True)
class Stay:
    """One stretch of a value's life: tensor ``tensor`` holds it in ``region`` (None: the first usable
    region) from step ``first`` to step ``last``."""

    value: str
    tensor: str
    region: str | None
    first: int
    last: int


def fresh_name(graph: Graph, name: str) -> str:
    """``name``, or ``name_2``, ``name_3``...: the first that no tensor or node of ``graph`` has."""
    taken = set(graph.tensors) | {n.name for n in graph.nodes}
    out, k = name, 1
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    return out


def move(graph: Graph, order: Sequence[Node], tensor: str, region: str, after: int,
         before: Optional[int], asynchronous: Optional[tuple[int, int]] = None,
         modelled: bool = True) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order with ``tensor`` copied to ``region`` right after step ``after`` and back
    right before step ``before``; the nodes from step ``before`` on read the copy back. ``before``
    None: no copy back, every later reader reads the copy in ``region`` (a spill).

    ``after`` is the tensor's producer or one of its consumers, ``before`` a later consumer and no
    consumer runs in between (the value is idle there). ``asynchronous``: (modelled ticks out,
    modelled ticks back): each copy is a CopyStart and a CopyWait (ops/copy_async.py), here next to
    each other; offload.swap slides the start of the copy back earlier and the wait of the copy out
    later, so that the computation in between hides them."""
    order = tuple(order)
    if before is None:
        return _spill(graph, order, tensor, region, after, asynchronous, modelled)
    t = graph[tensor]
    if t.is_const:
        raise MCUDeployError(f"tensor {tensor} is a constant (it is in flash, not in an arena)")
    if tensor in graph.outputs:
        raise MCUDeployError(f"tensor {tensor} is a graph output: the caller reads it where it is")
    uses = [i for i, n in enumerate(order) if tensor in n.inputs]
    made = next((i for i, n in enumerate(order) if tensor in n.outputs), -1)
    if not (made <= after < before <= len(order) - 1) or before not in uses:
        raise MCUDeployError(f"tensor {tensor} cannot move out after step {after} and back before step {before}: "
                             f"step {before} must be a later use (made at step {made}, used at steps {uses})")
    if any(after < i < before for i in uses):
        raise MCUDeployError(f"tensor {tensor} is used between steps {after} and {before}, so it is not idle there")
    if after != made and after not in uses:
        raise MCUDeployError(f"step {after} neither makes nor reads tensor {tensor}")
    out_name = fresh_name(graph, f"{tensor}@{region}")
    back_name = fresh_name(graph.replace(tensors={**graph.tensors, out_name: t}), f"{tensor}@back")
    out_t = t.with_(name=out_name, kind="activation", region=region)
    back_t = t.with_(name=back_name, kind="activation")
    added = {out_name: out_t, back_name: back_t}
    if asynchronous is None:
        copy_out = (Node(fresh_name(graph, f"move_out_{tensor}"), COPY, (tensor,), (out_name,), {"of": tensor}),)
        copy_back = (Node(fresh_name(graph, f"move_back_{tensor}"), COPY, (out_name,), (back_name,), {"of": tensor}),)
    else:
        copy_out = _started(graph, f"move_out_{tensor}", tensor, out_t, asynchronous[0], tensor, modelled)
        copy_back = _started(graph, f"move_back_{tensor}", out_name, back_t, asynchronous[1], tensor, modelled)
        added.update({n.outputs[0]: (out_t if k == 0 else back_t).with_(name=n.outputs[0])
                      for k, n in ((0, copy_out[0]), (1, copy_back[0]))})
    renamed = {n.name: n.with_(inputs=tuple(back_name if i == tensor else i for i in n.inputs))
               for n in order[before:] if tensor in n.inputs}
    new_order = order[:after + 1] + copy_out + order[after + 1:before] + copy_back + tuple(
        renamed.get(n.name, n) for n in order[before:])
    scheduled = {n.name for n in order}
    nodes = new_order + tuple(n for n in graph.nodes if n.name not in scheduled)
    return graph.replace(tensors={**graph.tensors, **added}, nodes=nodes), new_order


def _spill(graph: Graph, order: tuple[Node, ...], tensor: str, region: str, after: int,
           asynchronous: Optional[tuple[int, int]], modelled: bool) -> tuple[Graph, tuple[Node, ...]]:
    """move without the copy back: the nodes after step ``after`` read the copy in ``region``."""
    t = graph[tensor]
    if t.is_const or tensor in graph.outputs:
        raise MCUDeployError(f"tensor {tensor} is a constant or a graph output: it stays where it is")
    later = [i for i, n in enumerate(order) if tensor in n.inputs and i > after]
    made = next((i for i, n in enumerate(order) if tensor in n.outputs), -1)
    if not later or after < made or (after != made and tensor not in order[after].inputs):
        raise MCUDeployError(f"tensor {tensor} cannot spill after step {after}: that step must make or read it, "
                             f"and a later step read it")
    out_name = fresh_name(graph, f"{tensor}@{region}")
    out_t = t.with_(name=out_name, kind="activation", region=region)
    added = {out_name: out_t}
    if asynchronous is None:
        copy_out = (Node(fresh_name(graph, f"move_out_{tensor}"), COPY, (tensor,), (out_name,), {"of": tensor}),)
    else:
        copy_out = _started(graph, f"move_out_{tensor}", tensor, out_t, asynchronous[0], tensor, modelled)
        added[copy_out[0].outputs[0]] = out_t.with_(name=copy_out[0].outputs[0])
    renamed = {n.name: n.with_(inputs=tuple(out_name if i == tensor else i for i in n.inputs))
               for n in order[after + 1:] if tensor in n.inputs}
    new_order = order[:after + 1] + copy_out + tuple(renamed.get(n.name, n) for n in order[after + 1:])
    scheduled = {n.name for n in order}
    nodes = new_order + tuple(n for n in graph.nodes if n.name not in scheduled)
    return graph.replace(tensors={**graph.tensors, **added}, nodes=nodes), new_order


def _started(graph: Graph, name: str, src: str, dst, ticks: int, of: str, modelled: bool) -> tuple[Node, Node]:
    """A CopyStart of ``src`` into a tensor of its own (in flight) and the CopyWait that makes it ``dst``."""
    node = fresh_name(graph, name)
    flight = fresh_name(graph, f"{dst.name}~")
    attrs = {"of": of, "ticks": int(ticks), "modelled": int(modelled)}
    return (Node(f"{node}@start", COPY_START, (src,), (flight,), attrs),
            Node(node, COPY_WAIT, (flight, src), (dst.name,), attrs))


def stays(compiled) -> list[list[Stay]]:
    """Per value that ``move`` moved (in order of its first copy out): where it is at which steps."""
    lives, order = compiled.lifetimes, compiled.order
    where = compiled.placement.regions
    copies: dict[str, list[str]] = {}
    for n in order:
        if n.op in (COPY, COPY_WAIT) and n.attr("of"):
            copies.setdefault(n.attr("of"), [n.attr("of")])
            copies[n.attr("of")].append(n.outputs[0])
    out = []
    for value, tensors in copies.items():
        chain = []
        for t in dict.fromkeys(tensors):
            b = next((b for b in lives.buffers if b.name == lives.buffer_of[t]), None)
            if b is not None:  # a state's buffer is no arena's (memory/state.py)
                chain.append(Stay(value, t, where.get(b.name), b.first, b.last))
        out.append(chain)
    return out


STAGE = "stage"  # attribute of a Copy that brings a tensor kept in a slow region into fast memory for its readers


def stage(graph: Graph, order: Sequence[Node], tensor: str, before: int) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order with ``tensor`` (kept in a slow region) copied into the first usable
    region right before step ``before``, whose nodes from there on read the copy: a reader that
    goes over its input many times (a window) then reads fast memory."""
    order = tuple(order)
    if not any(tensor in n.inputs for n in order[before:]):
        raise MCUDeployError(f"tensor {tensor} is not read from step {before} on")
    name = fresh_name(graph, f"{tensor}@fast")
    copy = Node(fresh_name(graph, f"stage_{tensor}"), COPY, (tensor,), (name,), {"of": tensor, STAGE: 1})
    renamed = {n.name: n.with_(inputs=tuple(name if i == tensor else i for i in n.inputs))
               for n in order[before:] if tensor in n.inputs}
    new_order = order[:before] + (copy,) + tuple(renamed.get(n.name, n) for n in order[before:])
    scheduled = {n.name for n in order}
    nodes = new_order + tuple(n for n in graph.nodes if n.name not in scheduled)
    added = graph[tensor].with_(name=name, kind="activation", region=None)
    return graph.replace(tensors={**graph.tensors, name: added}, nodes=nodes), new_order
