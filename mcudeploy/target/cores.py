"""One inference on the cores of one chip (mcudeploy/cores): ``-b SYSTEM --objective latency`` where the system is
one chip whose cores share its memory (its chip board names ``cores``: qemu-an521's qemu-an521-chip).

It is that chip board's target (target/board.py) with another plan: compile, write and run as for one board, the
plan's steps placed on the cores; measure counts each core's instructions per phase on the emulator
(device/core_phases.py) and sets the critical path beside the one-core latency plan of a core of the system.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable, Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.target.board import BoardTarget, check_fit, plan_options
from mcudeploy.target.request import MeasureRequest, Request


def cores_chip(system) -> Optional[str]:
    """The chip board of a system of one chip whose cores share its memory and can run one inference, or None."""
    chips = {u.chip for u in system.units}
    if len(chips) != 1:
        return None
    firmware = system.chip_firmware(next(iter(chips)))
    return firmware.board.name if firmware is not None and firmware.board.cores is not None else None


class CoresTarget(BoardTarget):
    def __init__(self, request: Request, system):
        chip = cores_chip(system)
        if chip is None:
            raise MCUDeployError(f"--objective latency on a system plans one inference on the cores of one chip that "
                                 f"share its memory; {system.name} is not one (its chips name no cores)")
        self.system = system
        self.one_core = system.units[0].board  # what each core alone compiles for
        super().__init__(dataclasses.replace(request, board=chip))

    def compile(self, fast_memory=None, earlier={}, stand_for: Optional[str] = None):
        from mcudeploy.boards import load_board
        from mcudeploy.compile import computed_outputs, lower
        from mcudeploy.cores.compile import plan_on_cores
        from mcudeploy.frontend import import_model

        if stand_for is not None:
            raise MCUDeployError("--estimate-for is not modelled for one inference on several cores yet")
        r = self.request
        shapes, options = plan_options(r, board_objective=False)
        if options.scheme or options.fast_memory is not None:
            raise MCUDeployError("one inference on several cores makes its own split and keeps every tensor in the "
                                 "chip's memory: drop --scheme and --fast-memory")
        graph = lower(import_model(r.model, shapes), int8_input=options.int8_input, stream_input=options.stream_input)
        computed_outputs(graph, r.model)
        board = load_board(r.board)
        plan = plan_on_cores(graph, board, board.cores.count)
        return check_fit(r, plan.compiled(r.model, board))

    def measure(self, measure: MeasureRequest, output: Optional[Path], settle_rounds: Callable, say=print) -> int:
        from mcudeploy.check import random_inputs
        from mcudeploy.compile import compile_model
        from mcudeploy.device.core_phases import measure_on_cores
        from mcudeploy.device.runner import run_on_board
        from mcudeploy.objective import Objective

        if measure.settle or measure.estimate_for or self.folder:
            raise MCUDeployError("measure of one inference on several cores takes a model file, without --settle and "
                                 "--estimate-for")
        compiled = self.compile()
        samples = random_inputs(compiled.graph, 1, seed=0)
        run = measure_on_cores(compiled, samples).runs[0]
        shapes, options = plan_options(self.request, board_objective=False)
        one = compile_model(self.request.model, self.one_core, dataclasses.replace(
            options, objective=Objective("latency")), shapes)
        alone = run_on_board(one, samples)
        one_instructions = int(round(alone.runs[0].total_ticks * alone.instructions_per_tick))
        result = {**run.as_dict(), "one_core_instructions": one_instructions,
                  "ratio": run.critical_path / one_instructions if one_instructions else None,
                  "arena_bytes": compiled.placement.arena_bytes, "one_core_arena_bytes": one.placement.arena_bytes,
                  "one_core_board": one.board.name, "board": compiled.board.name}
        if measure.json:
            say(json.dumps(result, indent=1))
            return 0
        say(f"one inference on {compiled.cores.cores} cores of {compiled.board.name}, {run.as_dict()['phases']} "
            f"phases: critical path {run.critical_path:,} guest instructions (barriers {run.barriers:,}; cores "
            f"{', '.join(f'{n:,}' for n in result['core_instructions'])})")
        say(f"one core ({one.board.name}, --objective latency): {one_instructions:,} instructions: the critical path "
            f"is {result['ratio']:.3f}x of it")
        say(f"arena: {compiled.placement.arena_bytes:,} B on the cores, {one.placement.arena_bytes:,} B on one core")
        return 0
