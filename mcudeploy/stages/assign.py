"""The stage partitioner: which operators run on which core of a system.

1. The lowered graph is ordered once (mcudeploy/schedule) and compiled whole for each kind of core
   the system has; the simulator (mcudeploy/simulate) gives every operator's ticks there, measured
   where the board's timing cache holds its kernel, else estimated. Ticks become seconds on the chip
   (``seconds_per_tick``), so that link time and compute add up.
2. The steps of the order (mcudeploy/stages/steps.py) are reduced, and split into stages by the exact
   dynamic program (split.exact), or by the heuristic (split.heuristic) when the program would be
   too large (more than ``EXACT_WORK`` stage evaluations).
3. Stage k runs on unit k of the system, in its placement order (along the chain, snake order on a
   mesh), so consecutive stages are neighbours.

Objectives: ``throughput`` (the given number of stages, default every core, with the least
bottleneck) and ``fit`` (the fewest stages that fit their chips' SRAM and flash; among splits over
that many, the least bottleneck).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mcudeploy.boards import Board, instructions_per_tick
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.memory import areas
from mcudeploy.compile import compile_graph
from mcudeploy.plan.options import CompileOptions
from mcudeploy.schedule import schedule
from mcudeploy.ops import registry
from mcudeploy.simulate.simulate import Estimator, simulate, work
from mcudeploy.simulate.timing_cache import TimingCache
from mcudeploy.stages.split import Capacity, Problem, Split, evaluate, exact, heuristic
from mcudeploy.stages.staged import refuse_state
from mcudeploy.stages.steps import Steps, reduce, steps_of
from mcudeploy.stages.system import System, Unit

OBJECTIVES = ("throughput", "fit")
EXACT_WORK = 2_000_000  # stages x steps^2 up to which the dynamic program runs (a few seconds)
# flash a firmware needs besides the weights: the measurer or the user's code and the kernels used
# (the measurer with every kernel linked in is about 40 KB on Cortex-M4, -Os)
FIRMWARE_FLASH_BYTES = 64 * 1024


def seconds_per_tick(board: Board) -> float:
    """A tick in seconds on the chip: under QEMU (-icount) its guest instructions at one per cycle of
    the board's clock (the emulator's own clock runs far faster than the chip); on a real board its
    timer's period; on the host, a nanosecond (the estimates count instructions there)."""
    if board.kind == "qemu":
        return instructions_per_tick(board) / float(board.clock_hz or board.timer.hz)
    if board.timer is not None:
        return 1.0 / board.timer.hz
    return 1e-9


