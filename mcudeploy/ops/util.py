"""Small helpers the operator families share."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mcudeploy.errors import InvalidModelError, UnsupportedError
from mcudeploy.ir import Graph, Node


def broadcast_shape(shapes: Sequence[tuple[int, ...]], what: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise UnsupportedError(f"{what}: input shapes {', '.join(map(str, shapes))} do not broadcast") from None


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise UnsupportedError(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def in_shapes(graph: Graph, node: Node) -> list[tuple[int, ...]]:
    return [graph[i].shape for i in node.inputs if i]


def dtype0(graph: Graph, node: Node) -> str:
    return graph[node.inputs[0]].dtype


def ints(value) -> tuple[int, ...]:
    flat = np.ravel(value)
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        raise InvalidModelError(f"has {flat[~np.isfinite(flat)][0]} where an integer is expected")
    return tuple(int(v) for v in flat)
