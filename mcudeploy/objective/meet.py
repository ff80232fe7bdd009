"""An objective met: of the plans one schedule's order allows, the one the objective asks for (compile_graph's
choice, given a ``Planner`` that places a graph in that order).

- memory, or a scratch policy other than "fit" (every kernel keeps its scratch: tune times that plan too): the
  order placed as the policy says.
- latency and balanced: the fastest plan within the budget (latency_plan). Latency then copies the constants its
  kernels read to SRAM where the budget has room beside the arena (offload/sram.py; boards with a firmware), and
  where some stay in flash (balanced: always) its convolutions take their scratch in tiles (offload/tiles.py) if
  that runs no step without scratch that the plan without tiles runs with it (_tiles_if_faster).

A plan here is the tuple (graph, order, lifetimes, placement, offload) that compile_graph records.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Protocol

from mcudeploy.boards import Board
from mcudeploy.ir import Graph
from mcudeploy.objective.latency import OverBudget, first_region_bytes, latency_plan
from mcudeploy.objective.spec import Objective
from mcudeploy.offload.sram import STATICS_ALLOWANCE, constants_to_sram
from mcudeploy.offload.tiles import tile_convolutions


class Planner(Protocol):
    """Places a graph in one schedule's order (compile.OrderPlanner)."""

    fits_scratch: bool  # the scratch policy is "fit": an objective chooses which kernels keep their scratch

    def place(self, graph: Graph, limit: Optional[int] = None) -> tuple:
        """The plan of ``graph`` with the scratch of every step whose live bytes exceed ``limit`` given up (None:
        the policy's own plan, the memory plan under "fit")."""

    def steps(self, graph: Graph):
        """offload.scratch_steps of ``graph`` in the order with every kernel's scratch kept."""


def meet(objective: Objective, graph: Graph, planner: Planner, board: Board,
         model: str = "the model") -> tuple[tuple, Objective]:
    """The plan ``objective`` asks for among those ``planner`` makes of ``graph``, and the objective with what it met
    (the module's docstring). ``model`` names the model in a refusal (objective.OverBudget)."""
    if objective.name == "memory" or not planner.fits_scratch:
        return planner.place(graph), objective
    done, met = _fastest(graph, planner, board, objective, model)
    sram = objective.name == "latency" and board.has_firmware  # constants in SRAM where they fit, else tiles
    every = False
    if sram:
        done, met, every = _constants_in_sram(done, met, board)
    tiled = tile_convolutions(graph, board)  # the memory plan's order, scratch in tiles (offload/tiles.py)
    if not every and any(n.attr("tile", 1) > 1 for n in tiled.nodes):
        done, met = _tiles_if_faster(done, met, lambda: _fastest(tiled, planner, board, objective, model), board, sram)
    return done, met


def _fastest(graph: Graph, planner: Planner, board: Board, objective: Objective, model: str) -> tuple[tuple, Objective]:
    return latency_plan(lambda limit: planner.place(graph, limit), planner.steps(graph), board, objective, model)


def _tiles_if_faster(done, objective, tiled: Callable[[], tuple], board: Board, sram: bool):
    """The plan with its convolutions' scratch in tiles (``tiled()``; with its constants in SRAM where ``sram``)
    where it runs no kernel without scratch that ``done`` runs with it: a tile only saves reads of flash, while a
    step without scratch runs the slower direct kernel, so tiles whose scratch crowds out another step's (the
    budget, or balanced's factor) would be slower. Else ``done``: also where the tiles do not fit the budget at all
    (a tiled step that writes over its input keeps its scratch even in the memory plan, OverBudget)."""
    try:
        other, met = tiled()
    except OverBudget:
        return done, objective
    if sram:
        other, met, _ = _constants_in_sram(other, met, board)
    if _scratch_free(other[0]) <= _scratch_free(done[0]):
        return other, met
    return done, objective


def _scratch_free(graph: Graph) -> set:
    """The nodes whose kernels run without scratch (offload.fit_scratch: attribute "scratch" 0)."""
    return {n.name for n in graph.nodes if n.attrs.get("scratch", 1) == 0}


def _constants_in_sram(done, objective: Objective, board: Board):
    """The latency plan ``done`` with the constants its kernels read copied to SRAM within the first region's room
    beside its arena, less STATICS_ALLOWANCE (offload/sram.py); the objective with their bytes; whether every
    constant went."""
    graph, order, lives, placement, offload = done
    room = objective.limit_bytes - first_region_bytes(placement, board) - STATICS_ALLOWANCE
    kernels = [n for n in order if n.name not in lives.elided]
    moved, nbytes, every = constants_to_sram(graph, kernels, board.features, room)
    by_name = {n.name: n for n in moved.nodes}
    return ((moved, tuple(by_name[n.name] for n in order), lives, placement, offload),
            dataclasses.replace(objective, sram_constants_bytes=nbytes), every)
