"""The search: it keeps the least-memory plan within the latency budget, writes it, and a run that
is interrupted resumes without compiling a scheme or timing a kernel twice."""
from __future__ import annotations

import json

import pytest

from mcudeploy.errors import MCUDeployError
from mcudeploy.ops import registry
from mcudeploy.search import Tuner, write_result
from mcudeploy.simulate.timing_cache import TimingCache


def fake_ticks(compiled, per_call: int = 50) -> int:
    """A latency model: one tick per MAC, a fixed cost per kernel call, one tick per 4 bytes copied."""
    graph, total = compiled.graph, 0
    for node in compiled.order:
        op = registry.get(node.op)
        if op.view or node.name in compiled.lifetimes.elided:
            continue
        total += op.macs(graph, node) + per_call
    return total


class Counting:
    def __init__(self, fail_after=None):
        self.calls = 0
        self.fail_after = fail_after

    def __call__(self, compiled):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt
        return fake_ticks(compiled)


def test_tune_keeps_the_least_memory_within_budget(small_mobilenet, tmp_path):
    lines = []
    tuner = Tuner(small_mobilenet, "qemu-m4", tmp_path / "out", max_overhead=0.05, time_limit=300,
                  measure=Counting(), progress=lines.append, cache=TimingCache("qemu-m4", tmp_path / "cache"))
    result = tuner.run()
    assert result.best.scheme, "no scheme was kept: " + "\n".join(lines)
    assert result.best.arena < result.baseline.arena
    assert result.best.ticks <= result.budget_ticks
    assert result.best.ticks == fake_ticks(result.best.compiled)
    out = write_result(result)
    plan = json.loads((out / "plan.json").read_text())
    assert plan["arena_bytes"] == result.best.arena
    assert plan["latency"]["baseline_ticks"] == result.baseline.ticks
    assert plan["latency"]["ticks"] == result.best.ticks
    assert plan["split"]["saved_bytes"] == result.baseline.arena - result.best.arena
    assert plan["scheme"] and all(entry["pieces"] >= 2 for entry in plan["scheme"])
    assert any("baseline" in line for line in lines) and any("kept" in line for line in lines)


def test_an_interrupted_tune_resumes_without_measuring_twice(small_mobilenet, tmp_path):
    out, cache = tmp_path / "out", TimingCache("qemu-m4", tmp_path / "cache")
    first = Counting(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        Tuner(small_mobilenet, "qemu-m4", out, time_limit=300, measure=first, progress=lambda m: None,
              cache=cache).run()
    assert first.calls == 3  # two plans timed, the third interrupted
    timed = {k for k, v in json.loads((out / "tune-state.json").read_text())["candidates"].items() if "ticks" in v}
    assert len(timed) == 2
    seen = []

    def second(compiled):
        seen.append(compiled)
        return fake_ticks(compiled)

    resumed = Tuner(small_mobilenet, "qemu-m4", out, time_limit=300, measure=second, progress=lambda m: None,
                    cache=cache)
    assert resumed.state.resumed
    result = resumed.run()
    state = json.loads((out / "tune-state.json").read_text())["candidates"]
    assert len(seen) == sum("ticks" in v for v in state.values()) - 2  # nothing timed before is timed again
    fresh = Tuner(small_mobilenet, "qemu-m4", tmp_path / "fresh", time_limit=300, measure=Counting(),
                  progress=lambda m: None, cache=TimingCache("qemu-m4", tmp_path / "cache2")).run()
    assert (result.best.arena, result.best.ticks) == (fresh.best.arena, fresh.best.ticks)


def test_tune_refuses_the_host_board_and_bad_limits(small_mobilenet, tmp_path):
    with pytest.raises(MCUDeployError, match="host board"):
        Tuner(small_mobilenet, "host", tmp_path)
    with pytest.raises(MCUDeployError, match="max-overhead"):
        Tuner(small_mobilenet, "qemu-m4", tmp_path, max_overhead=-1)
    with pytest.raises(MCUDeployError, match="time-limit"):
        Tuner(small_mobilenet, "qemu-m4", tmp_path, time_limit=0)
