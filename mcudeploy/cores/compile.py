"""A lowered graph planned for one inference on ``cores`` cores of one chip sharing its memory.

split (the cores' pieces, of every operator that costs enough) -> schedule (an order) -> the scheduled graph's
rewrites, every kernel keeping its scratch -> assign (a core per kernel step) -> sorted_order (phases) ->
lay_out_on_cores (one arena) -> races.check -> constants_in_sram. The costs are estimated from each step's work
by default; cores/search.py plans again with measured ones. Which steps run a kernel depends on the sharing the
layout decides, and the phases on which steps run one, so the plan is made again until both agree.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

from mcudeploy.boards import Board
from mcudeploy.cores.assign import assign
from mcudeploy.cores.memory import CONCURRENT, lay_out_on_cores, refuse_states
from mcudeploy.cores.plan import CorePlan, sorted_order
from mcudeploy.cores.races import check
from mcudeploy.cores.split import axis_extent, cuts_for_cores, kernel_ticks, sizes
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.memory import areas
from mcudeploy.memory.lifetimes import Lifetimes, lifetimes
from mcudeploy.memory.place import Placement
from mcudeploy.partition import Scheme, split
from mcudeploy.schedule import Schedule, schedule

BARRIER_INSTRUCTIONS = 200.0  # a guess until measured: both cores' stores, the barrier's DMBs and a wait or two
SPLIT_BARRIERS = 8  # an operator is cut for the cores when it is worth this many barriers
ROUNDS = 4


@dataclass(frozen=True)
class Costs:
    """What a plan on cores weighs, in the board's ticks: ``ticks(graph)``, each of a graph's steps (0 for a view);
    a barrier; and ``split_at``, the least an operator costs for it to be cut into one piece per core."""
    ticks: Callable[[Graph], Mapping[str, float]]
    barrier: float
    split_at: float
    source: str = "estimated"  # or "measured" (cores/search.py)
    shares: Mapping[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)  # (node, axis) -> piece sizes
    axes: Mapping[str, str] = field(default_factory=dict)  # node -> the axis its cut tries first


def estimated(board: Board) -> Costs:
    """Every step's cost from its work alone (split.kernel_ticks), and a barrier guessed."""
    barrier = ticks_of(board, BARRIER_INSTRUCTIONS)
    return Costs(lambda graph: kernel_ticks(graph, board), barrier, SPLIT_BARRIERS * barrier)


@dataclass(frozen=True)
class CoresPlan:
    graph: Graph  # split and rewritten
    scheme: Scheme
    schedule: Schedule  # its order sorted by phase
    plan: CorePlan
    lifetimes: Lifetimes
    placement: Placement
    ticks: dict  # node name -> the cost the assignment used, on core 0
    costs: Costs
    sram_constants_bytes: int = 0  # the constants copied to SRAM at start-up, as the latency objective copies them

    @property
    def order(self) -> tuple[Node, ...]:
        return self.schedule.order

    def critical_path(self) -> float:
        """The critical path the assignment weighed, in ticks: its costs' steps and barrier."""
        return self.plan.critical_path([self.ticks.get(n.name, 0.0) if self.plan.core[k] >= 0 else 0.0
                                        for k, n in enumerate(self.order)], self.costs.barrier)

    def key(self) -> tuple:
        """What makes two plans the same: the cuts, and each step's name, core and phase."""
        return self.scheme, tuple(n.name for n in self.order), self.plan.core, self.plan.phase

    def compiled(self, name: str, board: Board):
        """The plan as one core runs it (its steps one after another, phase by phase): what codegen and the
        host's bit-for-bit checks take."""
        from mcudeploy.objective import Objective
        from mcudeploy.plan.compiled import Compiled
        objective = Objective("latency", sram_constants_bytes=self.sram_constants_bytes or None)
        return Compiled(name, board, self.graph, self.schedule, self.lifetimes, self.placement, self.scheme,
                        objective=objective, cores=self.plan)

    def one_core(self) -> float:
        return sum(self.ticks.get(n.name, 0.0) for k, n in enumerate(self.order) if self.plan.core[k] >= 0)


