"""One interface for a board or a system of cores and chips: what -b names is resolved once
(``resolve``) into a Target, and compile, flash, run and measure ask it the same way.

- request.py: what a command asks (the plan-changing options, run's and measure's), parsed once.
- board.py: one board (or a compile or tune folder's plan): compile, write, flash, run, measure.
- system.py: a system (boards/systems/): its stages planned by mcudeploy/stages/, and run by the modules below.
- stream.py: frames streamed through the stages (host builds, dual.py's or chain.py's emulators); measure.
- chain.py: every stage on its own emulator, the frames passed chip to chip over joined UARTs
  (CRC-checked; the host carries them where the boards have no link UARTs).
- dual.py: two stages on the two cores of one emulator, a ring between them; dual_firmware.py builds their
  one firmware.
- linked_firmware.py: the firmware of a chip of a chain, with its links.
- flash.py: every stage's firmware flashed on its own chip.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Protocol

from mcudeploy.choices import BOARD_OBJECTIVES, SYSTEM_OBJECTIVES
from mcudeploy.errors import MCUDeployError
from mcudeploy.target.request import MeasureRequest, Request, RunRequest


class Target(Protocol):
    request: Request
    folder: bool  # a compile or tune folder's recorded plan (a board's), not a model file

    def compile(self):
        """The model's plan for the target: a Compiled, or a system's SystemPlan."""

    def write(self, output, code: Callable, say=print) -> None:
        """compile -o: the C (a project, or one per stage) and plan.json in ``output``; ``code()``, the
        options of a board's C (parsed only where they apply)."""

    def flash(self, project_dir: Optional[str], upload: bool, say=print) -> None:
        """The firmware built and uploaded (or, for an emulated chip, started in an emulator)."""

    def run(self, run: RunRequest, say=print) -> int:
        """The model run on inputs, checked where asked; the exit status."""

    def run_dataset(self, run: RunRequest, say=print) -> int:
        """run --dataset; the exit status."""

    def timings_folder(self, output: Optional[str], settle: bool) -> Optional[Path]:
        """Where measure keeps its timings (checked before any work), or None."""

    def measure(self, measure: MeasureRequest, output: Optional[Path], settle_rounds: Callable, say=print) -> int:
        """The plan timed on the target; the exit status."""


def resolve(request: Request, folders: bool = True, check_options: bool = True) -> Target:
    """The target of ``request``: with ``folders``, a compile or tune folder (its plan's board); a system
    -b names (boards/systems/NAME.json); else a board. Options that apply to one kind only are refused
    in one sentence (unless not ``check_options``, where no -b was given)."""
    from mcudeploy.target.board import BoardTarget

    if folders and request.model is not None:
        from mcudeploy.project import is_project

        if is_project(request.model):
            return BoardTarget(request, folder=True)
    system = system_of(request) if check_options else None
    if system is None:
        return BoardTarget(request)
    if request.objective == "latency":  # one inference on the cores of the system's chip (target/cores.py)
        from mcudeploy.target.cores import CoresTarget

        return CoresTarget(request, system)
    from mcudeploy.target.system import SystemTarget

    return SystemTarget(request, system)


def system_of(request: Request):
    """The system -b names (boards/systems/NAME.json), or None for a board; options that apply to one
    kind only are refused in one sentence."""
    from mcudeploy.stages.system import is_system, load_system

    r = request
    if not r.board or not is_system(r.board):
        given = [o for o, v in (("--stages", r.stages),
                                (f"--objective {r.objective}", r.objective in SYSTEM_OBJECTIVES)) if v]
        if given:
            raise MCUDeployError(f"{given[0]} applies to a system of cores or chips (e.g. -b qemu-m4x2), not to "
                                 f"the board {r.board}")
        return None
    system = load_system(r.board)
    from mcudeploy.target.cores import cores_chip

    on_cores = r.objective == "latency" and cores_chip(system) is not None  # one inference on its chip's cores
    given = [o for o, v in (("--fast-memory", r.fast_memory),
                            (f"--objective {r.objective}", r.objective in BOARD_OBJECTIVES and not on_cores),
                            ("--memory-budget", r.memory_budget)) if v]
    if given:
        raise MCUDeployError(f"{given[0]} applies to one board, not to the system {r.board}"
                             + (f" (a system takes {', '.join(SYSTEM_OBJECTIVES)}, and latency where its one chip's "
                                f"cores share its memory)" if "objective" in given[0] else ""))
    return system
