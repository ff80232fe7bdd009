"""What a plan is made for: ``--objective memory|latency|balanced`` and ``--memory-budget BYTES``.

- memory (the default): the least arena. Kernels whose working memory (scratch) would raise the
  peak run their scratch-free variant (offload.fit_scratch), however much slower.
- latency: the fastest plan whose arena fits a budget: ``--memory-budget`` when given and smaller,
  else the board's first memory region (its size less the stack, the states and the reserved bytes:
  what mcudeploy/fit.py checks). The order is the memory plan's (orders cost no time); every kernel keeps
  its scratch where it buys speed on the board's core (Op.scratch_pays: on an MVE core the convolutions whose
  columns fit the direct kernel's stack buffer run without, in every plan), on a board whose data cache
  pays for it in tiles (offload/tiles.py), and where the arena is over the
  budget, scratch goes from the steps of the most live bytes down (latency_plan). Dropping a kernel's scratch only lowers the peak where its step is
  above the others, so for a budget the set of steps that must give theirs up is fixed: every step
  whose live bytes exceed it; the search only goes further down where the placed arena lands above
  the live bytes, as far as the memory plan's set at most. So the latency plan runs a subset of the
  memory plan's slow kernels, never more. Nothing is split (compile never splits), and no more bytes go
  to a slower region (swapped or kept there) than in the memory plan. Where the budget has room beside the
  arena, the constants the kernels read are copied to SRAM at start-up (offload/sram.py: no flash wait states),
  and only where some stay in flash do its convolutions take tiles.
- balanced: the latency objective whose whole arena is also within BALANCED_FACTOR times the memory
  plan's: the fastest plan at most a quarter above the least memory of its order.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.memory.regions import areas

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


def first_region_bytes(placement, board) -> int:
    """The arena a placement puts in the board's first usable region."""
    return placement.arenas.get(areas(board)[0].name, placement.arena_bytes) if placement.arenas \
        else placement.arena_bytes


def _slow_bytes(placement, board) -> int:
    """The arena a placement puts in the board's slower regions (those with a speed: each access costs time)."""
    slow = {r.name for r in board.regions if r.speed is not None}
    return sum(n for name, n in placement.arenas.items() if name in slow)


def _without_scratch(graph) -> int:
    return sum(1 for n in graph.nodes if n.attrs.get("scratch", 1) == 0)


class OverBudget(MCUDeployError):
    """Even the memory plan of an order is over the user's --memory-budget (latency_plan)."""


def latency_plan(arrange: Callable[[Optional[int]], tuple], steps, board, objective: Objective,
                 model: str = "the model") -> tuple[tuple, Objective]:
    """The fastest plan of one order within the objective's budget (the module's docstring), and the
    objective with what it met. ``arrange(limit)`` places the order with the scratch of every step whose
    live bytes exceed ``limit`` given up (None: the memory plan's), as (graph, order, lifetimes,
    placement, offload); ``steps``: offload.scratch_steps of the order with every scratch kept.

    The memory plan is placed first: its arena is the least this order reaches, and the base of
    balanced's. Then the live bytes may reach the budget: the scratch of every step above it goes (in
    the live-bytes count no other set fits, and no smaller one). A plan fits when its first region's
    arena is within the budget, it puts no more bytes in a slower region than the memory plan (swapped
    or kept there, where each access costs time) and, for balanced, its whole arena is within
    BALANCED_FACTOR times the memory plan's. Where it does not (the placement leaves gaps), the limit
    goes down by the bytes over, at least to the next step with scratch, until a plan fits or the limit
    reaches the memory plan's set. If even the memory plan is over a --memory-budget, that is said in
    one sentence; over the board's own region, the memory plan is returned and the fit check
    (mcudeploy/fit.py) says by how much."""
    memory = arrange(None)
    memory_first, memory_slow = first_region_bytes(memory[3], board), _slow_bytes(memory[3], board)
    capacity = areas(board)[0].capacity - memory[3].state_bytes
    # a --memory-budget above the board's region is the region: the plan must fit the board too
    given = objective.budget_bytes is not None and objective.budget_bytes <= capacity
    limit, source = (objective.budget_bytes, "--memory-budget") if given else (capacity, "board")
    cap = int(memory[3].arena_bytes * BALANCED_FACTOR) if objective.name == "balanced" else None
    met = dataclasses.replace(objective, limit_bytes=limit, limit_from=source, arena_limit_bytes=cap,
                              memory_arena_bytes=memory[3].arena_bytes,
                              memory_without_scratch=_without_scratch(memory[0]))
    if memory_first > limit and source == "--memory-budget":
        raise OverBudget(f"no plan of {model} fits --memory-budget {limit:,} B: even the memory objective's "
                             f"arena needs {memory_first:,} B in {areas(board)[0].name} "
                             f"({memory_first - limit:,} B over)")
    # live bytes may reach the budget, plus what the memory plan holds in the board's other regions
    target = limit + memory[3].arena_bytes - memory_first
    target = min(target, cap) if cap is not None else target
    while memory_first <= limit:
        if steps.above(target) >= steps.above(0):
            break  # the memory plan's set: that plan
        plan = arrange(target)
        first = first_region_bytes(plan[3], board)
        over = max(first - limit, plan[3].arena_bytes - cap if cap is not None else 0)
        if over <= 0 and _slow_bytes(plan[3], board) <= memory_slow:
            return plan, dataclasses.replace(met, without_scratch=_without_scratch(plan[0]))
        lower = steps.next_below(target)
        if lower is None:
            break
        target = min(lower, target - max(over, 1))
    return memory, dataclasses.replace(met, without_scratch=met.memory_without_scratch)
