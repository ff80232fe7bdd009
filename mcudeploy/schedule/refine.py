"""Local refinement of an order around its peak.

At the first step where the live bytes reach the peak, every buffer live there is a chance:

- created before the peak: push its producer later — just past the peak, or to the end —
  together with those of its descendants that sit in between (so the order stays topological);
  optionally also the earlier producers that feed only the moved nodes;
- read after the peak: pull its last reader earlier — just before the peak, or to the start —
  together with those of its ancestors that sit in between; optionally also the later consumers
  whose inputs are then all ready and come partly from the moved nodes (they free what the moved
  nodes create).

Each candidate order is re-simulated (:class:`mcudeploy.schedule.profile.Profiler`); the best one
is taken if it lowers the peak, or keeps it with fewer steps at the peak, or keeps both with
fewer live bytes in all (so that the next peak comes into view). Buffers are tried largest
first; the best move of the first buffer that has a helpful one is taken. This repeats until no
move helps or the effort given is spent (mcudeploy/effort.py: each candidate simulated costs
``simulation_cost`` effort seconds, so where it stops does not depend on the machine's load).
Every candidate is topological, so the result always is.
"""
from __future__ import annotations

import heapq
from typing import Optional, Sequence

import numpy as np

from mcudeploy.effort import Effort
from mcudeploy.schedule.order import ancestors, descendants
from mcudeploy.schedule.profile import Profiler
from mcudeploy.schedule.problem import Problem


# Seconds of one simulated order on an idle machine (Profiler.live and its score): a fixed cost per
# call, one per entry of the index arrays it gathers (steps and buffer touches), and one per slice
# share, which it takes in a Python loop. Fitted to 70,000 calls on graphs of 17-356 operators (26-38 us
# without shares, 440-620 us with 74-82 shares); a refine's effort came within 25% of its CPU time.
SIM_CALL_S = 28e-6
SIM_ENTRY_S = 0.01e-6
SIM_SHARE_S = 6.5e-6


def simulation_cost(prof: Profiler) -> float:
    """Effort seconds of one ``prof.live`` call."""
    return SIM_CALL_S + SIM_ENTRY_S * (prof.n + len(prof.touch)) + SIM_SHARE_S * len(prof.sh_list)


def _score(live: np.ndarray) -> tuple[int, int, int]:
    return _scores(live[None])[0]


def _scores(lives: np.ndarray) -> list[tuple[int, int, int]]:
    """Per row: the peak, the steps at the peak, and the live bytes summed over all steps."""
    tops = lives.max(axis=1)
    return list(zip(tops.tolist(), (lives == tops[:, None]).sum(axis=1).tolist(), lives.sum(axis=1).tolist()))


class _Rows:
    """Ancestor or descendant sets as boolean rows, unpacked from bit sets when first asked."""

    def __init__(self, sets: list[int], n: int):
        self.sets, self.n, self.rows = sets, n, {}

    def __getitem__(self, v: int) -> np.ndarray:
        row = self.rows.get(v)
        if row is None:
            raw = np.frombuffer(self.sets[v].to_bytes((self.n + 7) // 8 or 1, "little"), dtype=np.uint8)
            row = self.rows[v] = np.unpackbits(raw, bitorder="little")[:self.n].astype(bool)
        return row


class _Graph:
    """What the moves read: dependencies as lists, edge arrays, ancestor and descendant rows."""

    def __init__(self, problem: Problem):
        self.preds, self.succs, self.n = problem.preds, problem.succs, problem.size
        self.src = np.asarray([u for ps in problem.preds for u in ps], dtype=np.int64)
        self.dst = np.asarray([v for v, ps in enumerate(problem.preds) for _ in ps], dtype=np.int64)
        self.anc = _Rows(ancestors(problem), problem.size)
        self.desc = _Rows(descendants(problem), problem.size)


def _pull(g: _Graph, order: np.ndarray, pos: np.ndarray, v: int, at: int, feed: bool) -> np.ndarray:
    i = int(pos[v])
    seg = order[at:i]
    moved = np.zeros(g.n, dtype=bool)
    moved[seg[g.anc[v][seg]]] = True
    moved[v] = True
    if feed:
        heap = sorted(set(pos[g.dst[moved[g.src] & (pos[g.dst] > i)]].tolist()))
        while heap:
            p = heapq.heappop(heap)
            u = int(order[p])
            if moved[u] or not all(moved[q] or pos[q] < at for q in g.preds[u]):
                continue
            moved[u] = True
            for s in g.succs[u]:
                heapq.heappush(heap, int(pos[s]))
    seg = order[at:]
    keep = moved[seg]
    return np.concatenate((order[:at], seg[keep], seg[~keep]))


def _push(g: _Graph, order: np.ndarray, pos: np.ndarray, v: int, at: int, feed: bool) -> np.ndarray:
    i = int(pos[v])
    seg = order[i + 1:at + 1]
    moved = np.zeros(g.n, dtype=bool)
    moved[seg[g.desc[v][seg]]] = True
    moved[v] = True
    if feed:
        heap = sorted(set((-pos[g.src[moved[g.dst] & (pos[g.src] < i)]]).tolist()))
        while heap:
            q = -heapq.heappop(heap)
            u = int(order[q])
            if moved[u] or not all(moved[s] or pos[s] > at for s in g.succs[u]):
                continue
            moved[u] = True
            for p in g.preds[u]:
                heapq.heappush(heap, -int(pos[p]))
    head = order[:at + 1]
    keep = moved[head]
    return np.concatenate((head[~keep], head[keep], order[at + 1:]))


def refine(problem: Problem, order: Sequence[int], effort: Optional[Effort] = None,
           profiler: Optional[Profiler] = None) -> tuple[int, ...]:
    """``order`` refined around its peak until no move helps or ``effort`` (None: no limit) is spent."""
    prof = profiler or Profiler(problem)
    effort = effort or Effort(None)
    cost = simulation_cost(prof)
    n = problem.size
    g = _Graph(problem)
    order = np.asarray(order, dtype=np.int64)
    live = prof.live(order)
    score = _score(live)
    while n and not effort.exhausted:
        t = int(np.argmax(live)) - 1  # the first step at the peak
        if t < 0:
            break  # the graph inputs alone make the peak
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        first, last = prof.spans(order)
        best = None
        simulated: set[bytes] = set()
        at_peak = np.flatnonzero((first <= t) & (last >= t))
        for b in at_peak[np.argsort(-prof.sizes[at_peak], kind="stable")]:  # the largest first
            buf = problem.buffers[b]
            tries = []
            for feed in (False, True):
                if 0 <= first[b] < t:
                    tries += [_push(g, order, pos, buf.producer, at, feed) for at in (t, n - 1)]
                if last[b] > t and not buf.to_end:
                    tries += [_pull(g, order, pos, int(order[last[b]]), at, feed) for at in (t, 0)]
            fresh = []  # the tries not simulated yet, each once, in the order they were made
            for cand in tries:
                effort.spend(cost)  # a candidate met twice (a feed that adds nothing) costs the same as before:
                key = cand.tobytes()  # where the effort runs out does not change, only the time it takes
                if key not in simulated:  # else its score was weighed already
                    simulated.add(key)
                    fresh.append(cand)
            if fresh:
                lives = prof.live_many(np.stack(fresh))
                for cand, cand_live, s in zip(fresh, lives, _scores(lives)):
                    if s < score:
                        best, score, best_live = cand, s, cand_live
            if best is not None or effort.exhausted:
                break
        if best is None:
            break
        order, live = best, best_live
    return tuple(int(v) for v in order)
