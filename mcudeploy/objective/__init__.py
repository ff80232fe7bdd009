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
from mcudeploy.objective.latency import OverBudget, first_region_bytes, latency_plan
from mcudeploy.objective.meet import Planner, meet
from mcudeploy.objective.spec import (BALANCED_FACTOR, MEMORY, OBJECTIVES, Objective, objective_line,
                                      parse_memory_budget)

__all__ = ["BALANCED_FACTOR", "MEMORY", "OBJECTIVES", "Objective", "OverBudget", "Planner", "first_region_bytes",
           "latency_plan", "meet", "objective_line", "parse_memory_budget"]
