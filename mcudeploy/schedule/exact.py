"""The exact order: an integer program solved by OR-Tools CP-SAT within a limit of deterministic
time (mcudeploy/effort.py: one worker, a fixed seed, no wall-clock limit).

Variables, for every node v and step t: ``done[v, t]`` (v has run by the end of step t),
monotone in t, fixed to 0 before v's earliest step and to 1 from its latest one; exactly t + 1
nodes have run by step t; a node is done by t only if each of its predecessors was done by
t - 1. A node runs at step t when ``done[v, t] - done[v, t - 1]`` is 1 (its *create* term).

A buffer is kept live at step t when its producer is done by t and some reader is not done by
t - 1 (its *keep* term). With a single last reader r (the others are r's ancestors) this is the
linear expression ``done[p, t] - done[r, t - 1]``; with several, a Boolean bounded below by each.
A graph output is kept from its producer's step on; a buffer nobody reads is live at its
producer's step only. An in-place node saves its source's bytes at its own step when every other
reader of the source has run before it.

Slice sharing (a Concat's inputs in its output, a Split's outputs in its input) is a free choice
per node, ``share[c]``: taken, the whole and its parts are not counted on their own, and one
buffer the size of the whole is live from the first step of any of their producers to the last
of their readers. The choice is free where lifetimes() takes it greedily, so the model's optimum
is a lower bound on the yardstick's; the caller measures the order found with the yardstick and
claims optimality only when it meets the bound.

The objective is the peak: at least the live bytes of every step. The heuristic's order is given
as a hint and its peak as an upper bound, the static lower bound as a lower one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ortools.sat.python import cp_model

from mcudeploy.effort import run_solver, solver, solver_effort
from mcudeploy.schedule.order import ancestors, descendants
from mcudeploy.schedule.problem import Problem

# Deterministic seconds CP-SAT counts per second of one core on this model (mcudeploy/effort.py):
# measured 0.17-0.4, median 0.35, on benchmarks/graphs.py's graphs of 30-100 operators.
DTIME_PER_S = 0.35


@dataclass(frozen=True)
class Solved:
    order: Optional[tuple[int, ...]]  # the model's best order; None when none was found within the limit
    bound: int  # no order has a smaller peak (bytes): the model is a relaxation of the yardstick
    effort: float = 0.0  # effort seconds the solver spent


def _maximal(nodes: Sequence[int], anc: list[int]) -> list[int]:
    """The nodes of which no other node in ``nodes`` is a descendant."""
    return [r for r in nodes if not any(anc[o] >> r & 1 for o in nodes if o != r)]


class _Model:
    def __init__(self, problem: Problem):
        self.p = problem
        self.n = n = problem.size
        self.anc, self.desc = ancestors(problem), descendants(problem)
        self.early = [a.bit_count() for a in self.anc]
        self.late = [n - 1 - d.bit_count() for d in self.desc]
        self.m = cp_model.CpModel()
        self.done = [[0] * n for _ in range(n)]
        for v in range(n):
            for t in range(n):
                if t >= self.late[v]:
                    self.done[v][t] = 1
                elif t >= self.early[v]:
                    self.done[v][t] = self.m.NewBoolVar(f"d{v}_{t}")

    def d(self, v: int, t: int):
        """done[v, t]; a graph input (v = -1) is done from the start."""
        if v < 0:
            return 1
        return 0 if t < 0 else self.done[v][t]

    def order_constraints(self) -> None:
        m, n, done = self.m, self.n, self.done
        for v in range(n):
            for t in range(self.early[v], self.late[v] - 1):
                m.AddImplication(done[v][t], done[v][t + 1])
        for t in range(n):
            m.Add(sum(done[v][t] for v in range(n)) == t + 1)
        for v in range(n):
            for u in self.p.preds[v]:
                for t in range(self.early[v], self.late[v]):
                    if not isinstance(self.d(u, t - 1), int):
                        m.AddImplication(done[v][t], self.d(u, t - 1))

    def live(self, name: str, producers: Sequence[int], readers: Sequence[int], to_end: bool,
             off: Sequence = ()) -> dict:
        """Step -> 0/1 expression: some producer done by t, some reader not done by t - 1.
        ``off``: literals any of which switches the buffer off (it is counted elsewhere)."""
        n, m = self.n, self.m
        lo = min(-1 if p < 0 else self.early[p] for p in producers)
        last = [] if to_end else _maximal(readers, self.anc)
        if not to_end and not readers:
            last = list(producers)  # live at its producer's step only
        hi = n - 1 if to_end else max(self.late[r] for r in last)
        out = {}
        for t in range(max(lo, 0), hi + 1):
            made = [self.d(p, t) for p in producers]
            ends = [] if to_end else [self.d(r, t - 1) for r in last]
            if not to_end and not readers:  # nobody reads it: its producer's own step
                made = [self.d(p, t) - self.d(p, t - 1) for p in producers]
                ends = [0]
            if not off and len(made) == 1 and len(ends) <= 1:
                out[t] = made[0] - (ends[0] if ends else 0)
                continue
            if all(isinstance(x, int) for x in made + ends) and not off:
                out[t] = max(made) - (min(ends) if ends else 0)
                continue
            keep = m.NewBoolVar(f"{name}_{t}")
            for x in made:
                for e in ends or [0]:
                    m.Add(keep >= x - e - sum(off))
            out[t] = keep
        return out

    def build(self, lower: int, upper: Optional[int]) -> None:
        p, n, m = self.p, self.n, self.m
        self.order_constraints()
        self.unit = unit = math.gcd(*(b.size for b in p.buffers), *(ip.saving for ip in p.inplace)) or 1
        self.share = {sh.node: m.NewBoolVar(f"s{sh.node}") for sh in p.shares}
        absorbed: dict[int, list] = {}  # buffer -> share literals that absorb it
        part_of: dict[int, list] = {}
        for sh in p.shares:
            for b in (sh.whole, *sh.parts):
                absorbed.setdefault(b, []).append(self.share[sh.node])
            for b in sh.parts:
                part_of.setdefault(b, []).append(self.share[sh.node])
        for lits in part_of.values():
            if len(lits) > 1:
                m.AddAtMostOne(lits)  # a tensor has one place
        terms: list[list] = [[] for _ in range(n)]
        for bi, b in enumerate(p.buffers):
            if b.producer < 0 and not b.readers and not b.to_end:
                continue  # a graph input nobody reads: live before the first step only
            for t, e in self.live(f"k{bi}", [b.producer], b.readers, b.to_end, absorbed.get(bi, ())).items():
                terms[t].append((b.size // unit, e))
        for sh in p.shares:
            outer = [lit for lit in absorbed.get(sh.whole, ()) if lit is not self.share[sh.node]]
            lits = [1 - self.share[sh.node], *outer]
            for t, e in self.live(f"v{sh.node}", sh.producers, sh.readers, sh.to_end, lits).items():
                terms[t].append((sh.size // unit, e))
        blocked: dict[int, list] = {}  # in-place node -> share literals that rule it out
        for sh in p.shares:
            for ip in p.inplace:
                if ip.dst in sh.parts or ip.src in sh.parts:
                    blocked.setdefault(ip.node, []).append(self.share[sh.node])
        for ip in p.inplace:
            v, others = ip.node, [r for r in p.buffers[ip.src].readers if r != ip.node]
            if any(self.desc[v] >> r & 1 for r in others):
                continue  # a reader always runs after v: the input never dies at v
            late_others = [r for r in _maximal(others, self.anc) if not self.anc[v] >> r & 1]
            for t in range(self.early[v], self.late[v] + 1):
                runs = self.d(v, t) - self.d(v, t - 1)
                if not late_others and not blocked.get(v):
                    terms[t].append((-ip.saving // unit, runs))
                    continue
                alias = m.NewBoolVar(f"a{v}_{t}")
                m.Add(alias <= runs)
                for r in late_others:
                    m.Add(alias <= self.d(r, t - 1))
                for lit in blocked.get(v, ()):
                    m.Add(alias <= 1 - lit)
                terms[t].append((-ip.saving // unit, alias))
        start = sum(b.size for b in p.buffers if b.producer < 0) // unit
        top = sum(b.size for b in p.buffers) // unit
        self.peak = m.NewIntVar(max(start, -(-lower // unit)), top if upper is None else max(upper // unit, start),
                                "peak")
        for t in range(n):
            m.Add(self.peak >= sum(c * e for c, e in terms[t]))
        m.Minimize(self.peak)

    def hint(self, order: Sequence[int]) -> None:
        pos = {v: i for i, v in enumerate(order)}
        for v in range(self.n):
            for t in range(self.n):
                if not isinstance(self.done[v][t], int):
                    self.m.AddHint(self.done[v][t], int(pos[v] <= t))
        for lit in self.share.values():
            self.m.AddHint(lit, 0)

    def order(self, solver: cp_model.CpSolver) -> tuple[int, ...]:
        def when(v: int) -> int:
            return next(t for t in range(self.n)
                        if t >= self.late[v] or (t >= self.early[v] and solver.Value(self.done[v][t])))
        return tuple(sorted(range(self.n), key=when))


def solve(problem: Problem, effort: float, hint: Optional[Sequence[int]] = None,
          upper: Optional[int] = None, lower: int = 0) -> Solved:
    """``effort``: effort seconds the solver may spend; ``upper``: a peak some order reaches
    (by the yardstick, or this model), if known."""
    if problem.size == 0:
        return Solved((), lower)
    model = _Model(problem)
    model.build(lower, upper)
    if hint is not None:
        model.hint(hint)
    cp = solver(effort, DTIME_PER_S)
    status = run_solver(cp, model.m)
    unit, spent = model.unit, solver_effort(cp, DTIME_PER_S)
    if status == cp_model.INFEASIBLE:  # only when ``upper`` was wrong; never claim anything then
        return Solved(None, lower, spent)
    bound = max(lower, int(math.ceil(cp.BestObjectiveBound() - 1e-9)) * unit)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Solved(None, bound, spent)
    return Solved(model.order(cp), bound, spent)
