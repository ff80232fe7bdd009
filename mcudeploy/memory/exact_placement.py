"""Exact and solver-guided placement with OR-Tools CP-SAT: rectangles in time x offset.

Each buffer is a rectangle: its lifetime (fixed) by its size, at an offset in steps of the
alignment. No two rectangles may overlap (AddNoOverlap2D, with the cumulative form of the same
constraint to strengthen the bound). The live-bytes lower bound is the arena's lower limit; the
greedy placement is the upper limit and the hint, so the result is never worse than greedy, and an
arena at the bound is optimal at once.

- ``full`` (up to FULL_BUFFERS buffers): one model over every buffer, arena minimised; CP-SAT
  may also prove an arena above the bound optimal.
- larger graphs: iterated greedy first (``greedy.squeaky``, up to SQUEAKY_SHARE of the effort);
- then, for larger graphs and when ``full`` ran out of time above the bound, ``repair``: a
  large-neighbourhood search that squeezes the arena one alignment step below its top at a
  time. While some buffer ends above the cap, free a neighbourhood of the first such buffer
  (every buffer live in a time window around it, widened step by step; for a long-lived buffer,
  the buffers in the offset band where it would collide least), keep all others where they are,
  and ask CP-SAT for offsets of the freed ones below the cap. It stops at the first cap it
  cannot meet, and proves nothing unless it reaches the bound.

The limit is in effort seconds (mcudeploy/effort.py): CP-SAT's deterministic time with one worker
and a fixed seed, iterated greedy's passes, and a fixed cost per repair model for building it, so
the placement stops at the same point, and is the same, however busy the machine is.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from mcudeploy.memory.greedy import squeaky
from mcudeploy.effort import Effort, run_solver, solver, solver_effort

FULL_BUFFERS = 250
SQUEAKY_PASSES = 100
SQUEAKY_SHARE = 0.4  # of the effort, at most
WINDOW_MARGINS = (0, 1, 2, 4, 8, 16, 32)
MAX_FREED = 160
CORRIDORS = 4
REFIT_SOLVER_S = 1.0  # effort a single repair model may spend
# Deterministic seconds CP-SAT counts per second of one core on these models (mcudeploy/effort.py):
# measured 0.035-0.13, median 0.075, on VWW's and ResNet-8's split plans. At 5 effort seconds
# (0.4 deterministic) VWW's tuned plan places at 32,856 B, what 5 s of wall clock gave on an idle machine.
DTIME_PER_S = 0.08
# The same for a repair model: far lower where its fixed rectangles split into long NoOverlap
# constraints (ResNet-8's split plan: 0.011, 7 s of one core for 0.08 deterministic seconds),
# whose propagation CP-SAT's deterministic time undercounts.
REFIT_DTIME_PER_S = 0.02
# Seconds to build and hand over one repair model on an idle machine, per rectangle in it (what
# CP-SAT's deterministic time does not count): fitted to ResNet-8's split plan (32 repair models of
# 51,350 rectangles in all took 6.7 s of one core).
REFIT_RECT_S = 120e-6


def _units(n: int, unit: int) -> int:
    return -(-n // unit)


def _rectangles(m, b, k, unit: int, xs: list, ys: list, demands: list) -> None:
    """The buffer's rectangles (time x offset) at offset `k` (a variable or a constant), in units."""
    for off, size, first, last in b.rects():
        units = _units(size, unit)
        ys.append(m.NewFixedSizeIntervalVar(k + off // unit, units, f"y_{b.name}_{off}_{first}"))
        xs.append(m.NewFixedSizeIntervalVar(first + 1, last - first + 1, f"x_{b.name}_{off}_{first}"))
        demands.append(units)


def full(buffers: Sequence, unit: int, hint: Mapping[str, int], lower: int,
         effort: Effort) -> tuple[dict, int, bool]:
    """(offsets, arena, proven optimal), one CP-SAT model over all buffers, within ``effort``."""
    from ortools.sat.python import cp_model

    upper = max((hint[b.name] + b.size for b in buffers), default=0)
    horizon = _units(upper, unit)
    m = cp_model.CpModel()
    arena = m.NewIntVar(_units(lower, unit), horizon, "arena")
    xs, ys, demands, starts = [], [], [], {}
    for b in buffers:
        units = _units(b.size, unit)
        k = m.NewIntVar(0, horizon - units, f"k_{b.name}")
        starts[b.name] = k
        _rectangles(m, b, k, unit, xs, ys, demands)
        m.Add(arena >= k + units)
        m.AddHint(k, hint[b.name] // unit)
    m.AddNoOverlap2D(xs, ys)
    m.AddCumulative(xs, demands, arena)
    m.AddHint(arena, horizon)
    m.Minimize(arena)
    cp = solver(effort.left(), DTIME_PER_S)
    status = run_solver(cp, m)
    effort.spend(solver_effort(cp, DTIME_PER_S))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return dict(hint), upper, False
    found = {b.name: cp.Value(starts[b.name]) * unit for b in buffers}
    size = max(found[b.name] + b.size for b in buffers)
    if size >= upper:
        return dict(hint), upper, status == cp_model.OPTIMAL
    return found, size, status == cp_model.OPTIMAL


def _refit(free: Sequence, fixed: Sequence, offsets: Mapping[str, int], cap: int, unit: int,
           effort: Effort) -> Optional[dict]:
    """Offsets below `cap` for the buffers in `free`, around the `fixed` ones, or None; spends on
    ``effort`` the model's building and at most REFIT_SOLVER_S of solving."""
    from ortools.sat.python import cp_model

    top = cap // unit
    m = cp_model.CpModel()
    xs, ys, demands, starts = [], [], [], {}
    for b in free:
        units = _units(b.size, unit)
        if units > top:
            return None
        k = m.NewIntVar(0, top - units, f"k_{b.name}")
        starts[b.name] = k
        _rectangles(m, b, k, unit, xs, ys, demands)
        m.AddHint(k, min(offsets[b.name] // unit, top - units))
    for b in fixed:
        _rectangles(m, b, offsets[b.name] // unit, unit, xs, ys, demands)
    m.AddNoOverlap2D(xs, ys)
    m.AddCumulative(xs, demands, top)
    effort.spend(REFIT_RECT_S * len(xs))
    cp = solver(min(effort.left(), REFIT_SOLVER_S), REFIT_DTIME_PER_S)
    status = run_solver(cp, m)
    effort.spend(solver_effort(cp, REFIT_DTIME_PER_S))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return {b.name: cp.Value(starts[b.name]) * unit for b in free}


def _neighbourhoods(buffers: Sequence, current: Mapping[str, int], v, cap: int):
    """Sets of buffers to free so that `v` may come down below `cap`, smallest change first.

    Time windows around `v` (every buffer live in the window), then, for a long-lived `v`,
    corridors: the offset bands where `v` would collide with the fewest bytes, freeing `v` and
    the buffers live with it inside the band."""
    for margin in WINDOW_MARGINS:
        w0, w1 = v.first - margin, v.last + margin
        free = [b for b in buffers if b.first <= w1 and b.last >= w0]
        if len(free) > MAX_FREED:
            break
        yield free
    live = [b for b in buffers if b is not v and b.first <= v.last and b.last >= v.first]
    starts = sorted({0} | {current[b.name] + b.size for b in live if current[b.name] + b.size + v.size <= cap})

    def blocking(lo: int, hi: int) -> list:
        return [b for b in live if current[b.name] < hi and lo < current[b.name] + b.size]

    scored = sorted(starts, key=lambda o: (sum(b.size for b in blocking(o, o + v.size)), o))
    for o in scored[:CORRIDORS]:
        for pad in (0, v.size // 2, v.size):
            free = [v] + blocking(o - pad, o + v.size + pad)
            if len(free) > MAX_FREED:
                break
            yield free


def _repair(buffers: Sequence, offsets: Mapping[str, int], cap: int, unit: int, effort: Effort) -> Optional[dict]:
    """A placement with every buffer below `cap`, changed one neighbourhood at a time, or None."""
    current = dict(offsets)
    while True:
        over = [b for b in buffers if current[b.name] + b.size > cap]
        if not over:
            return current
        v = min(over, key=lambda b: (b.first, b.name))
        for free in _neighbourhoods(buffers, current, v, cap):
            if effort.exhausted:
                return None
            t0, t1 = min(b.first for b in free), max(b.last for b in free)
            names = {b.name for b in free}
            fixed = [b for b in buffers if b.name not in names and b.first <= t1 and b.last >= t0]
            found = _refit(free, fixed, current, cap, unit, effort)
            if found is not None:
                current.update(found)
                break
        else:
            return None


def repair(buffers: Sequence, unit: int, hint: Mapping[str, int], lower: int, effort: Effort) -> tuple[dict, int]:
    """(offsets, arena): squeeze the arena one step below its top until a cap cannot be met."""
    best = dict(hint)
    size = max((best[b.name] + b.size for b in buffers), default=0)
    while size > lower and not effort.exhausted:
        found = _repair(buffers, best, size - unit, unit, effort)
        if found is None:
            break
        best = found
        size = max(best[b.name] + b.size for b in buffers)
    return best, size


def solve(buffers: Sequence, alignment: int, hint: Mapping[str, int], lower: int,
          effort: Effort) -> tuple[dict, int, bool, str]:
    """(offsets, arena, proven optimal, how) for buffers that all go in one arena, within ``effort``."""

    unit = max(alignment, 1)
    sized = [b for b in buffers if b.size > 0]
    upper = max((hint[b.name] + b.size for b in sized), default=0)
    if upper <= lower or not sized:
        return dict(hint), upper, True, "greedy"
    offsets, size, proven = dict(hint), upper, False
    how = "cp-sat"
    if len(sized) <= FULL_BUFFERS:
        offsets, size, proven = full(sized, unit, hint, lower, effort)
    else:
        how = "iterated greedy and cp-sat repair"
        part = effort.share(SQUEAKY_SHARE)
        found, found_size = squeaky(sized, unit, lower, SQUEAKY_PASSES, part)
        effort.settle(part)
        if found_size < size:
            offsets, size = found, found_size
    if not proven and size > lower and not effort.exhausted:
        offsets, size = repair(sized, unit, offsets, lower, effort)
    out = {b.name: offsets.get(b.name, hint[b.name]) for b in buffers}
    return out, size, proven or size <= lower, how
