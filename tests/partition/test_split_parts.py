"""Buffers taken and freed part by part (mcudeploy/memory/parts.py) on a split chain.

The bottleneck chain (pointwise expand 6x -> depthwise 3x3 -> pointwise project, int8) cut into
8 row strips reads the graph input through one Slice per strip, and reads a kept halo through a
gather (a Concat of the strip and its neighbours' rows). With "parts", a byte of the input is live
only until the last strip that reads it, and a byte of a gather only from the step that writes it:
the live-bytes bound falls, and the placement may put other buffers in bytes a whole buffer would
hold. The plan then still computes what the reference does, run in a byte arena that starts as
noise (memory/oracle.py), so a byte reused too early shows up as a wrong output.
"""
from __future__ import annotations

import numpy as np
import pytest

from split_cases import bottleneck, rows_cut
from mcudeploy.boards import load_board
from mcudeploy.memory import areas, lifetimes, place
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.oracle import run_in_arena
from mcudeploy.memory.parts import _footprint
from mcudeploy.partition import split
from mcudeploy.reference import run_reference
from mcudeploy.schedule import schedule


def _cut(channels: int, halo: str = "keep"):
    from mcudeploy.compile import lower

    whole = lower(bottleneck("int8", hw=32, channels=channels))
    graph = split(whole, (rows_cut(whole, 8, halo),))
    return graph, schedule(graph, "pieces").order


def _reused(lives, placement, buffer) -> list[str]:
    """Buffers placed in bytes of `buffer` at a step within its first and last (whole) lifetime."""
    b = next(x for x in lives.buffers if x.name == buffer)
    lo, hi = placement.offsets[b.name], placement.offsets[b.name] + b.size
    return [o.name for o in lives.buffers if o.name != b.name and o.first <= b.last and b.first <= o.last
            and placement.offsets[o.name] < hi and lo < placement.offsets[o.name] + o.size]


def test_a_strided_footprint_is_one_run_per_channel_and_a_dense_one_a_range():
    # rows 2..3 of a (1, 3, 8, 8) int8 tensor: 3 runs of 16 bytes, 64 bytes apart
    got = np.unique(_footprint((1, 3, 2, 8), (192, 64, 8, 1), 16, 1, 4))
    assert got.tolist() == [4, 5, 6, 7, 20, 21, 22, 23, 36, 37, 38, 39]
    assert _footprint((1, 3, 8, 8), (192, 64, 8, 1), 0, 1, 4) == slice(0, 48)


@pytest.mark.parametrize("channels", (1, 4))
def test_the_input_is_freed_and_the_output_taken_by_strips(channels):
    graph, order = _cut(channels)
    with_parts = lifetimes(graph, order, 4, SHARING)
    whole = lifetimes(graph, order, 4, SHARING - {"parts"})
    x = next(b for b in with_parts.buffers if graph.inputs[0] in b.tensors)
    ends = sorted({last for _, _, _, last in x.rects()})
    assert len(ends) >= 8 and ends[0] < x.last, "the input should die strip by strip"
    gathered = {n.outputs[0] for n in order if n.op == "Concat"}
    gathers = [b for b in with_parts.buffers if gathered.intersection(b.tensors)]
    assert any(len({first for _, _, first, _ in b.rects()}) > 1 for b in gathers), \
        "a kept halo's gather should be taken in two steps: its strip, then the neighbours' rows"
    assert with_parts.lower_bound() < whole.lower_bound()
    print(f"\n{channels} channel(s): bound with parts {with_parts.lower_bound()} B, whole buffers "
          f"{whole.lower_bound()} B; input in {len(x.rects())} parts")


def test_freed_input_bytes_hold_other_buffers_and_the_plan_stays_exact():
    graph, order = _cut(1)
    lives = lifetimes(graph, order, 4, SHARING)
    placement = place(lives, areas(load_board("host")), "greedy", 4)
    reused = _reused(lives, placement, lives.buffer_of[graph.inputs[0]])
    assert reused, "no buffer went into bytes the input had freed"
    rng = np.random.default_rng(0)
    x = {n: rng.integers(-128, 128, graph[n].shape, dtype=np.int8) for n in graph.inputs}
    for seed in (0, 1):
        for got, want in zip(run_in_arena(graph, order, lives, placement, x, seed), run_reference(graph, x)):
            assert np.array_equal(got, want)
