"""Where to cut the steps of an order into K pipeline stages, stage k on unit k (a core of a system).

The cost model: stage k running steps [i, j) takes its compute on its unit (the steps' times there)
plus the time of sending what crosses the cut after it over the link to unit k+1 (the last stage
sends nothing: its outputs go to the caller). Frames stream, so the pipeline's throughput is set by
its slowest stage, the bottleneck; a split is feasible when every stage's live-bytes peak fits its
unit's SRAM and its weights its unit's flash (cores of one chip compiling for one board share it:
each gets its share).

- ``exact``: a dynamic program over (stage, end step), best[k][j] = min over i of
  max(best[k-1][i], time_k(i, j)): the optimal contiguous split of the order, O(K n^2). On a chain
  every contiguous split of the order is every split; on a DAG it is every split of this order.
- ``heuristic``: recursive splitting by cost (cut a range for two halves of the units where the
  halves' compute per unit, with the cut's link time, is most even), then a local refinement that
  moves the bottleneck stage's boundaries one step while the bottleneck falls. The benchmark
  (benchmarks/pipeline_bench.py) holds it to the exact optimum.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional, Sequence

import numpy as np

from mcudeploy.stages.steps import Steps
from mcudeploy.stages.system import LinkSpec

INF = float("inf")


@dataclass(frozen=True)
class Capacity:
    sram_bytes: int
    flash_bytes: int


@dataclass(frozen=True)
class Problem:
    steps: Steps
    boards: tuple[str, ...]  # per stage, the board whose step times apply
    links: tuple[LinkSpec, ...]  # per stage but the last, the link after it
    capacity: tuple[Optional[Capacity], ...] = ()  # per stage; None or empty: unbounded

    @property
    def stages(self) -> int:
        return len(self.boards)

    @cached_property
    def prefix(self) -> dict:
        return {b: self.steps.prefix(b) for b in set(self.boards)}

    @cached_property
    def cut_bytes(self) -> np.ndarray:
        return self.steps.cut_bytes

    def link_seconds(self, k: int, j: int) -> float:
        return 0.0 if k == self.stages - 1 else self.links[k].seconds(int(self.cut_bytes[j]))

    def compute(self, k: int, i: int, j: int) -> float:
        pre = self.prefix[self.boards[k]]
        return float(pre[j] - pre[i])

    def time(self, k: int, i: int, j: int) -> float:
        return self.compute(k, i, j) + self.link_seconds(k, j)

    @cached_property
    def _limits(self) -> dict:
        """Per distinct capacity, for each start i the first end j that no longer fits (n + 1: all fit)."""
        out = {}
        n = self.steps.n
        for cap in set(c for c in self.capacity if c is not None):
            if self.steps.live_peak(0, n) <= cap.sram_bytes and self.steps.weight_bytes(0, n) <= cap.flash_bytes:
                continue  # the whole fits, so every stage does (a stage's live set is a subset of the whole's)
            ends = np.full(n + 1, n + 1)
            j = 1
            for i in range(n):  # the first misfit end never falls as the start moves right
                j = max(j, i + 1)
                while j <= n and self.fits_range(cap, i, j):
                    j += 1
                ends[i] = j
            out[cap] = ends
        return out

    def fits_range(self, cap: Capacity, i: int, j: int) -> bool:
        return self.steps.weight_bytes(i, j) <= cap.flash_bytes and self.steps.live_peak(i, j) <= cap.sram_bytes

    def fits(self, k: int, i: int, j: int) -> bool:
        cap = self.capacity[k] if self.capacity else None
        limit = self._limits.get(cap) if cap is not None else None
        return limit is None or j < limit[i]


@dataclass(frozen=True)
class Split:
    bounds: tuple[int, ...]  # the K-1 cuts: stage k runs steps [bounds[k-1], bounds[k])
    compute: tuple[float, ...]  # seconds per stage
    link: tuple[float, ...]  # seconds of sending per stage
    sent: tuple[int, ...]  # bytes over the link after each stage
    method: str

    @property
    def times(self) -> tuple[float, ...]:
        return tuple(c + l for c, l in zip(self.compute, self.link))

    @property
    def bottleneck(self) -> float:
        return max(self.times)

    @property
    def bottleneck_stage(self) -> int:
        return int(np.argmax(self.times))


def evaluate(problem: Problem, bounds: Sequence[int], method: str) -> Optional[Split]:
    """The split at ``bounds``; None when a stage is empty or does not fit its unit."""
    edges = (0, *bounds, problem.steps.n)
    if any(b <= a for a, b in zip(edges, edges[1:])):
        return None
    if not all(problem.fits(k, i, j) for k, (i, j) in enumerate(zip(edges, edges[1:]))):
        return None
    K = problem.stages
    return Split(tuple(bounds), tuple(problem.compute(k, edges[k], edges[k + 1]) for k in range(K)),
                 tuple(problem.link_seconds(k, edges[k + 1]) for k in range(K)),
                 tuple(int(problem.cut_bytes[edges[k + 1]]) if k < K - 1 else 0 for k in range(K)), method)


def exact(problem: Problem) -> Optional[Split]:
    """The contiguous split with the least bottleneck (ties: the earliest cuts); None when none fits."""
    n, K = problem.steps.n, problem.stages
    if K > n:
        return None
    best = np.full((K, n + 1), INF)
    back = np.zeros((K, n + 1), dtype=np.int64)
    for j in range(1, n + 1):
        if problem.fits(0, 0, j):
            best[0, j] = problem.time(0, 0, j)
    for k in range(1, K):
        pre = problem.prefix[problem.boards[k]]
        for j in range(k + 1, n + 1):
            i = np.arange(k, j)
            ok = np.array([problem.fits(k, a, j) for a in i])
            stage = pre[j] - pre[i] + problem.link_seconds(k, j)
            cand = np.where(ok, np.maximum(best[k - 1, i], stage), INF)
            at = int(np.argmin(cand))
            best[k, j], back[k, j] = cand[at], i[at]
    if not np.isfinite(best[K - 1, n]):
        return None
    bounds, j = [], n
    for k in range(K - 1, 0, -1):
        j = int(back[k, j])
        bounds.append(j)
    return evaluate(problem, bounds[::-1], "exact")


def _bisect(problem: Problem, i: int, j: int, ks: range) -> list[int]:
    """Cuts of [i, j) over units ks by recursive splitting: halves of the units, the cut where the
    per-unit compute of each side (with the left side's link time) is most even."""
    if len(ks) == 1:
        return []
    kl = len(ks) // 2
    left, right = ks[:kl], ks[kl:]
    best, at = INF, None
    for c in range(i + len(left), j - len(right) + 1):
        score = max(problem.compute(left[-1], i, c) / len(left) + problem.link_seconds(left[-1], c),
                    problem.compute(right[0], c, j) / len(right))
        if score < best:
            best, at = score, c
    return _bisect(problem, i, at, left) + [at] + _bisect(problem, at, j, right)


def heuristic(problem: Problem) -> Optional[Split]:
    """Recursive splitting by cost, then local refinement of the bottleneck's boundaries."""
    n, K = problem.steps.n, problem.stages
    if K > n:
        return None
    bounds = _bisect(problem, 0, n, range(K))
    current = evaluate(problem, bounds, "heuristic")
    while True:
        moves = []
        for b in range(K - 1):
            for delta in (-1, 1):
                moved = list(current.bounds if current else bounds)
                moved[b] += delta
                got = evaluate(problem, moved, "heuristic")
                if got is not None:
                    moves.append(got)
        better = min(moves, key=lambda s: (s.bottleneck, sum(s.times)), default=None)
        if better is None or (current is not None and (better.bottleneck, sum(better.times)) >=
                              (current.bottleneck, sum(current.times))):
            return current
        current = better
