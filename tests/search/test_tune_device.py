"""Acceptance 4 of the split issue, on the emulated board: a tune interrupted in the middle of
timing kernels, started again, asks the board for no kernel it has already timed."""
from __future__ import annotations

import pytest

from mcudeploy.device.session import Session
from mcudeploy.search import TuneOptions, Tuner
from mcudeploy.simulate.timing_cache import TimingCache

pytestmark = pytest.mark.qemu


def test_a_resumed_tune_never_asks_the_board_twice(small_mobilenet, tmp_path, monkeypatch, need_qemu):
    asked: list[str] = []  # kernel signatures, in the order the board timed them
    calls = {"run_op": 0}
    stop_after = {"n": 5}
    real_run_op, real_put = Session.run_op, TimingCache.put

    def run_op(self, index, repeat=1):
        calls["run_op"] += 1
        if stop_after["n"] is not None and calls["run_op"] > stop_after["n"]:
            raise KeyboardInterrupt
        return real_run_op(self, index, repeat)

    def put(self, entries):
        asked.extend(entries)
        return real_put(self, entries)

    monkeypatch.setattr(Session, "run_op", run_op)
    monkeypatch.setattr(TimingCache, "put", put)
    cache_dir, out = tmp_path / "cache", tmp_path / "out"

    def tuner():
        return Tuner(small_mobilenet, "qemu-m4", out, progress=lambda m: None, cache=TimingCache("qemu-m4", cache_dir),
                     options=TuneOptions(time_limit=240, pieces=(2, 4), top_segments=2, effort=0.25))

    with pytest.raises(KeyboardInterrupt):
        tuner().run()
    assert len(asked) == 5  # every kernel timed before the interruption was kept
    stop_after["n"] = None
    result = tuner().run()
    assert len(asked) == len(set(asked)), "the board was asked twice for the same kernel"
    assert calls["run_op"] == len(asked) + 1  # the interrupted request, and one per kernel timed
    assert result.best.ticks is not None
