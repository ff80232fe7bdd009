"""The firmware's stack use after a run (READ_STACK): run_on_board keeps the most any board of the run used, and a
run whose paint is gone to the bottom of the stack (an overflow, likely) stops with one sentence naming the board."""
from __future__ import annotations

import pytest

from mcudeploy.compile import compile_graph
from mcudeploy.device import runner
from mcudeploy.device.session import StackUse
from mcudeploy.errors import MCUDeployError

from graph_builder import GraphBuilder


def _run(monkeypatch, stack):
    g = GraphBuilder()
    g.op("Relu", [g.input("x", (1, 4))], "y")
    compiled = compile_graph(g.graph("y"), "qemu-m4", name="tiny")  # a small model: only its board matters here
    monkeypatch.setattr(runner, "build_for_board", lambda compiled, folder: None)
    monkeypatch.setattr(runner, "_run_samples", lambda *a, **k: ([], [], _Info(), stack))
    return runner.run_on_board(compiled, [])


class _Info:
    timer_hz = 1_000_000


def test_the_stack_use_of_a_run_is_kept(monkeypatch):
    run = _run(monkeypatch, StackUse(4096, 1720))
    assert run.stack == StackUse(4096, 1720) and run.stack.describe() == "stack: at most 1,720 of 4,096 B used"


def test_a_stack_used_to_the_bottom_is_one_sentence(monkeypatch):
    with pytest.raises(MCUDeployError) as err:
        _run(monkeypatch, StackUse(4096, 4096))
    text = str(err.value)
    assert "qemu-m4" in text and "4,096 B" in text and "stack_bytes" in text and "\n" not in text


def test_firmware_without_read_stack_tells_nothing(monkeypatch):
    assert _run(monkeypatch, None).stack is None
