"""Small helpers the operator families share."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mcudeploy.errors import InvalidModelError, UnsupportedError


def broadcast_shape(shapes: Sequence[tuple[int, ...]], what: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise UnsupportedError(f"{what}: input shapes {', '.join(map(str, shapes))} do not broadcast") from None


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise UnsupportedError(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank




def ints(value) -> tuple[int, ...]:
    flat = np.ravel(value)
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        raise InvalidModelError(f"has {flat[~np.isfinite(flat)][0]} where an integer is expected")
    return tuple(int(v) for v in flat)
