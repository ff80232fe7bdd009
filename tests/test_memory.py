"""Lifetimes and placement: live buffers never overlap and the arena never beats the bound."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.memory import Buffer, Lifetimes, check_no_overlap, place
from mcudeploy.memory.place import arena_size


@st.composite
def buffer_sets(draw):
    steps = draw(st.integers(1, 30))
    n = draw(st.integers(1, 25))
    buffers = []
    for i in range(n):
        first = draw(st.integers(-1, steps - 1))
        last = draw(st.integers(first, steps - 1))
        size = draw(st.integers(1, 64)) * 16
        buffers.append(Buffer(f"b{i}", (f"b{i}",), size, first, last))
    return Lifetimes(tuple(buffers), {b.name: b.name for b in buffers}, steps)


@given(buffer_sets())
@settings(max_examples=300, deadline=None)
def test_greedy_placement_is_valid_and_above_the_bound(lives):
    placement = place(lives, alignment=16)
    check_no_overlap(lives.buffers, placement.offsets)
    assert placement.arena_bytes == arena_size(lives.buffers, placement.offsets)
    assert placement.arena_bytes >= placement.lower_bound_bytes
    assert all(off % 16 == 0 for off in placement.offsets.values())


def test_lower_bound_is_the_largest_live_sum():
    # a(0..1, 100) b(1..2, 50) c(2..3, 200): live sums per step -1..3 are 0, 100, 150, 250, 200
    bufs = (Buffer("a", ("a",), 100, 0, 1), Buffer("b", ("b",), 50, 1, 2), Buffer("c", ("c",), 200, 2, 3))
    lives = Lifetimes(bufs, {}, 4)
    assert lives.live_bytes() == [0, 100, 150, 250, 200]
    assert lives.lower_bound() == 250


def test_check_no_overlap_catches_a_collision():
    bufs = (Buffer("a", ("a",), 100, 0, 2), Buffer("b", ("b",), 100, 1, 3))
    try:
        check_no_overlap(bufs, {"a": 0, "b": 50})
    except AssertionError as exc:
        assert "a" in str(exc) and "b" in str(exc)
    else:
        raise AssertionError("overlap not detected")
