"""One board as a target: a model compiled for it (or the plan a compile or tune folder recorded,
mcudeploy/project.py), written as a C project, flashed, run (checked against the references) and
measured on the board, an emulator of it, a pool of them or a labgrid farm's places."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from mcudeploy.choices import BOARD_OBJECTIVES, SYSTEM_OBJECTIVES
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import check_output, writing
from mcudeploy.objective import objective_line
from mcudeploy.target.request import RANDOM_SAMPLES, STREAM_STEPS, MeasureRequest, Request, RunRequest

if TYPE_CHECKING:
    from mcudeploy.plan.options import CompileOptions

# what --allow-overflow does, per command, in the refusal of a plan that does not fit (mcudeploy/fit.py)
ANYWAY = {"compile": "writes it anyway", "tune": "writes it anyway", "plan": "shows the plan anyway"}


def to_stderr(message: str) -> None:
    print(f"mcudeploy: {message}", file=sys.stderr, flush=True)


HOST_TIMINGS = ("timings.json keeps a firmware's timings with its memory use, and the host board builds no firmware: "
                "measure -b host prints its times (--json for a file)")


@contextlib.contextmanager
def board_pool(request: Request, board, say=to_stderr):
    """The boards of a command: a farm's places (acquired for the block), flashed ports, or emulators.
    What the boards of a pool do, and a board taken out of it, is said on stderr."""
    from mcudeploy.boards import load_board
    from mcudeploy.device.pool import BoardPool

    board = load_board(board)
    if request.place is None:
        yield BoardPool.of(board, request.boards, list(request.ports), say)
        return
    if request.ports:
        raise MCUDeployError("give either --port or --place, not both")
    from mcudeploy.device import farm

    with farm.acquired(board, request.place or None, request.boards) as boards:
        yield BoardPool(board, boards, say)


def objective(request: Request):
    """The board's objective (--objective, --memory-budget), checked: a system's objective is refused here."""
    from mcudeploy.objective import Objective, parse_memory_budget

    if request.objective in SYSTEM_OBJECTIVES:
        raise MCUDeployError(f"--objective {request.objective} applies to a system of cores or chips (e.g. -b "
                             f"qemu-m4x2), not to the board {request.board}; a board takes "
                             f"{', '.join(BOARD_OBJECTIVES)}")
    return Objective(request.objective or "memory", parse_memory_budget(request.memory_budget))


def plan_options(request: Request, board_objective: bool = True) -> tuple[dict, CompileOptions]:
    """The input shapes and the CompileOptions of the plan-changing options (cli.PLAN_OPTIONS); without
    ``board_objective`` (a system's stages) the objective is the default."""
    from mcudeploy.frontend import parse_input_shapes
    from mcudeploy.plan.options import CompileOptions

    options = CompileOptions(schedule_method=request.schedule, schedule_time_limit=request.time_limit,
                             int8_input=request.int8_input, stream_input=request.stream_input,
                             fast_memory=request.fast_memory)
    if board_objective:
        options = dataclasses.replace(options, objective=objective(request))
    return parse_input_shapes(list(request.input_shape)), options


def check_fit(request: Request, compiled):
    """``compiled``, refused in one sentence when it does not fit its board (unless --allow-overflow)."""
    from mcudeploy.fit import TO_THE_BUILD, check_fit as fit

    fit(compiled, request.allow_overflow, ANYWAY.get(request.command, TO_THE_BUILD), to_stderr)
    return compiled


def one_port(request: Request, refusal: str) -> Optional[str]:
    """The one --port of a command that takes at most one (None without), or ``refusal`` as its error."""
    if len(request.ports) > 1:
        raise MCUDeployError(refusal)
    return request.ports[0] if request.ports else None


def save_outputs(path, names, outputs, say=print) -> None:
    import io

    import numpy as np

    from mcudeploy.files import write_atomic

    buf = io.BytesIO()
    np.savez(buf, **{n: np.stack([o[k] for o in outputs]) for k, n in enumerate(names)})
    with writing(path):
        write_atomic(path, buf.getvalue())
    say(f"wrote the outputs of {len(outputs)} sample(s) to {path}")


def write_folder(compiled, output, code, say=print) -> None:
    """A compiled plan's C project and plan.json in ``output``, its C as ``code`` (CodeOptions) asks."""
    from mcudeploy.codegen import write_project
    from mcudeploy.codegen.emit import c_name
    from mcudeploy.report.text import summary

    compiled = dataclasses.replace(compiled, code=code)
    with writing(output):
        out = write_project(compiled, output)
    say(summary(compiled))
    say(f"wrote {out}/model.c, {c_name(compiled)}.h, the build files (CMakeLists.txt, library.json"
        f"{', arduino/' if code.arduino else ''}; README.txt) and plan.json")


class BoardTarget:
    """A board named by -b, or the board of a compile or tune folder's plan (``folder``)."""

    def __init__(self, request: Request, folder: bool = False):
        self.request = request
        self.folder = folder

    # the plan

    def compile(self, fast_memory=None, earlier={}, stand_for: Optional[str] = None):
        """The model compiled for the board with the request's options, checked to fit it; with ``stand_for`` (measure
        --estimate-for), planned as that real board would plan it (mcudeploy/device/stand_in.py)."""
        from mcudeploy.compile import compile_model

        shapes, options = plan_options(self.request)
        options = dataclasses.replace(options, fast_memory=fast_memory or options.fast_memory, earlier=earlier)
        board = self.request.board
        if stand_for is not None:
            from mcudeploy.boards import load_board
            from mcudeploy.estimate.cycles import target_for
            from mcudeploy.device.stand_in import latency_budget, stand_in

            real, emulated = load_board(stand_for), load_board(board)
            target_for(real, emulated)  # another core or a board that is not real: refused before compiling
            board = stand_in(emulated, real)
            if options.objective.name != "memory":
                options = dataclasses.replace(options, objective=dataclasses.replace(
                    options.objective, budget_bytes=latency_budget(real, options.objective.budget_bytes)))
        return check_fit(self.request, compile_model(self.request.model, board, options, shapes))

    def loaded(self, say=print):
        """(compiled, the graph of the numpy reference, the model file) of run, measure and flash: the recorded
        plan of a project folder (mcudeploy/project.py), else the model compiled afresh."""
        from mcudeploy.project import load_project

        r = self.request
        if not self.folder:
            if r.board is None:
                raise MCUDeployError("give the board with -b BOARD (see mcudeploy boards)")
            compiled = self.compile()
            return compiled, compiled.graph, r.model
        if r.given:
            raise MCUDeployError(f"{r.model} holds a plan whose shapes, order and offsets are fixed: {r.given[0]} "
                                 f"applies only to a model file (compile or tune the model again with it)")
        project = load_project(r.model, r.board)
        check_fit(r, project.compiled)  # a plan that runs past its board's memory, refused before any board is touched
        for line in project.lines():
            say(line)
        return project.compiled, project.unsplit, project.model_path

    def write(self, output, code: Callable, say=print) -> None:
        """compile -o: the C project and plan.json in ``output``; ``code()``: the CodeOptions of its C."""
        write_folder(self.compile(), output, code(), say)

    # flash

    def flash(self, project_dir: Optional[str], upload: bool, say=print) -> None:
        """The measurer (with the model, where one is given) built with PlatformIO and uploaded."""
        from mcudeploy.boards import load_board
        from mcudeploy.device import flash

        r = self.request
        port = one_port(r, f"flash takes one --port for the board {r.board or r.model}; several are for a system's "
                           f"stages (-b SYSTEM)")
        if self.folder:
            compiled = self.loaded(say)[0]
        elif r.board is None:
            raise MCUDeployError("give the board with -b BOARD (see mcudeploy boards)")
        elif r.model is None:
            if r.given:
                raise MCUDeployError(f"{r.given[0]} changes a model's plan: flash the measurer alone without it, or "
                                     f"give a model")
            compiled = None
        else:
            flash.flashable(load_board(r.board), port)  # refused before the compile
            compiled = self.compile()
        result = flash.flash_plan(compiled, compiled.board.name if compiled else r.board, port=port,
                                  project=project_dir, upload_firmware=upload)
        if compiled is not None:
            say(objective_line(compiled.objective.as_plan()))
        for line in flash.summary(result):
            say(line)

    # run

    def run(self, run: RunRequest, say=print) -> int:
        """The model run on the board (or on this computer, for the host board) on the inputs given or
        random ones; with ``check``, compared with the references. The exit status."""
        from mcudeploy import check
        from mcudeploy.device.host import run_compiled_on_host
        from mcudeploy.frontend import is_tflite_model

        r = self.request
        compiled, reference, model = self.loaded(say)
        if run.sanitize and compiled.board.kind != "host":
            raise MCUDeployError(f"--sanitize builds the generated C for this computer: {model} holds a plan for "
                                 f"{compiled.board.name}; compile it for -b host")
        graph = compiled.graph
        tflite = is_tflite_model(model)
        if tflite and run.float_model:
            raise MCUDeployError(f"--float-model applies to ONNX models; {model} is checked against TensorFlow Lite "
                                 f"Micro")
        float_model = check.float_model(run.float_model, reference) if run.float_model else None
        samples_given = run.samples if run.samples is not None else RANDOM_SAMPLES
        count = max(samples_given, STREAM_STEPS) if graph.states and run.check else samples_given
        samples = check.load_input(run.input, graph, to_stderr) if run.input else check.random_inputs(graph, count)
        if graph.states and len(samples) > 1:
            say(f"a stateful model: {len(samples)} inputs in sequence, each call from the state the one before left")
        board_run = None
        if compiled.board.kind == "host":
            if r.boards != 1 or r.place is not None:
                raise MCUDeployError("--boards and --place spread a run over Cortex-M boards; the host board runs here")
            with tempfile.TemporaryDirectory(prefix="mcud-run-") as tmp:
                outputs = run_compiled_on_host(compiled, samples, Path(tmp), sanitize=run.sanitize)
            if run.sanitize:
                say(f"sanitized host build (AddressSanitizer, UndefinedBehaviorSanitizer): {len(samples)} "
                    f"sample(s), no report")
        else:
            from mcudeploy.device.runner import run_on_board, ticks_lines

            with board_pool(r, compiled.board.name) as pool:
                board_run = run_on_board(compiled, samples, pool=pool)
            outputs = board_run.outputs
            timed = ticks_lines(board_run) if compiled.cores is None else [
                f"one inference on {compiled.cores.cores} cores: no per-operator ticks (on the emulator's one clock they "
                f"would count every core's instructions); measure the model with -b SYSTEM --objective latency for "
                f"each core's"]
            for line in board_run.firmware.report.lines() + timed:
                say(line)
        if run.output:
            save_outputs(run.output, graph.model_outputs(), outputs, say)
        if not run.check:
            for k, name in enumerate(graph.model_outputs()):
                say(f"{name}: {outputs[0][k].ravel()[:16].tolist()}{' ...' if outputs[0][k].size > 16 else ''}")
            return 0
        same_as_host = True
        if board_run is not None:
            from mcudeploy.check.against_host import compare_with_host

            same_as_host, lines = compare_with_host(compiled, outputs, samples)
            for line in lines:
                say(line)
        if tflite:
            verdict = check.check_tflite_outputs(model, compiled, outputs, samples, reference)
        else:
            verdict = check.check_outputs(model, compiled, outputs, samples, reference, float_model)
        for line in verdict.lines():
            say(line)
        return 0 if verdict.ok and same_as_host else 1

    def run_dataset(self, run: RunRequest, say=print) -> int:
        """run --dataset: every sample of a data set on the deployed model, its reference and --float-model
        (mcudeploy/check/validate.py); exit status 1 where the C differs from mcudeploy's numpy reference."""
        from mcudeploy.check.dataset import load_dataset
        from mcudeploy.check.validate import float_reference, validate

        r = self.request
        compiled, reference, model = self.loaded(say=to_stderr if run.json else say)
        data = load_dataset(run.dataset, compiled.graph, to_stderr)
        if run.samples is not None:
            if run.samples < 1:
                raise MCUDeployError(f"--samples {run.samples}: give 1 or more (the first samples of the data set)")
            data = data.head(run.samples)
        float_ref = float_reference(run.float_model, reference) if run.float_model else None
        if compiled.graph.states and len(data) > 1:
            to_stderr(f"a stateful model: the {len(data)} samples run in sequence, each from the state the one before "
                      f"left")
        sessions = 1  # a pool of N boards takes the samples in N runs at once, one session each (device/runner.py)
        if compiled.board.kind == "host":
            if r.boards != 1 or r.place is not None or r.ports:
                raise MCUDeployError("--boards, --place and --port are for Cortex-M boards; the host board runs here")
            result, outputs, board_run = validate(compiled, reference, model, data, float_ref, sanitize=run.sanitize)
        else:
            with board_pool(r, compiled.board.name) as pool:
                sessions = 1 if compiled.graph.states else min(pool.size, len(data))
                result, outputs, board_run = validate(compiled, reference, model, data, float_ref, pool=pool)
        if run.output:
            save_outputs(run.output, compiled.graph.model_outputs(), outputs, to_stderr if run.json else say)
        totals = [r.total_ticks for r in board_run.runs] if board_run is not None else []
        if run.json:
            report = result.as_dict()
            if board_run is not None:
                report["board_run"] = {"sessions": sessions, "ticks_per_inference": [min(totals), max(totals)]}
            say(json.dumps(report, indent=1))
        else:
            if board_run is not None:
                say("\n".join(board_run.firmware.report.lines()))
                how = "in one session" if sessions == 1 else f"on {sessions} boards at once, one session each"
                say(f"{len(totals)} samples on {compiled.board.name} {how}: {min(totals):,} .. {max(totals):,} ticks "
                    f"per inference")
            say("\n".join(result.lines()))
        return 0 if result.ok else 1

    # measure

    def timings_folder(self, output: Optional[str], settle: bool) -> Optional[Path]:
        """The folder measure writes its timings and report into: a compile or tune folder itself, or -o DIR
        (checked before any work); None for a model file without -o."""
        from mcudeploy.project import plan_file

        r = self.request
        if output is None:
            if not self.folder:
                return None
            where = plan_file(r.model).parent
            if where.is_dir() and not os.access(where, os.W_OK | os.X_OK):
                to_stderr(f"the folder {where} is not writable: the timings are printed, not kept in it (give a copy)")
                return None
            return where
        if self.folder:
            raise MCUDeployError(f"measure {r.model} writes its timings into that folder; -o applies to a model file")
        if settle:
            raise MCUDeployError(NO_TIMINGS_FOLDER)
        if self._host():
            raise MCUDeployError(HOST_TIMINGS)
        return check_output(output, folder=True)

    def _host(self) -> bool:
        from mcudeploy.boards import load_board

        return self.request.board is not None and load_board(self.request.board).kind == "host"

    def measure(self, measure: MeasureRequest, output: Optional[Path], settle_rounds: Callable, say=print) -> int:
        """Per-operator timings of the plan on the board (cached per kernel), kept in ``output`` if given;
        with --settle, the rounds of ``settle_rounds`` instead (see settle)."""
        from mcudeploy.device.measure import measure_model

        if measure.settle:
            if self.folder:
                raise MCUDeployError(f"--settle compiles the model again each round: give the model file, not "
                                     f"{self.request.model}")
            return self.settle(measure, settle_rounds, say)
        target = None
        if measure.estimate_for:
            from mcudeploy.boards import load_board
            from mcudeploy.estimate.cycles import target_for
        loaded = self.loaded(say=to_stderr if measure.json else say)[0] if self.folder else None
        if loaded is not None and loaded.cores is not None:  # per-operator ticks on QEMU's one clock mix the cores
            raise MCUDeployError(f"{self.request.model} is a plan of one inference on {loaded.cores.cores} cores: "
                                 f"measure its model file with -b SYSTEM --objective latency (each core's instructions "
                                 f"per phase)")
        with board_pool(self.request, loaded.board.name if loaded else self.request.board) as pool:  # before compiling
            compiled = loaded or self.compile(stand_for=measure.estimate_for)
            if measure.estimate_for:
                target = target_for(load_board(measure.estimate_for), compiled.board)
            result = measure_model(compiled, repeat=measure.repeat, pool=pool, estimate_for=target,
                                   sanitize=measure.sanitize)
        if measure.json:
            say(json.dumps({**result.as_dict(), "objective": compiled.objective.as_plan()}, indent=1))
        else:
            for line in [objective_line(compiled.objective.as_plan())] + \
                    (result.memory.lines() if result.memory else []) + result.lines():
                say(line)
        if output is not None and compiled.board.kind == "host":
            to_stderr(f"the timings are printed, not kept in {output}: {HOST_TIMINGS}")
        elif output is not None:
            self._keep_timings(result, compiled, output, say=to_stderr if measure.json else say)
        return 0

    def _keep_timings(self, result, compiled, output: Path, say) -> None:
        """timings.json (with the firmware's memory use from its ELF, built now if every kernel was cached) and
        report.html in ``output``, beside plan.json (and the C project, written first for a model file)."""
        from mcudeploy.codegen import write_project
        from mcudeploy.device.measure import firmware_memory
        from mcudeploy.report.html import read_plan, write_report
        from mcudeploy.report.timings import TIMINGS_FILE, write_timings

        measured = result.as_dict()
        if result.memory is None:
            measured["memory"] = firmware_memory(compiled).as_dict()
        with writing(output):
            if not self.folder:
                write_project(compiled, output)
            write_timings(output, measured, read_plan(output))
            page = write_report(output, say=to_stderr)
        say(f"wrote {output / TIMINGS_FILE} and {page}" + ("" if self.folder else
                                                            f" (and the plan measured: {output}/plan.json, "
                                                            f"model.c and the build files)"))

    def settle(self, measure: MeasureRequest, rounds: Callable, say=print) -> int:
        """measure --settle: the stall feedback's rounds (``rounds``: search/stalls.py, which sits above the
        targets) on a board whose DMA engine copies the swaps, one line per round."""
        from mcudeploy import check

        r = self.request
        if not r.fast_memory:
            raise MCUDeployError("--settle needs --fast-memory: without a budget nothing is swapped, so no copy can "
                                 "stall")
        if len(r.ports) > 1 or r.boards > 1 or r.place is not None or measure.estimate_for:
            raise MCUDeployError("--settle runs on one board: give at most one --port, and no --boards, --place or "
                                 "--estimate-for")
        first = self.compile()
        if first.offload is None or not first.offload.asynchronous:
            raise MCUDeployError(f"--settle: nothing is copied by DMA on {first.board.name} at this budget (a board "
                                 f"with a dma_engine reaching its slow region swaps asynchronously)")
        budget = first.offload.budget_bytes
        samples = check.random_inputs(first.graph, 1)
        for line in rounds(lambda earlier: first if not earlier else self.compile(budget, earlier), samples,
                           r.ports[0] if r.ports else None):
            say(line)
        return 0


NO_TIMINGS_FOLDER = "-o keeps one board's plan and timings; it applies neither to a system nor to --settle"
