"""Compiled: what was decided for a model on a board (the graph, its order, lifetimes and
placement, the split, the C options, the swaps, the objective), the one typed object every room
above the compiler hands on; plan.json is it as plain data (record.py, codec.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mcudeploy.boards import Board
from mcudeploy.ir import Graph, Node
from mcudeploy.memory import Lifetimes, Placement
from mcudeploy.objective import MEMORY, Objective
from mcudeploy.offload.swap import Offload
from mcudeploy.partition import Scheme
from mcudeploy.plan.code_options import CodeOptions
from mcudeploy.schedule import Schedule


@dataclass(frozen=True)
class Compiled:
    model: str
    board: Board
    graph: Graph
    schedule: Schedule  # the order, its method, time and whether it is proven optimal
    lifetimes: Lifetimes
    placement: Placement
    scheme: Scheme = ()  # the split applied to the lowered graph (mcudeploy/partition), if any
    code: CodeOptions = CodeOptions()  # how the C meets the user's firmware: name, arena, sections
    int8_input: bool = False  # lowered with --int8-input (recorded in plan.json)
    stream_input: bool = False  # lowered with --stream-input (recorded in plan.json)
    offload: Optional[Offload] = None  # swaps made to meet a fast-memory budget (mcudeploy/offload/swap.py)
    objective: Objective = MEMORY  # what the plan was made for, and what it met (mcudeploy/objective)
    cores: Optional[object] = None  # one inference on several cores: a cores.plan.CorePlan, each step's core and phase

    @property
    def order(self) -> tuple[Node, ...]:
        return self.schedule.order

    @property
    def schedule_method(self) -> str:
        return self.schedule.method
