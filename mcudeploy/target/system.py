"""A system of cores and chips as a target (boards/systems/): the model planned over its stages
(mcudeploy/stages/), each stage's C project written, every stage's firmware flashed on its chip
(flash.py), frames streamed through the stages (stream.py: host builds, dual.py's or chain.py's
emulators, or flashed chips) and each stage measured."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.files import writing
from mcudeploy.target.board import NO_TIMINGS_FOLDER, plan_options, save_outputs, to_stderr
from mcudeploy.target.request import RANDOM_SAMPLES, MeasureRequest, Request, RunRequest


class SystemTarget:
    """The system -b names; ``system``: it loaded (stages/system.py)."""

    folder = False

    def __init__(self, request: Request, system):
        self.request = request
        self.system = system

    def compile(self):
        """The model's SystemPlan: partitioned over the system's cores, each stage compiled for its own."""
        from mcudeploy.compile import lower
        from mcudeploy.frontend import import_model
        from mcudeploy.stages.system_plan import SystemOptions, compile_system

        r = self.request
        shapes, options = plan_options(r, board_objective=False)  # resolve() refused --fast-memory, a board's objective
        if options.stream_input:
            raise MCUDeployError("--stream-input applies to a model on one board; a system's stages pass their "
                                 "inputs between cores or chips whole")
        graph = lower(import_model(r.model, shapes), int8_input=options.int8_input)
        return compile_system(graph, self.system, r.model,
                              SystemOptions(r.stages, r.objective or "throughput", options.schedule_method,
                                            options.schedule_time_limit))

    def write(self, output, code: Callable, say=print) -> None:
        """compile -o: each stage's C project (stage0/ ...) and the system's plan.json (``code``, the C's
        options of one board's project, does not apply)."""
        from mcudeploy.stages.system_plan import system_lines, write_system

        plan = self.compile()
        with writing(output):
            out = write_system(plan, output)
        say("\n".join(system_lines(plan)))
        say(f"wrote {out}/stage0..stage{len(plan.times) - 1}/ (each stage's C project) and plan.json")

    def flash(self, project_dir: Optional[str], upload: bool, say=print) -> None:
        """Every stage's firmware built and uploaded to its own chip (flash.py)."""
        from mcudeploy.device.pio_project import default_project_dir
        from mcudeploy.target.flash import flash_system, summary

        r = self.request
        if not r.model:
            raise MCUDeployError(f"flash -b {self.system.name} needs the model its stages run (the measurer alone is "
                                 f"one board's)")
        plan = self.compile()
        project = Path(project_dir or default_project_dir(plan.staged.stages[0].compiled.board, r.model)
                       .with_name(f"{self.system.name}-{Path(r.model).stem}")).resolve()
        results = flash_system(plan, project, r.ports, upload=upload)
        say("\n".join(summary(plan, results)))

    def run(self, run: RunRequest, say=print) -> int:
        """The frames streamed through the stages, checked bit for bit against the one-chip plan."""
        from mcudeploy import check
        from mcudeploy.stages.system_plan import system_lines
        from mcudeploy.target.stream import run_system

        plan = self.compile()
        samples = check.load_input(run.input, plan.graph, to_stderr) if run.input else \
            check.random_inputs(plan.graph, run.samples if run.samples is not None else RANDOM_SAMPLES)
        result = run_system(plan, samples, check=run.check, ports=self.request.ports)
        say("\n".join(system_lines(result.plan) + result.lines))
        if run.output:
            save_outputs(run.output, plan.outputs, result.outputs, say)
        if not run.check:
            for k, name in enumerate(plan.outputs):
                value = result.outputs[0][k]
                say(f"{name}: {value.ravel()[:16].tolist()}{' ...' if value.size > 16 else ''}")
            return 0
        return 0 if result.ok else 1

    def run_dataset(self, run: RunRequest, say=print) -> int:
        raise MCUDeployError(f"--dataset runs on one board, not on the system {self.request.board}")

    def timings_folder(self, output: Optional[str], settle: bool) -> Optional[Path]:
        if settle:
            raise MCUDeployError(f"--settle moves one board's DMA copies (with --fast-memory); it does not apply to "
                                 f"the system {self.request.board}")
        if output is None:
            return None
        raise MCUDeployError(NO_TIMINGS_FOLDER)

    def measure(self, measure: MeasureRequest, output: Optional[Path], settle_rounds: Callable, say=print) -> int:
        """Each stage timed on its chip (stream.measure_system); the plan with the measured times."""
        from mcudeploy.stages.system_plan import system_lines, system_plan_dict
        from mcudeploy.target.stream import measure_system

        plan = measure_system(self.compile, repeat=measure.repeat, ports=self.request.ports)
        say(json.dumps(system_plan_dict(plan), indent=1) if measure.json else "\n".join(system_lines(plan)))
        return 0
