"""Acceptance of the layout work (issue 3): every reference model is placed at its live-bytes
bound, and the generated suite of irregular graphs within 1% of it on at least 95% of graphs,
the bound proven wherever it is reached. Sharing is checked on the real models by running each
plan in byte arenas against the numpy reference."""
import sys

import numpy as np
import pytest

from shared_models import ROOT, need_models, shared_models
from mcudeploy import check
from mcudeploy.memory import lifetimes, place
from mcudeploy.memory.layout import lay_out
from mcudeploy.memory.oracle import run_in_arena
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference

sys.path.insert(0, str(ROOT))  # the generated graphs come from benchmarks/graphs.py
from benchmarks.graphs import LARGE, MEDIUM, SMALL, suite  # noqa: E402

MODELS = shared_models() or [None]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem if p else "no-models")
@pytest.mark.parametrize("schedule", ["model", "auto"])
def test_models_are_placed_at_the_bound(path, schedule):
    need_models()
    compiled = compile_model(path, "host", options=CompileOptions(schedule_method=schedule))
    p = compiled.placement
    assert p.arena_bytes == p.lower_bound_bytes == compiled.lifetimes.lower_bound()
    assert p.proven_optimal
    if path.name == "vww_mobilenetv1_int8.onnx":
        assert p.arena_bytes <= 55296  # issue 3: TFLM's greedy plan uses 73,728 bytes here
    samples = check.random_inputs(compiled.graph, 2, seed=4)
    for x in samples:
        got = run_in_arena(compiled.graph, compiled.order, compiled.lifetimes, p, x)
        for g, r in zip(got, run_reference(compiled.graph, x)):
            assert np.array_equal(g, r)


def test_generated_suite_is_placed_near_the_bound():
    rows = []
    for spec in suite(SMALL + MEDIUM):
        graph = spec.build()
        lives, p = lay_out(graph, graph.nodes, method="exact", alignment=4, time_limit=5.0)
        assert p.arena_bytes >= p.lower_bound_bytes
        if p.arena_bytes == p.lower_bound_bytes:
            assert p.proven_optimal, f"{spec}: at the bound but not proven"
        rows.append(p.arena_bytes <= 1.01 * p.lower_bound_bytes)
    assert sum(rows) >= 0.95 * len(rows), f"{sum(rows)} of {len(rows)} graphs within 1% of the bound"


@pytest.mark.slow
def test_large_generated_graphs():
    """The 2,000-operator graphs: placed within 5% of the live-bytes bound in the solver's effort
    limit (no wall-clock bound: on a shared machine that is a benchmark's to measure, not a test's)."""
    for spec in suite(LARGE):
        graph = spec.build()
        lives = lifetimes(graph, graph.nodes, 4)
        p = place(lives, method="exact", alignment=4, time_limit=10.0)
        assert p.lower_bound_bytes <= p.arena_bytes <= 1.05 * p.lower_bound_bytes
