"""The plan on cores chosen by measurement (mcudeploy/cores/search.py), with the board's answers stood in for: timed
steps replace the estimate where they match, which operators are cut follows their measured ticks, and the plan
with the least measured critical path is kept, each distinct plan measured once; pieces timed unequal are sized so
each core takes the same time, and a slower core gets the smaller piece (Cut.shares), bit for bit on the host."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import zoo
from mcudeploy.boards import load_board
from mcudeploy.compile import lower
from mcudeploy.check import random_inputs
from mcudeploy.cores.compile import estimated, plan_on_cores
from mcudeploy.cores.races import check
from mcudeploy.cores.search import CoresRun, Timed, balancing_shares, measured, search, shapes
from mcudeploy.cores.split import axes_to_cut, axis_extent, kernel_ticks
from mcudeploy.frontend import import_onnx
from mcudeploy.partition import Cut, check_cut
from mcudeploy.reference import run_reference

BOARD = "qemu-an521-chip"


@pytest.fixture(scope="module")
def convs(tmp_path_factory):
    _, qdq, _ = zoo.BUILDERS["convs"](tmp_path_factory.mktemp("convs"))
    return lower(import_onnx(qdq)), load_board(BOARD)


def kernel_steps(plan):
    return [n for k, n in enumerate(plan.order) if plan.plan.core[k] >= 0]


def cut_operators(plan) -> set:
    return {name for cut in plan.scheme for name, _ in cut.axes}


def test_a_timed_step_costs_its_timing_and_others_their_operators_ratio(convs):
    graph, board = convs
    plan = plan_on_cores(graph, board)
    estimate = kernel_ticks(plan.graph, board)
    steps = kernel_steps(plan)
    timed_node, other = steps[0], next(n for n in steps[1:] if n.original != steps[0].original and estimate[n.name])
    timed = {timed_node.name: Timed(shapes(plan.graph, timed_node), 7.0 * estimate[timed_node.name],
                                    estimate[timed_node.name], timed_node.original),
             other.name: Timed(shapes(plan.graph, other), 3.0 * estimate[other.name], estimate[other.name],
                               other.original)}
    costs = measured(board, timed, barrier=5.0, split_at=40.0)
    ticks = costs.ticks(plan.graph)
    assert ticks[timed_node.name] == pytest.approx(7.0 * estimate[timed_node.name])
    assert costs.barrier == 5.0 and costs.split_at == 40.0 and costs.source == "measured"
    whole = costs.ticks(graph)  # the unsplit graph: an operator timed in pieces is scaled by its pieces' ratio
    assert whole[timed_node.original] == pytest.approx(7.0 * kernel_ticks(graph, board)[timed_node.original])
    untimed = next(n for n in graph.nodes if n.name not in (timed_node.original, other.original)
                   and kernel_ticks(graph, board)[n.name])
    overall = (7.0 * estimate[timed_node.name] + 3.0 * estimate[other.name]) / (
        estimate[timed_node.name] + estimate[other.name])
    assert whole[untimed.name] == pytest.approx(overall * kernel_ticks(graph, board)[untimed.name])


def test_which_operators_are_cut_follows_their_measured_ticks(convs):
    graph, board = convs
    estimate_plan = plan_on_cores(graph, board)
    heavy = sorted(cut_operators(estimate_plan))[-1]  # one operator the estimate cuts; the board finds it slow

    def time_steps(plan):
        estimate = kernel_ticks(plan.graph, board)
        return {n.name: estimate[n.name] * (50.0 if n.original == heavy else 0.01) for n in kernel_steps(plan)}

    def time_cores(plan):
        return CoresRun(int(plan.critical_path()), 40 * (plan.plan.phase_count - 1), plan.plan.phase_count)

    searched = search(graph, board, 2, time_steps, time_cores, split_at=(512,))
    measured_plan = searched.tried[1].plan
    assert measured_plan.costs.source == "measured"
    assert heavy in cut_operators(measured_plan)
    assert cut_operators(measured_plan) < cut_operators(estimate_plan)  # the rest were measured too cheap to cut


def test_the_least_measured_critical_path_is_kept_and_each_plan_measured_once(convs):
    graph, board = convs
    measured_keys, said = [], []

    def time_steps(plan):
        estimate = kernel_ticks(plan.graph, board)
        return {n.name: estimate[n.name] for n in kernel_steps(plan)}

    def time_cores(plan):
        measured_keys.append(plan.key())
        # the board prefers fewer cuts, whatever the estimate says
        return CoresRun(1000 + len(cut_operators(plan)), 40, plan.plan.phase_count)

    searched = search(graph, board, 2, time_steps, time_cores, said.append, split_at=(8, 8, 64, 512, 4096))
    assert len(measured_keys) == len(set(measured_keys)) == len(searched.tried)
    assert searched.tried[0].label == "the estimate's plan"
    assert searched.best.run.critical_path == min(t.run.critical_path for t in searched.tried)
    assert len(cut_operators(searched.best.plan)) < len(cut_operators(searched.tried[0].plan))
    assert any("the same plan as one tried" in line for line in said)


def test_pieces_timed_unequal_are_sized_so_each_core_takes_the_same_time(convs):
    graph, board = convs
    plan = plan_on_cores(graph, board)
    estimate = kernel_ticks(plan.graph, board)
    timed = {}
    for n in kernel_steps(plan):  # every first piece takes three times its twin
        factor = 3.0 if n.piece_index == 0 else 1.0
        timed[n.name] = Timed(shapes(plan.graph, n), factor * estimate[n.name], estimate[n.name], n.original)
    shares = balancing_shares(graph, plan, timed)
    assert shares
    for (name, axis), sized in shares.items():
        extent = axis_extent(graph, graph.node(name), axis)
        assert sum(sized) == extent and len(sized) == 2
        assert sized[0] < sized[1]  # the slow piece gets fewer rows: about a quarter of them where there are many
        if extent >= 16:
            assert sized[0] == pytest.approx(extent / 4, abs=1)
    sized_plan = plan_on_cores(graph, board, costs=dataclasses.replace(estimated(board), shares=shares))
    for cut in sized_plan.scheme:
        (name, axis), = cut.axes
        assert cut.shares == shares.get((name, axis))
    check(sized_plan.graph, sized_plan.order, sized_plan.plan, sized_plan.lifetimes, sized_plan.placement)


def test_a_slower_core_gets_the_smaller_piece(convs, tmp_path):
    graph, board = convs
    plan = plan_on_cores(graph, board, speed=(1.0, 3.0))  # core 1 takes three ticks for core 0's one
    sized = [c for c in plan.scheme if c.shares is not None]
    assert sized and all(c.shares[0] > c.shares[1] for c in sized)
    on = {}  # operator -> {piece: core}, for the operators cut with shares
    for k, n in enumerate(plan.order):
        if n.piece_index is not None and any(c.axes[0][0] == n.original for c in sized) and plan.plan.core[k] >= 0:
            on.setdefault(n.original, {})[n.piece_index] = plan.plan.core[k]
    spread = {op: cores for op, cores in on.items() if len(set(cores.values())) > 1}
    assert spread and all(cores == {0: 0, 1: 1} for cores in spread.values())  # the larger piece on the faster core
    check(plan.graph, plan.order, plan.plan, plan.lifetimes, plan.placement)
    from mcudeploy.device.host import run_compiled_on_host
    compiled = plan.compiled("convs", load_board("host"))
    samples = random_inputs(compiled.graph, 2, seed=3)
    for sample, got in zip(samples, run_compiled_on_host(compiled, samples, tmp_path)):
        for g, want in zip(got, run_reference(graph, sample)):
            np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("shares, reason", [((3, 1, 1), "has 2 pieces but gives shares"),
                                            ((0, 4), "one whole number of at least 1 per piece"),
                                            ((1, 10 ** 6), "leave a piece of node")])
def test_shares_that_cannot_be_cut_are_refused_in_one_sentence(convs, shares, reason):
    graph, _ = convs
    node = next(n for n in graph.nodes if n.op == "Conv")
    axis = axes_to_cut(graph, node, 2)[0]
    why = check_cut(graph, Cut(((node.name, axis),), 2, "recompute", shares=shares))
    assert why is not None and reason in why and "\n" not in why


def test_the_cores_speeds_are_measured_from_their_run(convs):
    graph, board = convs
    said = []

    def time_steps(plan):
        estimate = kernel_ticks(plan.graph, board)
        return {n.name: estimate[n.name] for n in kernel_steps(plan)}

    def time_cores(plan, slower=2.0):  # core 1 takes twice core 0's instructions for the same steps
        estimate = kernel_ticks(plan.graph, board)
        work = [0.0, 0.0]
        for k, n in enumerate(plan.order):
            if plan.plan.core[k] >= 0:
                work[plan.plan.core[k]] += estimate[n.name] * (slower if plan.plan.core[k] else 1.0)
        return CoresRun(int(max(work)), 40, plan.plan.phase_count, tuple(int(w) for w in work))

    searched = search(graph, board, 2, time_steps, time_cores, said.append, split_at=(8,), balance_rounds=0)
    assert any(line.startswith("the cores' measured speeds differ: ticks per core 0's tick 1.00, 2.00")
               for line in said)
    later = searched.tried[1].plan
    assert any(c.shares is not None and c.shares[0] > c.shares[1] for c in later.scheme)
    same = []
    search(graph, board, 2, time_steps, lambda p: time_cores(p, 1.0), same.append, split_at=(8,), balance_rounds=0)
    assert not any("speeds differ" in line for line in same)


def test_each_operator_takes_the_axis_whose_pieces_took_less(convs):
    graph, board = convs
    base = {name: axis for c in plan_on_cores(graph, board).scheme for name, axis in c.axes}
    others = {n: alt[0] for n, axis in base.items()
              for alt in [[a for a in axes_to_cut(graph, graph.node(n), 2) if a != axis]] if alt}
    assert len(others) >= 2
    favoured = sorted(others)[0]  # along its other axis this operator's pieces take half the time; the rest double

    def time_steps(plan):
        axis_of = {name: axis for c in plan.scheme for name, axis in c.axes}
        estimate = kernel_ticks(plan.graph, board)
        out = {}
        for n in kernel_steps(plan):
            moved = n.piece_index is not None and axis_of.get(n.original) not in (None, base.get(n.original))
            out[n.name] = estimate[n.name] * ((0.5 if n.original == favoured else 2.0) if moved else 1.0)
        return out

    def time_cores(plan):
        return CoresRun(int(sum(time_steps(plan).values())), 40, plan.plan.phase_count)

    said = []
    searched = search(graph, board, 2, time_steps, time_cores, said.append, split_at=(), balance_rounds=0)
    chosen = searched.tried[-1]
    assert chosen.label == "measured, 1 operator(s) cut along the axis whose pieces took less"
    axes = {name: axis for c in chosen.plan.scheme for name, axis in c.axes}
    assert axes[favoured] == others[favoured]
    assert all(axes[n] == base[n] for n in base if n != favoured)
    assert searched.best is chosen
