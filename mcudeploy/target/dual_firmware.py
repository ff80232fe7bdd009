"""One firmware for the two cores of a chip: the first stage on core 0 (which serves the protocol),
the second on core 1, every frame's boundary tensors handed over through a ring of slots in shared
memory (firmware/runtime/mcud_dual.h). Both stages' generated C links into the one firmware: their
symbols carry their own names (plan/code_options.py), their arenas are their own static arrays.

``dual_values`` lays the ring out: a slot holds, 8-byte aligned and in the order of the second
stage's inputs, every tensor it reads (what the first stage sends, and the model inputs it reads
too, copied before the first stage may overwrite them); an output slot holds the model's outputs.
"""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Sequence

from mcudeploy.codegen import write_project
from mcudeploy.codegen.emit import c_name
from mcudeploy.device.build import Firmware, build_firmware
from mcudeploy.errors import MCUDeployError

ALIGN = 8


def _lay_out(graph, names: Sequence[str], index_in: Sequence[str]) -> tuple[list[dict], int]:
    """Parts at 8-byte aligned offsets: (tensor, index of it in ``index_in``, offset, bytes); the total."""
    parts, at = [], 0
    for name in names:
        parts.append({"tensor": name, "index": list(index_in).index(name) if name in index_in else -1, "at": at,
                      "bytes": graph[name].nbytes})
        at += -(-graph[name].nbytes // ALIGN) * ALIGN
    return parts, max(at, ALIGN)


def dual_values(first, second, model_inputs: Sequence[str], model_outputs: Sequence[str], chip,
                stall_after: int = 0) -> dict:
    """The templates' values (firmware/dual.c.j2, dual_model.h.j2) for stages ``first`` and ``second``
    (Compiled) of a model with ``model_inputs`` and ``model_outputs`` on ``chip`` (a ChipFirmware)."""
    g0, g1 = first.graph, second.graph
    for stage in (first, second):
        if stage.offload is not None:
            raise MCUDeployError(f"stage {c_name(stage)} moves tensors to a slower memory, which the two-core "
                                 f"firmware of {chip.board.name} does not do (it has no DMA engine)")
    missing = [n for n in model_inputs if n not in g0.inputs]
    if missing:
        raise MCUDeployError(f"model input {missing[0]} is read only by the second stage; the two-core firmware "
                             f"takes every input on core 0")
    late = [n for n in model_outputs if n not in g1.outputs]
    if late:
        raise MCUDeployError(f"model output {late[0]} is made by the first stage; the two-core firmware reads "
                             f"every output from core 1")
    lost = [n for n in g1.inputs if n not in g0.outputs and n not in model_inputs]
    if lost:
        raise MCUDeployError(f"the second stage reads {lost[0]}, which the first stage does not send")
    slot, slot_bytes = _lay_out(g1, g1.inputs, g1.inputs)
    for p in slot:
        p["from_input"] = p["tensor"] not in g0.outputs
        p["source"] = list(g0.inputs if p["from_input"] else g0.outputs).index(p["tensor"])
    outputs, out_bytes = _lay_out(g1, model_outputs, g1.outputs)
    board = chip.board
    region = next(r for r in board.regions if r.name == chip.ring_region)
    names = {"s0": c_name(first), "s1": c_name(second)}
    return {
        "s0": {"name": names["s0"], "NAME": names["s0"].upper()},
        "s1": {"name": names["s1"], "NAME": names["s1"].upper()},
        "dual": {
            "stack_words": board.stack_bytes // 4,
            "slots": chip.slots, "slot_bytes": slot_bytes, "out_slots": chip.slots, "out_bytes": out_bytes,
            "region": region.name, "section": region.section,
            "inputs_sent": [dict(p, index=p["source"]) for p in slot if p["from_input"]],
            "sent": [dict(p, index=p["source"]) for p in slot if not p["from_input"]],
            "received": slot,
            "outputs": outputs,
            "model_inputs": [{"tensor": n, "index": list(g0.inputs).index(n), "bytes": g0[n].nbytes}
                             for n in model_inputs],
            "sysctl_base": f"0x{chip.start_base:08X}", "start_driver": chip.start_driver,
            "stall_ms": f"{chip.stall_timeout_ms:g}",
            "stall_ticks": round(chip.stall_timeout_ms * board.timer.hz / 1000.0),
            "stall_after": int(stall_after),
        },
    }


def build_dual_firmware(first, second, model_inputs: Sequence[str], model_outputs: Sequence[str], chip,
                        workdir: Path, model_name: str, stall_after: int = 0) -> Firmware:
    """Write both stages' C projects (workdir/stage0, workdir/stage1) and build the one firmware of
    ``chip`` (a ChipFirmware) that runs them on its two cores. ``stall_after`` (tests): core 1 stops
    taking frames after that many."""
    values = dual_values(first, second, model_inputs, model_outputs, chip, stall_after)
    p0, p1 = write_project(first, Path(workdir) / "stage0"), write_project(second, Path(workdir) / "stage1")
    values["project1"] = str(p1)
    values["model_id"] = zlib.crc32((p0 / "model.c").read_bytes() + (p1 / "model.c").read_bytes()) or 1
    return build_firmware(chip.board, p0, model_name, dual=values)
