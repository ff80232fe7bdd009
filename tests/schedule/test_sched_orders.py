"""Every method returns a topological order of every node, measured by lifetimes(), never below
the lower bound it reports (property test over generated graphs)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the generated graphs come from benchmarks/graphs.py

import pytest  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from benchmarks.graphs import FAMILIES, make  # noqa: E402
from mcudeploy.errors import MCUDeployError  # noqa: E402
from mcudeploy.memory.lifetimes import lifetimes  # noqa: E402
from mcudeploy.schedule import METHODS, schedule  # noqa: E402


def assert_topological(graph, order):
    assert sorted(n.name for n in order) == sorted(n.name for n in graph.nodes)
    made = set(graph.inputs) | {t for t, v in graph.tensors.items() if v.is_const}
    for n in order:
        missing = [i for i in n.inputs if i and i not in made]
        assert not missing, f"{n.name} runs before {missing} is produced"
        made.update(n.outputs)


graphs = st.builds(make, st.sampled_from(sorted(FAMILIES)), st.integers(10, 60), st.integers(0, 50),
                   st.sampled_from(["float32", "int8"]))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(graph=graphs, method=st.sampled_from([m for m in METHODS if m not in ("exact", "auto")]))
def test_heuristics_return_topological_orders(graph, method):
    s = schedule(graph, method, time_limit=1.0)
    assert_topological(graph, s.order)
    assert s.peak_bytes == lifetimes(graph, s.order, 4).lower_bound()
    assert s.bound_bytes <= s.peak_bytes


@settings(max_examples=8, deadline=None, derandomize=True)
@given(graph=st.builds(make, st.sampled_from(sorted(FAMILIES)), st.integers(10, 25), st.integers(0, 50),
                       st.sampled_from(["float32", "int8"])))
def test_exact_and_auto_return_topological_orders(graph):
    for method in ("exact", "auto"):
        s = schedule(graph, method, time_limit=2.0)
        assert_topological(graph, s.order)
        assert s.peak_bytes == lifetimes(graph, s.order, 4).lower_bound()
        assert s.bound_bytes <= s.peak_bytes


def test_heuristics_are_deterministic():
    graph = make("randwire", 120, 3, "float32")
    for method in ("rpo", "bfs", "dfs"):
        first, again = schedule(graph, method), schedule(graph, method)
        assert [n.name for n in first.order] == [n.name for n in again.order]


def test_refine_is_never_worse_than_the_baselines():
    graph = make("nas", 150, 4, "int8")
    refined = schedule(graph, "refine", time_limit=5.0).peak_bytes
    assert refined <= min(schedule(graph, m).peak_bytes for m in ("model", "rpo", "bfs", "dfs"))


@pytest.mark.parametrize("method, limit", [("fastest", 1.0), ("auto", 0.0), ("auto", -3.0)])
def test_bad_method_or_limit_is_one_sentence(method, limit):
    with pytest.raises(MCUDeployError) as err:
        schedule(make("unet", 20, 0), method, limit)
    assert "\n" not in str(err.value)
