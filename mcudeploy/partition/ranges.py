"""Index arithmetic of a cut: balanced output ranges, and the input range (with pads) a piece reads.

Ranges are half-open, [lo, hi). For a window dimension (index = o * stride + k * dilation - pad),
output rows [lo, hi) read input rows lo*s - p ... (hi-1)*s + (K-1)*d - p inclusive; clipped to
the input [0, H), the rows cut off at either end become the piece's own padding:

    pad_begin' = clipped_start - (lo*s - p)      pad_end' = unclipped_last - clipped_last

so that the piece, with stride, dilation and kernel unchanged, computes exactly rows [lo, hi).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Read:
    """What one piece reads of one input dimension: rows [lo, hi), and pads when windowed."""

    lo: int
    hi: int
    pads: Optional[tuple[int, int]] = None


def balanced(extent: int, pieces: int, shares: Optional[tuple[int, ...]] = None) -> list[tuple[int, int]]:
    """`pieces` consecutive ranges tiling [0, extent), their sizes differing by at most one; with `shares` (one
    positive number per piece), sized in proportion to them instead (rounded down at each boundary, so a
    range may be empty where the extent is too short for the shares)."""
    if shares is None:
        return [(j * extent // pieces, (j + 1) * extent // pieces) for j in range(pieces)]
    total, ends, run = sum(shares), [], 0
    for share in shares:
        run += share
        ends.append(extent * run // total)
    return list(zip([0] + ends[:-1], ends))


def window_read(lo: int, hi: int, size: int, stride: int, dilation: int, pad: int, kernel: int) -> Read:
    """Input rows that output rows [lo, hi) of a window dimension read, clipped to [0, size), and
    the pads that stand for the rows clipped away. The range is empty (lo == hi) when every tap
    of every row falls in the padding."""
    first = lo * stride - pad
    last = (hi - 1) * stride + (kernel - 1) * dilation - pad
    start, stop = max(first, 0), min(last, size - 1)
    if stop < start:
        return Read(start, start, (0, 0))
    return Read(start, stop + 1, (start - first, last - stop))


def hull(ranges) -> tuple[int, int]:
    """The smallest range holding every one of `ranges` (pairs lo, hi)."""
    ranges = list(ranges)
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def cover(pieces: list[tuple[int, int]], lo: int, hi: int, prefer: int = 0) -> Optional[list[tuple[int, int, int]]]:
    """(piece index, lo, hi) parts, in order, that together give [lo, hi) from `pieces` (each a
    range, possibly overlapping): one part when a single piece holds it all (piece `prefer` if it
    does), else the fewest consecutive parts; None if the pieces leave a gap."""
    order = sorted(range(len(pieces)), key=lambda j: j != prefer)  # `prefer` first, then in order
    for j in order:
        a, b = pieces[j]
        if a <= lo and hi <= b:
            return [(j, lo, hi)]
    parts, pos = [], lo
    while pos < hi:
        best = None
        for j, (a, b) in enumerate(pieces):
            if a <= pos < b and (best is None or b > pieces[best][1]):
                best = j
        if best is None:
            return None
        end = min(pieces[best][1], hi)
        parts.append((best, pos, end))
        pos = end
    return parts
