"""Cycles on a real board from the instruction classes an emulated run executed: each class weighted by
the real board's core timings (cores.py), a taken branch's refill, the board's flash wait states on
fetches after a taken branch that the flash accelerator misses, and on reads of weights from flash that
its data cache misses (flash.py). An estimate, and every output says so."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from typing import Optional

from mcudeploy.boards import Board, FlashData
from mcudeploy.errors import MCUDeployError
from mcudeploy.estimate.cores import CLASSES, CORES, FLASH_CACHE_HIT, RANGES
from mcudeploy.estimate.flash import FlashCaches


@dataclass(frozen=True)
class Target:
    """The real board an estimate is for."""
    board: str
    core: str
    clock_hz: int
    wait_states: int
    flash_cache: bool
    flash_data: Optional[FlashData] = None  # None: reads of weights from flash are charged as SRAM's
    data_cache: bool = False  # the cache of flash_data is on

    @property
    def caches(self) -> Optional[FlashCaches]:
        """What the flash-read plugin counts for this board, or None where its flash reads are not modelled."""
        return FlashCaches.of(self.flash_data, self.data_cache) if self.flash_data else None

    def describe(self) -> str:
        cache = "flash accelerator on" if self.flash_cache else "no flash accelerator"
        if self.flash_data is None:
            reads = "weights read from flash charged as SRAM"
        elif self.data_cache:
            f = self.flash_data
            reads = f"weights through a {f.cache_lines * f.line_bytes} B data cache of {f.line_bytes} B lines"
        else:
            reads = "weights read from flash with no data cache"
        return (f"{self.board} ({self.core} at {self.clock_hz / 1e6:g} MHz, {self.wait_states} flash wait states, "
                f"{cache}, {reads})")


def target_for(board: Board, emulated: Board) -> Target:
    """The estimate target ``board`` for instructions traced on ``emulated``; refused when the cores differ."""
    if board.kind != "hardware":
        raise MCUDeployError(f"--estimate-for names a real board to estimate for; {board.name} is a {board.kind} board")
    if board.core not in CORES:  # before the cores are compared: the answer does not depend on the emulated board
        raise MCUDeployError(f"no instruction timings are modelled for the {board.core} of board {board.name} "
                             f"(mcudeploy/estimate/cores.py), so no cycles can be estimated for it")
    if CORES[board.core].get("traced_on", board.core) != emulated.core:
        raise MCUDeployError(f"board {emulated.name} runs a {emulated.core}, but --estimate-for {board.name} has a "
                             f"{board.core}: the instructions traced would be another core's")
    tree = board.clock_tree.claimed if board.clock_tree else None  # the clock board.clock_hz claims
    # without a tree the board runs at its reset clock, with the flash latency register's reset value (flash_data
    # gives it; 0 where it does not) and no flash accelerator or cache turned on but one reset leaves on
    reset_ws = board.flash_data.wait_states if board.flash_data and board.flash_data.wait_states is not None else 0
    ws = tree.flash_wait_states if tree else reset_ws
    # a cache on from reset (flash_data.cache_at_reset: the RP2040's XIP cache) serves fetches and data alike
    cache = bool(tree.flash_cache or tree.icache) if tree else board.data_cache_on
    data_cache = board.data_cache_on
    return Target(board.name, board.core, board.clock_hz, ws, cache, board.flash_data, data_cache)


def estimate_cycles(counts: Counter, target: Target) -> float:
    """Estimated core cycles of the instruction classes in ``counts`` on ``target``."""
    return _cycles(counts, target, CORES[target.core]["cost"], FLASH_CACHE_HIT)


def estimate_range(counts: Counter, target: Target) -> tuple[float, float]:
    """The least and most cycles the published ranges of the fixed figures allow (cores.RANGES), the flash
    accelerator hitting on every fetch after a taken branch and on none, and a data-cache miss waiting once
    for its line or once for each flash read of it (flash.py): the estimate's stated error."""
    cost = CORES[target.core]["cost"]
    spread = RANGES[target.core]
    low = {c: spread[c][0] if c in spread else v for c, v in cost.items()}
    high = {c: spread[c][1] if c in spread else v for c, v in cost.items()}
    return _cycles(counts, target, low, 1.0), _cycles(counts, target, high, 0.0, "flash_misses_words")


def _cycles(counts: Counter, target: Target, cost: dict, hit: float, misses: str = "flash_misses") -> float:
    cycles = sum(counts.get(c, 0) * cost[c] for c in CLASSES)
    miss = 1.0 - (hit if target.flash_cache else 0.0)
    fetches = counts.get("branch_taken", 0) * target.wait_states * miss
    return cycles + fetches + counts.get(misses, 0) * target.wait_states


def milliseconds(cycles: float, target: Target) -> float:
    return cycles * 1e3 / target.clock_hz
