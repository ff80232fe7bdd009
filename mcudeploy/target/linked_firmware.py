"""The firmware of one chip of a chain whose UARTs are joined to its neighbours' (boards' ``links``).

Stage k's firmware takes the tensors it receives from its up link and sends what stage k+1 receives
on its down link (firmware/runtime/link.c, the frame of mcudeploy/target/chain.py), all inside one
RUN_LINKED request: the host starts the runs and reads the ticks, and the last stage's outputs, but
carries no tensor between chips. ``link_values`` says which inputs and outputs cross which port.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from mcudeploy.codegen import write_project
from mcudeploy.device.build import Firmware, build_firmware, reg_writes
from mcudeploy.errors import MCUDeployError


def unlinkable(stages: Sequence) -> Optional[str]:
    """Why the chain's stages cannot pass their tensors chip to chip over their links (None: they can)."""
    for k, s in enumerate(stages):
        links = s.compiled.board.links
        if len(stages) > 1 and links is None:
            return f"board {s.compiled.board.name} names no link UARTs"
        if k > 0:
            made = stages[k - 1].compiled.graph.outputs
            far = [t for t in s.receives if t not in made]
            if far:
                return (f"stage {k} reads {far[0]}, made two or more stages before it; a chip passes on only what "
                        f"it makes")
    return None


def _port(board, role: str) -> dict:
    links = board.links
    port = getattr(links, role)
    hz = links.clock_hz or (board.uart.clock_hz if board.uart else 0) or board.clock_hz
    return {"base": f"0x{port.base:08X}", "irq": port.irq, "brr": round(hz / links.baud) if hz else 0,
            "what": port.what.replace("*/", "* /") or role}


def link_values(stages: Sequence, k: int) -> dict:
    """main.c's ``link`` of stage ``k`` of ``stages`` (staged.Stage): its ports, and the indices of its
    inputs taken from the up link and of its outputs sent on the down link, in the link's tensor order."""
    why = unlinkable(stages)
    if why is not None:
        raise MCUDeployError(f"the stages cannot pass their tensors chip to chip: {why}")
    stage, board = stages[k], stages[k].compiled.board
    g = stage.compiled.graph
    first, last = k == 0, k == len(stages) - 1
    sends = [] if last else [list(g.outputs).index(t) for t in stages[k + 1].receives]
    ports = [] if first else [board.links.up]
    ports += [] if last else [board.links.down]
    return {"stage": k, "note": f"{len(stages)} stages",
            "up": None if first else _port(board, "up"), "down": None if last else _port(board, "down"),
            "receive": [list(g.inputs).index(t) for t in stage.receives], "send": sends,
            "init": reg_writes([w for p in ports for w in p.init])}


def build_linked_firmware(stages: Sequence, k: int, workdir: Path, model_name: str) -> Firmware:
    """Write stage ``k``'s C project into ``workdir`` and build its chip's firmware with its links."""
    compiled = stages[k].compiled
    project = write_project(compiled, Path(workdir))
    return build_firmware(compiled.board, project, model_name, link=link_values(stages, k))
