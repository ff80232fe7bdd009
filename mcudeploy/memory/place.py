"""Offsets for buffers in one arena.

Greedy placement (the algorithm of TFLite Micro's greedy planner, tried under several
orderings): take buffers one at a time; put each at the lowest offset where it overlaps no
already-placed buffer that is live at the same time. The best of the orderings is kept; ties
are broken deterministically (size, then lifetime, then name). Greedy is not optimal in
general, so the result reports the live-bytes lower bound next to the arena it reached.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from mcudeploy.memory.lifetimes import Buffer, Lifetimes, align_up


@dataclass(frozen=True)
class Placement:
    offsets: dict  # buffer name -> byte offset
    arena_bytes: int
    lower_bound_bytes: int
    method: str


ORDERINGS: dict[str, Callable[[Buffer], tuple]] = {
    "size": lambda b: (-b.size, -(b.last - b.first), b.name),
    "area": lambda b: (-b.size * (b.last - b.first + 1), -b.size, b.name),
    "lifetime": lambda b: (-(b.last - b.first), -b.size, b.name),
    "first": lambda b: (b.first, -b.size, b.name),
}


def _greedy(buffers: Sequence[Buffer], key, alignment: int) -> dict:
    placed: list[tuple[Buffer, int]] = []
    offsets = {}
    for b in sorted(buffers, key=key):
        busy = sorted((off, off + p.size) for p, off in placed if p.overlaps_in_time(b))
        offset = 0
        for start, end in busy:
            if offset + b.size <= start:
                break
            offset = max(offset, align_up(end, alignment))
        offsets[b.name] = offset
        placed.append((b, offset))
    return offsets


def arena_size(buffers: Sequence[Buffer], offsets: dict) -> int:
    return max((offsets[b.name] + b.size for b in buffers), default=0)


def check_no_overlap(buffers: Sequence[Buffer], offsets: dict) -> None:
    """Raise if two buffers live at the same time share a byte."""
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            if a.overlaps_in_time(b):
                oa, ob = offsets[a.name], offsets[b.name]
                if oa < ob + b.size and ob < oa + a.size:
                    raise AssertionError(f"buffers {a.name} and {b.name} are live together and overlap")


def place(lifetimes: Lifetimes, alignment: int = 4, method: str = "greedy") -> Placement:
    if method != "greedy":
        raise ValueError(f"unknown placement method {method}")
    buffers = lifetimes.buffers
    best = None
    for name, key in ORDERINGS.items():
        offsets = _greedy(buffers, key, alignment)
        size = arena_size(buffers, offsets)
        if best is None or size < best[0]:
            best = (size, offsets, name)
    size, offsets, name = best
    check_no_overlap(buffers, offsets)
    return Placement(offsets, size, lifetimes.lower_bound(), f"greedy-{name}")
