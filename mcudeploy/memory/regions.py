"""The memory regions an arena may use, from board data, and which buffers go in which.

A board's ``regions`` list the RAM blocks in order of preference (the first usable one also
holds the firmware's statics and stack). Per region, besides ``name``, ``size``, ``origin``:
- ``"excluded": true``: not usable at all (e.g. not modelled by the emulator);
- ``"dma": false``: the region may not hold graph inputs or outputs (a caller or a DMA engine
  fills and reads those: on STM32F4 the core-coupled RAM is not reachable by DMA);
- ``"section": ".ccmram"``: the linker section the region's arena array goes in (the linker
  script maps it to the region); without it the array is an ordinary static;
- ``"reserved": N``: bytes of the region the arena may not use (the stack of the first usable
  region, ``stack_bytes``, is reserved without saying).

Assignment, largest benefit first: every buffer starts in the first region it is allowed in.
While a region's arena exceeds its capacity, the buffer whose move lowers that region's
live-bytes peak the most (ties: the larger, then the name) moves to the first other region
that still fits with it. A model that fits in the first region stays there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.errors import MCUDeployError

UNBOUNDED = 1 << 62


@dataclass(frozen=True)
class Area:
    """A region as the placement sees it."""

    name: str
    capacity: int = UNBOUNDED  # bytes the arena may use
    section: Optional[str] = None  # linker section of the region's arena array
    dma: bool = True  # may hold graph inputs and outputs


DEFAULT = (Area("sram"),)


def areas(board) -> tuple[Area, ...]:
    """The usable regions of a board, in order; the first also holds the stack."""
    out = []
    for region in board.regions:
        if region.excluded:
            continue
        reserved = region.reserved + (board.stack_bytes if not out else 0)
        out.append(Area(region.name, max(region.size - reserved, 0), region.section, region.dma))
    if not out:
        raise MCUDeployError(f"board {board.name} has no usable memory region (every region is excluded)")
    return tuple(out)


def allowed_areas(buffers, regions: Sequence[Area], allowed: Optional[Mapping] = None) -> dict[str, tuple[str, ...]]:
    """Buffer name -> names of the regions it may go in, in board order."""
    out = {}
    for b in buffers:
        names = tuple(a.name for a in regions if (a.dma or not b.io)
                      and (allowed is None or b.name not in allowed or a.name in allowed[b.name]))
        if not names:
            why = "it holds a graph input or output and no region allows DMA" if b.io else "of the allowed regions given"
            raise MCUDeployError(f"buffer {b.name} fits no memory region because {why}")
        out[b.name] = names
    return out


def _live(buffers, steps: int) -> np.ndarray:
    diff = np.zeros(steps + 3, dtype=np.int64)
    for b in buffers:
        for _, size, first, last in b.rects():
            diff[first + 1] += size
            diff[last + 2] -= size
    return np.cumsum(diff)


def assign(buffers, regions: Sequence[Area], allowed: Mapping[str, tuple[str, ...]],
           steps: int, over: Optional[Mapping[str, int]] = None) -> dict[str, str]:
    """Buffer name -> region name. `over`: bytes by which a region's placed arena exceeded its
    live-bytes peak in an earlier attempt (the assignment then leaves that much room)."""
    over = over or {}
    where = {b.name: allowed[b.name][0] for b in buffers}
    live = {a.name: _live([b for b in buffers if where[b.name] == a.name], steps) for a in regions}
    room = {a.name: a.capacity - over.get(a.name, 0) for a in regions}
    while True:
        moved = False
        for a in regions:
            peak = int(live[a.name].max())
            if peak <= room[a.name]:
                continue
            at = live[a.name] == peak
            best = None
            for b in buffers:
                if where[b.name] != a.name or not at[b.first + 1:b.last + 2].any():
                    continue
                mine = _live([b], steps)
                benefit = peak - int((live[a.name] - mine).max())
                for other in allowed[b.name]:
                    if other == a.name:
                        continue
                    if int((live[other] + mine).max()) <= room[other] and int(live[other].max()) <= room[other]:
                        key = (-benefit, -b.size, b.name)
                        if best is None or key < best[0]:
                            best = (key, b, other, mine)
                        break
            if best is not None:
                _, b, other, mine = best
                where[b.name] = other
                live[a.name] -= mine
                live[other] += mine
                moved = True
                break
        if not moved:
            return where
