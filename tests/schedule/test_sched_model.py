"""The fast model the methods optimise agrees with lifetimes(); the lower bounds hold for it."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the generated graphs come from benchmarks/graphs.py

import os
import random

import pytest

from benchmarks.graphs import FAMILIES, make  # noqa: E402
from mcudeploy.memory.alias import SHARING  # noqa: E402
from mcudeploy.memory.lifetimes import lifetimes  # noqa: E402
from mcudeploy.schedule.bound import lower_bound  # noqa: E402
from mcudeploy.schedule.profile import Profiler  # noqa: E402
from mcudeploy.schedule.problem import build  # noqa: E402


def random_orders(problem, count, seed):
    rng = random.Random(seed)
    for _ in range(count):
        waiting = [len(p) for p in problem.preds]
        ready = [v for v in range(problem.size) if not waiting[v]]
        order = []
        while ready:
            v = ready.pop(rng.randrange(len(ready)))
            order.append(v)
            for s in problem.succs[v]:
                waiting[s] -= 1
                if not waiting[s]:
                    ready.append(s)
        yield order


CASES = [(f, ops, seed, "int8" if seed % 2 else "float32") for f in sorted(FAMILIES) for ops in (20, 60)
         for seed in range(3)]


MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models")) / "onnx"


def split_graphs():
    """Bottlenecks cut along their rows: gathers of kept halos (a Concat of a window of the piece
    before and the next piece), in-place Relus, a reassembling Concat."""
    from mcudeploy.partition import split
    from tests.partition.split_cases import bottleneck, rows_cut

    for hw, pieces, halo in ((16, 4, "keep"), (24, 6, "keep"), (32, 8, "keep"), (16, 4, "recompute")):
        g = bottleneck(hw=hw)
        yield f"bottleneck{hw}-{pieces}-{halo}", split(g, (rows_cut(g, pieces, halo),))


def graphs():
    for case in CASES:
        yield "-".join(map(str, case)), make(*case)
    yield from split_graphs()
    if MODELS.is_dir():  # the reference models too, where they are at hand
        from mcudeploy.frontend import import_onnx
        from mcudeploy.compile import lower

        for path in sorted(MODELS.glob("*.onnx")):
            yield path.stem, lower(import_onnx(path))


@pytest.mark.parametrize("name, graph", list(graphs()), ids=lambda x: x if isinstance(x, str) else "")
def test_plain_model_equals_lifetimes_without_slice_sharing(name, graph):
    problem = build(graph, 4)
    plain = Profiler(problem, shares=False)
    for order in random_orders(problem, 6, seed=1):
        nodes = [graph.nodes[v] for v in order]
        expected = lifetimes(graph, nodes, 4, sharing=frozenset({"inplace", "resize"})).live_bytes()
        assert plain.live(order).tolist() == expected


@pytest.mark.parametrize("name, graph", list(graphs()), ids=lambda x: x if isinstance(x, str) else "")
def test_lower_bound_holds_for_every_order(name, graph):
    problem = build(graph, 4)
    bound = lower_bound(problem)
    peaks = [lifetimes(graph, [graph.nodes[v] for v in o], 4).lower_bound() for o in random_orders(problem, 10, 2)]
    assert bound <= min(peaks)


@pytest.mark.parametrize("name, graph", list(graphs()), ids=lambda x: x if isinstance(x, str) else "")
def test_slice_sharing_only_lowers_the_peak(name, graph):
    """lifetimes() shares a Concat's or Split's slices only where the peak does not rise, so the
    plain model's peak is never below it; the model with sharing picks up most of the difference.
    (Without band layouts: a banded tensor takes no in-place output, which the model counts, as
    the layout also tries the plan without bands, mcudeploy/memory/layout.py.)"""
    problem = build(graph, 4)
    plain, shared = Profiler(problem, shares=False), Profiler(problem)
    for order in random_orders(problem, 6, seed=3):
        measured = lifetimes(graph, [graph.nodes[v] for v in order], 4, SHARING - {"bands"}).lower_bound()
        assert plain.peak(order) >= measured
        assert shared.peak(order) <= plain.peak(order)


@pytest.mark.parametrize("name, graph", list(split_graphs()), ids=lambda x: x if isinstance(x, str) else "")
def test_a_kept_halo_is_no_part_of_its_gather_share(name, graph):
    """A gather copies the rows it takes from the piece before (a Slice, a window of that piece), so
    the model shares only the next piece into it; and a part written into the whole no longer
    lets its producer run in place. With both, the model with sharing gives the piece-major order
    the peak lifetimes() gives it (slice sharing, in place; no part-by-part freeing)."""
    from mcudeploy.schedule.pieces import pieces

    problem = build(graph, 4)
    gathers = [sh for sh in problem.shares if graph.nodes[sh.node].name.endswith("#gather")]
    assert gathers or "recompute" in name
    for sh in gathers:
        node = graph.nodes[sh.node]
        windows = [x for x in node.inputs if graph.producer(x) is not None and graph.producer(x).op == "Slice"]
        assert windows
        assert not {problem.buffers[b].tensors[0] for b in sh.parts} & {graph.producer(w).inputs[0] for w in windows}
    order = list(pieces(problem))
    sharing = frozenset({"concat", "partial", "split", "inplace", "resize"})
    measured = lifetimes(graph, [graph.nodes[v] for v in order], 4, sharing=sharing).lower_bound()
    assert Profiler(problem).peak(order) == measured
