"""One inference on the cores of one chip (mcudeploy/cores): ``-b SYSTEM --objective latency`` where the system is
one chip whose cores share its memory (its chip board names ``cores``: qemu-an521's qemu-an521-chip).

It is that chip board's target (target/board.py) with another plan: compile, write and run as for one board, the
plan's steps placed on the cores; tune chooses the plan by measuring (cores/search.py); measure counts each core's
instructions per phase on the emulator (device/core_phases.py) and sets the critical path beside the one-core
latency plan of a core of the system, and with --estimate-for, milliseconds on a real board of as many such cores.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from mcudeploy.errors import MCUDeployError
from mcudeploy.target.board import BoardTarget, check_fit, plan_options, write_folder
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
        from mcudeploy.cores.compile import plan_on_cores

        if stand_for is not None:
            raise MCUDeployError("a plan on several cores is not planned as a real board would plan it: measure MODEL "
                                 "-b SYSTEM --objective latency --estimate-for BOARD estimates it for a real board")
        graph, board = self._graph()
        plan = plan_on_cores(graph, board, board.cores.count)
        return check_fit(self.request, plan.compiled(self.request.model, board))

    def _graph(self):
        """(the model's lowered graph, the chip board)."""
        from mcudeploy.boards import load_board
        from mcudeploy.compile import computed_outputs, lower
        from mcudeploy.frontend import import_model

        r = self.request
        shapes, options = plan_options(r, board_objective=False)
        if options.scheme or options.fast_memory is not None:
            raise MCUDeployError("one inference on several cores makes its own split and keeps every tensor in the "
                                 "chip's memory: drop --scheme and --fast-memory")
        graph = lower(import_model(r.model, shapes), int8_input=options.int8_input, stream_input=options.stream_input)
        computed_outputs(graph, r.model)
        return graph, load_board(r.board)

    def tune(self, output, code: Callable, budget: Optional[int] = None, say=print) -> int:
        """tune -o: the plan on the cores chosen by measurement (cores/search.py), every plan tried checked bit for
        bit against the reference on the cores, the kept one written as compile writes."""
        from mcudeploy.check import random_inputs
        from mcudeploy.cores.search import CoresRun, search
        from mcudeploy.device.core_phases import measure_on_cores
        from mcudeploy.device.measure import measure_model
        from mcudeploy.reference import run_reference

        graph, board = self._graph()
        name = self.request.model
        samples = random_inputs(graph, 1, seed=0)
        want = run_reference(graph, samples[0])

        def time_steps(plan) -> dict:
            alone = dataclasses.replace(plan.compiled(name, board), cores=None)  # its steps in turn on core 0
            return {o.node: o.ticks for o in measure_model(alone, repeat=1).ops if o.signature}

        def time_cores(plan) -> CoresRun:
            result = measure_on_cores(plan.compiled(name, board), samples)
            for k, (got, expected) in enumerate(zip(result.outputs[0], want)):
                if not np.array_equal(got, expected):
                    raise MCUDeployError(f"output {graph.model_outputs()[k]} of a plan on the cores of {board.name} "
                                         f"differs from the numpy reference: a fault in mcudeploy's plan on cores, "
                                         f"please report it with the model")
            run = result.runs[0]
            return CoresRun(run.critical_path, run.barriers, len(run.work[0]), tuple(sum(w) for w in run.work))

        searched = search(graph, board, board.cores.count, time_steps, time_cores, say, budget=budget)
        best, first = searched.best, searched.tried[0]
        compiled = check_fit(self.request, best.plan.compiled(name, board))
        write_folder(compiled, output, code(), say)
        say(f"kept {best.label}: critical path {best.run.critical_path:,} instructions on {board.cores.count} cores "
            f"({best.run.critical_path / first.run.critical_path:.3f}x the estimate's plan, "
            f"{first.run.critical_path:,}); {len(searched.tried)} plan(s) measured, each bit for bit the reference")
        return 0

    def measure(self, measure: MeasureRequest, output: Optional[Path], settle_rounds: Callable, say=print) -> int:
        from mcudeploy.check import random_inputs
        from mcudeploy.compile import compile_model
        from mcudeploy.device.core_phases import measure_on_cores
        from mcudeploy.device.runner import run_on_board
        from mcudeploy.objective import Objective

        if measure.settle or self.folder:
            raise MCUDeployError("measure of one inference on several cores takes a model file, without --settle")
        real = estimate_target(measure.estimate_for, self.request.board) if measure.estimate_for else None
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
        if real is not None:
            result["estimate"] = estimate_on_cores(compiled, run, one, real)
        if measure.json:
            say(json.dumps(result, indent=1))
            return 0
        say(f"one inference on {compiled.cores.cores} cores of {compiled.board.name}, {run.as_dict()['phases']} "
            f"phases: critical path {run.critical_path:,} guest instructions (barriers {run.barriers:,}; cores "
            f"{', '.join(f'{n:,}' for n in result['core_instructions'])})")
        say(f"one core ({one.board.name}, --objective latency): {one_instructions:,} instructions: the critical path "
            f"is {result['ratio']:.3f}x of it")
        say(f"arena: {compiled.placement.arena_bytes:,} B on the cores, {one.placement.arena_bytes:,} B on one core")
        if real is not None:
            e = result["estimate"]
            low, high = e["range_ms"]
            say(f"estimated for {e['board']} ({e['cores']} {e['core']} at {e['clock_hz'] / 1e6:g} MHz): critical path "
                f"{e['critical_path_ms']:.3f} ms (between {low:.3f} and {high:.3f}), one core's "
                f"latency plan {e['one_core_ms']:.3f} ms: {e['ratio']:.3f}x; {e['note']}")
        return 0


def estimate_target(name: str, chip: str):
    """The real board ``name`` a plan on the cores of ``chip`` is estimated for, refused in one sentence where it
    names fewer cores sharing its memory, or another core, than the chip."""
    from mcudeploy.boards import load_board
    from mcudeploy.estimate.cycles import target_for

    real, emulated = load_board(name), load_board(chip)
    target_for(real, emulated)  # a real board of the same core, with timings
    if real.cores is None or real.cores.count != emulated.cores.count:
        raise MCUDeployError(f"--estimate-for {name}: board {name} names no {emulated.cores.count} cores sharing its "
                             f"memory (its board file's cores), so one inference on {emulated.name}'s cores does not "
                             f"stand for it")
    return real


def estimate_on_cores(compiled, run, one, real) -> dict:
    """Milliseconds on ``real`` (a board with as many cores of the same kind): every step of the plan estimated from
    a traced run of its steps on core 0 (measure --estimate-for's model: the core's published timings, the board's
    flash), each core's steps of a phase summed, the longer core of each phase summed, plus the barriers at one cycle
    per instruction counted on the emulator; beside it the one-core latency plan ``one`` estimated the same way."""
    from mcudeploy.device.measure import measure_model
    from mcudeploy.estimate.cycles import milliseconds, target_for

    target = target_for(real, compiled.board)
    steps = measure_model(dataclasses.replace(compiled, cores=None), repeat=1, estimate_for=target)
    cycles = {o.node: steps.estimate.cycles[o.index] for o in steps.ops if o.signature}
    plan = compiled.cores
    load = [[0.0] * plan.cores for _ in range(plan.phase_count)]
    for k, node in enumerate(compiled.order):
        if plan.core[k] >= 0:
            load[plan.phase[k]][plan.core[k]] += cycles.get(node.name, 0.0)
    critical = sum(max(row) for row in load) + run.barriers
    low, high = steps.estimate.spread
    whole = steps.estimate.total()
    alone = measure_model(one, repeat=1, estimate_for=target_for(real, one.board)).estimate
    ms, one_ms = milliseconds(critical, target), milliseconds(alone.total(), target)
    note = (f"{steps.estimate.NOTE}; each core's steps as if it ran alone: the cores' contention for memory "
            f"{'and the XIP cache and serial flash ' if target.xip else ''}is not modelled; the range scales the "
            f"steps' own range ({steps.estimate.spread_note()})")
    if steps.estimate.unvalidated():
        note += f"; {steps.estimate.unvalidated()}"
    return {"board": real.name, "core": target.core, "cores": plan.cores, "clock_hz": target.clock_hz,
            "critical_path_cycles": round(critical), "critical_path_ms": ms,
            "range_ms": [ms * low / whole, ms * high / whole] if whole else [ms, ms],
            "one_core_cycles": round(alone.total()), "one_core_ms": one_ms,
            "ratio": ms / one_ms if one_ms else None, "note": note}
