"""Solver limits count work, not seconds (mcudeploy/effort.py): where a limit stops the refined
heuristic, the exact schedule or the exact placement, it stops at the same point when the clock
runs a thousand times faster, so the order and the offsets are the same on a loaded machine."""
from __future__ import annotations

import sys
import time

import onnx
import pytest

from shared_models import ROOT
import zoo
from mcudeploy.frontend import import_onnx
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.lifetimes import lifetimes
from mcudeploy.memory.place import place
from mcudeploy.partition import Cut, split
from mcudeploy.compile import lower
from mcudeploy.schedule import schedule

sys.path.insert(0, str(ROOT))  # the generated graphs come from benchmarks/graphs.py
from benchmarks.graphs import make  # noqa: E402


def leaping(monkeypatch) -> None:
    """Every reading of time.perf_counter and time.monotonic a second after the last."""
    now = [0.0]

    def clock():
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(time, "perf_counter", clock)
    monkeypatch.setattr(time, "monotonic", clock)


@pytest.fixture(scope="module")
def split_mobilenet(tmp_path_factory):
    """The stem and one inverted residual block of a 32x32 MobileNetV2, its rows cut into 16 pieces
    from the input through the block: a few hundred buffers that greedy places above the bound."""
    work = tmp_path_factory.mktemp("mnv2")
    _, qdq, _ = zoo.mobilenetv2(work, size=32, stages=((6, 8, 1, 1),), stem=8, classes=4)
    path = work / "mnv2_32_int8.onnx"
    onnx.save(qdq, path)
    lowered = lower(import_onnx(path))
    cut = Cut((("x_QuantizeLinear", "d2"), ("conv5", "oh"), ("conv11", "oh"), ("conv15", "oh"), ("conv19", "oh")), 16)
    return split(lowered, (cut,))


def test_refine_stops_on_work(monkeypatch):
    graph = make("randwire", 300, 0)
    limit = 0.1  # the refinement needs about 0.9 effort seconds here: the limit stops it
    calm = schedule(graph, "refine", limit)
    leaping(monkeypatch)
    busy = schedule(graph, "refine", limit)
    assert [n.name for n in busy.order] == [n.name for n in calm.order]
    assert busy.effort_s == calm.effort_s >= limit and busy.limit_s == limit
    assert busy.time_s == 1.0  # read twice, to report time_s: the refinement itself never reads the clock


def test_exact_placement_stops_on_work(split_mobilenet, monkeypatch):
    graph = split_mobilenet
    order = schedule(graph, "demand").order
    # row-major pieces: laid out band by band (the default), greedy places them at the bound
    lives = lifetimes(graph, order, 4, SHARING - {"bands"})
    calm = place(lives, method="exact", time_limit=0.5)
    assert calm.arena_bytes > calm.lower_bound_bytes and not calm.proven_optimal  # the limit stopped CP-SAT
    leaping(monkeypatch)
    busy = place(lives, method="exact", time_limit=0.5)
    assert busy.offsets == calm.offsets and busy.arena_bytes == calm.arena_bytes
    assert busy.effort_s == calm.effort_s and busy.detail == calm.detail


def test_exact_schedule_stops_on_work(monkeypatch):
    graph = make("nas", 100, 0)
    calm = schedule(graph, "exact", 0.5)  # not enough to prove it (10 effort seconds do)
    leaping(monkeypatch)
    busy = schedule(graph, "exact", 0.5)
    assert [n.name for n in busy.order] == [n.name for n in calm.order]
    assert (busy.peak_bytes, busy.bound_bytes, busy.effort_s) == (calm.peak_bytes, calm.bound_bytes, calm.effort_s)


def test_ctrl_c_during_a_solve_is_an_interruption_at_once():
    """CP-SAT catches SIGINT by default: a compile interrupted during an exact solve went on with
    the best plan so far and ended with status 0. Then, with its handler off, Python's handler ran
    only when the solve returned: a tune's exact placement on a loaded machine held Ctrl-C for 22 s
    (stop 49's CI). ``run_solver`` raises KeyboardInterrupt within moments of the signal, however much
    effort the solve was given, and a second signal is still Python's."""
    import os
    import signal
    import threading

    from ortools.sat.python import cp_model

    from mcudeploy.effort import run_solver, solver

    model = cp_model.CpModel()  # not proved in 30 effort seconds (a minute of wall time here)
    n = 40
    xs = [model.NewIntVar(0, 10 * n, f"x{i}") for i in range(n)]
    for shift in (0, 1, -1):
        model.AddAllDifferent([x + shift * i for i, x in enumerate(xs)])
    model.Maximize(sum(x * ((i * 7919) % 13) for i, x in enumerate(xs)))
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for _ in range(2):
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            began = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                run_solver(solver(30.0, 1.0), model)
            timer.join()
            assert time.monotonic() - began < 0.3 + 3.0
    finally:
        signal.signal(signal.SIGINT, old)
