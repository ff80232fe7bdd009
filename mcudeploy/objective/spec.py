"""What is asked of a plan (``Objective``: --objective and --memory-budget), and how plan.json and the summary
say it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mcudeploy.errors import MCUDeployError

OBJECTIVES = ("memory", "latency", "balanced")
BALANCED_FACTOR = 1.25  # balanced: the arena at most this times the memory objective's


@dataclass(frozen=True)
class Objective:
    """The objective asked for (``name``, ``budget_bytes`` as given by --memory-budget), and once a plan
    is made, what it met: the budget of the first region (``limit_bytes``, and ``limit_from``:
    "--memory-budget" or "board"), balanced's bound on the whole arena, the memory plan's arena and how
    many kernels each plan runs without scratch."""

    name: str = "memory"
    budget_bytes: Optional[int] = None
    limit_bytes: Optional[int] = None
    limit_from: Optional[str] = None
    arena_limit_bytes: Optional[int] = None  # balanced: BALANCED_FACTOR times the memory plan's whole arena
    memory_arena_bytes: Optional[int] = None
    without_scratch: Optional[int] = None
    memory_without_scratch: Optional[int] = None
    sram_constants_bytes: Optional[int] = None  # latency: the constants copied to SRAM at start-up (offload/sram.py)

    def __post_init__(self):
        if self.name not in OBJECTIVES:
            raise MCUDeployError(f"--objective must be one of {', '.join(OBJECTIVES)} for a board, not {self.name!r}")
        if self.budget_bytes is not None and self.name == "memory":
            raise MCUDeployError("--memory-budget applies to --objective latency or balanced (the fastest plan "
                                 "within it); the memory objective takes the least arena whatever the budget")
        if self.budget_bytes is not None and not (isinstance(self.budget_bytes, int) and self.budget_bytes > 0):
            raise MCUDeployError(f"--memory-budget must be a positive number of bytes, not {self.budget_bytes!r}")

    def as_plan(self) -> dict:
        """plan.json's "objective"."""
        if self.name == "memory":
            return {"name": "memory"}
        return {"name": self.name, "budget_bytes": self.budget_bytes, "limit_bytes": self.limit_bytes,
                "limit_from": self.limit_from, "arena_limit_bytes": self.arena_limit_bytes,
                "memory_arena_bytes": self.memory_arena_bytes,
                "kernels_without_scratch": self.without_scratch,
                "memory_kernels_without_scratch": self.memory_without_scratch,
                **({"sram_constants_bytes": self.sram_constants_bytes} if self.sram_constants_bytes is not None else {}),
                **({"balanced_factor": BALANCED_FACTOR} if self.name == "balanced" else {})}

    @classmethod
    def from_plan(cls, entry) -> "Objective":
        """plan.json's "objective" back (a plan written before objectives existed: memory)."""
        if not entry:
            return cls()
        return cls(entry["name"], entry.get("budget_bytes"), entry.get("limit_bytes"), entry.get("limit_from"),
                   entry.get("arena_limit_bytes"), entry.get("memory_arena_bytes"), entry.get("kernels_without_scratch"),
                   entry.get("memory_kernels_without_scratch"), entry.get("sram_constants_bytes"))


MEMORY = Objective()


def parse_memory_budget(spec) -> Optional[int]:
    """--memory-budget: bytes, with K or M (1024, 1024^2) allowed: 65536, 64K."""
    if spec is None or isinstance(spec, int):
        return spec
    from mcudeploy.offload.swap import parse_budget

    try:
        nbytes, share = parse_budget(spec)
    except MCUDeployError:
        share, nbytes = None, None
    if nbytes is None or share is not None:
        raise MCUDeployError(f"--memory-budget {spec}: give bytes (e.g. 65536 or 64K)")
    return nbytes


def objective_line(entry: Optional[dict]) -> str:
    """plan.json's "objective" in one line, for the summary and the report."""
    if not entry or entry.get("name", "memory") == "memory":
        return "objective memory: the least arena (kernels whose scratch would raise the peak run without it)"
    limit = entry.get("limit_bytes")
    source = {"--memory-budget": "--memory-budget", "board": "its size less the stack and states"}
    within = f"{limit:,} B in the first region ({source.get(entry.get('limit_from'), entry.get('limit_from'))})" \
        if limit is not None else "no memory limit"
    cap = entry.get("arena_limit_bytes")
    if cap is not None:
        within = f"an arena of {cap:,} B ({entry.get('balanced_factor', BALANCED_FACTOR):g}x the memory objective's) " \
                 f"and {within}"
    runs = entry.get("kernels_without_scratch")
    memory = entry.get("memory_kernels_without_scratch")
    kernels = f"; {runs} kernel(s) without scratch, the memory objective {memory}" if runs is not None else ""
    arena = entry.get("memory_arena_bytes")
    arena = f"; the memory objective's arena {arena:,} B" if arena is not None else ""
    sram = entry.get("sram_constants_bytes")
    sram = f"; {sram:,} B of constants copied to SRAM at start-up" if sram else ""
    return f"objective {entry['name']}: the fastest plan within {within}{kernels}{arena}{sram}"
