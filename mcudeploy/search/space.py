"""The schemes the search may try: cuts along the segments of the axis connection graph.

A candidate cut is a segment of one axis component (a connected run of operators that share a
loop axis, from mcudeploy/analysis), a number of pieces and a halo mode. The search grows a
scheme one cut at a time, so it asks for the cuts that can join a scheme: their operators are
not cut yet, and, to keep the space small, they cross the operators live at the plan's peak
(a cut elsewhere cannot lower the peak).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from mcudeploy import analysis
from mcudeploy.partition import Cut, check_cut

PIECES = (2, 3, 4, 6, 8, 12, 16, 24, 32)
HALOS = ("keep", "recompute")
MIN_EXTENT = 4  # a segment whose axis is shorter somewhere cannot be cut finely enough to matter


def scheme_key(scheme: Sequence[Cut]) -> str:
    """A stable text key of a scheme (the search's memo and resume files use it)."""
    parts = []
    for cut in sorted(scheme, key=lambda c: c.axes):
        axes = ",".join(f"{n}.{a}" for n, a in cut.axes)
        parts.append(f"{axes}/{cut.pieces}/{cut.halo}")
    return " + ".join(parts) or "unsplit"


def short(scheme: Sequence[Cut]) -> str:
    """A scheme for progress lines: per cut, its first and last operator, the axis, pieces and halo."""
    parts = []
    for cut in scheme:
        first, last = cut.axes[0][0], cut.axes[-1][0]
        first, last = (n if len(n) <= 24 else "..." + n[-21:] for n in (first, last))
        parts.append(f"[{len(cut.axes)} ops {first} .. {last} along {cut.axes[0][1]}, {cut.pieces} pieces, {cut.halo}]")
    return " + ".join(parts) or "unsplit"


def cut_from_dict(d: dict) -> Cut:
    return Cut(tuple((n, a) for n, a in d["axes"]), int(d["pieces"]), d["halo"])


def cut_to_dict(cut: Cut) -> dict:
    return {"axes": [list(p) for p in cut.axes], "pieces": cut.pieces, "halo": cut.halo}


@dataclass(frozen=True)
class Segment:
    component: int
    axes: tuple[tuple[str, str], ...]  # (node, axis), in topological order
    extent: int  # the smallest extent of the axis along the segment: no more pieces than this

    @property
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
            out.append(Segment(comp.index, tuple((r.node, r.axis) for r in seg), min(r.extent for r in seg)))
    return out


def boundary_bytes(graph, seg: Segment) -> int:
    """Bytes of the whole tensors at a segment's edges: what enters it from outside and what leaves it.

    Both stay whole while the pieces run (the input until its last piece is read, the output
    from its first piece on), so their sum is a floor under any split of the segment: the
    search ranks segments by it before compiling anything."""
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


def ranked_segments(graph, segs: Iterable[Segment], taken: frozenset, near: frozenset) -> list[Segment]:
    """Segments clear of ``taken`` that cross an operator in ``near`` and can be cut into at least
    MIN_EXTENT pieces, the smallest boundary first (then the longer: it moves more of the graph
    below the boundary)."""
    usable = [s for s in segs if s.extent >= MIN_EXTENT and not s.nodes & taken and (not near or s.nodes & near)]
    return sorted(usable, key=lambda s: (boundary_bytes(graph, s), -len(s.axes), s.axes))


def piece_counts(seg: Segment, pieces: Sequence[int] = PIECES) -> list[int]:
    return [k for k in pieces if k <= seg.extent]


def candidate_cuts(graph, segs: Iterable[Segment], taken: frozenset, near: frozenset,
                   pieces: Sequence[int] = PIECES, halos: Sequence[str] = HALOS, top: Optional[int] = None,
                   skip: int = 0) -> list[Cut]:
    """Valid cuts on the ``top`` best-ranked segments after the first ``skip`` that avoid ``taken``
    and cross ``near``."""
    cuts = []
    ranked = ranked_segments(graph, segs, taken, near)
    for seg in ranked[skip:None if top is None else skip + top]:
        for k in piece_counts(seg, pieces):
            for halo in halos:
                cut = Cut(seg.axes, k, halo)
                if check_cut(graph, cut) is None:
                    cuts.append(cut)
    return cuts
