"""The stage partitioner: the dynamic program is the optimum of every contiguous split (checked
against enumeration), the heuristic is never better than it, the graph reduction keeps the optimum,
the cut bytes and live peaks follow from the order, and --objective fit finds the fewest stages."""
from __future__ import annotations

import itertools
import random

import pytest

from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.compile import lower
from mcudeploy.stages.assign import capacity, partition
from mcudeploy.stages.split import Capacity, Problem, evaluate, exact, heuristic
from mcudeploy.stages.steps import Steps, reduce
from mcudeploy.stages.system import LinkSpec, load_system
from residual import residual_model
from shared_models import MODELS, need_models

LINK = LinkSpec("spi", 8e6, 10.0, True)


def random_steps(rng: random.Random, n: int) -> Steps:
    """n steps, each reading the step before and now and then one further back (a skip), some free."""
    first, last, reads, nbytes = [], [], [], []
    for k in range(n):
        readers = [k + 1] if k + 1 < n else []
        if k + 3 < n and rng.random() < 0.3:
            readers.append(k + rng.randint(2, 3))
        first.append(k)
        reads.append(tuple(readers))
        last.append(max(readers) if readers else n)
        nbytes.append(rng.choice([64, 512, 4096, 20000]))
    seconds = tuple(0.0 if rng.random() < 0.15 else rng.uniform(1e-4, 5e-3) for _ in range(n))
    weights = tuple(frozenset({f"w{k}"}) for k in range(n))
    return Steps(tuple((f"op{k}",) for k in range(n)), {"b": seconds}, weights,
                 {f"w{k}": rng.randint(100, 5000) for k in range(n)}, tuple(nbytes), tuple(first), tuple(last),
                 tuple(reads))


def brute(problem: Problem):
    n, K = problem.steps.n, problem.stages
    found = [evaluate(problem, b, "brute") for b in itertools.combinations(range(1, n), K - 1)]
    found = [s for s in found if s is not None]
    return min(s.bottleneck for s in found) if found else None


@pytest.mark.parametrize("seed", range(12))
def test_the_dynamic_program_is_the_optimum_and_the_heuristic_no_better(seed):
    rng = random.Random(seed)
    steps = random_steps(rng, rng.randint(4, 11))
    K = rng.randint(1, 4)
    cap = (Capacity(rng.randint(20000, 60000), rng.randint(4000, 20000)),) * K if seed % 2 else ()
    problem = Problem(steps, ("b",) * K, (LINK,) * (K - 1), cap)
    best, want = exact(problem), brute(problem)
    assert (best is None) == (want is None)
    if best is not None:
        assert best.bottleneck == pytest.approx(want)
        assert len(best.bounds) == K - 1 and best.bottleneck_stage == best.times.index(max(best.times))
        h = heuristic(problem)
        assert h is None or h.bottleneck >= best.bottleneck - 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_the_reduction_merges_only_free_chain_steps_and_keeps_the_optimum(seed):
    rng = random.Random(100 + seed)
    steps = random_steps(rng, 10)
    reduced, starts = reduce(steps)
    assert reduced.n == len(starts) <= steps.n and starts[0] == 0
    for a, b in zip(starts, starts[1:] + (steps.n,)):
        assert all(steps.seconds["b"][k] == 0.0 for k in range(a + 1, b))
    for K in (2, 3):
        full = exact(Problem(steps, ("b",) * K, (LINK,) * (K - 1)))
        small = exact(Problem(reduced, ("b",) * K, (LINK,) * (K - 1)))
        if small is not None:
            assert small.bottleneck == pytest.approx(full.bottleneck)


def test_cut_bytes_and_live_peak_of_a_skip():
    # step 0 makes a (4 bytes) read by 1 and 2; step 1 makes b (8) read by 2; step 2 makes the output (2)
    steps = Steps((("s0",), ("s1",), ("s2",)), {"b": (1.0, 1.0, 1.0)}, (frozenset(),) * 3, {},
                  (16, 4, 8, 2), (-1, 0, 1, 2), (0, 2, 2, 3), ((0,), (1, 2), (2,), ()))
    assert list(steps.cut_bytes) == [0, 4, 12, 0]
    assert steps.live_peak(0, 3) == 16 + 4 and steps.live_peak(1, 3) == 4 + 8 + 2
    assert steps.degrees() == ([0, 1, 2], [2, 1, 0])


def test_partition_of_a_residual_block_over_two_chips():
    graph = lower(import_model(residual_model()))
    p = partition(graph, load_system("qemu-m4x2"), schedule_method="model")
    assert len(p.units) == 2 and len(p.bounds) == 1
    assert [u.chip for u in p.units] == [0, 1]
    assert p.split.sent[0] == p.steps.cut_bytes[p.bounds[0]] > 0


def test_fit_finds_the_fewest_chips_or_says_why_none():
    need_models()
    graph = lower(import_model(MODELS / "onnx" / "ic_resnet8_large_int8.onnx"))
    chain = load_system("nucleo-f446re-x4")
    weights = sum(t.nbytes for t in graph.tensors.values() if t.is_const)
    assert weights > capacity(chain.units[0]).flash_bytes  # one chip cannot hold it
    p = partition(graph, chain, objective="fit")
    assert len(p.units) == 2
    for k, (i, j) in enumerate(zip((0,) + p.bounds, p.bounds + (p.steps.n,))):
        assert p.steps.weight_bytes(i, j) <= capacity(p.units[k]).flash_bytes
    with pytest.raises(MCUDeployError, match=r"^no split over 1 stage\(s\) fits: .*\(--objective fit finds"):
        partition(graph, chain, stages=1)
    with pytest.raises(MCUDeployError, match="--stages must be 1 to 4, not 5"):
        partition(graph, chain, stages=5)
