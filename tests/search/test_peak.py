"""The peak the search aims at: the operators that made the rectangles live there, and the segments
that cut the most of it ranked first, so that round 1 already finds the cut that lowers it."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
import zoo

from mcudeploy.boards import load_board
from mcudeploy.frontend import import_onnx
from mcudeploy.partition import Cut, split
from mcudeploy.compile import lower
from mcudeploy.search import TuneOptions, Tuner, space
from mcudeploy.search.peak import find_peak
from mcudeploy.search.tune import SEARCH_OPTIONS, compile_scheme
from mcudeploy.simulate.timing_cache import TimingCache

from test_tune import Counting


@pytest.fixture(scope="module")
def first_stage_peak(tmp_path_factory):
    """A MobileNetV2 chain with an int8 input whose peak is in its first stage: the 6x expansion at
    16x16 (48 x 16 x 16 = 12,288 B), written over its input in place, dwarfs the later stages
    (72 channels at 8x8 and below)."""
    work = tmp_path_factory.mktemp("mnv2_first")
    _, qdq, _ = zoo.mobilenetv2(work, size=32, stages=((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 1, 2)), stem=8,
                                classes=4)
    path = work / "mnv2_first_stage.onnx"
    onnx.save(qdq, path)
    graph = lower(import_onnx(path), int8_input=True)
    base = compile_scheme(graph, (), load_board("qemu-m4"), "m",
                          replace(SEARCH_OPTIONS, schedule_method="auto", placement_method="exact", int8_input=True))
    return path, graph, base


def test_the_peak_is_the_live_rectangle_not_the_whole_staircase(first_stage_peak):
    _, graph, base = first_stage_peak
    peak = find_peak(base)
    node = base.order[peak.step]
    assert peak.node == node.name and peak.bytes == base.placement.lower_bound_bytes
    # the expansion writes its output over its input (one staircase buffer holds most of the chain's
    # tensors): at the peak only that rectangle lives, made by the operator that wrote the input,
    # the expansion itself and the operator that reads its output
    (source,), (out,) = [i for i in node.inputs if not graph.is_const(i)], node.outputs
    assert base.lifetimes.buffer_of[source] == base.lifetimes.buffer_of[out]
    expected = {node.name, graph.producer(source).name} | {u.name for u in graph.users(out)}
    assert peak.nodes == expected
    assert peak.tensors[out] == graph[out].nbytes and peak.tensors[source] == graph[source].nbytes
    # the buffer-wide view counted every operator that touches the staircase: most of the graph
    staircase = set(next(b for b in base.lifetimes.buffers if b.name == base.lifetimes.buffer_of[out]).tensors)
    touching = {n.name for n in base.order if staircase & {*n.inputs, *n.outputs}}
    assert len(touching) > 2 * len(peak.nodes)


def test_pieces_slices_and_gathers_count_as_their_tensor_and_operator():
    sys.path.append(str(Path(__file__).resolve().parents[1] / "partition"))
    from split_cases import bottleneck, rows_cut

    graph = bottleneck("int8", hw=32)
    cut = split(graph, (rows_cut(graph, 4, "keep"),))
    made = [t for name, t in cut.tensors.items() if name not in graph.tensors and not t.is_const]
    assert made and all(t.original in graph.tensors for t in made if t.rows is not None)
    assert all(n.original in {m.name for m in graph.nodes} for n in cut.nodes)
    pieces = [n for n in cut.nodes if n.piece_index is not None]
    assert {n.piece_index for n in pieces} == set(range(4)) and all(n.name != n.original for n in pieces)
    assert cut.tensors[graph.inputs[0]].original == graph.inputs[0]  # what the split left whole is itself


def test_segments_whose_cut_leaves_the_least_of_the_peak_come_first(first_stage_peak):
    _, graph, base = first_stage_peak
    peak = find_peak(base)
    segs = space.segments(graph)
    ranked = space.ranked_segments(graph, segs, frozenset(), peak.nodes, peak.tensors, (), peak.bytes)
    assert peak.node in ranked[0].nodes
    cut, _ = space.peak_share(graph, ranked[0], peak.tensors)
    assert cut >= max(peak.tensors.values())  # the expanded tensor at least becomes pieces
    forecasts = [space.forecast(graph, s, peak.bytes, peak.tensors) for s in ranked]
    distinct = len({s.nodes for s in ranked})  # one segment per operator set first, the other axes after
    assert forecasts[:distinct] == sorted(forecasts[:distinct])
    assert forecasts[0] < peak.bytes
    # the old ranking (boundary bytes alone) put first a segment that cuts less of what is live at the peak
    by_boundary = sorted((s for s in segs if s.extent >= space.MIN_EXTENT), key=lambda s: space.boundary_bytes(graph, s))
    assert space.peak_share(graph, by_boundary[0], peak.tensors)[0] < cut


def test_a_cut_grows_over_the_cuts_it_holds():
    a = Cut((("c1", "oh"), ("c2", "oh")), 4)
    b = Cut((("c4", "oh"), ("c5", "oh")), 2)
    longer = Cut((("c0", "oh"), ("c1", "oh"), ("c2", "oh"), ("c3", "oh")), 8)
    assert space.grow((a, b), longer) == (b, longer)
    assert space.grow((a,), b) == (a, b)
    again = Cut(a.axes, 8, "recompute")
    assert space.grow((a, b), again) == (b, again)


def test_round_one_cuts_the_first_stage(first_stage_peak, tmp_path):
    path, _, base = first_stage_peak
    peak = find_peak(base)
    lines = []
    tuner = Tuner(path, "qemu-m4", tmp_path / "out", measure=Counting(), progress=lines.append,
                  cache=TimingCache("qemu-m4", tmp_path / "cache"),
                  options=TuneOptions(time_limit=300, effort=1.0, int8_input=True))
    start = tuner.baseline()
    tuner.segments = space.segments(tuner.lowered)
    budget = int(start.ticks * 1.05)
    kept, timed_out = tuner.round((), start, budget, start)
    assert not timed_out
    assert kept is not None, "\n".join(lines)
    assert kept.arena < start.arena and kept.ticks <= budget
    (cut,) = kept.scheme
    assert peak.node in {n for n, _ in cut.axes}
    # the first batch sufficed: no line announces a second one
    assert sum("segments " in line and "probed" in line for line in lines) == 1
