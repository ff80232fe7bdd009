"""Whether a plan fits its board, checked from the plan before any output is written.

Per memory region of the board (never summed across regions) and for flash, what the plan puts
there against the region's size:
- each region: its arena; the first usable region also the states' buffer (a static of model.c),
  the firmware's stack (the board's ``stack_bytes``; the firmware build checks the worst case of its call graph
  against it, mcudeploy/device/stack_bound.py), the constants the latency objective copies
  there (offload/sram.py; the linker may drop some a kernel never reads, so this is an upper bound)
  and the bytes the board file reserves;
- flash: the constants model.c holds (the weights and tables of the graph, the states' initial
  values that are not one repeated byte).
Not counted, because the plan cannot know them: the code (kernels, runtime, the user's own), the
firmware's other statics, and the small view and parameter structs. The firmware build counts all
of it from the ELF (mcudeploy/device/elfsize.py) and refuses a firmware that does not fit.

The host board (``-b host``) has no limits: nothing is checked there.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from mcudeploy.errors import MCUDeployError

log = logging.getLogger("mcudeploy")
FLASH = "flash"
# what --allow-overflow does where a firmware is built from the plan (run, measure, flash)
TO_THE_BUILD = "leaves it to the firmware build, which refuses a firmware larger than the board"


class FitError(MCUDeployError):
    """The plan needs more bytes than a region of the board, or its flash, holds."""


@dataclass(frozen=True)
class Use:
    """What the plan puts in one region (or flash): named parts in bytes, against the region's size."""

    region: str
    size: int
    parts: tuple[tuple[str, int], ...]  # ("arena", 221184), ("stack", 4096), ...

    @property
    def used(self) -> int:
        return sum(n for _, n in self.parts)

    @property
    def over(self) -> int:
        return max(self.used - self.size, 0)

    def over_text(self) -> str:
        """"the arena and the stack need 225,280 B of sram's 131,072 B (94,208 B over)"."""
        names = [name for name, n in self.parts if n]  # over: at least one part holds bytes
        what = " and ".join(filter(None, (", ".join(f"the {n}" for n in names[:-1]), f"the {names[-1]}")))
        verb = "need" if len(names) > 1 or names[0].endswith("s") else "needs"
        return f"{what} {verb} {self.used:,} B of {self.region}'s {self.size:,} B ({self.over:,} B over)"

    def total_text(self) -> str:
        share = f"{self.used / self.size:.1%}" if self.size else "–"
        detail = ", ".join(f"{name} {n:,}" for name, n in self.parts if n)
        return f"{self.region} {self.used:,} of {self.size:,} bytes ({share}{': ' + detail if detail else ''})"


@dataclass(frozen=True)
class Fit:
    model: str
    board: str
    uses: tuple[Use, ...]  # every usable region, in board order, then flash

    @property
    def over(self) -> tuple[Use, ...]:
        return tuple(u for u in self.uses if u.over)

    @property
    def ok(self) -> bool:
        return not self.over

    def sentence(self) -> str:
        """"M does not fit B: the arena needs … (… B over) and the weights need … (… B over)"."""
        over = [u.over_text() for u in self.over]
        joined = over[0] if len(over) == 1 else "; ".join(over[:-1]) + " and " + over[-1]
        return f"{self.model} does not fit {self.board}: {joined}"

    def totals_line(self) -> str:
        """The board's totals, one per region and flash, each against its own size."""
        return f"board {self.board}: " + "; ".join(u.total_text() for u in self.uses) + \
            " (code and the firmware's other statics not counted; the stack's worst case, from the firmware's call " \
            "graph, is checked against it when the firmware is built)"


def _flash_constants(graph) -> tuple[tuple[str, int], ...]:
    """The constant arrays of model.c: the graph's constants (weights and tables), and the initial values of
    the states that are not one repeated byte (codegen/emit.py's _states)."""
    weights = sum(t.nbytes for t in graph.tensors.values() if t.is_const)
    initial = 0
    for state in graph.states:
        raw = np.ascontiguousarray(graph[state].data).view(np.uint8).ravel()
        if raw.size and not np.all(raw == raw[0]):
            initial += raw.size
    # offload/wide.py: the copies' bytes, or 0: Conv weights widened to int16, ADD and SUB tables
    widened = sum(int(n.attr("wide", 0)) for n in graph.nodes if n.op == "Conv")
    tables = sum(int(n.attr("wide", 0)) for n in graph.nodes if n.op != "Conv")
    wide = (("weights widened to int16", widened),) if widened else ()
    wide += (("ADD and SUB tables", tables),) if tables else ()
    return (("weights", weights), ("states' initial values", initial)) + wide


def fit(compiled) -> Optional[Fit]:
    """What ``compiled`` puts in each region of its board and in flash; None on the host (no limits)."""
    board = compiled.board
    if not board.has_firmware:
        return None
    placement = compiled.placement
    arenas = placement.arenas or {}
    uses, first = [], True
    for region in board.regions:
        if region.excluded:
            continue
        arena = arenas.get(region.name, placement.arena_bytes if first and not arenas else 0)
        # offload/sram.py: constants the latency objective copies to SRAM (in flash too: their load image)
        sram = sum(int(n.attr("sram", 0)) for n in compiled.graph.nodes) if first else 0
        firmware = (("states", placement.state_bytes), ("stack", board.stack_bytes),
                    ("constants copied to SRAM", sram)) if first else ()
        parts = (("arena", arena),) + firmware + (("reserved bytes", region.reserved),)
        uses.append(Use(region.name, region.size, parts))
        first = False
    uses.append(Use(FLASH, board.flash_bytes, _flash_constants(compiled.graph)))
    return Fit(Path(compiled.model).name, board.name, tuple(uses))


def check_fit(compiled, allow_overflow: bool = False, anyway: str = "writes it anyway",
              warn: Optional[Callable[[str], None]] = None) -> Optional[Fit]:
    """Refuse, in one sentence naming every region over and by how many bytes, a plan that does not fit its
    board; with ``allow_overflow`` tell ``warn`` (default: the log) instead and go on. ``anyway``: what
    --allow-overflow does, for the refusal."""
    found = fit(compiled)
    if found is None or found.ok:
        return found
    if not allow_overflow:
        raise FitError(f"{found.sentence()}; --allow-overflow {anyway}")
    (warn or log.warning)(f"warning: {found.sentence()} (--allow-overflow)")
    return found
