"""Peak memory and latency of a compiled plan, without running it.

Memory comes from the plan itself: the placed arena and the live-bytes lower bound. Latency is
the sum, over the operators model.c times (every operator of the order that is not a view,
the rule of ``device.runner.timed_nodes``), of the ticks the timing cache holds for the
operator's kernel signature. An operator whose signature is not cached is estimated:

0. for a piece of a split operator (Node.piece) when the caller gives the ``reference`` costs of
   the unsplit plan (``reference_costs``) and N ran the same kernel function there: N's ticks
   scaled by the piece's share s of N's MACs (of its bytes, for kernels without MACs). A piece runs
   the same loops over fewer rows, so this is close where a fit across shapes can be off by half;
   what it leaves out is what a piece costs whatever its share: its call, and the bytes it reads
   whole (the weights, once per piece). When the cache holds a fit ``f`` (as in rule 1) over the
   timings of N itself and of its pieces (entries of the same ``operator_key``: pieces of another
   cut of N timed before) that reaches down to pieces this small (an entry with no more MACs, or
   bytes for a copy: not an extrapolation to zero work), a piece adds ``max(0, f(piece) - s *
   f(N))``: the fit's fixed cost and per-byte cost of what the piece does beyond its share, so
   that, were the ticks exactly linear in the work, the piece would cost what the fit says while
   N keeps its measured ticks. (Measured on KWS cut in 24 pieces, qemu-m4: the pointwise and
   depthwise convolution pieces cost about 142 and 107 ticks each above their share; the plan
   +36% where the share alone estimated +5%. A fit over every timing of the kernel function,
   other layers' shapes included, put each ResNet-8 candidate under 33,920 B at +26% to +45%,
   where the share alone had let the search time one of 19,728 B and keep it at +2.3%: such a
   fit's intercept says nothing of one operator's fixed cost.)
1. from the board's cache entries of the same kernel function, by a least-squares fit
   ``ticks ~ a * MACs + b * bytes + c`` with a, b, c >= 0 (at least ``MIN_FIT`` entries);
   a piece that runs another kernel than its operator did (AvgPoolSum, a piece of a cut average)
   and has no such fit is scaled from its operator's ticks by its share of the work, as in 0.
   (measured on KWS: a fit over the board's other kernels put its 24 running sums at 8x the
   whole average);
2. for a kernel without MACs (a copy: Concat, Slice, Transpose), the same fit over the board's
   entries without MACs, else the default below; for any other, over all entries of the board;
3. else from a default: ``DEFAULT_INSTRUCTIONS_PER_MAC`` per MAC, ``DEFAULT_INSTRUCTIONS_PER_BYTE`` per byte
   touched (``DEFAULT_COPY_INSTRUCTIONS_PER_BYTE`` for a copy) and ``DEFAULT_INSTRUCTIONS_PER_CALL``,
   turned into ticks with the board's timer (on
   QEMU boards 1e9 / timer_hz / 2^icount_shift instructions per tick; on real boards one
   instruction per cycle of ``clock_hz``).

Entries without "macs" and "bytes" (written before the measurer stored them) are skipped by
the fits. An operator whose work is done by sharing memory (an elided copy) runs no kernel
and costs 0 ticks; it counts as neither measured nor estimated.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import registry
from mcudeploy.simulate.timing_cache import TimingCache, kernel_signature, operator_key

MIN_FIT = 3  # entries a fit needs (three coefficients)
# Estimates that know nothing of the kernel function itself: a piece that runs another kernel than
# its operator (a running sum of a cut average) is better scaled from its operator's ticks.
BLIND = ("fit board", "fit copies", "default")
# A scalar int8 multiply-accumulate inner loop on Cortex-M (load, load, extend, MLA, loop) runs
# about 4 instructions per MAC; one more per byte moved, and a fixed cost per call.
DEFAULT_INSTRUCTIONS_PER_MAC = 4.0
DEFAULT_INSTRUCTIONS_PER_BYTE = 1.0
DEFAULT_INSTRUCTIONS_PER_CALL = 200.0
# A copy reads and writes each byte it moves, both counted in its bytes, a word at a time: a load and a
# store per 8 bytes counted and the loop around them. (Measured on qemu-m4: the one-run gathers of
# MobileNetV2's halos cost 0.49 instructions per byte counted; the general default, 1, put a
# 196-gather plan's copies at 2.4x their ticks, +2.3% on the plan, and the search then timed a larger
# arena first.)
DEFAULT_COPY_INSTRUCTIONS_PER_BYTE = 0.5


@dataclass(frozen=True)
class OpWork:
    """One operator a plan times, as the simulator costs it: what it takes of a compiled plan."""

    index: int      # position among the timed operators
    node: str
    op: str
    kernel: str     # C function, "-" when no kernel runs
    signature: str  # "" when no kernel runs
    macs: int
    bytes: int
    original: Optional[str]  # the unsplit operator a piece is scaled from (rule 0); None: not scaled
    operator: str   # timing_cache.operator_key: the fit over this operator's own timings


@dataclass(frozen=True)
class OpCost(OpWork):
    """A timed operator's cost: measured (from the cache), estimated (how), or none (no kernel runs)."""

    ticks: float = 0.0
    source: str = "none"  # "measured" | "estimated" | "none" (no kernel runs)
    how: str = ""         # for an estimate: "scaled <node>", "fit <fn>", "fit copies", "fit board" or "default"

    @classmethod
    def of(cls, op: OpWork, ticks: float, source: str, how: str = "") -> "OpCost":
        return cls(**{f.name: getattr(op, f.name) for f in fields(OpWork)}, ticks=ticks, source=source, how=how)


