"""The emulated board whose traces stand for a real board's plan (``measure --estimate-for``, benchmarks/cycles_bench.py).

A plan is bounded by the board it is compiled for as well as by its budget (mcudeploy/objective: the latency
budget is the smaller of the two; a memory plan too big for the first region spills to the next, swapped where that
one is slow), and the latency objective tiles a convolution by the board's flash data cache (offload/tiles.py) and
copies constants to SRAM within the first region's room (offload/sram.py). So an emulator traced for a real board
must plan as that board would: it takes the real board's ``flash_data`` (none where that board runs with its data
cache off), its first region holds the real board's (an
emulator whose first region is smaller, qemu-an505's 32 KB SRAM against a NUCLEO-U575ZI-Q's 768 KB, has it replaced
by its first region of full speed that holds the real one's, cut to that capacity, with the statics and the stack;
its regions without a linker section of their own, its old first region, are left out), and the latency objective's
budget is the real board's first region (latency_budget), not the emulator's 4 MB.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from mcudeploy.boards import Board, FlashData, load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.memory import areas

# the emulated board whose traces stand for a real board's core
EMULATED = {"cortex-m4": "qemu-m4", "cortex-m7": "qemu-m7", "cortex-m33": "qemu-an505", "cortex-m55": "qemu-m55",
            "rv32imac": "qemu-rv32", "cortex-m0": "qemu-m0",
            # QEMU 7.2 has no Cortex-M0+: the Pico's plans run on the M0 with its 264 KB (qemu-m0 keeps the micro:bit's)
            "cortex-m0plus": "qemu-m0-264k"}


def stand_in(emulated: Board, real: Board) -> Board:
    """``emulated`` made to plan as ``real`` (the module's rule); where ``real`` runs with its data cache off, the
    stand-in's cache has no lines (offload/tiles.py: no tiles)."""
    emulated = dataclasses.replace(emulated, flash_data=real.flash_data if real.data_cache_on else FlashData(
        real.flash_data.read_bytes if real.flash_data else 4, 0, 0, f"{real.name} runs with its data cache off"))
    need = areas(real)[0].capacity
    if areas(emulated)[0].capacity >= need:
        return emulated
    room = next((r for r in emulated.regions if not r.excluded and r.speed is None
                 and r.size - r.reserved - emulated.stack_bytes >= need), None)
    if room is None:
        other = EMULATED.get(real.core, emulated.name)
        instead = f" (-b {other} can)" if other != emulated.name else ""
        raise MCUDeployError(f"board {emulated.name} has no region of full speed of {need:,} B, the first region of "
                             f"{real.name} less its stack: its traces cannot stand for that board's plans{instead}")
    return first_region(emulated, room, need + room.reserved + emulated.stack_bytes)


def emulator_for(real: Board) -> Board:
    """The emulated board of ``real``'s core (EMULATED), made to plan as ``real``."""
    if real.core not in EMULATED:
        raise MCUDeployError(f"no emulated board runs the {real.core} of board {real.name}")
    return stand_in(load_board(EMULATED[real.core]), real)


def first_region(board: Board, room, size: int) -> Board:
    """``board`` with ``room`` (one of its regions), cut to ``size`` bytes, as its first region, which takes the
    statics and the stack; its regions without a linker section of their own (its old first region) are left out,
    the others stay."""
    first = dataclasses.replace(room, section=None, size=size)
    rest = tuple(r if r.section else dataclasses.replace(r, excluded=True) for r in board.regions if r is not room)
    return dataclasses.replace(board, regions=(first,) + rest)


def latency_budget(real: Board, given: Optional[int]) -> int:
    """The latency objective's budget on a stand-in for ``real``: ``given`` (--memory-budget) where smaller, else the
    real board's first region."""
    capacity = areas(real)[0].capacity
    return min(given, capacity) if given is not None else capacity
