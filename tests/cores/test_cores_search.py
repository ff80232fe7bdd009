"""The plan on cores chosen by measurement (mcudeploy/cores/search.py), with the board's answers stood in for: timed
steps replace the estimate where they match, which operators are cut follows their measured ticks, and the plan
with the least measured critical path is kept, each distinct plan measured once."""
from __future__ import annotations

import pytest

import zoo
from mcudeploy.boards import load_board
from mcudeploy.compile import lower
from mcudeploy.cores.compile import plan_on_cores
from mcudeploy.cores.search import CoresRun, Timed, measured, search, shapes
from mcudeploy.cores.split import kernel_ticks
from mcudeploy.frontend import import_onnx

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