@dataclass(frozen=True)
class Simulation:
    arena_bytes: int
    lower_bound_bytes: int
    ops: tuple[OpCost, ...]

    @property
    def ticks(self) -> int:
        return int(round(sum(o.ticks for o in self.ops)))

    @property
    def measured(self) -> tuple[str, ...]:
        return tuple(o.node for o in self.ops if o.source == "measured")

    @property
    def estimated(self) -> tuple[str, ...]:
        return tuple(o.node for o in self.ops if o.source == "estimated")

    @property
    def counts(self) -> dict:
        return {"measured": len(self.measured), "estimated": len(self.estimated),
                "none": sum(1 for o in self.ops if o.source == "none")}

    @property
    def source(self) -> str:
        """What plan.json's latency.source says: "measured" (every kernel from the cache),
        "estimated" (none), or "partly estimated"."""
        if not self.estimated:
            return "measured"
        return "estimated" if not self.measured else "partly estimated"

    def latency(self, baseline_ticks: Optional[int] = None) -> dict:
        return {"ticks": self.ticks, "baseline_ticks": baseline_ticks, "source": self.source, **self.counts}


def work(graph: Graph, node: Node, call=None) -> tuple[int, int]:
    """(MACs, bytes touched) of one operator that runs a kernel: its MAC count and the bytes of
    every view its kernel call reads or writes (weights included); what the estimates are fitted on.
    ``call``: the node's kernel call, where the caller made it already (a conv's repacks its weights)."""
    op = registry.get(node.op)
    macs = int(op.macs(graph, node))
    if op.view:
        return macs, 0
    call = call if call is not None else op.kernel(graph, node)
    return macs, int(sum(graph[v].nbytes for v in call.views if v))


# --------------------------------------------------------------------------- the fit


def nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients for a few columns: the best unconstrained
    fit over every subset of columns whose solution is non-negative (exact for few columns)."""
    best, best_err = np.zeros(x.shape[1]), float(np.sum(y.astype(np.float64) ** 2))
    cols = range(x.shape[1])
    for k in range(1, x.shape[1] + 1):
        for subset in itertools.combinations(cols, k):
            sol, *_ = np.linalg.lstsq(x[:, subset], y, rcond=None)
            if np.any(sol < 0):
                continue
            err = float(np.sum((x[:, subset] @ sol - y) ** 2))
            if err < best_err - 1e-9 * max(1.0, best_err):
                best, best_err = np.zeros(x.shape[1]), err
                best[list(subset)] = sol
    return best


@dataclass(frozen=True)
class Fit:
    per_mac: float
    per_byte: float
    per_call: float
    entries: int
    least: tuple[int, int] = (0, 0)  # the smallest (MACs, bytes) among the entries

    def __call__(self, macs: int, nbytes: int) -> float:
        return self.per_mac * macs + self.per_byte * nbytes + self.per_call

    def covers(self, macs: int, nbytes: int) -> bool:
        """Whether an operator this small lies among the entries (the fit interpolates) rather than
        below all of them (its fixed cost would be an extrapolation to zero work)."""
        return macs >= self.least[0] and (macs > 0 or nbytes >= self.least[1])


def fit(entries: Sequence[dict]) -> Optional[Fit]:
    """ticks ~ a * macs + b * bytes + c, a, b, c >= 0, over entries that carry all three; None
    with fewer than MIN_FIT of them. Columns are scaled to unit size first so the fit does not
    depend on their units."""
    rows = [(float(e["macs"]), float(e["bytes"]), float(e["ticks"])) for e in entries
            if all(isinstance(e.get(k), (int, float)) for k in ("macs", "bytes", "ticks"))]
    if len(rows) < MIN_FIT:
        return None
    data = np.array(rows, dtype=np.float64)
    x = np.column_stack([data[:, 0], data[:, 1], np.ones(len(rows))])
    scale = np.maximum(np.abs(x).max(axis=0), 1e-12)
    coef = nnls(x / scale, data[:, 2]) / scale
    least = (int(data[:, 0].min()), int(data[:, 1].min()))
    return Fit(float(coef[0]), float(coef[1]), float(coef[2]), len(rows), least)


def default_ticks(board, macs: int, nbytes: int) -> float:
    """Rule 3: a kernel's ticks on ``board`` from its work alone (a kernel without MACs is a copy)."""
    per_byte = DEFAULT_INSTRUCTIONS_PER_BYTE if macs else DEFAULT_COPY_INSTRUCTIONS_PER_BYTE
    instructions = DEFAULT_INSTRUCTIONS_PER_MAC * macs + per_byte * nbytes + DEFAULT_INSTRUCTIONS_PER_CALL
    timer_hz = float((board.timer.hz if board.timer else 0) or board.clock_hz or 1.0)
    if board.qemu is not None:  # -icount: 2^shift ns per instruction
        return instructions / (1e9 / timer_hz / (1 << board.qemu.icount_shift))
    clock = float(board.clock_hz or timer_hz)
    return instructions * timer_hz / clock


