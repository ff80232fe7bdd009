"""What the split is for: on a chain whose middle tensors dwarf its ends (pointwise expand 6x ->
depthwise 3x3 -> pointwise project, int8, 4 channels at 64x64), cutting the whole chain into 8 row
strips lets a depth-first order keep only a strip of the wide tensors alive, so the placed arena
shrinks.

Derivation of the unsplit figure: the input (4 x 64 x 64 = 16,384 B), the expanded tensor and the
depthwise output (24 x 64 x 64 = 98,304 B each): the depthwise step holds both wide tensors,
196,608 B, unless the operators write their outputs over their inputs: the expansion from the
input's first byte on, the depthwise convolution over its input, the projection back down
(mcudeploy/memory/alias.py, "resize"), which keeps one wide tensor (98,304 B) and the kernels'
scratch. Split, the input and output (16,384 B each)
stay whole and a strip of 8 rows of a wide tensor is 24 x 8 x 64 = 12,288 B (plus a halo row on
each side for the depthwise input); keeping the halo in the neighbouring strips adds a gathered
copy and a neighbour kept alive, recomputing it adds MACs instead."""
from __future__ import annotations

import pytest

from split_cases import bottleneck, rows_cut
from mcudeploy.partition import macs, split
from mcudeploy.compile import compile_graph

WIDE = 24 * 64 * 64  # one wide tensor, int8
WHOLE = 2 * WIDE  # both: the bound of whole operators that do not run in place


@pytest.mark.parametrize("halo", ("keep", "recompute"))
def test_cutting_the_chain_into_strips_shrinks_the_arena(halo):
    graph = bottleneck("int8", hw=64)
    unsplit = compile_graph(graph, "host")
    pieces = split(graph, (rows_cut(graph, 8, halo),))
    cut = compile_graph(pieces, "host")
    added = macs(pieces) - macs(graph)
    print(f"\n{halo}: arena unsplit {unsplit.placement.arena_bytes} B, split into 8 {cut.placement.arena_bytes} B "
          f"(lower bound {cut.placement.lower_bound_bytes} B, schedule {cut.schedule.used}); "
          f"MACs {macs(graph)} + {added} recomputed")
    assert WIDE <= unsplit.placement.arena_bytes < WIDE + 1024  # in place: one wide tensor, and scratch
    assert cut.placement.arena_bytes < 0.5 * WHOLE
    assert cut.placement.arena_bytes < unsplit.placement.arena_bytes
    if halo == "keep":
        assert added == 0
    else:
        assert 0 < added < 0.2 * macs(graph)


def test_a_gather_writes_its_own_strip_in_place_and_copies_only_the_halo():
    """Kept halos: the depthwise strip j reads [row above, strip j of the expansion, row below]
    through a gather (Concat). With "partial" sharing the expansion's strip j is written into the
    gather's output by its convolution and the Concat copies the two neighbour rows only, so the
    strip is not held twice; in the piece-major order that lowers the live-bytes bound. The plan
    still computes what the reference does, run in a byte arena (memory/oracle.py)."""
    import numpy as np

    from mcudeploy.boards import load_board
    from mcudeploy.memory import areas, lifetimes, place
    from mcudeploy.memory.alias import SHARING
    from mcudeploy.memory.oracle import run_in_arena
    from mcudeploy.reference import run_reference
    from mcudeploy.schedule import schedule

    from mcudeploy.compile import lower

    whole = lower(bottleneck("int8", hw=64))  # activations fused: each piece is one convolution
    graph = split(whole, (rows_cut(whole, 8, "keep"),))
    order = schedule(graph, "pieces").order
    with_partial = lifetimes(graph, order, 4, SHARING - {"parts"})  # buffers taken by bands would hide it
    without = lifetimes(graph, order, 4, SHARING - {"parts", "partial"})
    gathers = [n for n in order if n.op == "Concat" and n.name not in with_partial.elided]
    written = [n for n in gathers if any(with_partial.buffer_of[i] == with_partial.buffer_of[n.outputs[0]]
                                         for i in n.inputs)]
    print(f"\nbound with partial gathers {with_partial.lower_bound()} B, without {without.lower_bound()} B; "
          f"{len(written)} of {len(gathers)} gathers write their strip in place")
    assert written
    assert with_partial.lower_bound() < without.lower_bound()
    placement = place(with_partial, areas(load_board("host")), "greedy", 4)
    rng = np.random.default_rng(0)
    x = {n: rng.integers(-128, 128, graph[n].shape, dtype=np.int8) for n in graph.inputs}
    for got, want in zip(run_in_arena(graph, order, with_partial, placement, x), run_reference(graph, x)):
        assert np.array_equal(got, want)
