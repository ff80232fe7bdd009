"""The states of a stateful model (Graph.states) in memory: a static buffer of their own, outside the arena.

A state is a graph input whose bytes must outlive the call, so its buffer (the state tensor and the views
and slices of it, as mcudeploy/memory/alias.py grouped them) is taken out of the arena's buffers: the
placement never sees it, so it is never reused, split into parts or moved to another region. The state
buffers sit one after the other, each aligned, in the order of Graph.states (``offsets``).

At the end of a call each state takes its next value (the graph output Graph.state_updates pairs it with):
model.c copies it in after the last step. Where the dataflow allows, the next value is written in place
instead, into the state's own buffer, and nothing is copied: when the whole buffer that holds it (its views,
the tensors written into it, those it was written over in place) is first written after the last step
that reads the state's buffer, is the state's size, and holds no other graph input or output.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph


def split_states(graph: Graph, slots: Mapping, spans: Sequence) -> tuple[dict, list, list, dict]:
    """(slots, the arena's spans, the states' spans in the order of Graph.states, state -> whether its next
    value is written in place) from alias.share's slots and spans."""
    if not graph.states:
        return dict(slots), list(spans), [], {}
    slots = dict(slots)
    by_tensor = {t: sp for sp in spans for t in sp.tensors}
    model_io = set(graph.model_inputs()) | set(graph.model_outputs())
    special = set(graph.states) | {v for _, v in graph.state_updates()}
    taken: dict[str, object] = {}  # span name -> the state span it went into
    states, in_place = [], {}
    for state, value in graph.state_updates():
        sp = by_tensor[state]
        shown = next((t for t in sp.tensors if t in model_io), None)
        if shown is not None:
            raise UnsupportedError(f"graph output {shown} is a view of state {state}, which the call overwrites at "
                                   f"its end; mcudeploy needs a copy of it")
        own = by_tensor[value]
        fits = (own is not sp and own.name not in taken and own.first > sp.last and own.nbytes == sp.nbytes
                and not own.steps and slots[value].offset == 0
                and not any(t in model_io or (t in special and t != value) or graph[t].region is not None
                            for t in own.tensors))
        in_place[state] = fits
        if fits:
            taken[own.name] = sp
            for t in own.tensors:
                slots[t] = replace(slots[t], buffer=sp.name)
            sp = replace(sp, tensors=sp.tensors + own.tensors, last=max(sp.last, own.last))
        taken[sp.name] = sp
        states.append(sp)
    arena = [sp for sp in spans if sp.name not in taken]
    return slots, arena, states, in_place


def offsets(buffers: Sequence, alignment: int) -> tuple[dict[str, int], int]:
    """(buffer name -> its byte offset in the state buffer, the state buffer's bytes): one after the other."""
    out, at = {}, 0
    for b in buffers:
        out[b.name] = at
        at += (b.size + alignment - 1) // alignment * alignment
    return out, at
