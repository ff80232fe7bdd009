"""Small helpers the operator families share."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from mcudeploy.errors import InvalidModelError, UnsupportedError


def broadcast_shape(shapes: Sequence[tuple[int, ...]], what: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise UnsupportedError(f"{what}: input shapes {', '.join(map(str, shapes))} do not broadcast") from None


def same_shape_input(graph, node) -> Optional[int]:
    """The first input an elementwise kernel may write its output over: an activation of the
    output's shape and dtype (None: none is)."""
    out = graph[node.outputs[0]]
    for index, name in enumerate(node.inputs):
        t = graph[name]
        if t.shape == out.shape and t.dtype == out.dtype and not t.is_const:
            return index
    return None


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise UnsupportedError(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank




def ints(value) -> tuple[int, ...]:
    flat = np.ravel(value)
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        raise InvalidModelError(f"has {flat[~np.isfinite(flat)][0]} where an integer is expected")
    return tuple(int(v) for v in flat)
