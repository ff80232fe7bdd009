"""Cycles on a real board from the instruction classes an emulated run executed: each class weighted by
the real board's core timings (cores.py), a taken branch's refill, the board's flash wait states on
fetches after a taken branch that the flash accelerator misses, and on reads of weights from flash that
its data cache misses (flash.py); on a board that runs in place from a serial flash (its ``xip``), the
serial clocks of the instruction cache's line fills and of the reads of weights, as flash.py's plugin counts
them. An estimate, and every output says so."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from typing import Optional

from mcudeploy.boards import Board, FlashData, Xip
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
    xip: Optional[Xip] = None  # code and weights read in place from a serial flash
    silicon: bool = True  # False: the board has not run mcudeploy's firmware, so nothing has checked the estimate

    @property
    def caches(self) -> Optional[FlashCaches]:
        """What the flash-read plugin counts for this board, or None where its flash reads are not modelled."""
        return FlashCaches.of(self.flash_data, self.data_cache) if self.flash_data else None

    def describe(self) -> str:
        if self.xip is not None:
            x = self.xip
            cache = f"{x.icache_bytes // 1024} KiB {x.icache_ways}-way"
            through = (f"code and weights through one {cache} cache of {x.line_bytes} B lines" if x.unified else
                       f"code through a {cache} instruction cache of {x.line_bytes} B lines, weights with no cache")
            return (f"{self.board} ({self.core} at {self.clock_hz / 1e6:g} MHz, code and weights read in place from "
                    f"serial flash at {x.sck_cycles} core cycles a serial clock: {through}; assumed: {x.assumed}; "
                    f"sources: the board file's xip)")
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
    """The estimate target ``board`` for instructions traced on ``emulated``; refused when ``emulated`` is not an
    emulated board or the cores differ."""
    if board.kind != "hardware":
        raise MCUDeployError(f"--estimate-for names a real board to estimate for; {board.name} is a {board.kind} board")
    core = board.core_timings or board.core
    if core not in CORES:  # before the cores are compared: the answer does not depend on the emulated board
        raise MCUDeployError(f"no instruction timings are modelled for the {core} of board {board.name} "
                             f"(mcudeploy/estimate/cores.py), so no cycles can be estimated for it")
    traced = CORES[core].get("traced_on", core)  # the instruction set of the emulated boards that stand for it
    if emulated.kind != "qemu":
        raise MCUDeployError(f"--estimate-for traces the model under QEMU: give an emulated board with a {traced} "
                             f"(see `mcudeploy boards`), not -b {emulated.name}")
    if traced != emulated.core:
        kind = core if traced == core else f"{core} (traced on a board with the {traced})"
        raise MCUDeployError(f"board {emulated.name} runs a {emulated.core}, but --estimate-for {board.name} has a "
                             f"{kind}: the instructions traced would be another core's")
    tree = board.clock_tree.claimed if board.clock_tree else None  # the clock board.clock_hz claims
    # without a tree the board runs at its reset clock, with the flash latency register's reset value (flash_data
    # gives it; 0 where it does not) and no flash accelerator or cache turned on
    reset_ws = board.flash_data.wait_states if board.flash_data and board.flash_data.wait_states is not None else 0
    ws = tree.flash_wait_states if tree else reset_ws
    cache = bool(tree and (tree.flash_cache or tree.icache))
    data_cache = board.data_cache_on
    return Target(board.name, core, board.clock_hz, ws, cache, board.flash_data, data_cache, board.xip, board.silicon)


def estimate_cycles(counts: Counter, target: Target) -> float:
    """Estimated core cycles of the instruction classes in ``counts`` on ``target``."""
    return _cycles(counts, target, CORES[target.core]["cost"], FLASH_CACHE_HIT) + \
        serial_cycles(counts, target.xip, target.xip.sck_cycles if target.xip else 0)


def estimate_range(counts: Counter, target: Target) -> tuple[float, float]:
    """The least and most cycles the published ranges of the fixed figures allow (cores.RANGES), the flash
    accelerator hitting on every fetch after a taken branch and on none, and a data-cache miss waiting once
    for its line or once for each flash read of it (flash.py); on a board with an ``xip``, the serial flash at its
    fastest clock, and at the firmware's with every access a command of its own: the estimate's stated error."""
    cost = CORES[target.core]["cost"]
    spread = RANGES[target.core]
    low = {c: spread[c][0] if c in spread else v for c, v in cost.items()}
    high = {c: spread[c][1] if c in spread else v for c, v in cost.items()}
    x = target.xip
    return (_cycles(counts, target, low, 1.0) + serial_cycles(counts, x, x.fastest_sck_cycles if x else 0),
            _cycles(counts, target, high, 0.0, "flash_misses_words") +
            serial_cycles(counts, x, x.sck_cycles if x else 0, merged=False))


def serial_cycles(counts: Counter, xip: Optional[Xip], sck_cycles: int, merged: bool = True) -> float:
    """Core cycles waiting for the serial flash of ``xip`` (none without one): the read commands and the bytes
    the plugin counted (flash.XIP_KEYS), at ``sck_cycles`` core cycles a serial clock; not ``merged``, every line
    fill and every read of a constant a command of its own (with ``xip.unified``, where the constants come through
    the cache, every line fill, or every ``xip.frame_bytes`` of it)."""
    if xip is None:
        return 0.0
    if merged:
        commands = counts.get("spi_commands", 0)
    elif xip.unified:  # every read went through the cache: a command for each line fill, or each frame of it
        fills = counts.get("icache_fills", 0)
        commands = fills * (xip.line_bytes // xip.frame_bytes) if xip.frame_bytes else fills
    else:
        commands = counts.get("icache_fills", 0) + counts.get("flash_reads", 0)
    return float((commands * xip.command_sck + counts.get("spi_bytes", 0) * xip.byte_sck) * sck_cycles)


def _cycles(counts: Counter, target: Target, cost: dict, hit: float, misses: str = "flash_misses") -> float:
    cycles = sum(counts.get(c, 0) * cost[c] for c in CLASSES)
    miss = 1.0 - (hit if target.flash_cache else 0.0)
    fetches = counts.get("branch_taken", 0) * target.wait_states * miss
    return cycles + fetches + counts.get(misses, 0) * target.wait_states


def milliseconds(cycles: float, target: Target) -> float:
    return cycles * 1e3 / target.clock_hz
