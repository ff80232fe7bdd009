"""The search space: candidate cuts come from the ranked segments in batches (tune widens to the
next batch while no cut of the first lowers the arena)."""
from __future__ import annotations

from mcudeploy.frontend import import_onnx
from mcudeploy.compile import lower
from mcudeploy.search import space


def test_batches_of_segments_follow_the_ranking(small_mobilenet):
    graph = lower(import_onnx(small_mobilenet))
    segs = space.segments(graph)
    ranked = space.ranked_segments(graph, segs, frozenset(), frozenset())
    assert len(ranked) >= 4
    everything = space.candidate_cuts(graph, segs, frozenset(), frozenset())
    batches = [space.candidate_cuts(graph, segs, frozenset(), frozenset(), top=2, skip=k)
               for k in range(0, len(ranked), 2)]
    assert [c for batch in batches for c in batch] == everything  # the batches tile the ranked cuts, in order
    second = {c.axes for c in batches[1]}
    assert second <= {s.axes for s in ranked[2:4]} and second
    assert space.candidate_cuts(graph, segs, frozenset(), frozenset(), top=2, skip=len(ranked)) == []
