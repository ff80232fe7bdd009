"""Estimates for a split plan: the pieces of an operator are scaled from what the operator itself
cost in the unsplit plan (simulate.reference_costs), and copies are not estimated from the
multiply-accumulate kernels' fit."""
from __future__ import annotations

from pathlib import Path

import pytest

from mcudeploy.partition import Cut
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from mcudeploy.simulate.simulate import Estimator, Reference, reference_costs, simulate
from mcudeploy.simulate.timing_cache import TimingCache, operator_key
from simulate_graphs import conv_chain_model

PER_MAC, PER_BYTE, PER_CALL = 3.0, 0.5, 100.0  # the made-up board behind the cached unsplit timings


@pytest.fixture(scope="module")
def plans():
    model = conv_chain_model()
    unsplit = compile_model(model, "qemu-m4")
    # conv1 (3x3, padded) and conv2 (1x1) cut along the output rows; conv2 reads conv1's rows with
    # a halo of none, pool is left whole
    cut = Cut((("conv1", "oh"), ("conv2", "oh")), 3, "keep")
    return unsplit, compile_model(model, "qemu-m4", options=CompileOptions(scheme=(cut,)))


def fill(cache: TimingCache, compiled) -> None:
    entries = {}
    for o in simulate(compiled, cache).ops:
        if o.source != "none":
            entries[o.signature] = {"ticks": PER_MAC * o.macs + PER_BYTE * o.bytes + PER_CALL, "macs": o.macs,
                                    "bytes": o.bytes, "kernel": o.kernel}
    cache.put(entries)


def test_pieces_are_scaled_from_the_unsplit_operator(plans, tmp_path):
    unsplit, split = plans
    cache = TimingCache("qemu-m4", tmp_path)
    fill(cache, unsplit)
    ref = reference_costs(unsplit, cache)
    assert {"conv1", "conv2", "pool"} <= set(ref)
    sim = simulate(split, cache, ref)
    pieces = [o for o in sim.ops if o.node.startswith(("conv1#p", "conv2#p"))]
    assert len(pieces) == 6
    for o in pieces:
        whole = ref[o.node.split("#")[0]]
        assert o.source == "estimated" and o.how == f"scaled {o.node.split('#')[0]}"
        assert o.ticks == pytest.approx(whole.ticks * o.macs / whole.macs)
    # pieces of a kept halo tile the operator: together they cost what it cost
    for name in ("conv1", "conv2"):
        assert sum(o.ticks for o in pieces if o.node.startswith(name + "#")) == pytest.approx(ref[name].ticks)
    pool = next(o for o in sim.ops if o.node == "pool")
    # not cut, but it reads conv2's output laid out band by band (memory/alias.py, "bands"), a view the
    # unsplit plan did not time: it costs what it cost there
    assert pool.source == "estimated" and pool.how == "scaled pool"
    assert pool.ticks == pytest.approx(ref["pool"].ticks)
    # without the reference the same pieces fall back to a fit over the cached kernels
    assert all(not o.how.startswith("scaled") for o in simulate(split, cache).ops)


def test_pieces_of_a_cut_with_per_node_counts_are_each_their_own_operator_s_share(tmp_path):
    """Each node of a cut its own count (Cut.counts): a piece is scaled by its share of its own
    operator's work, whatever the other nodes' counts, so the pieces of each still sum to it."""
    model = conv_chain_model()
    unsplit = compile_model(model, "qemu-m4")
    cut = Cut.per_node((("conv1", "oh"), ("conv2", "oh")), (6, 3), "keep")
    split = compile_model(model, "qemu-m4", options=CompileOptions(scheme=(cut,)))
    cache = TimingCache("qemu-m4", tmp_path)
    fill(cache, unsplit)
    ref = reference_costs(unsplit, cache)
    ops = simulate(split, cache, ref).ops
    for name, count in (("conv1", 6), ("conv2", 3)):
        pieces = [o for o in ops if o.node.startswith(name + "#p")]
        assert len(pieces) == count and all(o.how == f"scaled {name}" for o in pieces)
        assert sum(o.ticks for o in pieces) == pytest.approx(ref[name].ticks)


def test_running_sums_are_scaled_from_the_average_they_cut(tmp_path):
    """A reduction cut's pieces run another kernel than the average (AvgPoolSum): with no timing
    of that kernel they take the average's ticks by their share of its work, not a fit over the
    board's other kernels."""
    model = conv_chain_model(average=True)
    unsplit = compile_model(model, "qemu-m4")
    cut = Cut((("conv1", "oh"), ("conv2", "oh"), ("pool", "rh")), 4, "keep")
    split = compile_model(model, "qemu-m4", options=CompileOptions(scheme=(cut,)))
    cache = TimingCache("qemu-m4", tmp_path)
    fill(cache, unsplit)
    ref = reference_costs(unsplit, cache)
    sums = [o for o in simulate(split, cache, ref).ops if o.op == "AvgPoolSum"]
    assert len(sums) == 4
    assert all(o.how == "scaled pool, another kernel" for o in sums)
    assert sum(o.ticks for o in sums) == pytest.approx(ref["pool"].ticks)
    # without the reference they are a fit over the cached kernels
    assert all(o.how == "fit board" for o in simulate(split, cache).ops if o.op == "AvgPoolSum")