def plan_on_cores(graph: Graph, board: Board, cores: int = 2, speed: Optional[Sequence[float]] = None,
                  costs: Optional[Costs] = None, schedule_method: str = "auto", schedule_time_limit: float = 10.0,
                  placement_method: str = "greedy", placement_time_limit: float = 5.0) -> CoresPlan:
    from mcudeploy.compile import rewrite_ordered
    refuse_states(graph)
    if cores < 2:
        raise MCUDeployError(f"one inference on several cores needs at least two cores, not {cores}")
    costs = costs or estimated(board)
    whole = costs.ticks(graph)
    faster = [1.0 / s for s in speed] if speed is not None and len(set(speed)) > 1 else None

    def shares(node: Node, axis: str) -> Optional[tuple[int, ...]]:
        given = costs.shares.get((node.name, axis))
        return given if given else sizes(axis_extent(graph, node, axis), faster) if faster else None

    scheme = cuts_for_cores(graph, lambda n: whole[n.name], costs.split_at, cores, shares, costs.axes)
    cut = split(graph, scheme)
    sched = schedule(cut, schedule_method, schedule_time_limit, board.alignment)
    rewritten, order = rewrite_ordered(cut, sched.order, board, "keep")
    ticks = costs.ticks(rewritten)
    elided = lifetimes(rewritten, order, board.alignment, CONCURRENT).elided
    regions = areas(board)
    for _ in range(ROUNDS):
        core_of, phase_of = assign(rewritten, order, ticks, elided, cores, costs.barrier, speed)
        ordered, plan = sorted_order(rewritten, order, core_of, elided, cores, phase_of)
        lives, placement = lay_out_on_cores(rewritten, ordered, plan, regions, placement_method, board.alignment,
                                            placement_time_limit)
        if lives.elided == elided:
            check(rewritten, ordered, plan, lives, placement)
            moved, ordered, nbytes = constants_in_sram(rewritten, ordered, plan, lives, placement, board)
            return CoresPlan(moved, scheme, dataclasses.replace(sched, order=ordered), plan, lives, placement,
                             {n: t for n, t in ticks.items() if n not in elided}, costs, nbytes)
        elided = lives.elided
    raise MCUDeployError(f"the plan of {graph.name} on {cores} cores did not settle which steps run a kernel in "
                         f"{ROUNDS} rounds")


def ticks_of(board: Board, instructions: float) -> float:
    from mcudeploy.boards import instructions_per_tick
    if board.qemu is not None:
        return instructions / instructions_per_tick(board)
    timer = float((board.timer.hz if board.timer else 0) or board.clock_hz or 1.0)
    return instructions * timer / float(board.clock_hz or timer)


def constants_in_sram(graph: Graph, order: Sequence[Node], plan: CorePlan, lives: Lifetimes, placement: Placement,
                      board: Board) -> tuple[Graph, tuple[Node, ...], int]:
    """The graph and order with the constants its kernels read copied to SRAM where the first region has room beside
    the arena, as the latency objective copies them on one core (objective/meet.py, offload/sram.py), and their
    bytes. Copies are read-only after start-up, so both cores may read them at once."""
    from mcudeploy.objective.latency import first_region_bytes
    from mcudeploy.offload.sram import STATICS_ALLOWANCE, constants_to_sram

    if not board.has_firmware:
        return graph, tuple(order), 0
    room = areas(board)[0].capacity - placement.state_bytes - first_region_bytes(placement, board) - STATICS_ALLOWANCE
    kernels = [n for k, n in enumerate(order) if plan.core[k] >= 0 and n.name not in lives.elided]
    moved, nbytes, _ = constants_to_sram(graph, kernels, board.features, room)
    by_name = {n.name: n for n in moved.nodes}
    return moved, tuple(by_name[n.name] for n in order), nbytes