def capacity(unit: Unit) -> Capacity:
    """What one core may use for its stage: the board's usable SRAM and flash (beyond a firmware's
    own), shared evenly among the cores of its chip that compile for the same board."""
    sram = sum(min(a.capacity, 1 << 40) for a in areas(unit.board))
    return Capacity(sram // unit.sharing, max(unit.board.flash_bytes - FIRMWARE_FLASH_BYTES, 0) // unit.sharing)


@dataclass(frozen=True)
class Costs:
    """Every operator's seconds on one board, and how many were measured."""
    seconds: dict
    measured: int
    estimated: int
    whole_seconds: float  # the whole model on one core of this board
    compiled: object = None  # that plan (a plan.Compiled)


def scratch_policy(objective: str) -> str:
    """How every plan of a partition chooses kernels with working memory (compile.compile_graph):
    for throughput each keeps its scratch (the fastest kernels: a stage alone has its peak elsewhere
    than the whole model, and fitting it would trade a stage's speed for memory it may not need);
    for fit, the least memory."""
    return "keep" if objective == "throughput" else "fit"


def operator_costs(graph: Graph, board: Board, schedule_method: str, time_limit: float,
                   scratch: str = "fit") -> Costs:
    compiled = compile_graph(graph, board, graph.name, CompileOptions(schedule_method=schedule_method,
                                                                      schedule_time_limit=time_limit, scratch=scratch))
    sim = simulate(compiled, TimingCache(board.name))
    per_tick = seconds_per_tick(board)
    seconds = {o.node: o.ticks * per_tick for o in sim.ops}
    return Costs(seconds, len(sim.measured), len(sim.estimated), sim.ticks * per_tick, compiled)


def estimated_seconds(graph: Graph, board: Board) -> dict:
    """Every operator's seconds on ``board`` from the simulator's estimates alone (fits over the board's
    timing cache, else its default), without compiling: for graphs too many to compile (the benchmark)."""
    estimate, per_tick = Estimator(TimingCache(board.name), board), seconds_per_tick(board)
    out = {}
    for node in graph.nodes:
        op = registry.get(node.op)
        if not op.view:
            macs, nbytes = work(graph, node)
            out[node.name] = estimate(op.kernel(graph, node).fn, macs, nbytes)[0] * per_tick
    return out


@dataclass(frozen=True)
class Partition:
    system: System
    units: tuple[Unit, ...]  # one per stage
    order: tuple[Node, ...]
    steps: Steps  # of the order, unreduced
    split: Split  # bounds in steps of the order
    costs: dict  # board name -> Costs
    objective: str

    @property
    def bounds(self) -> tuple[int, ...]:
        return self.split.bounds


def problem_for(steps: Steps, system: System, units: tuple[Unit, ...]) -> Problem:
    return Problem(steps, tuple(u.board.name for u in units), tuple(system.link_after(k) for k in range(len(units) - 1)),
                   tuple(capacity(u) for u in units))


def best_split(steps: Steps, system: System, units: tuple[Unit, ...]) -> Optional[Split]:
    """The split of ``steps`` over ``units`` (exact when small enough), its bounds in ``steps``."""
    reduced, starts = reduce(steps)
    problem = problem_for(reduced, system, units)
    work = len(units) * reduced.n ** 2
    found = exact(problem) if work <= EXACT_WORK else heuristic(problem)
    if found is None:
        return None
    full = problem_for(steps, system, units)
    return evaluate(full, [starts[b] for b in found.bounds], found.method)


def _no_fit(steps: Steps, system: System, units: tuple[Unit, ...]) -> str:
    """Why no split over ``units`` fits, in one sentence."""
    caps = [capacity(u) for u in units]
    flash, sram = max(c.flash_bytes for c in caps), max(c.sram_bytes for c in caps)
    for k in range(steps.n):
        name = steps.nodes[k][0]
        if steps.weight_bytes(k, k + 1) > flash:
            return (f"operator {name} alone has {steps.weight_bytes(k, k + 1):,} bytes of weights, more than the "
                    f"{flash:,} bytes of flash a core of {system.name} has for them")
        if steps.live_peak(k, k + 1) > sram:
            return (f"operator {name} alone needs {steps.live_peak(k, k + 1):,} bytes of SRAM, more than the "
                    f"{sram:,} a core of {system.name} has")
    return (f"the model ({steps.weight_bytes(0, steps.n):,} bytes of weights, {steps.live_peak(0, steps.n):,} of "
            f"live tensors at its peak) does not fit in {len(units)} stage(s) on {system.name}")


def partition(graph: Graph, system: System, stages: Optional[int] = None, objective: str = "throughput",
              schedule_method: str = "auto", time_limit: float = 10.0) -> Partition:
    """Cut the lowered ``graph`` into stages on ``system`` (see the module's docstring)."""
    refuse_state(graph)
    if objective not in OBJECTIVES:
        raise MCUDeployError(f"--objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    units = system.units
    if stages is not None and not 1 <= stages <= len(units):
        raise MCUDeployError(f"{system.name} has {len(units)} core(s) to run stages on, so --stages must be 1 to "
                             f"{len(units)}, not {stages}")
    order = tuple(schedule(graph, schedule_method, time_limit, units[0].board.alignment).order)
    boards = {u.board.name: u.board for u in units}
    costs = {name: operator_costs(graph, b, schedule_method, time_limit, scratch_policy(objective))
             for name, b in boards.items()}
    steps = steps_of(graph, order, {name: c.seconds for name, c in costs.items()})
    if len(order) < 1:
        raise MCUDeployError(f"{graph.name} has no operator to run in stages")
    if objective == "fit":
        counts = range(1, (stages or len(units)) + 1)
    else:
        counts = [min(stages or len(units), len(order))]
    for k in counts:
        found = best_split(steps, system, units[:k])
        if found is not None:
            return Partition(system, units[:k], order, steps, found, costs, objective)
    k = counts[-1]
    hint = "" if objective == "fit" else " (--objective fit finds the fewest stages that fit, if any)"
    raise MCUDeployError(f"no split over {k} stage(s) fits: {_no_fit(steps, system, units[:k])}{hint}")
