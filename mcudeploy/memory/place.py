"""Offsets for buffers in one arena per memory region: ``place(lifetimes, regions, method)``.

Methods:
- ``greedy``: TFLite Micro's greedy planner under several orderings, the best kept
  (mcudeploy/memory/greedy.py);
- ``exact``: greedy, then, when greedy is above the live-bytes lower bound, CP-SAT on the
  time x offset rectangles within the limit, in effort seconds per region (mcudeploy/effort.py:
  work counted, not wall-clock time, so the offsets do not depend on the machine's load;
  mcudeploy/memory/exact_placement.py).
A placement is ``proven_optimal`` when its arena equals the lower bound (no placement can go
below the bytes live at the peak step), or, for ``exact``, when the solver proves that no
smaller arena exists. The result always reports the bound next to the arena it reached.

Several regions (mcudeploy/memory/regions.py): buffers are assigned to regions first, then each
region's buffers are placed in that region's own arena. The states' buffers are no arena's: they sit one
after the other in a buffer of their own (mcudeploy/memory/state.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.effort import Effort
from mcudeploy.errors import MCUDeployError
from mcudeploy.memory.exact_placement import solve
from mcudeploy.memory.greedy import greedy, live_peak
from mcudeploy.memory.lifetimes import Buffer, Lifetimes
from mcudeploy.memory import state
from mcudeploy.memory.regions import DEFAULT, Area, allowed_areas, assign

METHODS = ("greedy", "exact")


@dataclass(frozen=True)
class Placement:
    offsets: dict  # buffer name -> byte offset in its region's arena
    arena_bytes: int  # all regions together
    lower_bound_bytes: int  # the largest sum of bytes live at one step
    method: str
    regions: dict = field(default_factory=dict)  # buffer name -> region name
    arenas: dict = field(default_factory=dict)  # region name -> arena bytes, every usable region in order
    proven_optimal: bool = False
    detail: str = ""  # how the arena was reached
    time_s: float = 0.0  # wall-clock seconds (informative: the machine's load changes it, not the offsets)
    effort_s: float = 0.0  # effort seconds spent (mcudeploy/effort.py), all regions together
    # the states' buffers (Lifetimes.state): byte offset of each in the state buffer, outside every arena
    state_offsets: dict = field(default_factory=dict)
    state_bytes: int = 0


def check_no_overlap(buffers: Sequence[Buffer], offsets: Mapping, regions: Optional[Mapping] = None) -> None:
    """Raise if two buffers in the same region, live at the same time, share a byte."""
    regions = regions or {}
    sized = [b for b in buffers if b.size > 0]
    where = {r: i for i, r in enumerate(sorted({str(regions.get(b.name)) for b in sized}))}
    rows = [(i, where[str(regions.get(b.name))], first, last, offsets[b.name] + off, offsets[b.name] + off + size)
            for i, b in enumerate(sized) for off, size, first, last in b.rects()]
    r = np.asarray(rows, dtype=np.int64).reshape(-1, 6)
    r = r[np.argsort(r[:, 2], kind="stable")]  # by first step: a rectangle meets only later-starting ones it outlives
    ends = np.searchsorted(r[:, 2], r[:, 3], side="right")
    for k in range(len(r)):
        rest = r[k + 1:ends[k]]
        hit = ((rest[:, 2] <= r[k, 3]) & (rest[:, 0] != r[k, 0]) & (rest[:, 1] == r[k, 1])
               & (rest[:, 4] < r[k, 5]) & (r[k, 4] < rest[:, 5]))
        if hit.any():
            a, b = sized[r[k, 0]], sized[rest[np.argmax(hit), 0]]
            raise AssertionError(f"buffers {a.name} and {b.name} are live together and overlap")


# Placements already solved in this process, by their problem: the exact method stops at a count of work, not at
# a clock, so the same buffers, alignment, method and limit give the same offsets, and a second solve of them
# (a tune's final plans often share an order between schedule methods; a resumed tune compiles its plans again)
# would spend the same effort for nothing. Bounded, oldest first out.
SOLVED: dict = {}
SOLVED_KEPT = 256


def _place_one(buffers: Sequence[Buffer], alignment: int, method: str,
               effort: Effort) -> tuple[dict, int, bool, str]:
    key = (tuple(buffers), alignment, method, effort.limit)
    if key not in SOLVED:
        done = Effort(effort.limit)
        SOLVED[key] = (*_solve_one(buffers, alignment, method, done), done.spent)
        while len(SOLVED) > SOLVED_KEPT:
            del SOLVED[next(iter(SOLVED))]
    *found, spent = SOLVED[key]
    effort.spend(spent)
    offsets, size, proven, how = found
    return dict(offsets), size, proven, how


def _solve_one(buffers: Sequence[Buffer], alignment: int, method: str,
               effort: Effort) -> tuple[dict, int, bool, str]:
    offsets, size, ordering = greedy(buffers, alignment)
    bound = live_peak(buffers)
    if size <= bound or method == "greedy":
        return offsets, size, size <= bound, f"greedy ({ordering} first)"
    found, found_size, proven, how = solve(buffers, alignment, offsets, bound, effort)
    if found_size < size:
        return found, found_size, proven, f"{how}, {'optimal' if proven else f'best within {effort.limit:g} s of effort'}"
    return offsets, size, proven, f"greedy ({ordering} first){', proven optimal by cp-sat' if proven else ''}"


def place(lifetimes: Lifetimes, regions: Sequence[Area] = DEFAULT, method: str = "greedy", alignment: int = 4,
          time_limit: float = 10.0, allowed: Optional[Mapping[str, Sequence[str]]] = None) -> Placement:
    """Place every buffer: a region, and an offset in that region's arena; ``time_limit`` is the
    exact method's effort per region, in effort seconds (mcudeploy/effort.py).

    allowed: buffer name -> names of the regions it may go in (others: any region; a buffer that
    holds a graph input or output never goes in a region with "dma": false)."""
    if method not in METHODS:
        raise MCUDeployError(f"unknown placement method '{method}'; choose one of {', '.join(METHODS)}")
    t0 = time.perf_counter()
    buffers = lifetimes.buffers
    regions = tuple(regions)
    may = allowed_areas(buffers, regions, allowed)
    where = {b.name: may[b.name][0] for b in buffers}
    if len(regions) > 1:
        where = assign(buffers, regions, may, lifetimes.steps)
    over: dict[str, int] = {}
    spent = 0.0
    for _ in range(8):  # re-assign while a region's arena, placed above its bound, overflows
        offsets, arenas, proofs, details = {}, {}, [], []
        for a in regions:
            inside = [b for b in buffers if where[b.name] == a.name]
            effort = Effort(float(time_limit))
            placed, size, proven, how = _place_one(inside, alignment, method, effort)
            spent += effort.spent
            offsets.update(placed)
            arenas[a.name] = size
            proofs.append(proven)
            if inside:
                details.append(f"{a.name}: {how}" if len(regions) > 1 else how)
            over[a.name] = size - live_peak(inside)
        if len(regions) == 1 or all(arenas[a.name] <= a.capacity for a in regions):
            break
        again = assign(buffers, regions, may, lifetimes.steps, over)
        if again == where:
            break
        where = again
    total = sum(arenas.values())
    bound = lifetimes.lower_bound()
    check_no_overlap(buffers, offsets, where)
    proven = total <= bound or (len(set(where.values())) <= 1 and all(proofs))  # one region in use: its proof holds
    state_offsets, state_bytes = state.offsets(lifetimes.state, alignment)
    return Placement(offsets, total, bound, method, dict(where), arenas, proven, "; ".join(details),
                     time.perf_counter() - t0, spent, state_offsets, state_bytes)
