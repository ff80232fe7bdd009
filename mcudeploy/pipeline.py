"""The compiler's table of contents: every pass, in order, by name."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Union

import onnx

from mcudeploy.boards import Board, load_board
from mcudeploy.codegen.options import CodeOptions
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.ir import Graph, Node, verify
from mcudeploy.memory import Lifetimes, Placement, areas
from mcudeploy.memory.layout import lay_out
from mcudeploy.offload import fit_scratch
from mcudeploy.partition import Scheme, split
from mcudeploy.passes.activation import fuse_activations, fuse_swish
from mcudeploy.passes.batchnorm import fold_batchnorm
from mcudeploy.passes.graph_edit import eliminate_dead
from mcudeploy.passes.int8_input import take_int8_inputs
from mcudeploy.passes.qdq import lower_qdq
from mcudeploy.passes.shuffle import lower_channel_shuffle
from mcudeploy.schedule import Schedule, schedule


SCRATCH_POLICIES = ("fit", "keep")  # compile_graph's choice of kernels with working memory

PASSES: tuple[tuple[str, Callable[[Graph], Graph]], ...] = (
    ("fold_batchnorm", fold_batchnorm),
    ("lower_qdq", lower_qdq),
    ("lower_channel_shuffle", lower_channel_shuffle),
    ("fuse_activations", fuse_activations),
    ("fuse_swish", fuse_swish),
    ("eliminate_dead", eliminate_dead),
)
# what --int8-input adds in front: the quantized inputs are taken as the integers their QuantizeLinear makes
INT8_INPUT: tuple[tuple[str, Callable[[Graph], Graph]], ...] = (("take_int8_inputs", take_int8_inputs),)


def lower(graph: Graph, check: bool = False, int8_input: bool = False) -> Graph:
    for _, run in (INT8_INPUT if int8_input else ()) + PASSES:
        graph = run(graph)
        if check:
            verify(graph)
    return graph


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

    @property
    def order(self) -> tuple[Node, ...]:
        return self.schedule.order

    @property
    def schedule_method(self) -> str:
        return self.schedule.method


def compile_model(source: Union[str, os.PathLike, onnx.ModelProto], board: Union[str, Board] = "host",
                  input_shapes: Optional[Mapping[str, tuple[int, ...]]] = None,
                  schedule_method: str = "auto", check: bool = False, placement_method: str = "exact",
                  placement_time_limit: float = 5.0, schedule_time_limit: float = 10.0,
                  scheme: Scheme = (), int8_input: bool = False) -> Compiled:
    """Import, lower (with `int8_input`, the quantized inputs taken as integers), split by `scheme`
    (none: the operators as they are), then compile_graph."""
    graph = lower(import_model(source, input_shapes), check=check, int8_input=int8_input)
    if scheme:
        graph = split(graph, scheme)
    name = graph.name if isinstance(source, onnx.ModelProto) else os.fspath(source)
    return compile_graph(graph, board, name, schedule_method=schedule_method, placement_method=placement_method,
                         placement_time_limit=placement_time_limit, schedule_time_limit=schedule_time_limit,
                         scheme=scheme, int8_input=int8_input)


def rewrite_ordered(graph: Graph, order, board: Board, scratch: str = "fit") -> tuple[Graph, tuple[Node, ...]]:
    """The rewrites of a scheduled graph (mcudeploy/offload), in order: with scratch "fit", kernels
    whose working memory would raise the peak run their variant without it. Swap and recompute
    under a fast-memory budget will come here too."""
    if scratch == "fit":
        graph, order = fit_scratch(graph, order, board.alignment)
    return graph, tuple(order)


def compile_graph(graph: Graph, board: Union[str, Board] = "host", name: Optional[str] = None,
                  schedule_method: str = "auto", placement_method: str = "exact",
                  placement_time_limit: float = 5.0, schedule_time_limit: float = 10.0,
                  scheme: Scheme = (), scratch: str = "fit", int8_input: bool = False) -> Compiled:
    """Schedule, find lifetimes and place an already lowered graph (split by `scheme` and lowered
    with `int8_input`, which are only recorded here). The time limits are in effort seconds
    (mcudeploy/effort.py): work, not wall-clock time, so the same graph gives the same plan on a
    loaded machine. scratch "fit": kernels whose working memory would raise the peak run their
    scratch-free (slower) variant (fit_scratch); "keep": every kernel keeps its scratch (the
    fastest plan, a little more memory; tune times both)."""
    if scratch not in SCRATCH_POLICIES:
        raise MCUDeployError(f"scratch must be one of {', '.join(SCRATCH_POLICIES)}, not {scratch!r}")
    board = load_board(board) if isinstance(board, str) else board
    sched = schedule(graph, schedule_method, schedule_time_limit, board.alignment)
    graph, order = rewrite_ordered(graph, sched.order, board, scratch)
    sched = dataclasses.replace(sched, order=order)
    lives, placement = lay_out(graph, sched.order, areas(board), placement_method, board.alignment,
                               placement_time_limit)
    return Compiled(name or graph.name, board, graph, sched, lives, placement, tuple(scheme), int8_input=int8_input)