class Estimator:
    """Estimates from one cache, fitted once per kernel function (and once for the board)."""

    def __init__(self, cache: TimingCache, board):
        self.board = board
        self.entries = [e for e in cache.entries().values() if isinstance(e, dict)]
        self._fits: dict = {}

    def fit_of(self, fn: Optional[str]) -> Optional[Fit]:
        """The fit of one kernel function over the cache, of every entry for None (None with fewer
        than MIN_FIT entries)."""
        if fn not in self._fits:
            chosen = self.entries if fn is None else [e for e in self.entries if e.get("kernel") == fn]
            self._fits[fn] = fit(chosen)
        return self._fits[fn]

    def fit_of_operator(self, key: str, fn: str) -> Optional[Fit]:
        """The fit over the timings of one operator (operator_key) running ``fn``, whole and in pieces."""
        if (key, fn) not in self._fits:
            self._fits[(key, fn)] = fit([e for e in self.entries if e.get("operator") == key and e.get("kernel") == fn])
        return self._fits[(key, fn)]

    def _fit_copies(self) -> Optional[Fit]:
        key = ("copies",)  # not a kernel function's name
        if key not in self._fits:
            self._fits[key] = fit([e for e in self.entries if e.get("macs") == 0])
        return self._fits[key]

    def __call__(self, fn: str, macs: int, nbytes: int) -> tuple[float, str]:
        f = self.fit_of(fn)
        if f is not None:
            return f(macs, nbytes), f"fit {fn}"
        if macs == 0:  # a copy: other kernels' cost per MAC says nothing about it
            f = self._fit_copies()
            if f is not None:
                return f(macs, nbytes), "fit copies"
            return default_ticks(self.board, macs, nbytes), "default"
        f = self.fit_of(None)
        if f is not None:
            return f(macs, nbytes), "fit board"
        return default_ticks(self.board, macs, nbytes), "default"


@dataclass(frozen=True)
class Reference:
    """What one operator of the unsplit plan cost: its kernel function, work and cached ticks."""

    kernel: str
    macs: int
    bytes: int
    ticks: float

    def scaled(self, kernel: str, macs: int, nbytes: int, own: Optional["Fit"] = None) -> Optional[float]:
        """Ticks of a piece of this operator running ``kernel``, by its share of the work, plus, with
        ``own`` (the fit over this operator's own timings, whole and in pieces), what the fit puts on
        the piece beyond its share (rule 0); None when the piece runs another kernel or the share is
        not defined."""
        fraction = self.fraction(macs, nbytes) if kernel == self.kernel else None
        if fraction is None:
            return None
        extra = 0.0
        if own is not None and own.covers(macs, nbytes):
            extra = own(macs, nbytes) - fraction * own(self.macs, self.bytes)
        return self.ticks * fraction + max(0.0, extra)

    def fraction(self, macs: int, nbytes: int) -> Optional[float]:
        """A piece's share of this operator's work (MACs, else bytes); None when not defined."""
        if self.macs > 0 and macs > 0:
            return macs / self.macs
        if self.macs == 0 and macs == 0 and self.bytes > 0:
            return nbytes / self.bytes
        return None

    def share(self, macs: int, nbytes: int) -> Optional[float]:
        """This operator's ticks scaled by a piece's share of its work, whatever kernel the piece
        runs; None when the share is not defined."""
        fraction = self.fraction(macs, nbytes)
        return None if fraction is None else self.ticks * fraction


