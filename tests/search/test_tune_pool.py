"""Several boards: the tune's compiles run in worker processes and its kernels are timed on
whichever board is free, and it keeps the plan one board keeps (the same decisions, in the same
order), with the latency model of test_tune.py standing for the board."""
from __future__ import annotations

from test_tune import Counting

from mcudeploy.search import TuneOptions, Tuner, space
from mcudeploy.simulate.timing_cache import TimingCache


def tune(model, tmp_path, boards: int, lines: list):
    return Tuner(model, "qemu-m4", tmp_path / f"out{boards}", measure=Counting(), progress=lines.append,
                 cache=TimingCache("qemu-m4", tmp_path / f"cache{boards}"), boards=boards,
                 options=TuneOptions(max_overhead=0.05, time_limit=300, effort=0.3, budget=6, top_segments=4,
                                     pieces=(2, 4))).run()


def test_two_boards_keep_the_plan_of_one(small_mobilenet, tmp_path):
    one_lines, two_lines = [], []
    one = tune(small_mobilenet, tmp_path, 1, one_lines)
    two = tune(small_mobilenet, tmp_path, 2, two_lines)
    assert one.best.scheme, "no scheme was kept: " + "\n".join(one_lines)
    assert space.scheme_key(two.best.scheme) == space.scheme_key(one.best.scheme)
    assert (two.best.arena, two.best.ticks, two.work) == (one.best.arena, one.best.ticks, one.work)
    assert any("compiling" in line and "on 2 workers" in line for line in two_lines)
    assert not any("compiling" in line for line in one_lines)
