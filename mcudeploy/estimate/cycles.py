"""Cycles on a real board from the instruction classes an emulated run executed: each class weighted by
the real board's core timings (cores.py), a taken branch's refill, and the board's flash wait states on
fetches after a taken branch that the flash accelerator misses. An estimate, and every output says so."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mcudeploy.boards import Board
from mcudeploy.errors import MCUDeployError
from mcudeploy.estimate.cores import CLASSES, CORES, FLASH_CACHE_HIT, RANGES


@dataclass(frozen=True)
class Target:
    """The real board an estimate is for."""
    board: str
    core: str
    clock_hz: int
    wait_states: int
    flash_cache: bool

    def describe(self) -> str:
        cache = "flash accelerator on" if self.flash_cache else "no flash accelerator"
        return (f"{self.board} ({self.core} at {self.clock_hz / 1e6:g} MHz, {self.wait_states} flash wait states, "
                f"{cache})")


def target_for(board: Board, emulated: Board) -> Target:
    """The estimate target ``board`` for instructions traced on ``emulated``; refused when the cores differ."""
    if board.kind != "hardware":
        raise MCUDeployError(f"--estimate-for names a real board to estimate for; {board.name} is a {board.kind} board")
    if board.core != emulated.core:
        raise MCUDeployError(f"board {emulated.name} runs a {emulated.core}, but --estimate-for {board.name} has a "
                             f"{board.core}: the instructions traced would be another core's")
    if board.core not in CORES:
        raise MCUDeployError(f"no instruction timings are known for the {board.core} of board {board.name}")
    tree = board.clock_tree.claimed if board.clock_tree else None  # the clock board.clock_hz claims
    ws = tree.flash_wait_states if tree else 0
    cache = bool(tree and (tree.flash_cache or tree.icache))
    return Target(board.name, board.core, board.clock_hz, ws, cache)


def estimate_cycles(counts: Counter, target: Target) -> float:
    """Estimated core cycles of the instruction classes in ``counts`` on ``target``."""
    return _cycles(counts, target, CORES[target.core]["cost"], FLASH_CACHE_HIT)


def estimate_range(counts: Counter, target: Target) -> tuple[float, float]:
    """The least and most cycles the published ranges of the fixed figures allow (cores.RANGES), the flash
    accelerator hitting on every fetch after a taken branch and on none: the estimate's stated error."""
    cost = CORES[target.core]["cost"]
    spread = RANGES[target.core]
    low = {c: spread[c][0] if c in spread else v for c, v in cost.items()}
    high = {c: spread[c][1] if c in spread else v for c, v in cost.items()}
    return _cycles(counts, target, low, 1.0), _cycles(counts, target, high, 0.0)


def _cycles(counts: Counter, target: Target, cost: dict, hit: float) -> float:
    cycles = sum(counts.get(c, 0) * cost[c] for c in CLASSES)
    miss = 1.0 - (hit if target.flash_cache else 0.0)
    return cycles + counts.get("branch_taken", 0) * target.wait_states * miss


def milliseconds(cycles: float, target: Target) -> float:
    return cycles * 1e3 / target.clock_hz