def _kernel(graph: Graph, node: Node, lifetimes):
    """The kernel call that runs ``node`` in a plan with ``lifetimes``; None where none runs (a view, or an
    operator the plan's sharing does: timing_cache.kernel_signature's rule)."""
    op = registry.get(node.op)
    if op.view or node.name in lifetimes.elided:
        return None
    return op.kernel(graph, node)


def reference_costs(compiled, cache: TimingCache) -> dict:
    """Node name -> Reference for every operator of ``compiled`` (an unsplit plan) whose timing is
    cached: what ``simulate(..., reference=...)`` scales the pieces of a split plan from."""
    graph, lives = compiled.graph, compiled.lifetimes
    out = {}
    for node in compiled.order:
        if registry.get(node.op).view:
            continue
        call = _kernel(graph, node, lives)
        sig = kernel_signature(graph, node, lives, compiled.placement, call) if call is not None else None
        entry = cache.get(sig) if sig is not None else None
        if entry is None or not isinstance(entry.get("ticks"), (int, float)):
            continue
        macs, nbytes = work(graph, node, call)
        out[node.name] = Reference(call.fn, macs, nbytes, float(entry["ticks"]))
    return out


# --------------------------------------------------------------------------- the simulation


@dataclass(frozen=True)
class PlanWork:
    """What simulating a compiled plan needs of it (plan_work()): small enough to keep for every
    candidate of a search and cost again as the board times more kernels."""

    arena_bytes: int
    lower_bound_bytes: int
    board: object
    ops: tuple[OpWork, ...]


def plan_work(compiled) -> PlanWork:
    """The operators ``compiled`` (a plan.Compiled) times, in order: every operator of the order
    that is not a view (device.runner.timed_nodes)."""
    graph, lives = compiled.graph, compiled.lifetimes
    out = []
    for i, node in enumerate(n for n in compiled.order if not registry.get(n.op).view):
        call = _kernel(graph, node, lives)
        if call is None:  # placed as a view of its input (an elided Slice, copy, ...): no kernel runs
            out.append(OpWork(i, node.name, node.op, "-", "", int(registry.get(node.op).macs(graph, node)), 0, None, ""))
            continue
        sig = kernel_signature(graph, node, lives, compiled.placement, call)
        macs, nbytes = work(graph, node, call)
        fn = call.fn
        # a piece, or an operator left whole whose views changed (it reads a tensor laid out by bands)
        original = node.original if node.piece_index is not None or node.piece is None else None
        out.append(OpWork(i, node.name, node.op, fn, sig, macs, nbytes, original,
                        operator_key(Path(compiled.model).name, node)))
    return PlanWork(compiled.placement.arena_bytes, compiled.placement.lower_bound_bytes, compiled.board, tuple(out))


def simulate(compiled, cache: TimingCache, reference: Optional[dict] = None) -> Simulation:
    """Memory and latency of ``compiled`` (a plan.Compiled) on its board, from ``cache``; the
    pieces of a split plan are estimated from ``reference`` (reference_costs of the unsplit plan)."""
    return cost(plan_work(compiled), cache, reference)


def cost(plan: PlanWork, cache: TimingCache, reference: Optional[dict] = None) -> Simulation:
    """simulate() of a plan's plan_work()."""
    estimate = Estimator(cache, plan.board)
    ops = []
    for c in plan.ops:
        if not c.signature:
            ops.append(OpCost.of(c, 0.0, "none"))
            continue
        entry = cache.get(c.signature)
        if entry is not None and isinstance(entry.get("ticks"), (int, float)):
            ops.append(OpCost.of(c, float(entry["ticks"]), "measured"))
            continue
        ref = (reference or {}).get(c.original) if c.original is not None else None
        scaled = None
        if ref is not None:
            scaled = ref.scaled(c.kernel, c.macs, c.bytes, estimate.fit_of_operator(c.operator, c.kernel))
        if scaled is not None:
            ticks, how = scaled, f"scaled {c.original}"
        else:
            ticks, how = estimate(c.kernel, c.macs, c.bytes)
            share = ref.share(c.macs, c.bytes) if ref is not None and how in BLIND else None
            if share is not None:
                ticks, how = share, f"scaled {c.original}, another kernel"
        ops.append(OpCost.of(c, ticks, "estimated", how))
    return Simulation(plan.arena_bytes, plan.lower_bound_bytes, tuple(ops))
