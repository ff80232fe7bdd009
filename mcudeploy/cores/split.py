"""The cuts that give the cores pieces to share: each operator worth more than a few barriers, in as many
pieces as there are cores, along one of its output's axes.

The axis is a spatial loop axis that indexes an output dimension after the batch, the one whose balanced pieces
are most nearly equal first (3 rows make pieces of 2 and 1; 256 channels two of 128), then the channels of an
NCHW map (each piece writes one contiguous block and reads the whole input, which both cores may read at once;
a band of rows is one short run per channel, which slowed VWW's pointwise layers by up to 67% on qemu-an521),
then the outer dimension first. Pieces are equal unless shares are given (cores of different speeds, or work
measured uneven along the axis: cores/search.py). An operator no such cut applies to stays whole (check_cut says
why); the assignment gives it one core. Operators without MACs (a transpose, a pool) are cut too when they cost
as much.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import registry
from mcudeploy.partition import Cut, Scheme, check_cut

CHANNELS = 1  # NCHW: the dimension of an output's channels


def axes_to_cut(graph: Graph, node: Node, pieces: int) -> list[str]:
    """The node's loop axes a cut for ``pieces`` cores may take, the preferred first."""
    expr = registry.get(node.op).expr(graph, node)
    if not expr.outputs:
        return []
    out = []
    for dim, d in enumerate(expr.outputs[0]):
        if dim == 0 or d.kind != "identity":
            continue
        axis = expr.axis(d.axis)
        if axis.kind == "spatial" and axis.extent >= pieces:
            out.append((-(-axis.extent // pieces) * pieces / axis.extent, dim != CHANNELS, dim, d.axis))
    return [name for *_, name in sorted(out)]


def cuts_for_cores(graph: Graph, ticks: Callable[[Node], float], least: float, cores: int = 2,
                   shares: Callable[[Node, str], Optional[tuple[int, ...]]] = lambda node, axis: None,
                   axes: Mapping[str, str] = {}) -> Scheme:
    """A cut of every operator whose ``ticks`` are at least ``least``, where one applies; ``shares(node, axis)``: the
    sizes its pieces take along that axis (Cut.shares), or None for balanced pieces (also where the shares given
    leave a piece empty); ``axes``: node name -> the axis to try first (a measured choice, cores/search.py)."""
    cuts = []
    for node in graph.nodes:
        op = registry.get(node.op)
        if _no_kernel(node) or op.source or ticks(node) < least:
            continue
        candidates = axes_to_cut(graph, node, cores)
        first = axes.get(node.name)
        for axis in ([first] if first in candidates else []) + [a for a in candidates if a != first]:
            sized = shares(node, axis)
            tries = [Cut(((node.name, axis),), cores, "recompute", shares=sized)] if sized else []
            cut = next((c for c in tries + [Cut(((node.name, axis),), cores, "recompute")]
                        if check_cut(graph, c) is None), None)
            if cut is not None:
                cuts.append(cut)
                break
    return tuple(cuts)


def axis_extent(graph: Graph, node: Node, axis: str) -> int:
    return registry.get(node.op).expr(graph, node).axis(axis).extent


def kernel_ticks(graph: Graph, board) -> Mapping[str, float]:
    """Each operator's estimated ticks on ``board`` from its work alone (simulate.default_ticks); 0 for a view,
    which runs no kernel."""
    from mcudeploy.simulate.simulate import default_ticks, work
    return {n.name: 0.0 if _no_kernel(n) else default_ticks(board, *work(graph, n)) for n in graph.nodes}


def _no_kernel(node: Node) -> bool:
    op = registry.get(node.op)
    return bool(op.view or op.subview)


def sizes(extent: int, weights) -> Optional[tuple[int, ...]]:
    """``extent`` rows in whole pieces as nearly in proportion to ``weights`` as rounding allows (the largest
    remainders get the rows left), or None where a piece would get none."""
    total = float(sum(weights))
    exact = [extent * w / total for w in weights]
    out = [int(x) for x in exact]
    for j in sorted(range(len(out)), key=lambda j: out[j] - exact[j])[:extent - sum(out)]:
        out[j] += 1
    return tuple(out) if min(out) >= 1 else None
