"""tune --fast-memory (search/fast.py): the plan of least latency that fits a fast-memory budget,
among the unsplit model and the schemes the search kept, each compiled under the budget; a budget no
plan meets is refused with the least one that is met."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from mcudeploy.boards import load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.search import TuneOptions, Tuner, write_result
from mcudeploy.search.fast import fast_arena
from mcudeploy.simulate.timing_cache import TimingCache
from test_tune import EFFORT, fake_ticks


CANDIDATES = 6  # a short search: the combination under the budget is what these test


def tuner(model, tmp_path, budget, board="qemu-m4"):
    lines = []
    t = Tuner(model, board, tmp_path / "out", measure=fake_ticks, progress=lines.append,
              cache=TimingCache("qemu-m4", tmp_path / "cache"),
              options=TuneOptions(max_overhead=0.05, time_limit=300, effort=EFFORT, fast_memory=budget,
                                  budget=CANDIDATES))
    return t, lines


def test_the_least_latency_that_fits_the_budget_is_kept(small_mobilenet, tmp_path):
    t, lines = tuner(small_mobilenet, tmp_path, "50%")
    result = t.run()
    best = result.best
    assert t.fast_budget == int(fast_arena(result.baseline.compiled) * 0.5)
    assert fast_arena(best.compiled) <= t.fast_budget
    # its latency: the whole run (here the fake ticks) plus what a run cannot show of the modelled PSRAM
    offload = best.compiled.offload
    assert best.ticks == round(fake_ticks(best.compiled) + (offload.unseen_ticks if offload else 0))
    tried = [int(m.group(1).replace(",", "")) for m in
             (re.search(r"cut\(s\), ([\d,]+) ticks", line) for line in lines) if m]
    assert tried and best.ticks == min(tried)
    plan = json.loads((write_result(result) / "plan.json").read_text())
    if offload is not None:
        assert plan["offload"]["budget_bytes"] == t.fast_budget


def test_a_budget_no_plan_meets_is_refused_with_the_least_that_is(small_mobilenet, tmp_path):
    """On qemu-m4 with a PSRAM that may not hold the model's input and output ("dma": false), those
    stay in the fast region: a budget below them is refused."""
    m4 = load_board("qemu-m4")
    board = dataclasses.replace(m4, regions=tuple(dataclasses.replace(r, dma=r.speed is None) for r in m4.regions))
    t, _ = tuner(small_mobilenet, tmp_path, "64", board)
    with pytest.raises(MCUDeployError, match=r"the least that can is [\d,]+ B") as err:
        t.run()
    least = int(re.search(r"the least that can is ([\d,]+) B", str(err.value)).group(1).replace(",", ""))
    assert str(err.value).count(".") <= 1  # one sentence
    t2, _ = tuner(small_mobilenet, tmp_path / "again", str(least), board)
    assert fast_arena(t2.run().best.compiled) <= least
