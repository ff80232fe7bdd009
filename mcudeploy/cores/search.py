"""The plan on cores chosen by measurement (``tune -b SYSTEM --objective latency``).

The plan made from estimates (compile.estimated) is timed first: each of its steps alone on one core
(``time_steps``: ticks per step name) and the whole plan on the cores (``time_cores``: its critical path and
its barriers, in instructions; and each core's work, from which the cores' speeds are measured where they
differ: ``measured_speed``). What was timed then stands in for the estimate (``measured``):

- a step of the same name and output shapes as a timed one costs what it took;
- any other (a piece of an operator timed whole, the whole of one timed in pieces, a step the rewrites made)
  costs its estimate, scaled by what its operator's timed steps took against their estimate (all timed steps'
  ratio where its operator has none);
- a barrier costs what the timed plan's barriers took, each.

With these costs the plan is made again for several thresholds of cutting an operator (``SPLIT_AT``, in
barriers: which operators are worth a piece per core is decided by their measured ticks), each new plan's
steps are timed (their timings join the others) and the plan is run on the cores. The plan with the least
measured critical path is kept; the estimate's plan where none is shorter.

Then each operator the best plan cut is cut along another of its axes (rows where it was cut by channels, say),
that plan is measured, and each operator takes the axis whose pieces took fewer ticks timed alone: a plan of
those choices is measured too.

Last, the pieces are sized by what they took (``balancing_shares``): where an operator's pieces took unequal
time (its work is uneven along the axis: VWW's channels of one value are skipped; or the cores differ in speed),
the best plan's cuts get piece sizes (Cut.shares) that would give each core the same time, and the plan so made
is measured; again from it while it is the best (``BALANCE_ROUNDS``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Mapping, NamedTuple, Optional, Sequence

from mcudeploy.boards import Board
from mcudeploy.cores.compile import Costs, CoresPlan, plan_on_cores, ticks_of
from mcudeploy.cores.split import axes_to_cut, axis_extent, kernel_ticks
from mcudeploy.ir import Graph, Node
from mcudeploy.partition.cut import tiling

SPLIT_AT = (8, 64, 512)  # barriers an operator must be worth, measured, to be cut for the cores
BALANCE_ROUNDS = 2  # plans whose pieces are sized by what the best plan's pieces took


class CoresRun(NamedTuple):
    """What ``time_cores`` gives of a plan run on its cores, in instructions."""
    critical_path: int
    barriers: int  # the barriers' share of the critical path
    phases: int
    core_work: tuple[int, ...] = ()  # each core's instructions in its steps (not waiting), where counted


SAME_SPEED = 1.05  # cores whose measured speeds differ by less than this ratio are taken as equal


@dataclass(frozen=True)
class Timed:
    """A step timed alone on one core: its output shapes, ticks, estimate and operator (Node.original)."""
    shapes: tuple
    ticks: float
    estimate: float
    original: str


@dataclass(frozen=True)
class Tried:
    label: str
    plan: CoresPlan
    run: CoresRun


@dataclass(frozen=True)
class Searched:
    tried: tuple[Tried, ...]  # the estimate's plan first

    @property
    def best(self) -> Tried:
        """The least measured critical path (the earlier tried on a tie)."""
        return min(self.tried, key=lambda t: t.run.critical_path)


def shapes(graph: Graph, node: Node) -> tuple:
    return tuple(tuple(graph[t].shape) for t in node.outputs)


def measured(board: Board, timed: Mapping[str, Timed], barrier: float, split_at: float) -> Costs:
    """Costs from the ``timed`` steps (the module's rules), a barrier of ``barrier`` ticks, cuts at ``split_at``."""
    spent: dict[str, list[float]] = {}
    for t in timed.values():
        both = spent.setdefault(t.original, [0.0, 0.0])
        both[0] += t.ticks
        both[1] += t.estimate
    total = [sum(v[0] for v in spent.values()), sum(v[1] for v in spent.values())]
    overall = total[0] / total[1] if total[1] > 0 else 1.0
    scale = {o: v[0] / v[1] for o, v in spent.items() if v[1] > 0}

    def ticks(graph: Graph) -> dict[str, float]:
        estimate = kernel_ticks(graph, board)
        out = {}
        for node in graph.nodes:
            t = timed.get(node.name)
            if t is not None and t.shapes == shapes(graph, node):
                out[node.name] = t.ticks
            else:
                out[node.name] = estimate[node.name] * scale.get(node.original, overall)
        return out

    return Costs(ticks, barrier, split_at, "measured")


def measured_speed(plan: CoresPlan, timed: Mapping[str, Timed], run: CoresRun) -> Optional[tuple[float, ...]]:
    """Each core's ticks for one of core 0's, from a run on the cores: what each core's steps took there against
    what the same steps took timed alone on core 0; None where the cores are equal (``SAME_SPEED``) or a core's
    steps were not all timed."""
    alone = [0.0] * plan.plan.cores
    for k, node in enumerate(plan.order):
        core = plan.plan.core[k]
        if core >= 0:
            if node.name not in timed:
                return None
            alone[core] += timed[node.name].ticks
    if len(run.core_work) != len(alone) or min(alone) <= 0 or min(run.core_work) <= 0:
        return None
    ratio = [w / a for w, a in zip(run.core_work, alone)]
    speed = tuple(r / ratio[0] for r in ratio)
    return speed if max(speed) / min(speed) >= SAME_SPEED else None


def balancing_shares(graph: Graph, plan: CoresPlan, timed: Mapping[str, Timed],
                     speed: Optional[Sequence[float]] = None) -> dict[tuple[str, str], tuple[int, ...]]:
    """For each operator ``plan`` cut whose pieces were all timed: the piece sizes along its axis that would give
    each core (piece k on core k, its ticks weighed by ``speed``) the same time, the work taken as even within
    each piece as timed; only where they differ from the sizes the plan used."""
    by_op: dict[str, list[Node]] = {}
    for node in plan.graph.nodes:
        if node.piece_index is not None:
            by_op.setdefault(node.original, []).append(node)
    out = {}
    for cut in plan.scheme:
        if len(cut.axes) != 1:
            continue
        (name, axis), = cut.axes
        tiles = tiling(cut, name, axis_extent(graph, graph.node(name), axis))
        pieces = sorted(by_op.get(name, []), key=lambda n: n.piece_index)
        if len(pieces) != len(tiles) or any(p.name not in timed or timed[p.name].shapes != shapes(plan.graph, p)
                                            for p in pieces):
            continue
        xs, ys = [0], [0.0]
        for (lo, hi), p in zip(tiles, pieces):
            xs.append(hi)
            ys.append(ys[-1] + timed[p.name].ticks)
        if ys[-1] <= 0:
            continue
        faster = [1.0 / s for s in speed] if speed is not None else [1.0] * len(tiles)
        ends = [_at(xs, ys, ys[-1] * sum(faster[:j + 1]) / sum(faster)) for j in range(len(tiles) - 1)]
        bounds = [0] + [int(round(e)) for e in ends] + [xs[-1]]
        sized = tuple(b - a for a, b in zip(bounds, bounds[1:]))
        if min(sized) >= 1 and sized != tuple(hi - lo for lo, hi in tiles):
            out[(name, axis)] = sized
    return out


def _at(xs: Sequence[int], ys: Sequence[float], y: float) -> float:
    """Where the piecewise linear function through (xs, ys), rising, reaches ``y``."""
    for j in range(1, len(xs)):
        if ys[j] >= y:
            rise = ys[j] - ys[j - 1]
            return xs[j - 1] + (xs[j] - xs[j - 1]) * ((y - ys[j - 1]) / rise if rise > 0 else 0.0)
    return float(xs[-1])


def search(graph: Graph, board: Board, cores: int, time_steps: Callable[[CoresPlan], Mapping[str, float]],
           time_cores: Callable[[CoresPlan], CoresRun], say: Callable[[str], None] = lambda line: None,
           speed: Optional[Sequence[float]] = None, split_at: Sequence[int] = SPLIT_AT,
           balance_rounds: int = BALANCE_ROUNDS, other_axes: bool = True, budget: Optional[int] = None) -> Searched:
    """The plans tried, each measured on the cores (the module's search); at most ``budget`` of them."""
    timed: dict[str, Timed] = {}
    by_axis: dict[tuple[str, str], float] = {}  # (operator, axis) -> its pieces' ticks, timed alone, when so cut
    tried: list[Tried] = []
    seen: set = set()
    spent: list[str] = []  # the first plan the budget left untried

    def time(label: str, plan: CoresPlan) -> Tried:
        estimate = kernel_ticks(plan.graph, board)
        nodes = {n.name: n for n in plan.graph.nodes}
        steps = time_steps(plan)
        for name, ticks in steps.items():
            node = nodes[name]
            timed[name] = Timed(shapes(plan.graph, node), float(ticks), estimate[name], node.original)
        for cut in plan.scheme:
            for name, axis in cut.axes:
                pieces = [n.name for n in plan.graph.nodes if n.original == name and n.piece_index is not None]
                if pieces and all(p in steps for p in pieces):
                    by_axis[(name, axis)] = float(sum(steps[p] for p in pieces))
        run = time_cores(plan)
        cut = len({name for c in plan.scheme for name, _ in c.axes})
        say(f"{label}: critical path {run.critical_path:,} instructions, {run.phases} phases, {cut} operator(s) cut")
        seen.add(plan.key())
        tried.append(Tried(label, plan, run))
        return tried[-1]

    def attempt(label: str, costs: Costs) -> Optional[Tried]:
        if budget is not None and len(tried) >= budget:
            if not spent:
                say(f"the budget of {budget} plans measured is spent: the search stops here")
                spent.append(label)
            return None
        plan = plan_on_cores(graph, board, cores, speed, costs)
        if plan.key() in seen:
            say(f"{label}: the same plan as one tried")
            return None
        return time(label, plan)

    first = time("the estimate's plan", plan_on_cores(graph, board, cores, speed))
    if speed is None:
        speed = measured_speed(first.plan, timed, first.run)
        if speed is not None:
            say(f"the cores' measured speeds differ: ticks per core 0's tick {', '.join(f'{s:.2f}' for s in speed)}")
    barrier = ticks_of(board, first.run.barriers / max(1, first.run.phases))
    for barriers in split_at:
        attempt(f"measured, operators cut at {barriers} barriers", measured(board, timed, barrier, barriers * barrier))
    if other_axes:
        best = Searched(tuple(tried)).best
        costs = measured(board, timed, barrier, best.plan.costs.split_at)
        axes = {name: axis for c in best.plan.scheme for name, axis in c.axes}
        other = {name: alt[0] for name, axis in axes.items()
                 for alt in [[a for a in axes_to_cut(graph, graph.node(name), cores) if a != axis]] if alt}
        if other:
            attempt(f"measured, {len(other)} operator(s) cut along another axis",
                    dataclasses.replace(costs, axes=other))
            choice = {name: min((a for a in (axis, other.get(name)) if a is not None and (name, a) in by_axis),
                                key=lambda a: (by_axis[(name, a)], a != axis), default=axis)
                      for name, axis in axes.items()}
            if choice != axes:
                changed = sum(choice[n] != axes[n] for n in axes)
                attempt(f"measured, {changed} operator(s) cut along the axis whose pieces took less",
                        dataclasses.replace(costs, axes=choice))
    for round in range(balance_rounds):
        best = Searched(tuple(tried)).best
        shares = balancing_shares(graph, best.plan, timed, speed)
        if not shares:
            break
        costs = measured(board, timed, barrier, best.plan.costs.split_at)
        axes = {name: axis for c in best.plan.scheme for name, axis in c.axes}
        done = attempt(f"pieces sized by their measured ticks ({len(shares)} operator(s), round {round + 1})",
                       dataclasses.replace(costs, shares=shares, axes=axes))
        if done is None or done is not Searched(tuple(tried)).best:
            break
    return Searched(tuple(tried))
