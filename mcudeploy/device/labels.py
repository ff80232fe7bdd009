"""The operators model.c times (MCUD_OP_BEGIN's indices), their labels and the model's name: what the board's
runner, the measurer and the host's sanitized build name operators by. No dependency on any board."""
from __future__ import annotations

from pathlib import Path

from mcudeploy.ops import registry


def timed_nodes(compiled) -> list:
    """The operators model.c times, in the order of their MCUD_OP_BEGIN indices (view operators emit no call)."""
    return [n for n in compiled.order if not registry.get(n.op).view]


def op_labels(compiled) -> list[str]:
    return [f"{n.op}: {n.name}" for n in timed_nodes(compiled)]


def model_name(compiled) -> str:
    return Path(compiled.model).name
