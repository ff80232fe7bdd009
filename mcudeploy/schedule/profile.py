"""Live bytes at every step of an order, vectorised, for the methods that try many orders.

Without slice sharing it computes exactly what ``lifetimes(graph, order, alignment,
sharing={"inplace", "resize"}).live_bytes()`` computes (a test checks that), in a few numpy operations.
With ``shares=True`` it then takes the Concat and Split sharings the way lifetimes() does —
from the last in the order to the first, each where the peak does not rise. A part taken into a
whole loses the in-place saving it had, as in lifetimes(), but in-place sharing is not decided
again around the wholes, so the result is close to the yardstick, not equal to it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mcudeploy.schedule.problem import Problem


class Profiler:
    """Precomputed index arrays of one problem; ``live(order)`` per order."""

    def __init__(self, problem: Problem, shares: bool = True):
        self.problem = problem
        self.shares = problem.shares if shares else ()
        n = problem.size
        self.n = n
        start, end = n, n + 1  # sentinel positions: step -1 and the last step
        sizes, first, touch, touch_at = [], [], [], []
        for b in problem.buffers:
            sizes.append(b.size)
            first.append(start if b.producer < 0 else b.producer)
            touch_at.append(len(touch))
            touch.append(first[-1])
            touch.extend(b.readers)
            if b.to_end:
                touch.append(end)
        self.sizes = np.asarray(sizes, dtype=np.float64)
        self.size_weights = np.concatenate((self.sizes, -self.sizes))
        self.first = np.asarray(first, dtype=np.int64)
        self.touch = np.asarray(touch, dtype=np.int64)
        self.touch_at = np.asarray(touch_at, dtype=np.int64)
        reads, reads_at = [], []
        for ip in problem.inplace:
            reads_at.append(len(reads))
            reads.extend(problem.buffers[ip.src].readers)
        self.ip_node = np.asarray([ip.node for ip in problem.inplace], dtype=np.int64)
        self.ip_saving = np.asarray([ip.saving for ip in problem.inplace], dtype=np.float64)
        self.ip_reads = np.asarray(reads, dtype=np.int64)
        self.ip_reads_at = np.asarray(reads_at, dtype=np.int64)
        self.ip_of: dict[int, list[int]] = {}  # buffer -> the in-place sharings it takes part in
        for k, ip in enumerate(problem.inplace):
            for b in {ip.src, ip.dst}:
                self.ip_of.setdefault(b, []).append(k)
        self.sh_list = [(sh.whole, *sh.parts) for sh in self.shares]  # whole first, then the parts
        self.sh_node = np.asarray([sh.node for sh in self.shares], dtype=np.int64)
        # every share's members end to end, for the span of each share in two gathers (_share)
        self.sh_members = np.asarray([b for members in self.sh_list for b in members], dtype=np.int64)
        self.sh_at = np.cumsum([0, *(len(m) for m in self.sh_list[:-1])]).astype(np.int64)
        self.sh_owner = np.repeat(np.arange(len(self.sh_list)), [len(m) for m in self.sh_list]).astype(np.int64)
        # the weights of _deltas' difference array: each share's bytes on at its start and off past its end, each
        # member's own bytes off at its first step and on again past its last
        whole = np.asarray([sh.size for sh in self.shares], dtype=np.float64)
        member = self.sizes[self.sh_members]
        self.sh_weights = np.concatenate((whole, -whole, -member, member))
        # per share: the in-place sharings its parts take part in
        self.sh_inplace = [sorted({i for b in members[1:] for i in self.ip_of.get(b, ())})
                           for members in self.sh_list]

    def positions(self, order: Sequence[int]) -> np.ndarray:
        return self._positions(np.asarray(order, dtype=np.int64)[None])[0]

    def _positions(self, orders: np.ndarray) -> np.ndarray:
        """Per order (a row), each node's step, then -1 and the last step for the two sentinels."""
        k, n = orders.shape[0], self.n
        pos = np.empty((k, n + 2), dtype=np.int64)
        pos[np.arange(k)[:, None], orders] = np.arange(n)
        pos[:, n] = -1
        pos[:, n + 1] = n - 1
        return pos

    def live(self, order: Sequence[int]) -> np.ndarray:
        """Live bytes before the first step (index 0) and during every step (index s + 1)."""
        return self.live_many(np.asarray(order, dtype=np.int64)[None])[0]

    def live_many(self, orders: np.ndarray) -> np.ndarray:
        """``live`` of every row of ``orders`` (orders x nodes), one row each: the same numpy calls for a
        batch as for one order, which is what a call costs on the graphs the searches meet."""
        k, n = orders.shape[0], self.n
        if not len(self.sizes):
            return np.zeros((k, n + 1), dtype=np.int64)
        pos = self._positions(orders)
        first, last = self._spans(pos)
        # one difference array per order, all in one bincount: each buffer's bytes on at its first step and off
        # past its last, each in-place saving off at its step and on again past it (whole bytes: the float sums
        # are exact)
        weights = np.broadcast_to(self.size_weights, (k, len(self.size_weights)))
        if len(self.ip_node):
            at = pos[:, self.ip_node]
            dies = np.maximum.reduceat(pos[:, self.ip_reads], self.ip_reads_at, axis=1) == at
            saved = np.where(dies, self.ip_saving, 0.0)
            index = np.concatenate((first + 1, last + 2, at + 1, at + 2), axis=1)
            weights = np.concatenate((weights, -saved, saved), axis=1)
        else:
            at, saved = np.zeros((k, 0), dtype=np.int64), np.zeros((k, 0))
            index = np.concatenate((first + 1, last + 2), axis=1)
        index += (n + 2) * np.arange(k)[:, None]
        diff = np.bincount(index.ravel(), weights.ravel(), k * (n + 2)).reshape(k, n + 2)
        live = np.rint(np.cumsum(diff[:, :n + 1], axis=1)).astype(np.int64)
        if self.shares:
            for r in range(k):
                self._share(live[r], pos[r], first[r], last[r], at[r], saved[r])
        return live

    def _share(self, live: np.ndarray, pos: np.ndarray, first: np.ndarray, last: np.ndarray,
               ip_at: np.ndarray, ip_saved: np.ndarray) -> np.ndarray:
        """Each sharing from the last in the order to the first, taken where the peak does not rise.
        A part written into the whole is no longer a buffer of its own size, so an in-place sharing
        it took part in (as lifetimes() decides them after the slices) no longer saves its bytes."""
        top = live.max()
        m_first, m_last = first[self.sh_members], last[self.sh_members]
        span_lo = np.minimum.reduceat(m_first, self.sh_at)
        span_hi = np.maximum.reduceat(m_last, self.sh_at)
        delta, at = self._deltas(span_lo, span_hi, m_first, m_last)
        spans_lo, spans_hi, delta_at = span_lo.tolist(), span_hi.tolist(), at.tolist()
        ip_at, ip_saved = ip_at.tolist(), [int(round(x)) for x in ip_saved.tolist()]
        placed = set()  # buffers already inside a shared whole (a nested whole is not re-shared: simpler)
        for k in np.argsort(-pos[self.sh_node], kind="stable").tolist():
            members = self.sh_list[k]
            if placed and not placed.isdisjoint(members):
                continue
            lo, hi = spans_lo[k], spans_hi[k]
            new = live[lo + 1:hi + 2] + delta[delta_at[k]:delta_at[k] + hi - lo + 1]
            lost = [i for i in self.sh_inplace[k] if ip_saved[i] and lo <= ip_at[i] <= hi]
            for i in lost:
                new[ip_at[i] - lo] += ip_saved[i]
            if new.max() <= top:
                live[lo + 1:hi + 2] = new
                placed.update(members[1:])
                for i in lost:
                    ip_saved[i] = 0
        return live

    def _deltas(self, lo: np.ndarray, hi: np.ndarray, m_first: np.ndarray,
                m_last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What taking each sharing adds to the live bytes of its span (its whole's bytes, less its members' own
        over their spans), for all sharings end to end in one array, and where each one's starts. One
        difference array for all of them: a few numpy calls per order, not a few per sharing and member."""
        length = hi - lo + 1
        at = np.concatenate(([0], np.cumsum(length)[:-1])).astype(np.int64)
        m_at = at[self.sh_owner] - lo[self.sh_owner]
        index = np.concatenate((at, at + length, m_at + m_first, m_at + m_last + 1))
        total = int(length.sum())
        diff = np.bincount(index, self.sh_weights, total + 1)[:total]
        return np.rint(np.cumsum(diff)).astype(np.int64), at

    def _spans(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return pos[..., self.first], np.maximum.reduceat(pos[..., self.touch], self.touch_at, axis=-1)

    def spans(self, order: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """First and last step of every buffer (-1: before the first step)."""
        return self._spans(self.positions(order))

    def peak(self, order: Sequence[int]) -> int:
        return int(self.live(order).max())
