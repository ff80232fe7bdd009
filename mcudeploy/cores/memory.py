"""The one shared arena of a plan on several cores: lifetimes widened to whole phases, then placed.

The steps of one phase run at once on different cores, so a buffer is live from the first step of the
phase its first step is in to the last step of the phase of its last step: two buffers whose steps share a
phase never share bytes. Two kinds of sharing assume one step at a time and are left out: an output
written over its input in place ("inplace", "resize": a step of the other core may still read the input in
that phase) and a buffer freed part by part as pieces read it ("parts"). The others hold: views, a
Concat's inputs written into their slices of its output (the pieces of an operator write disjoint rows),
a Split's outputs as slices.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from mcudeploy.cores.plan import CorePlan
from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.layout import pinned
from mcudeploy.memory.lifetimes import Lifetimes, lifetimes
from mcudeploy.memory.place import Placement, place
from mcudeploy.memory.regions import DEFAULT, Area

CONCURRENT = SHARING - {"inplace", "resize", "parts"}


def refuse_states(graph: Graph) -> None:
    if graph.states:
        raise UnsupportedError(f"model {graph.name} keeps state from one call to the next ({graph.states[0]}), "
                               f"which one inference on several cores does not plan yet")


def widened(lives: Lifetimes, plan: CorePlan) -> Lifetimes:
    """``lives`` with every buffer live over the whole phases of its first and last steps."""
    bounds = plan.bounds()

    def start(step: int) -> int:
        return step if step < 0 else bounds[plan.phase[step]][0]

    def end(step: int) -> int:
        return step if step < 0 else bounds[plan.phase[step]][1]

    buffers = tuple(dataclasses.replace(b, first=start(b.first), last=end(b.last), parts=()) for b in lives.buffers)
    return dataclasses.replace(lives, buffers=buffers)


def concurrent_lifetimes(graph: Graph, order: Sequence[Node], plan: CorePlan, alignment: int = 4) -> Lifetimes:
    refuse_states(graph)
    return widened(lifetimes(graph, order, alignment, CONCURRENT), plan)


def lay_out_on_cores(graph: Graph, order: Sequence[Node], plan: CorePlan, regions: Sequence[Area] = DEFAULT,
                     method: str = "greedy", alignment: int = 4,
                     time_limit: float = 10.0) -> tuple[Lifetimes, Placement]:
    """The lifetimes of the plan's order on its cores, and their placement."""
    lives = concurrent_lifetimes(graph, order, plan, alignment)
    return lives, place(lives, regions, method, alignment, time_limit, pinned(graph, lives))