def test_reference_scales_only_the_same_kernel():
    ref = Reference("mcud_conv_s8_fast", 1000, 400, 500.0)
    assert ref.scaled("mcud_conv_s8_fast", 250, 100) == pytest.approx(125.0)
    assert ref.scaled("mcud_conv_s8_direct", 250, 100) is None  # another kernel: another cost per MAC
    assert ref.share(250, 100) == pytest.approx(125.0)  # what an estimate blind to that kernel falls back on
    copy = Reference("mcud_concat_s8", 0, 2000, 80.0)
    assert copy.scaled("mcud_concat_s8", 0, 500) == pytest.approx(20.0)  # a copy scales with its bytes
    assert copy.scaled("mcud_concat_s8", 10, 500) is None


def test_pieces_add_the_fixed_cost_their_own_operator_s_timings_give(plans, tmp_path):
    """With timings of the operator itself (pieces of another cut) reaching down to pieces this
    small, a piece costs its share of the operator plus what their fit puts on it beyond that
    share: on a board whose ticks are exactly linear in the work, what the board would measure.
    Timings of other operators running the same kernel, and a fit that reaches down only to larger
    pieces (an extrapolation to zero work), add nothing."""
    unsplit, split = plans
    cache = TimingCache("qemu-m4", tmp_path)
    fill(cache, unsplit)
    ref = reference_costs(unsplit, cache)
    pieces = [o for o in simulate(split, cache, ref).ops if o.node.startswith("conv2#p")]
    law = lambda macs, nbytes: PER_MAC * macs + PER_BYTE * nbytes + PER_CALL  # noqa: E731
    kernel, smallest = pieces[0].kernel, min(o.macs for o in pieces)
    conv2 = operator_key(Path(split.model).name, split.graph.node(pieces[0].node))
    other = operator_key(Path(split.model).name, split.graph.node("conv1#p0"))

    def timings(key, works):
        return {f"{key}-{m}-{b}": {"ticks": law(m, b), "macs": m, "bytes": b, "kernel": kernel, "operator": key}
                for m, b in works}

    def share_alone(o):
        return ref["conv2"].ticks * o.macs / ref["conv2"].macs

    small = ((smallest // 2, 300), (smallest * 2, 900), (smallest * 5, 1500))
    cache.put(timings(other, small))  # another operator, as small
    cache.put(timings(conv2, small[1:] + ((smallest * 9, 4000),)))  # its own, all larger
    assert all(o.ticks == pytest.approx(share_alone(o)) for o in simulate(split, cache, ref).ops
               if o.node.startswith("conv2#p"))
    cache.put(timings(conv2, small[:1]))  # and one of its own as small as the smallest piece
    own = [o for o in simulate(split, cache, ref).ops if o.node.startswith("conv2#p")]
    assert len(own) == len(pieces)
    for o in own:
        assert o.ticks == pytest.approx(law(o.macs, o.bytes), rel=1e-6)
        assert o.ticks > share_alone(o)


def test_copies_are_not_estimated_from_the_mac_kernels(plans, tmp_path):
    unsplit, _ = plans
    cache = TimingCache("qemu-m4", tmp_path)
    macs = {f"mac-{k}": {"ticks": 1000.0 + 50 * k, "macs": 100 * (k + 1), "bytes": 10 * k, "kernel": "mac"}
            for k in range(5)}
    cache.put(macs)
    est = Estimator(cache, unsplit.board)
    ticks, how = est("mcud_concat_s8", 0, 4096)
    assert how == "default"  # the MAC kernels' fit (1000 ticks a call) says nothing about a copy
    # a copy's default: half an instruction per byte counted (40 instructions a tick on qemu-m4)
    assert ticks == pytest.approx((0.5 * 4096 + 200) / 40)
    _, how = est("mcud_conv_s8_fast", 5000, 4096)
    assert how == "fit board"
    cache.put({f"copy-{k}": {"ticks": 10.0 + 0.25 * b, "macs": 0, "bytes": b, "kernel": "mcud_transpose_s8"}
               for k, b in enumerate((512, 2048, 8192, 1024))})
    ticks, how = Estimator(cache, unsplit.board)("mcud_concat_s8", 0, 4096)
    assert how == "fit copies" and ticks == pytest.approx(10.0 + 0.25 * 4096)
