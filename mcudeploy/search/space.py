"""The schemes the search may try: cuts along the segments of the axis connection graph.

A candidate cut is a segment of one axis component (a connected run of operators that share a
loop axis, from mcudeploy/analysis), a number of pieces and a halo mode. The search grows a
scheme one cut at a time, so it asks for the cuts that can join a scheme: their operators are
not cut yet (or the new segment holds a cut's operators all and replaces it), and, to keep the
space small, they cross the operators at the plan's peak (mcudeploy/search/peak.py; a cut
elsewhere cannot lower the peak), ranked by the bytes live at the peak they would cut.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Mapping, Optional, Sequence

from mcudeploy import analysis
from mcudeploy.partition import HALOS, Cut, check_cut, cut_from_dict, cut_to_dict  # noqa: F401 (the tune state's)

PIECES = (2, 3, 4, 6, 8, 12, 16, 24, 32)
MIN_EXTENT = 4  # a segment whose axis is shorter somewhere cannot be cut finely enough to matter


def scheme_key(scheme: Sequence[Cut]) -> str:
    """A stable text key of a scheme (the search's memo and resume files use it)."""
    parts = []
    for cut in sorted(scheme, key=lambda c: c.axes):
        axes = ",".join(f"{n}.{a}" for n, a in cut.axes)
        parts.append(f"{axes}/{pieces_text(cut, ':')}/{cut.halo}")
    return " + ".join(parts) or "unsplit"


def pieces_text(cut: Cut, sep: str = "-") -> str:
    """A cut's piece count, or its nodes' counts in order when they differ ("16-8-4")."""
    return str(cut.pieces) if cut.counts is None else sep.join(str(k) for k in cut.counts)


def short_name(name: str) -> str:
    """An operator's name for progress lines: its last 24 characters at most."""
    return name if len(name) <= 24 else "..." + name[-21:]


def short_axes(axes: Sequence[tuple[str, str]]) -> str:
    """A segment for progress lines: how many operators, the first and last, the axis."""
    return f"{len(axes)} ops {short_name(axes[0][0])} .. {short_name(axes[-1][0])} along {axes[0][1]}"


def short(scheme: Sequence[Cut]) -> str:
    """A scheme for progress lines: per cut, its first and last operator, the axis, pieces and halo."""
    return " + ".join(f"[{short_axes(c.axes)}, {pieces_text(c)} pieces, {c.halo}]" for c in scheme) or "unsplit"


@dataclass(frozen=True)
class Segment:
    component: int
    axes: tuple[tuple[str, str], ...]  # (node, axis), in topological order
    extent: int  # the smallest extent of the axis along the segment: no more pieces than this in a plain cut
    extents: tuple[int, ...] = ()  # each node's extent, aligned with axes (empty: all `extent`)

    @cached_property
    def nodes(self) -> frozenset:
        return frozenset(n for n, _ in self.axes)


def segments(graph, max_len: Optional[int] = None) -> list[Segment]:
    """Every segment of every component that crosses more than one operator."""
    out = []
    for comp in analysis.components(graph):
        if len({m.node for m in comp.members}) < 2:
            continue
        for seg in analysis.segments(graph, comp, max_len=max_len):
            if not seg:
                continue
            out.append(Segment(comp.index, tuple((r.node, r.axis) for r in seg), min(r.extent for r in seg),
                               tuple(r.extent for r in seg)))
    return out


def boundary_bytes(graph, seg: Segment) -> int:
    """Bytes of the whole tensors at a segment's edges: what enters it from outside and what leaves it.

    Unless the memory plan frees a tensor read only through slices by rows and keeps a tensor
    written by pieces live by rows, both stay whole while the pieces run (the input until its
    last piece is read, the output from its first piece on). The ranking uses them as a tie
    break, not as a floor."""
    inside = seg.nodes
    total = 0
    seen = set()
    for name in inside:
        node = graph.node(name)
        for t in node.inputs:
            if not t or t in seen or graph[t].is_const:
                continue
            producer = graph.producer(t)
            if producer is None or producer.name not in inside:
                seen.add(t)
                total += graph[t].nbytes
        for t in node.outputs:
            if t in seen:
                continue
            readers = [c.name for c in graph.users(t)]
            if t in graph.outputs or any(r not in inside for r in readers):
                seen.add(t)
                total += graph[t].nbytes
    return total


def peak_share(graph, seg: Segment, live: Mapping[str, int]) -> tuple[int, int]:
    """(inside, edge): bytes of the tensors live at the peak (``live``: Peak.tensors) that a cut of
    ``seg`` turns into pieces, and those at its edge.

    Inside: produced in the segment and read only in it; each piece of it lives only while the
    pieces around it run, so nearly all of its bytes leave the peak. Edge: produced in it and read
    outside, or read only in it and produced outside: they stay whole, but a buffer written by
    pieces or read through slices only can be live by rows, so a cut may shrink them too."""
    cut = edge = 0
    for t, nbytes in live.items():
        if t not in graph.tensors:
            continue
        made, used = _made_used(graph, seg.nodes, t)
        if made and used:
            cut += nbytes
        elif made or used:
            edge += nbytes
    return cut, edge


def _made_used(graph, inside: frozenset, t: str) -> tuple[bool, bool]:
    """(produced in the segment, read only in it) of tensor ``t``."""
    producer = graph.producer(t)
    readers = graph.users(t)
    made = producer is not None and producer.name in inside
    used = bool(readers) and t not in graph.outputs and all(r.name in inside for r in readers)
    return made, used


def forecast(graph, seg: Segment, peak_bytes: int, live: Mapping[str, int], pieces: Sequence[int] = PIECES) -> int:
    """A rough arena after cutting ``seg`` into its most pieces, before compiling anything: the
    larger of the old peak less what the cut removes from it, and the segment's own working set,
    its whole edge tensors (boundary_bytes) plus two pieces (one kept for a neighbour's halo) of
    each tensor inside. A long segment cuts more of the peak but holds more tensors at once and
    allows fewer pieces (its narrowest axis, or, per node, fewer where the maps are small),
    which is what the second term weighs."""
    counts = piece_counts(seg, pieces)
    cut = cut_for(seg, counts[-1], HALOS[0]) if counts else None
    count = {n: cut.count(n) if cut else 1 for n in seg.nodes}

    def piece(t: str, nbytes: int) -> int:
        return nbytes // count[graph.producer(t).name]

    inside = [(t, nbytes) for t, nbytes in live.items() if t in graph.tensors and all(_made_used(graph, seg.nodes, t))]
    at_peak = max(0, peak_bytes - sum(b for _, b in inside)) + 2 * sum(piece(t, b) for t, b in inside)
    inner = [t for name in seg.nodes for t in graph.node(name).outputs if _made_used(graph, seg.nodes, t)[1]]
    own = boundary_bytes(graph, seg) + 2 * sum(piece(t, graph[t].nbytes) for t in inner)
    return max(at_peak, own)


def ranked_segments(graph, segs: Iterable[Segment], taken: frozenset, near: frozenset,
                    live: Optional[Mapping[str, int]] = None, cuts: Sequence[frozenset] = (),
                    peak_bytes: Optional[int] = None, pieces: Sequence[int] = PIECES) -> list[Segment]:
    """Segments clear of ``taken`` that cross an operator in ``near`` and can be cut into at least
    MIN_EXTENT pieces, ranked by what a cut of them can remove from the peak (``peak_bytes``, with
    ``live`` its tensors): the least forecast arena, then the most peak bytes inside
    (peak_share), then at the edge, then the shorter (fewer halos to widen). A segment may
    overlap the operators of a cut in ``cuts`` (node sets of the scheme's cuts) only by holding
    them all: its cut then replaces that one (grow). Of segments over the same operators (along
    another axis) only the best-ranked comes early, the others after the rest.

    Boundary bytes alone rank a short segment far from the peak first (a narrow part of the
    model), which cuts nothing that is live there; peak bytes alone rank first the longest
    segments, whose many windows widen every piece."""
    def allowed(s):
        return all(not s.nodes & c or c <= s.nodes for c in cuts)

    usable = [s for s in segs if max(piece_counts(s), default=0) >= MIN_EXTENT and not s.nodes & taken and allowed(s)
              and (not near or s.nodes & near)]
    live = live or {}
    if peak_bytes is None:
        peak_bytes = sum(live.values())

    def key(s):
        cut, edge = peak_share(graph, s, live)
        return (forecast(graph, s, peak_bytes, live, pieces), -cut, -edge, len(s.axes), s.axes)

    ranked = sorted(usable, key=key)
    first, later, seen = [], [], set()
    for s in ranked:
        (later if s.nodes in seen else first).append(s)
        seen.add(s.nodes)
    return first + later


def grow(scheme: Sequence[Cut], cut: Cut) -> tuple[Cut, ...]:
    """``scheme`` with ``cut`` added, in place of the cuts whose operators it holds."""
    nodes = {n for n, _ in cut.axes}
    return tuple(c for c in scheme if not {n for n, _ in c.axes} <= nodes) + (cut,)


def piece_counts(seg: Segment, pieces: Sequence[int] = PIECES) -> list[int]:
    """The counts a segment's cuts may have: up to its smallest extent, and, when its extents
    differ, up to its largest (per-node counts, ``cut_for``), doubling the largest of ``pieces``
    beyond it (MobileNetV2-128's first stage, 64 rows to 16, is cut 64-32-16 where plain cuts
    stop at 16 pieces; measured on its 13 operators conv5 .. conv55: 119,360 B against 183,680 B
    for 32-16-8)."""
    if not seg.extents or len(set(seg.extents)) == 1:
        return [k for k in pieces if k <= seg.extent]
    finer = [max(pieces) * 2 ** i for i in range(1, 8) if max(pieces) * 2 ** i <= max(seg.extents)]
    return [k for k in (*pieces, *finer) if k <= max(seg.extents) and (k <= seg.extent or node_counts(seg, k))]


def node_counts(seg: Segment, k: int) -> Optional[tuple[int, ...]]:
    """Each node's count for a per-node cut of at most ``k`` pieces, in proportion to its extent:
    ``k`` halved once per halving of the extent from the largest (rounded), and further until it
    fits the node's extent, so that along any edge one count is a multiple of the other (all
    are k / 2^i, or 1). None when they come out all equal (a plain cut) or below 2."""
    if not seg.extents or len(set(seg.extents)) == 1:
        return None
    largest = max(seg.extents)
    counts = []
    for e in seg.extents:
        c = k
        halvings = round(math.log2(largest / e))
        while c > 1 and (halvings > 0 or c > e):
            c = c // 2 if c % 2 == 0 else 1
            halvings -= 1
        counts.append(c)
    if len(set(counts)) == 1 or max(counts) < 2:
        return None
    return tuple(counts)


def cut_for(seg: Segment, k: int, halo: str) -> Cut:
    """A cut of ``seg`` with ``k`` pieces: plain when every node allows them, else per node."""
    counts = node_counts(seg, k) if k > seg.extent else None
    return Cut(seg.axes, k, halo) if counts is None else Cut.per_node(seg.axes, counts, halo)


def segment_cuts(graph, seg: Segment, pieces: Sequence[int] = PIECES, halos: Sequence[str] = HALOS) -> list[Cut]:
    """The valid cuts of one segment: every piece count it allows, each halo mode."""
    cuts = [cut_for(seg, k, halo) for k in piece_counts(seg, pieces) for halo in halos]
    return [c for c in cuts if check_cut(graph, c) is None]


def candidate_cuts(graph, segs: Iterable[Segment], taken: frozenset, near: frozenset,
                   pieces: Sequence[int] = PIECES, halos: Sequence[str] = HALOS, top: Optional[int] = None,
                   skip: int = 0, live: Optional[Mapping[str, int]] = None) -> list[Cut]:
    """Valid cuts on the ``top`` best-ranked segments after the first ``skip`` that avoid ``taken``
    and cross ``near``."""
    ranked = ranked_segments(graph, segs, taken, near, live)
    return [c for seg in ranked[skip:None if top is None else skip + top] for c in segment_cuts(graph, seg, pieces, halos)]
