"""The exact swap-or-recompute choice (mcudeploy/offload/exact_swap.py) on small generated graphs: its
choices meet the budget when applied (checked with lifetimes), it is never worse than the
heuristic where both meet the budget, and on a tiny graph it equals a brute-force enumeration."""
import itertools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from graphs import make  # noqa: E402
from mcudeploy.boards import load_board  # noqa: E402
from mcudeploy.effort import Effort  # noqa: E402
from mcudeploy.offload.exact_swap import Choice, apply, fast_peak, intervals, solve_swaps  # noqa: E402
from mcudeploy.offload.swap import fit_fast_memory  # noqa: E402

BOARD = load_board("host")
CASES = [("nas", 20, 0), ("nas", 20, 1), ("nas", 14, 4)]


@pytest.mark.parametrize("family, ops, seed", CASES)
@pytest.mark.parametrize("share", [0.9, 0.75])
def test_exact_meets_the_budget_and_is_no_worse_than_the_heuristic(family, ops, seed, share):
    g = make(family, ops, seed)
    order = g.nodes
    peak = fast_peak(g, order, BOARD, BOARD.alignment)
    budget = int(peak * share)
    ticks, choices, _ = solve_swaps(g, order, BOARD, budget, Effort(5.0), BOARD.alignment)
    assert ticks is not None and choices
    g2, o2 = apply(g, order, BOARD, choices)
    assert fast_peak(g2, o2, BOARD, BOARD.alignment) <= budget
    g3, o3, off = fit_fast_memory(g, order, BOARD, budget, BOARD.alignment, keep=False)
    if fast_peak(g3, o3, BOARD, BOARD.alignment) <= budget:
        assert ticks <= off.added_ticks + 1e-6


def test_exact_equals_brute_force_on_a_tiny_graph():
    g = make("nas", 12, 0)
    order = g.nodes
    cands = intervals(g, order, BOARD, BOARD.alignment)
    assert 0 < len(cands) <= 12
    budget = int(fast_peak(g, order, BOARD, BOARD.alignment) * 0.8)
    best = None
    options = [("keep", "swap") + (("recompute",) if c.recompute_ticks is not None else ()) for c in cands]
    for pick in itertools.product(*options):
        chosen = [Choice(c, a) for c, a in zip(cands, pick) if a != "keep"]
        cost = sum(ch.ticks for ch in chosen)
        if best is not None and cost >= best:
            continue
        g2, o2 = apply(g, order, BOARD, chosen)
        if fast_peak(g2, o2, BOARD, BOARD.alignment) <= budget:
            best = cost
    ticks, _, proven = solve_swaps(g, order, BOARD, budget, Effort(5.0), BOARD.alignment)
    assert best is not None and proven
    assert ticks == pytest.approx(best)


def test_the_planner_keeps_its_cheapest_rule_and_comes_within_a_tenth_of_the_optimum():
    """On a 40-operator NAS-like graph where seed 004's longest-idle rule swaps one tensor twice, the
    plan kept is the cheapest of the rules' plans and within 10% of the proven optimum."""
    from mcudeploy.offload.swap import RULES, _fit
    g = make("nas", 40, 2)
    order = g.nodes
    budget = int(fast_peak(g, order, BOARD, BOARD.alignment) * 0.75)
    by_rule = []
    for rule in RULES:
        g2, o2, off = _fit(g, order, BOARD, budget, BOARD.alignment, None, False, {}, False, rule)
        if fast_peak(g2, o2, BOARD, BOARD.alignment) <= budget:
            by_rule.append(off.added_ticks)
    g3, o3, kept = fit_fast_memory(g, order, BOARD, budget, BOARD.alignment, keep=False)
    assert fast_peak(g3, o3, BOARD, BOARD.alignment) <= budget
    assert kept.added_ticks == pytest.approx(min(by_rule))
    ticks, _, proven = solve_swaps(g, order, BOARD, budget, Effort(10.0), BOARD.alignment)
    assert proven and kept.added_ticks <= 1.1 * ticks
