"""The exact swap-or-recompute choice for a fixed order, on CP-SAT (Checkmate/POET style, for
inference): what the heuristic of swap.py is measured against on small graphs.

For every tensor the heuristic could move (a buffer of its own, not a graph output nor a
constant, the conditions of swap._candidates) and every idle interval between two of its uses
(``after`` its producer or a use, ``before`` the next use, something running between), one
Boolean per action: swap (copied out after ``after``, back before ``before``) and recompute
(its producer run again before ``before``, where recompute.recomputable allows it); neither: keep.

Live bytes, in the order's steps (lifetimes(graph, order)): at step s, every buffer live there
minus the tensors away over an interval that covers s; at the boundary between steps k and k + 1
(where move inserts a copy, and recompute a clone), every buffer live across it, a tensor whose
copy runs there counted (its original or its copy back is in the fast region then). Both are at
most the budget. The objective is the added ticks: both copies' ``Speed.copy_ticks`` per swap,
the producer's ``node_ticks`` per recompute, in thousandths of a tick.

Whole-buffer residency (swap.py's ``keep``) is not modelled: compare with
``fit_fast_memory(..., keep=False)``. ``apply`` rewrites the graph with move and recompute so the
result can be checked with lifetimes().
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from mcudeploy.effort import Effort, run_solver, solver, solver_effort
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.memory.lifetimes import lifetimes
from mcudeploy.offload.moves import move
from mcudeploy.offload.recompute import recompute, recomputable
from mcudeploy.offload.swap import _fast_live, node_ticks, regions_for_swap

# Deterministic seconds CP-SAT counts per second of one core on this model (mcudeploy/effort.py);
# a first estimate from the schedule model's rate, not yet measured on this one.
DTIME_PER_S = 0.35
SCALE = 1000  # objective in thousandths of a tick


@dataclass(frozen=True)
class Interval:
    tensor: str
    nbytes: int
    after: int
    before: int
    swap_ticks: float
    recompute_ticks: Optional[float]  # None: its producer cannot run again there


@dataclass(frozen=True)
class Choice:
    interval: Interval
    action: str  # "swap" or "recompute"

    @property
    def ticks(self) -> float:
        return self.interval.swap_ticks if self.action == "swap" else self.interval.recompute_ticks


def intervals(graph: Graph, order: Sequence[Node], board, alignment: int = 4, cache=None) -> list[Interval]:
    """Every idle interval of every tensor that could be swapped or recomputed."""
    _, slow = regions_for_swap(board)
    order = tuple(order)
    lives = lifetimes(graph, order, alignment)
    ticks = node_ticks(graph, order, board, cache, slow)
    made_at = {o: i for i, n in enumerate(order) for o in n.outputs}
    out = []
    for b in lives.buffers:
        t = b.name
        if b.parts or t not in b.tensors or t in graph.outputs or graph[t].is_const:
            continue
        uses = sorted({i for i, n in enumerate(order) if t in n.inputs})
        made = made_at.get(t, -1)
        for after, before in zip([made] + uses, uses):
            if before - after < 2:
                continue
            if any(made_at.get(u, -1) < before for u in b.tensors if u != t):
                continue  # a view of it, or an output written over it, is in use meanwhile
            cost = slow.speed.copy_ticks(b.size, out=True) + slow.speed.copy_ticks(b.size, out=False)
            producer = recomputable(graph, order, t, before)
            again = ticks[order.index(producer)] if producer is not None else None
            out.append(Interval(t, b.size, after, before, cost, again))
    return out


def solve_swaps(graph: Graph, order: Sequence[Node], board, budget: int, effort: Effort, alignment: int = 4,
                cache=None) -> tuple[Optional[float], tuple[Choice, ...], bool]:
    """(added ticks, choices, proven optimal); (None, (), proven) where no choice was found (proven:
    no choice meets the budget in this model) within ``effort``."""
    from ortools.sat.python import cp_model

    order = tuple(order)
    lives = lifetimes(graph, order, alignment)
    live = lives.live_bytes()  # index s + 1: step s
    cands = intervals(graph, order, board, alignment, cache)
    m = cp_model.CpModel()
    swap = [m.NewBoolVar(f"s{i}") for i in range(len(cands))]
    again = [m.NewBoolVar(f"r{i}") if c.recompute_ticks is not None else None for i, c in enumerate(cands)]
    away = [swap[i] + (again[i] if again[i] is not None else 0) for i in range(len(cands))]
    for i in range(len(cands)):
        if again[i] is not None:
            m.Add(away[i] <= 1)
    for s in range(-1, lives.steps):
        saved = [(c.nbytes, away[i]) for i, c in enumerate(cands) if c.after < s < c.before]
        if live[s + 1] > budget:
            if not saved:
                return None, (), True
            m.Add(live[s + 1] - sum(n * a for n, a in saved) <= budget)
    for k in range(-1, lives.steps - 1):  # boundary between step k and k + 1
        cross = sum(size for b in lives.buffers for _, size, first, last in b.rects() if first <= k < last)
        saved = [(c.nbytes, away[i]) for i, c in enumerate(cands) if c.after < k and k + 1 < c.before]
        if cross > budget:
            m.Add(cross - sum(n * a for n, a in saved) <= budget)
    m.Minimize(sum(round(c.swap_ticks * SCALE) * swap[i] for i, c in enumerate(cands))
               + sum(round(c.recompute_ticks * SCALE) * again[i] for i, c in enumerate(cands) if again[i] is not None))
    cp = solver(effort.left(), DTIME_PER_S)
    status = run_solver(cp, m)
    effort.spend(solver_effort(cp, DTIME_PER_S))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, (), status == cp_model.INFEASIBLE
    choices = tuple(Choice(c, "swap") for i, c in enumerate(cands) if cp.Value(swap[i])) + tuple(
        Choice(c, "recompute") for i, c in enumerate(cands) if again[i] is not None and cp.Value(again[i]))
    return sum(ch.ticks for ch in choices), choices, status == cp_model.OPTIMAL


def apply(graph: Graph, order: Sequence[Node], board, choices: Sequence[Choice]) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order rewritten with the choices, the latest interval first (a tensor's earlier
    interval then moves the tensor its later copy out reads)."""
    _, slow = regions_for_swap(board)
    order = tuple(order)
    names = [n.name for n in order]  # steps are found again by node name: copies shift them
    for ch in sorted(choices, key=lambda ch: (-ch.interval.before, -ch.interval.after, ch.interval.tensor)):
        iv = ch.interval
        at = {n.name: i for i, n in enumerate(order)}
        after = -1 if iv.after < 0 else at[names[iv.after]]
        before = at[names[iv.before]]
        if ch.action == "swap":
            graph, order = move(graph, order, iv.tensor, slow.name, after, before)
        elif ch.action == "recompute":
            graph, order = recompute(graph, order, iv.tensor, before)
        else:
            raise MCUDeployError(f"unknown action {ch.action!r} for tensor {iv.tensor} (swap or recompute)")
    return graph, order


def fast_peak(graph: Graph, order: Sequence[Node], board, alignment: int = 4) -> int:
    """The fast region's live-bytes peak (lifetimes(), every buffer but those pinned to the slow region)."""
    _, slow = regions_for_swap(board)
    return max(_fast_live(graph, order, alignment, slow.name)[2])
