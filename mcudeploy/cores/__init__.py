"""One inference on the cores of one chip: operators, or the pieces the split makes of them, placed on
the cores with barriers between the steps that depend on each other (issue 63).

The plan is data (``CorePlan``): per step of the order, the core that runs it and its phase. Every core
runs its steps of phase 0, waits at a barrier for the others, runs its steps of phase 1, and so on; a
step that reads what another core wrote is in a later phase than the writer (``phases``). The order is
sorted by phase, then core, so that one ``lay_out`` of the one shared arena, with every buffer live from
the start of its first step's phase to the end of its last step's phase, never gives two buffers of
steps that run at once the same bytes (``memory``); ``races`` checks a plan byte by byte.

- split.py: the cuts that give the cores pieces to share (an operator in one piece per core, along its output
  rows or channels, equal or sized by Cut.shares);
- assign.py: which core runs each step (greedy, by the steps' and barriers' costs, and the cores' speeds);
- plan.py: the phases of an assignment, and the order sorted by them;
- memory.py: the lifetimes and placement of a plan;
- races.py: the check that no step reads or writes bytes another core writes in the same phase;
- compile.py: all of the above for a lowered graph (plan_on_cores), with costs estimated or given;
- search.py: the plan chosen by measurement (tune): costs from timed steps and barriers, then which operators
  to cut, along which axis and in what sizes, each plan measured on the cores.

Each core's instructions per phase, on an emulated chip: mcudeploy/device/core_phases.py.
"""
from mcudeploy.cores.plan import CorePlan, phases, sorted_order

__all__ = ["CorePlan", "phases", "sorted_order"]
