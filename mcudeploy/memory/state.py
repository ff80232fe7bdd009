"""The states of a stateful model (Graph.states) in memory: a static buffer of their own, outside the arena.

A state is a graph input whose bytes must outlive the call, so its buffer (the state tensor and the views
and slices of it, as mcudeploy/memory/alias.py grouped them) is taken out of the arena's buffers: the
placement never sees it, so it is never reused, split into parts or moved to another region. The state
buffers sit one after the other, each aligned, in the order of Graph.states (``offsets``).

Each state takes its next value (the graph output Graph.state_updates pairs it with) once nothing reads the
state any more: model.c copies it in after that step (memory/alias.py's _hold_next_values keeps the value
alive until then, Lifetimes.copies says when). Where the dataflow allows, the next value is written in place
instead, and nothing is copied: the whole buffer that holds it (its views, the tensors written into it,
those it was written over in place) becomes the state's buffer, the state sitting where the next value
does in it. That needs the buffer to be first written after the last step that reads the state's buffer,
and to hold no other graph input or output. A buffer of the state's size is always taken so. A bigger one
(a ring buffer's next value is a window of the memory it was sliced from, one frame more than the state)
keeps its extra bytes outside the arena for good, so it is taken only where the arena's live-bytes peak
falls by at least as much without it.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph


def _aligned(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def _peak(spans: Sequence, alignment: int) -> int:
    """The live-bytes peak of ``spans`` (alias.Span: first..last, or their steps)."""
    ends = [s.last for s in spans] + [z for s in spans for _, z, _ in s.steps]
    live = np.zeros(max(ends, default=0) + 3, dtype=np.int64)
    for s in spans:
        for first, last, n in s.steps or ((s.first, s.last, s.nbytes),):
            live[first + 1] += _aligned(n, alignment)
            live[last + 2] -= _aligned(n, alignment)
    return int(np.cumsum(live).max(initial=0))


def split_states(graph: Graph, slots: Mapping, spans: Sequence, alignment: int = 4) -> tuple[dict, list, list, dict]:
    """(slots, the arena's spans, the states' spans in the order of Graph.states, state -> whether its next
    value is written in place) from alias.share's slots and spans."""
    if not graph.states:
        return dict(slots), list(spans), [], {}
    slots = dict(slots)
    by_tensor = {t: sp for sp in spans for t in sp.tensors}
    model_io = set(graph.model_inputs()) | set(graph.model_outputs())
    special = set(graph.states) | {v for _, v in graph.state_updates()}
    taken: set[str] = set()  # span names that went into a state's buffer
    holding = {by_tensor[s].name for s in graph.states}  # the states' own spans: never the arena's
    states, in_place = [], {}
    for state, value in graph.state_updates():
        sp = by_tensor[state]
        shown = next((t for t in sp.tensors if t in model_io), None)
        if shown is not None:
            raise UnsupportedError(f"graph output {shown} is a view of state {state}, which the call overwrites at "
                                   f"its end; mcudeploy needs a copy of it")
        own = by_tensor[value]
        shift = slots[value].offset
        fits = (own is not sp and own.name not in taken and own.first > sp.last and not own.steps
                and shift + sp.nbytes <= own.nbytes
                and not any(t in model_io or (t in special and t != value) or graph[t].region is not None
                            for t in own.tensors))
        if fits and own.nbytes > sp.nbytes:  # the extra bytes stay outside the arena: worth it only if it shrinks
            rest = [s for s in spans if s.name not in taken and s.name not in holding]
            without = [s for s in rest if s is not own]
            fits = _peak(rest, alignment) - _peak(without, alignment) >= _aligned(own.nbytes, alignment) - \
                _aligned(sp.nbytes, alignment)
        in_place[state] = fits
        if fits:
            for t in sp.tensors:  # the state sits where its next value is written
                slots[t] = replace(slots[t], offset=slots[t].offset + shift)
            for t in own.tensors:
                slots[t] = replace(slots[t], buffer=sp.name)
            taken.add(own.name)
            sp = replace(sp, tensors=sp.tensors + own.tensors, nbytes=own.nbytes, last=max(sp.last, own.last))
        taken.add(sp.name)
        states.append(sp)
    arena = [sp for sp in spans if sp.name not in taken]
    return slots, arena, states, in_place


def offsets(buffers: Sequence, alignment: int) -> tuple[dict[str, int], int]:
    """(buffer name -> its byte offset in the state buffer, the state buffer's bytes): one after the other."""
    out, at = {}, 0
    for b in buffers:
        out[b.name] = at
        at += _aligned(b.size, alignment)
    return out, at
