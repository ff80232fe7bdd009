"""Which core runs each kernel step: greedy, in the order's sequence, by the critical path.

The critical path is the longest core of each phase, summed, plus a barrier between phases. A step alone
goes to the core where it lengthens the critical path least; ties go to the earlier phase (fewer barriers),
then to the core with less work so far, then to the lower core. The pieces of one operator (the split's,
Node.piece) are weighed together: each alone as above, or one per core in one phase (every way of giving the
pieces to the cores weighed, up to four cores), whichever lengthens the critical path less. One at a time, the
second piece would always stay behind the first on its core, since moving to the other core costs a barrier
before it can help.
``speed`` weighs a core's ticks (an M4 beside an M7 takes more of them for the same step).
"""
from __future__ import annotations

import copy
import itertools
from typing import Mapping, Optional, Sequence

from mcudeploy.cores.plan import sources
from mcudeploy.ir import Graph, Node

WAYS = 4  # up to this many cores, every way to give an operator's pieces one per core is weighed


class _State:
    def __init__(self, cores: int, barrier: float, speed: Sequence[float], known: Mapping[str, frozenset]):
        self.cores, self.barrier, self.speed, self.known = cores, barrier, speed, known
        self.load: list[list[float]] = []  # phase -> core -> ticks
        self.total = [0.0] * cores
        self.phase: dict[str, int] = {}
        self.core: dict[str, int] = {}

    def clone(self) -> "_State":
        out = copy.copy(self)
        out.load = [list(row) for row in self.load]
        out.total, out.phase, out.core = list(self.total), dict(self.phase), dict(self.core)
        return out

    def earliest(self, node: Node, core: int) -> int:
        return max((self.phase[s] + (self.core[s] != core) for s in self.known[node.name]), default=0)

    def put(self, node: Node, core: int, phase: int, cost: float) -> None:
        while len(self.load) <= phase:
            self.load.append([0.0] * self.cores)
        self.load[phase][core] += cost * self.speed[core]
        self.total[core] += cost * self.speed[core]
        self.phase[node.name], self.core[node.name] = phase, core

    def critical_path(self) -> float:
        return sum(max(row) for row in self.load) + self.barrier * max(0, len(self.load) - 1)

    def best(self, node: Node, cost: float) -> tuple[int, int]:
        """(core, phase) where ``node`` lengthens the critical path least (the module's ties)."""
        keys = []
        for c in range(self.cores):
            p = self.earliest(node, c)
            trial = [list(row) for row in self.load]
            while len(trial) <= p:
                trial.append([0.0] * self.cores)
            trial[p][c] += cost * self.speed[c]
            grows = sum(max(row) for row in trial) + self.barrier * (len(trial) - 1)
            keys.append((grows, p, self.total[c], c))
        _, p, _, c = min(keys)
        return c, p


def assign(graph: Graph, order: Sequence[Node], ticks: Mapping[str, float], elided: frozenset, cores: int = 2,
           barrier: float = 0.0, speed: Optional[Sequence[float]] = None) -> tuple[dict[str, int], dict[str, int]]:
    """(core, phase) per kernel step of ``order`` (node name -> each); ``ticks``: each kernel step's estimate on core 0,
    ``speed``: per core, its ticks for one of core 0's (default: all 1)."""
    speed = tuple(speed) if speed is not None else (1.0,) * cores
    known: dict[str, frozenset] = {}
    for node in order:
        known[node.name] = sources(graph, node, elided, known)
    pieces: dict[str, list[Node]] = {}
    for node in order:
        if node.name not in elided and node.piece_index is not None:
            pieces.setdefault(node.original, []).append(node)
    state = _State(cores, barrier, speed, known)
    for node in order:
        if node.name in elided or node.name in state.core:
            continue
        group = pieces.get(node.original, [node]) if node.piece_index is not None else [node]
        alone = state.clone()
        for piece in group:
            alone.put(piece, *alone.best(piece, ticks[piece.name]), ticks[piece.name])
        state = min((alone, _spread(state, group, ticks)), key=lambda s: s.critical_path() if s else float("inf"))
    return state.core, state.phase


def _spread(state: _State, group: list[Node], ticks: Mapping[str, float]) -> Optional[_State]:
    """``state`` with ``group`` one per core, in the first phase every piece may start in on its core: of the ways
    to give the pieces to the cores (each way for up to ``WAYS`` cores; beyond, the largest piece on core 0 and so
    on), the one that lengthens the critical path least, the earlier way on a tie. Pieces of unequal size (Cut.shares)
    thus go to the cores they fit: the largest to the fastest core, or to the core with least work in the phase."""
    if len(group) < 2:
        return None
    cores = list(range(state.cores))
    if len(group) == state.cores <= WAYS:
        pieces = sorted(group, key=lambda n: n.piece_index)
        ways = [list(zip(pieces, perm)) for perm in itertools.permutations(cores)]
    else:
        by_size = sorted(group, key=lambda n: -ticks[n.name])
        ways = [[(n, cores[k % state.cores]) for k, n in enumerate(by_size)]]
    best = None
    for placed in ways:
        out = state.clone()
        phase = max(out.earliest(n, c) for n, c in placed)
        for n, c in placed:
            out.put(n, c, phase, ticks[n.name])
        if best is None or out.critical_path() < best.critical_path():
            best = out
    return best
