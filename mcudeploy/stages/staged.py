"""A model as consecutive stages: ``compile_stages(graph, boards, bounds)``.

The lowered graph is ordered once (mcudeploy/schedule); ``bounds`` cut that order into stages,
stage k running steps [bounds[k-1], bounds[k]). Each stage is a graph of its own: its inputs are
the model's inputs it reads and the tensors earlier stages make for it (received over a link), its
outputs the model's outputs it makes and the tensors later stages read (sent). Each stage graph is
compiled by compile.compile_graph for its own board (a core or a chip), so it has its own order,
arena and C project; running the stages one after another, each fed what the earlier ones sent,
computes what the whole model computes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

from mcudeploy.boards import Board, load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.compile import compile_graph
from mcudeploy.plan import PLAN_VERSION, CompileOptions, Compiled, plan_dict
from mcudeploy.schedule import schedule


@dataclass(frozen=True)
class Link:
    """A tensor stage ``src`` makes and stage ``dst`` reads: ``nbytes`` cross the link once per run."""

    tensor: str
    src: int
    dst: int
    nbytes: int


@dataclass(frozen=True)
class Stage:
    index: int
    compiled: Compiled  # the stage graph compiled for its board
    receives: tuple[str, ...]  # its inputs that earlier stages make
    sends: tuple[str, ...]  # its outputs that later stages read


@dataclass(frozen=True)
class StagedPlan:
    model: str
    stages: tuple[Stage, ...]
    links: tuple[Link, ...]

    @property
    def arena_bytes(self) -> tuple[int, ...]:
        return tuple(s.compiled.placement.arena_bytes for s in self.stages)


def _check_bounds(bounds: Sequence[int], steps: int) -> tuple[int, ...]:
    bounds = tuple(int(b) for b in bounds)
    if any(not 0 < b < steps for b in bounds) or list(bounds) != sorted(set(bounds)):
        raise MCUDeployError(f"stage bounds {list(bounds)} must rise strictly inside the order's 1..{steps - 1}")
    return bounds


def refuse_state(graph: Graph) -> None:
    """A stateful (streaming) model runs on one chip: its states would have to live in one stage."""
    if graph.states:
        raise MCUDeployError(f"{graph.name} keeps a state between calls ({', '.join(graph.states)}): mcudeploy runs "
                             f"such a model on one chip, not in stages")


def stage_graphs(graph: Graph, order: Sequence[Node], bounds: Sequence[int]) -> tuple[Graph, ...]:
    """The graph of every stage: steps [bounds[k-1], bounds[k]) of ``order``, a tensor made by an
    earlier stage taken as an input, a tensor a later stage (or the caller) reads given as an output."""
    refuse_state(graph)
    order = tuple(order)
    bounds = _check_bounds(bounds, len(order))
    made_in = {o: k for k, (lo, hi) in enumerate(zip((0,) + bounds, bounds + (len(order),)))
               for n in order[lo:hi] for o in n.outputs}
    stage_of = {n.name: k for k, (lo, hi) in enumerate(zip((0,) + bounds, bounds + (len(order),)))
                for n in order[lo:hi]}
    read_in: dict[str, set[int]] = {}
    for n in order:
        for i in n.inputs:
            if i:
                read_in.setdefault(i, set()).add(stage_of[n.name])
    out = []
    for k, (lo, hi) in enumerate(zip((0,) + bounds, bounds + (len(order),))):
        nodes = order[lo:hi]
        reads = dict.fromkeys(i for n in nodes for i in n.inputs if i)
        inputs = [i for i in reads if not graph[i].is_const and made_in.get(i, -1) != k]
        outputs = [o for n in nodes for o in n.outputs
                   if o in graph.outputs or any(s > k for s in read_in.get(o, ()))]
        tensors = {t: graph[t] for t in reads if graph[t].is_const}
        tensors.update({t: graph[t].with_(kind="input") for t in inputs})
        tensors.update({o: graph[o] for n in nodes for o in n.outputs})
        out.append(graph.replace(name=f"{graph.name}_stage{k}", tensors=tensors, nodes=nodes,
                                 inputs=tuple(inputs), outputs=tuple(outputs)))
    return tuple(out)


def compile_stages(graph: Graph, boards: Union[Sequence[Union[str, Board]], str, Board], bounds: Sequence[int],
                   options: CompileOptions = CompileOptions(), name: str | None = None,
                   order: Sequence[Node] | None = None) -> StagedPlan:
    """Order the lowered ``graph`` (``options.schedule_method``; or take ``order``), cut the order at ``bounds``,
    and compile each stage for its board (one board for all, or one per stage) with ``options``
    (compile.compile_graph)."""
    name = name or graph.name
    boards = [boards] if isinstance(boards, (str, Board)) else list(boards)
    boards = [load_board(b) if isinstance(b, str) else b for b in boards]
    if order is None:
        order = schedule(graph, options.schedule_method, options.schedule_time_limit, boards[0].alignment).order
    graphs = stage_graphs(graph, order, bounds)
    boards = boards * len(graphs) if len(boards) == 1 else boards
    if len(boards) != len(graphs):
        raise MCUDeployError(f"{len(graphs)} stages need one board each (or one for all), not {len(boards)}")
    stages = []
    for k, (g, board) in enumerate(zip(graphs, boards)):
        compiled = compile_graph(g, board, f"{name}_stage{k}", options)
        stages.append(Stage(k, compiled, tuple(i for i in g.inputs if i not in graph.inputs),
                            tuple(o for o in g.outputs if o not in graph.outputs)))
    links = tuple(Link(t, src.index, dst.index, graph[t].nbytes)
                  for dst in stages for t in dst.receives
                  for src in stages if t in src.sends)
    return StagedPlan(name, tuple(stages), links)


def staged_plan_dict(plan: StagedPlan) -> dict:
    """plan.json of a staged plan: per stage its own plan (plan.plan_dict) with what it receives
    and sends; the links with their bytes."""
    return {"version": PLAN_VERSION, "model": plan.model,
            "stages": [{"stage": s.index, "receives": list(s.receives), "sends": list(s.sends),
                        "plan": plan_dict(s.compiled)} for s in plan.stages],
            "links": [{"tensor": l.tensor, "from": l.src, "to": l.dst, "bytes": l.nbytes} for l in plan.links]}
