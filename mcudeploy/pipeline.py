"""The compiler's table of contents: every pass, in order, by name."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Union

import onnx

from mcudeploy.boards import Board, load_board
from mcudeploy.frontend import import_onnx
from mcudeploy.ir import Graph, Node, verify
from mcudeploy.memory import Lifetimes, Placement, areas, lifetimes, place
from mcudeploy.passes.activation import fuse_activations
from mcudeploy.passes.batchnorm import fold_batchnorm
from mcudeploy.passes.graph_edit import eliminate_dead
from mcudeploy.passes.qdq import lower_qdq
from mcudeploy.schedule import Schedule, schedule


PASSES: tuple[tuple[str, Callable[[Graph], Graph]], ...] = (
    ("fold_batchnorm", fold_batchnorm),
    ("lower_qdq", lower_qdq),
    ("fuse_activations", fuse_activations),
    ("eliminate_dead", eliminate_dead),
)


def lower(graph: Graph, check: bool = False) -> Graph:
    for _, run in PASSES:
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

    @property
    def order(self) -> tuple[Node, ...]:
        return self.schedule.order

    @property
    def schedule_method(self) -> str:
        return self.schedule.method


def compile_model(source: Union[str, os.PathLike, onnx.ModelProto], board: Union[str, Board] = "host",
                  input_shapes: Optional[Mapping[str, tuple[int, ...]]] = None,
                  schedule_method: str = "auto", check: bool = False, placement_method: str = "exact",
                  placement_time_limit: float = 5.0, schedule_time_limit: float = 10.0) -> Compiled:
    board = load_board(board) if isinstance(board, str) else board
    graph = lower(import_onnx(source, input_shapes), check=check)
    sched = schedule(graph, schedule_method, schedule_time_limit, board.alignment)
    lives = lifetimes(graph, sched.order, board.alignment)
    placement = place(lives, areas(board), placement_method, board.alignment, placement_time_limit)
    name = graph.name if isinstance(source, onnx.ModelProto) else os.fspath(source)
    return Compiled(name, board, graph, sched, lives, placement)
