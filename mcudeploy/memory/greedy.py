"""Greedy placement: the algorithm of TFLite Micro's greedy planner, under several orderings.

Take buffers one at a time; put each at the lowest aligned offset where it overlaps no
already-placed buffer that is live at the same time. The best of the orderings is kept; ties go
to the first ordering listed, and each ordering breaks its own ties by name. Greedy is not
optimal in general.

``squeaky``: iterated greedy (squeaky-wheel optimisation): after each pass, every buffer that
ends above the target gets a higher priority, and the next pass places the buffers by priority,
then by size. Deterministic; used by the exact method on graphs too large for one solver model.
"""
from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

import numpy as np

from mcudeploy.memory.lifetimes import align_up


ORDERINGS: dict[str, Callable] = {
    "size": lambda b: (-b.size, -(b.last - b.first), b.name),
    "area": lambda b: (-b.size * (b.last - b.first + 1), -b.size, b.name),
    "lifetime": lambda b: (-(b.last - b.first), -b.size, b.name),
    "first": lambda b: (b.first, -b.size, b.name),
    "last": lambda b: (-b.last, -b.size, b.name),
}


def _greedy(buffers: Sequence, key, alignment: int) -> dict:
    rects = []  # (first, last, start, end) of every placed rectangle
    offsets = {}
    for b in sorted(buffers, key=key):
        parts = b.rects()
        placed = np.asarray(rects, dtype=np.int64).reshape(-1, 4)
        busy = []  # offsets o the buffer may not take: o in [lo, hi)
        for off, size, first, last in parts:
            mask = (placed[:, 0] <= last) & (placed[:, 1] >= first)
            if mask.any():
                busy += zip((placed[mask, 2] - off - size + 1).tolist(), (placed[mask, 3] - off).tolist())
        offset = 0
        for lo, hi in sorted(busy):
            if offset < lo:
                break
            offset = max(offset, align_up(hi, alignment))
        offsets[b.name] = offset
        rects += [(first, last, offset + off, offset + off + size) for off, size, first, last in parts]
    return offsets


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
    for name, key in ORDERINGS.items():
        offsets = _greedy(buffers, key, alignment)
        size = arena_size(buffers, offsets)
        if best is None or size < best[1]:
            best = (offsets, size, name)
    return best


def squeaky(buffers: Sequence, alignment: int, target: int, passes: int,
            deadline: float = float("inf")) -> tuple[dict, int]:
    """(offsets, arena): the best of `passes` greedy passes (fewer if the `deadline`, a
    time.perf_counter() value, comes first), each reordered by the last one's overflow."""
    priority = {b.name: 0 for b in buffers}
    size_key = ORDERINGS["size"]
    best = None
    for i in range(passes):
        if i and time.perf_counter() > deadline:
            break
        offsets = _greedy(buffers, lambda b: (-priority[b.name],) + size_key(b), alignment)
        arena = arena_size(buffers, offsets)
        if best is None or arena < best[1]:
            best = (offsets, arena)
        if arena <= target:
            break
        for b in buffers:
            if offsets[b.name] + b.size > target:
                priority[b.name] += 1
    return best
