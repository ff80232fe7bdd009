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
  halves' compute per unit, with the cut's link time, is most even), a local refinement that moves
  every cut in turn to where its two stages balance best, then the bottleneck so found lowered by
  bisection on a limit that a greedy packing meets (``probe``: each stage ends at the farthest step
  whose time stays within the limit). A stage's time only falls as its start moves right, so the
  packing is exact whenever it is not stranded ahead of an optimal split; it is linear in the steps
  per probe, for orders too long for the program. The benchmark (benchmarks/pipeline_bench.py) holds
  it, and the splitting alone, to the exact optimum.
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


def _rebalance(problem: Problem, bounds: list[int], b: int) -> None:
    """Move cut b to where the two stages beside it have the least larger time (ties: the least sum)."""
    lo = bounds[b - 1] + 1 if b > 0 else 1
    hi = bounds[b + 1] - 1 if b + 1 < len(bounds) else problem.steps.n - 1
    left_start = bounds[b - 1] if b > 0 else 0
    right_end = bounds[b + 1] if b + 1 < len(bounds) else problem.steps.n
    best, at = None, bounds[b]
    for c in range(lo, hi + 1):
        if not (problem.fits(b, left_start, c) and problem.fits(b + 1, c, right_end)):
            continue
        a, z = problem.time(b, left_start, c), problem.time(b + 1, c, right_end)
        key = (max(a, z), a + z)
        if best is None or key < best:
            best, at = key, c
    bounds[b] = at


def probe(problem: Problem, limit: float) -> Optional[list[int]]:
    """Cuts whose every stage takes at most ``limit``, packed greedily: each stage ends at the farthest
    step it can (leaving one step for each later stage); None when the greedy packing fails."""
    n, K = problem.steps.n, problem.stages
    bounds, i = [], 0
    for k in range(K - 1):
        ends = [j for j in range(i + 1, n - (K - 1 - k) + 1)
                if problem.time(k, i, j) <= limit and problem.fits(k, i, j)]
        if not ends:
            return None
        i = ends[-1]
        bounds.append(i)
    return bounds if problem.time(K - 1, i, n) <= limit and problem.fits(K - 1, i, n) else None


def _tighten(problem: Problem, found: Split, rounds: int = 60) -> Split:
    """Lower the bottleneck of ``found`` by bisection on the limit a greedy packing (probe) meets."""
    key = (lambda s: (s.bottleneck, sum(s.times)))
    lo, hi, best = 0.0, found.bottleneck, found
    for _ in range(rounds):
        mid = (lo + hi) / 2
        cuts = probe(problem, mid)
        got = evaluate(problem, cuts, "heuristic") if cuts is not None else None
        if got is None:
            lo = mid
        else:
            hi = got.bottleneck
            best = min(best, got, key=key)
        if hi - lo <= 1e-9 * hi:
            break
    return best


def heuristic(problem: Problem, tighten: bool = True) -> Optional[Split]:
    """Recursive splitting by cost, local refinement (every cut in turn moved to where its two stages
    balance best, while the bottleneck falls), then (``tighten``) the bottleneck lowered by bisection
    on a limit that greedy packing meets (probe)."""
    n, K = problem.steps.n, problem.stages
    if K > n:
        return None
    bounds = _bisect(problem, 0, n, range(K))
    current = evaluate(problem, bounds, "heuristic")
    key = (lambda s: (s.bottleneck, sum(s.times)))
    while True:
        moved = list(bounds)
        for b in range(K - 1):
            _rebalance(problem, moved, b)
        got = evaluate(problem, moved, "heuristic")
        if got is None or (current is not None and key(got) >= key(current)):
            break
        bounds, current = moved, got
    if current is None:
        cuts = probe(problem, INF)
        current = evaluate(problem, cuts, "heuristic") if cuts is not None else None
    return _tighten(problem, current) if tighten and current is not None else current
