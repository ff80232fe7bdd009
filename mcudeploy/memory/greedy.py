"""Greedy placement: the algorithm of TFLite Micro's greedy planner, under several orderings.

Take buffers one at a time; put each at the lowest aligned offset where it overlaps no
already-placed buffer that is live at the same time. The best of the orderings is kept; ties go
to the first ordering listed, and each ordering breaks its own ties by name. Greedy is not
optimal in general.

``squeaky``: iterated greedy (squeaky-wheel optimisation): after each pass, every buffer that
ends above the target gets a higher priority, and the next pass places the buffers by priority,
then by size. Deterministic, and so is where it stops: each pass spends ``pass_cost`` effort
seconds (mcudeploy/effort.py), never wall-clock time. Used by the exact method on graphs too large
for one solver model.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from mcudeploy.effort import Effort


ORDERINGS: dict[str, Callable] = {
    "size": lambda b: (-b.size, -(b.last - b.first), b.name),
    "area": lambda b: (-b.size * (b.last - b.first + 1), -b.size, b.name),
    "lifetime": lambda b: (-(b.last - b.first), -b.size, b.name),
    "first": lambda b: (b.first, -b.size, b.name),
    "last": lambda b: (-b.last, -b.size, b.name),
}


def _rect_arrays(buffers: Sequence) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per buffer: its rectangles (offset, size, first, last) and the rows they take in ``placed`` at offset 0
    (first, last, start, end). Made once for every pass over the same buffers, not once per pass."""
    out = []
    for b in buffers:
        parts = np.asarray(b.rects(), dtype=np.int64).reshape(-1, 4)
        rows = parts[:, [2, 3, 0, 0]]
        rows[:, 3] += parts[:, 1]
        out.append((parts, rows))
    return out


def _greedy(buffers: Sequence, key, alignment: int, arrays: Optional[list] = None) -> dict:
    arrays = arrays or _rect_arrays(buffers)
    total = sum(len(parts) for parts, _ in arrays)
    placed = np.zeros((total, 4), dtype=np.int64)  # (first, last, start, end) of every placed rectangle
    n = 0
    offsets = {}
    for i in sorted(range(len(buffers)), key=lambda i: key(buffers[i])):  # stable: ties keep the listed order
        b = buffers[i]
        parts, rows = arrays[i]
        now = placed[:n]
        # offsets o the buffer may not take: o in [lo, hi), one pair per (part, placed rectangle) live together
        live = (now[None, :, 0] <= parts[:, 3:4]) & (now[None, :, 1] >= parts[:, 2:3])
        k, j = np.nonzero(live)
        offset = 0
        if len(j):
            lo = now[j, 2] - parts[k, 0] - parts[k, 1] + 1
            hi = now[j, 3] - parts[k, 0]
            at = np.argsort(lo, kind="stable")
            lo, hi = lo[at], -(-hi[at] // alignment) * alignment
            # sweep up from 0: the first interval starting above every earlier one's (aligned) end
            reach = np.maximum.accumulate(np.maximum(hi, 0))
            before = np.concatenate(([0], reach[:-1]))
            gap = np.flatnonzero(before < lo)
            offset = int(before[gap[0]] if len(gap) else reach[-1])
        offsets[b.name] = offset
        m = len(rows)
        placed[n:n + m] = rows
        placed[n:n + m, 2:] += offset
        n += m
    return offsets


# Seconds of one greedy pass on an idle machine: per buffer placed (a few numpy calls), per rectangle,
# and per pair of a rectangle and one placed before it (the overlap test). Fitted to 700 passes over
# 8-292 buffers of 8-2,050 rectangles (0.4-42 ms), within 15%.
PASS_BUFFER_S = 50e-6
PASS_RECT_S = 1.1e-6
PASS_PAIR_S = 13e-9


def pass_cost(buffers: Sequence) -> float:
    """Effort seconds of one greedy pass over ``buffers``."""
    rects = sum(len(b.rects()) for b in buffers)
    return PASS_BUFFER_S * len(buffers) + PASS_RECT_S * rects + PASS_PAIR_S * rects * rects / 2


def arena_size(buffers: Sequence, offsets: Mapping) -> int:
    return max((offsets[b.name] + b.size for b in buffers), default=0)


def live_peak(buffers: Sequence) -> int:
    """The live-bytes lower bound of a set of buffers."""
    events: dict[int, int] = {}
    for b in buffers:
        for _, size, first, last in b.rects():
            events[first] = events.get(first, 0) + size
            events[last + 1] = events.get(last + 1, 0) - size
    peak = acc = 0
    for t in sorted(events):
        acc += events[t]
        peak = max(peak, acc)
    return peak


def greedy(buffers: Sequence, alignment: int) -> tuple[dict, int, str]:
    """(offsets, arena, name of the best ordering)."""
    best = None
    arrays = _rect_arrays(buffers)
    for name, key in ORDERINGS.items():
        offsets = _greedy(buffers, key, alignment, arrays)
        size = arena_size(buffers, offsets)
        if best is None or size < best[1]:
            best = (offsets, size, name)
    return best


def squeaky(buffers: Sequence, alignment: int, target: int, passes: int,
            effort: Optional[Effort] = None) -> tuple[dict, int]:
    """(offsets, arena): the best of `passes` greedy passes (fewer if `effort` runs out first; the
    first pass always runs), each reordered by the last one's overflow."""
    priority = {b.name: 0 for b in buffers}
    size_key = ORDERINGS["size"]
    effort = effort or Effort(None)
    cost = pass_cost(buffers)
    best = None
    arrays = _rect_arrays(buffers)
    for i in range(passes):
        if i and effort.exhausted:
            break
        effort.spend(cost)
        offsets = _greedy(buffers, lambda b: (-priority[b.name],) + size_key(b), alignment, arrays)
        arena = arena_size(buffers, offsets)
        if best is None or arena < best[1]:
            best = (offsets, arena)
        if arena <= target:
            break
        for b in buffers:
            if offsets[b.name] + b.size > target:
                priority[b.name] += 1
    return best
