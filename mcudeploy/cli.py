"""The ``mcudeploy`` command: thin commands over the library."""
from __future__ import annotations

import atexit
import argparse
import contextlib
import logging
import os
import sys
import tempfile
import traceback
from pathlib import Path

from mcudeploy import __version__, interrupts
from mcudeploy.choices import SCHEDULE_METHODS
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import check_output, output_lock, writing
from mcudeploy.search.budget import CANDIDATES, TIME_LIMIT as TUNE_TIME_LIMIT

log = logging.getLogger("mcudeploy")
SCHEDULE_TIME_LIMIT = 10.0  # --time-limit of the commands that compile a model, in effort seconds
INTERNAL_ERROR = 3  # exit status of a bug (1: an error the user can fix, 2: argparse's usage errors)
RANDOM_SAMPLES = 20  # run's random inputs (--samples)
STREAM_STEPS = 20  # run --check of a stateful (streaming) model: at least this many inputs in sequence


PORT_HELP = "serial port of a flashed board (a pyserial URL: /dev/ttyACM0, socket://HOST:PORT)"


def _board_option(p: argparse.ArgumentParser, required: bool = True, help: str = "") -> None:
    p.add_argument("-b", "--board", required=required,
                   help="target board (see `mcudeploy boards`; compile, run and measure also take a system)" + help)


def _pool_options(p: argparse.ArgumentParser) -> None:
    """The boards a command may spread its work over (mcudeploy/device/pool.py)."""
    p.add_argument("--port", action="append", default=[],
                   help=PORT_HELP + "; once per board for several boards of one kind (each flashed, see flash); run "
                        "-b SYSTEM: once per stage, first to last, the chips flashed with flash -b SYSTEM")
    p.add_argument("--boards", type=int, default=1, metavar="N",
                   help="an emulated board: start N emulators and spread the work over them; with --place: N "
                        "places of the farm (default 1)")
    p.add_argument("--place", nargs="?", const="", metavar="NAME",
                   help="a board of a labgrid farm ($LG_COORDINATOR): the place NAME, or without NAME any idle "
                        "place tagged board=BOARD; acquired for the command and released after (pip install "
                        "'mcudeploy[farm]')")


def _to_stderr(message: str) -> None:
    print(f"mcudeploy: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _pool(args, board, say=_to_stderr):
    """The boards of a command: a farm's places (acquired for the block), flashed ports, or emulators.
    What the boards of a pool do, and a board taken out of it, is said on stderr."""
    from mcudeploy.boards import load_board
    from mcudeploy.device.pool import BoardPool

    board = load_board(board)
    if args.place is None:
        yield BoardPool.of(board, args.boards, args.port, say)
        return
    if args.port:
        raise MCUDeployError("give either --port or --place, not both")
    from mcudeploy.device import farm

    with farm.acquired(board, args.place or None, args.boards) as boards:
        yield BoardPool(board, boards, say)


def _model_options(p: argparse.ArgumentParser, project: bool = False) -> None:
    if project:
        p.add_argument("model", help="the model file (.onnx or .tflite), or a folder written by compile -o or tune -o (or its "
                                     "plan.json): exactly the plan recorded there")
        _board_option(p, required=False, help="; for a folder, its plan's board")
    else:
        p.add_argument("model", help="the model file (.onnx or .tflite)")
        _board_option(p)
    _plan_options(p)
    _allow_overflow_option(p)


# The options that change a plan, as (option, argparse dest, default): declared once (_plan_options) for
# every command that builds a plan, turned into CompileOptions once (_plan_arguments), and
# refused with a folder, whose plan already fixes them (_given_plan_options).
PLAN_OPTIONS = (("--input-shape", "input_shape", []), ("--int8-input", "int8_input", False),
                ("--stream-input", "stream_input", False), ("--fast-memory", "fast_memory", None),
                ("--schedule", "schedule", "auto"), ("--time-limit", "time_limit", SCHEDULE_TIME_LIMIT),
                ("--objective", "objective", None), ("--memory-budget", "memory_budget", None))
# --objective for one board (mcudeploy/objective.py; as in objective.OBJECTIVES, which checks it: importing it
# here would cost every command the planner's imports) and for a system of chips (stages/assign.py)
BOARD_OBJECTIVES = ("memory", "latency", "balanced")
SYSTEM_OBJECTIVES = ("throughput", "fit")


def _plan_options(p: argparse.ArgumentParser, tune: bool = False) -> None:
    """Every option that changes the plan (PLAN_OPTIONS). tune declares its own --time-limit (wall-clock
    seconds of the search, not the schedule's effort) and chooses the order itself."""
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=1x3x96x96",
                   help="pin the shape of an input with unknown dimensions (repeatable)")
    p.add_argument("--int8-input", action="store_true",
                   help="take each quantized input as the int8 tensor its QuantizeLinear makes (the QuantizeLinear "
                        "goes; model.h gives the scale and zero point)")
    p.add_argument("--stream-input", action="store_true",
                   help="the firmware's callback NAME_read_input (model.h) writes the inputs into the arena as the "
                        "first layers read them: band by band where a cut holds the input's read, so the plan never "
                        "holds the whole input")
    p.add_argument("--fast-memory", metavar="BYTES|N%",
                   help="a budget for the board's first (fast) memory region, in bytes (32K) or as a share of the "
                        "arena without it (50%%): idle tensors are swapped to the board's slow region and back, or "
                        "kept there, until the fast region fits (its speeds, modelled or measured, price the moves)"
                        + ("; tune then keeps the plan of least latency that fits, of the unsplit one and each "
                           "scheme of cuts its search kept" if tune else ""))
    p.add_argument("--schedule", default="auto", metavar="METHOD",
                   help=f"execution order: {', '.join(SCHEDULE_METHODS)} (default auto: exact where the graph is small "
                        f"enough for the time limit, else the refined heuristic)"
                        + ("; tune takes only auto: it compiles the kept cuts with several methods" if tune else ""))
    p.add_argument("--objective", choices=BOARD_OBJECTIVES + SYSTEM_OBJECTIVES, metavar="OBJECTIVE",
                   help="what the plan is for. One board: memory (default), the least arena; latency, the fastest "
                        "plan whose arena fits --memory-budget or else the board's first region (kernels keep their "
                        "scratch unless it must go to fit); balanced, the fastest within 1.25x the memory "
                        "objective's arena" + ("; tune: memory, the least arena within --max-overhead, or latency, "
                                               "the least measured ticks within the budget" if tune else
                                               ". A system (-b SYSTEM): throughput (default), the least bottleneck "
                                               "over --stages stages; fit, the fewest stages whose weights and arena "
                                               "fit their chips"))
    p.add_argument("--memory-budget", metavar="BYTES",
                   help="with --objective latency or balanced: the bytes the arena may take in the board's first "
                        "region (65536, 64K; default: the region, less the stack)")
    if not tune:
        p.add_argument("--time-limit", type=float, default=SCHEDULE_TIME_LIMIT, metavar="S",
                       help="effort the schedule method may spend, in seconds of work on an idle machine (CP-SAT's "
                            "deterministic time, the heuristics' own counts): the same order on a loaded machine, "
                            "where it takes longer (default 10)")


def _given_plan_options(args) -> list[str]:
    """The plan-changing options given other than their defaults, in PLAN_OPTIONS' order."""
    return [option for option, dest, default in PLAN_OPTIONS if getattr(args, dest, default) != default]


def _plan_arguments(args) -> dict:
    """The input shapes and CompileOptions' fields from the plan-changing options (PLAN_OPTIONS)."""
    from mcudeploy.frontend import parse_input_shapes

    return dict(input_shapes=parse_input_shapes(args.input_shape), schedule_method=args.schedule,
                schedule_time_limit=args.time_limit, int8_input=args.int8_input, stream_input=args.stream_input,
                fast_memory=args.fast_memory, objective=_objective(args))


def _objective(args):
    """The board's objective (--objective, --memory-budget), checked: a system's objective is refused here."""
    from mcudeploy.objective import Objective, parse_memory_budget

    if args.objective in SYSTEM_OBJECTIVES:
        raise MCUDeployError(f"--objective {args.objective} applies to a system of cores or chips (e.g. -b qemu-m4x2), "
                             f"not to the board {args.board}; a board takes {', '.join(BOARD_OBJECTIVES)}")
    return Objective(args.objective or "memory", parse_memory_budget(args.memory_budget))


def _c_options(p: argparse.ArgumentParser) -> None:
    """How the C meets the user's firmware (compile and tune write C)."""
    p.add_argument("--name", help="prefix of every symbol the model exports (NAME_run, NAME.h, NAME_ARENA_BYTES); "
                                  "default: the model's file name as a C identifier")
    p.add_argument("--arena", choices=("static", "extern"), default="static",
                   help="static (default): the arena is an array in model.c; extern: the firmware gives it to every "
                        "call (NAME_run(arena)), so models that never run at once can share one")
    p.add_argument("--arena-section", action="append", default=[], metavar="[REGION=]SECTION",
                   help="put the static arena (of REGION, default the first region) in this linker section "
                        "(repeatable)")
    p.add_argument("--arduino", action="store_true", help="also write arduino/NAME/, an Arduino library")


def _code(args):
    from mcudeploy.plan.code_options import CodeOptions

    return CodeOptions.parse(args.name, args.arena, args.arena_section, args.arduino)


def _system_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stages", type=int, metavar="N",
                   help="with a system as -b (boards/systems/): the pipeline's stages (default: one per core)")


def _system(args):
    """The system -b names (boards/systems/NAME.json), or None for a board; options that apply to one
    kind only are refused in one sentence."""
    from mcudeploy.stages.system import is_system, load_system

    if not args.board or not is_system(args.board):
        given = [o for o, v in (("--stages", getattr(args, "stages", None)),
                                (f"--objective {args.objective}", args.objective in SYSTEM_OBJECTIVES)) if v]
        if given:
            raise MCUDeployError(f"{given[0]} applies to a system of cores or chips (e.g. -b qemu-m4x2), not to "
                                 f"the board {args.board}")
        return None
    ports = getattr(args, "port", None) if args.command not in ("flash", "run", "measure") else None  # one per stage
    given = [o for o, v in (("--fast-memory", getattr(args, "fast_memory", None)), ("--port", ports),
                            (f"--objective {args.objective}", args.objective in BOARD_OBJECTIVES),
                            ("--memory-budget", args.memory_budget)) if v]
    if given:
        raise MCUDeployError(f"{given[0]} applies to one board, not to the system {args.board}"
                             + (f" (a system takes {', '.join(SYSTEM_OBJECTIVES)})" if "objective" in given[0] else ""))
    return load_system(args.board)


def _compile_system(args, system):
    from mcudeploy.frontend import import_model
    from mcudeploy.compile import lower
    from mcudeploy.stages.system_plan import compile_system

    # _system refused --fast-memory and a board's objective; args.objective is the system's own
    options = _plan_arguments(argparse.Namespace(**{**vars(args), "objective": None}))
    if options["stream_input"]:
        raise MCUDeployError("--stream-input applies to a model on one board; a system's stages pass their "
                             "inputs between cores or chips whole")
    graph = lower(import_model(args.model, options["input_shapes"]), int8_input=options["int8_input"])
    return compile_system(graph, system, args.model, args.stages, args.objective or "throughput",
                          options["schedule_method"], options["schedule_time_limit"])


def _allow_overflow_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-overflow", action="store_true",
                   help="go on with a plan that does not fit the board (a region or its flash; refused by default, "
                        "before anything is written), saying by how much as a warning")


# what --allow-overflow does, per command, in the refusal of a plan that does not fit (mcudeploy/fit.py)
ANYWAY = {"compile": "writes it anyway", "tune": "writes it anyway", "plan": "shows the plan anyway"}


def _check_fit(args, compiled):
    """``compiled``, refused in one sentence when it does not fit its board (unless --allow-overflow)."""
    from mcudeploy.fit import TO_THE_BUILD, check_fit

    check_fit(compiled, getattr(args, "allow_overflow", False), ANYWAY.get(args.command, TO_THE_BUILD), _to_stderr)
    return compiled


def _compile(args, fast_memory=None, earlier={}):
    from mcudeploy.compile import compile_model

    options = _plan_arguments(args)
    options["fast_memory"] = fast_memory or options["fast_memory"]
    return _check_fit(args, compile_model(args.model, args.board, earlier=earlier, **options))


def cmd_boards(args) -> int:
    from mcudeploy.boards import all_boards

    boards = all_boards()
    width = max(len(b.name) for b in boards)
    for b in boards:
        alias = f" (alias of {b.alias_of})" if b.alias_of else ""
        sram = " + ".join(f"{r.size // 1024} KB {r.name}" for r in b.regions if not r.excluded)
        print(f"{b.name:<{width}}  {b.kind:<8}  {b.core:<12}  {sram:<24}  {b.description}{alias}")
    from mcudeploy.stages.system import all_systems

    for s in all_systems():
        cores = f"{len(s.units)} core(s)"
        print(f"{s.name:<{width}}  {'system':<8}  {cores:<12}  {s.topology:<24}  {s.description}")
    from mcudeploy.device.pio_project import platform_dir

    print(f"\nin your own PlatformIO project: platform = symlink://{platform_dir().resolve().as_posix()} and board = "
          f"a microcontroller above (or its PlatformIO name, e.g. nucleo_f446re)")
    return 0


def cmd_ops(args) -> int:
    from mcudeploy.frontend.catalog import FORMATS, lines

    formats = [args.format] if args.format else list(FORMATS)
    for i, fmt in enumerate(formats):
        if len(formats) > 1:
            print(("\n" if i else "") + {"tflite": "TFLite builtins", "onnx": "ONNX op types"}[fmt])
        print("\n".join(lines(fmt, args.type)))
    return 0


def cmd_compile(args) -> int:
    check_output(args.output, folder=True)
    with output_lock(args.output, "compile"):
        return _compile_into(args)


def _compile_into(args) -> int:
    from mcudeploy.codegen import write_project
    from mcudeploy.report.text import summary

    import dataclasses

    from mcudeploy.codegen.emit import c_name

    system = _system(args)
    if system is not None:
        from mcudeploy.stages.system_plan import system_lines, write_system

        plan = _compile_system(args, system)
        with writing(args.output):
            out = write_system(plan, args.output)
        print("\n".join(system_lines(plan)))
        print(f"wrote {out}/stage0..stage{len(plan.times) - 1}/ (each stage's C project) and plan.json")
        return 0
    code = _code(args)
    compiled = dataclasses.replace(_compile(args), code=code)
    with writing(args.output):
        out = write_project(compiled, args.output)
    print(summary(compiled))
    print(f"wrote {out}/model.c, {c_name(compiled)}.h, the build files (CMakeLists.txt, library.json"
          f"{', arduino/' if code.arduino else ''}; README.txt) and plan.json")
    return 0


def cmd_plan(args) -> int:
    if args.show_axes:
        from mcudeploy.frontend import import_model, parse_input_shapes
        from mcudeploy.compile import lower
        from mcudeploy.report.axes import axes_lines

        print("\n".join(axes_lines(lower(import_model(args.model, parse_input_shapes(args.input_shape)),
                                         int8_input=args.int8_input, stream_input=args.stream_input))))
        return 0
    from mcudeploy.report.text import summary

    print(summary(_compile(args), detail=True))
    return 0


def cmd_report(args) -> int:
    from mcudeploy.report.html import read_plan, write_report

    from mcudeploy.stages.system_plan import read_system_plan

    system = read_system_plan(args.plan)
    if system is not None:  # a system's plan.json: the stages on the topology and their balance
        if args.text:
            from mcudeploy.stages.system_plan import plan_lines

            print("\n".join(plan_lines(system)))
            return 0
        from mcudeploy.report.system import write_system_report

        if args.output:
            check_output(args.output, folder=False)
        page, *stages = write_system_report(args.plan, system, args.output)
        print(f"wrote {page}" + (f" and each stage's memory report ({len(stages)})" if stages else ""))
        return 0
    if args.text:
        from mcudeploy.report.text import plan_text

        print(plan_text(read_plan(args.plan), detail=True))
        return 0
    if args.output:
        check_output(args.output, folder=False)
    print(f"wrote {write_report(args.plan, args.output, say=_to_stderr)}")
    return 0


def _target(args, say=print):
    """(compiled, the graph of the numpy reference, the model file) of run, measure and flash: the recorded
    plan of a project folder (mcudeploy/project.py), else the model compiled afresh."""
    from mcudeploy.project import is_project, load_project

    if not is_project(args.model):
        if args.board is None:
            raise MCUDeployError("give the board with -b BOARD (see mcudeploy boards)")
        compiled = _compile(args)
        return compiled, compiled.graph, args.model
    fixed = _given_plan_options(args)
    if fixed:
        raise MCUDeployError(f"{args.model} holds a plan whose shapes, order and offsets are fixed: {fixed[0]} "
                             f"applies only to a model file (compile or tune the model again with it)")
    project = load_project(args.model, args.board)
    _check_fit(args, project.compiled)  # a plan that runs past its board's memory, refused before any board is touched
    for line in project.lines():
        say(line)
    return project.compiled, project.unsplit, project.model_path


def _run_system(args, system) -> int:
    """run -b SYSTEM: the frames streamed through the stages, checked bit for bit against the one-chip plan."""
    from mcudeploy import check
    from mcudeploy.stages.stream import run_system
    from mcudeploy.stages.system_plan import system_lines

    plan = _compile_system(args, system)
    samples = check.load_input(args.input, plan.graph, _to_stderr) if args.input else \
        check.random_inputs(plan.graph, args.samples if args.samples is not None else RANDOM_SAMPLES)
    result = run_system(plan, samples, check=args.check, ports=args.port or ())
    print("\n".join(system_lines(result.plan) + result.lines))
    if args.output:
        _save_outputs(args.output, plan.outputs, result.outputs)
    if not args.check:
        for k, name in enumerate(plan.outputs):
            value = result.outputs[0][k]
            print(f"{name}: {value.ravel()[:16].tolist()}{' ...' if value.size > 16 else ''}")
        return 0
    return 0 if result.ok else 1


def _save_outputs(path, names, outputs, say=print) -> None:
    import io

    import numpy as np

    from mcudeploy.files import write_atomic

    buf = io.BytesIO()
    np.savez(buf, **{n: np.stack([o[k] for o in outputs]) for k, n in enumerate(names)})
    with writing(path):
        write_atomic(path, buf.getvalue())
    say(f"wrote the outputs of {len(outputs)} sample(s) to {path}")


def _run_dataset(args) -> int:
    """run --dataset: every sample of a data set on the deployed model, its reference and --float-model
    (mcudeploy/check/validate.py); exit status 1 where the C differs from mcudeploy's numpy reference."""
    import json

    from mcudeploy.check.dataset import load_dataset
    from mcudeploy.check.validate import float_reference, validate
    from mcudeploy.project import is_project

    given = [o for o, v in (("--input", args.input), ("--check", args.check)) if v]
    if given:
        raise MCUDeployError(f"give --dataset or {given[0]}, not both (--dataset compares every sample with the "
                             f"reference itself)")
    if not is_project(args.model) and args.board and _system(args) is not None:
        raise MCUDeployError(f"--dataset runs on one board, not on the system {args.board}")
    compiled, reference, model = _target(args, say=_to_stderr if args.json else print)
    data = load_dataset(args.dataset, compiled.graph, _to_stderr)
    if args.samples is not None:
        if args.samples < 1:
            raise MCUDeployError(f"--samples {args.samples}: give 1 or more (the first samples of the data set)")
        data = data.head(args.samples)
    float_ref = float_reference(args.float_model, reference) if args.float_model else None
    if compiled.graph.states and len(data) > 1:
        _to_stderr(f"a stateful model: the {len(data)} samples run in sequence, each from the state the one before "
                   f"left")
    sessions = 1  # a pool of N boards takes the samples in N runs at once, one session each (device/runner.py)
    if compiled.board.kind == "host":
        if args.boards != 1 or args.place is not None or args.port:
            raise MCUDeployError("--boards, --place and --port are for Cortex-M boards; the host board runs here")
        result, outputs, board_run = validate(compiled, reference, model, data, float_ref)
    else:
        with _pool(args, compiled.board.name) as pool:
            sessions = 1 if compiled.graph.states else min(pool.size, len(data))
            result, outputs, board_run = validate(compiled, reference, model, data, float_ref, pool=pool)
    if args.output:
        _save_outputs(args.output, compiled.graph.model_outputs(), outputs, _to_stderr if args.json else print)
    totals = [r.total_ticks for r in board_run.runs] if board_run is not None else []
    if args.json:
        report = result.as_dict()
        if board_run is not None:
            report["board_run"] = {"sessions": sessions, "ticks_per_inference": [min(totals), max(totals)]}
        print(json.dumps(report, indent=1))
    else:
        if board_run is not None:
            print("\n".join(board_run.firmware.report.lines()))
            how = "in one session" if sessions == 1 else f"on {sessions} boards at once, one session each"
            print(f"{len(totals)} samples on {compiled.board.name} {how}: {min(totals):,} .. {max(totals):,} ticks "
                  f"per inference")
        print("\n".join(result.lines()))
    return 0 if result.ok else 1


def cmd_run(args) -> int:
    from mcudeploy import check
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.project import is_project

    if args.output:
        check_output(args.output, folder=False)
    if args.dataset:
        return _run_dataset(args)
    if args.json:
        raise MCUDeployError("--json applies to run --dataset (the report as JSON)")
    if args.float_model and not args.check:
        raise MCUDeployError("--float-model applies only with --check")
    from mcudeploy.frontend import is_tflite_model
    system = None if is_project(args.model) else _system(args)
    if system is not None:
        return _run_system(args, system)
    compiled, reference, model = _target(args)
    graph = compiled.graph
    tflite = is_tflite_model(model)
    if tflite and args.float_model:
        raise MCUDeployError(f"--float-model applies to ONNX models; {model} is checked against TensorFlow Lite Micro")
    float_model = check.float_model(args.float_model, reference) if args.float_model else None
    samples_given = args.samples if args.samples is not None else RANDOM_SAMPLES
    count = max(samples_given, STREAM_STEPS) if graph.states and args.check else samples_given
    samples = check.load_input(args.input, graph, _to_stderr) if args.input else check.random_inputs(graph, count)
    if graph.states and len(samples) > 1:
        print(f"a stateful model: {len(samples)} inputs in sequence, each call from the state the one before left")
    board_run = None
    if compiled.board.kind == "host":
        if args.boards != 1 or args.place is not None:
            raise MCUDeployError("--boards and --place spread a run over Cortex-M boards; the host board runs here")
        with tempfile.TemporaryDirectory(prefix="mcud-run-") as tmp:
            outputs = run_compiled_on_host(compiled, samples, Path(tmp))
    else:
        from mcudeploy.device.runner import run_on_board, ticks_lines

        with _pool(args, compiled.board.name) as pool:
            board_run = run_on_board(compiled, samples, pool=pool)
        outputs = board_run.outputs
        for line in board_run.firmware.report.lines() + ticks_lines(board_run):
            print(line)
    if args.output:
        _save_outputs(args.output, graph.model_outputs(), outputs)
    if not args.check:
        for k, name in enumerate(graph.model_outputs()):
            print(f"{name}: {outputs[0][k].ravel()[:16].tolist()}{' ...' if outputs[0][k].size > 16 else ''}")
        return 0
    same_as_host = True
    if board_run is not None:
        from mcudeploy.check.against_host import compare_with_host

        same_as_host, lines = compare_with_host(compiled, outputs, samples)
        for line in lines:
            print(line)
    if tflite:
        verdict = check.check_tflite_outputs(model, compiled, outputs, samples, reference)
    else:
        verdict = check.check_outputs(model, compiled, outputs, samples, reference, float_model)
    for line in verdict.lines():
        print(line)
    return 0 if verdict.ok and same_as_host else 1


def cmd_measure(args) -> int:
    import json

    from mcudeploy.device.measure import measure_model
    from mcudeploy.project import is_project

    folder = is_project(args.model)
    system = None if folder else _system(args)
    output = _measure_output(args, folder, system)
    if system is not None:
        from mcudeploy.stages.stream import measure_system
        from mcudeploy.stages.system_plan import system_lines, system_plan_dict

        plan = measure_system(lambda: _compile_system(args, system), repeat=args.repeat, ports=args.port or ())
        print(json.dumps(system_plan_dict(plan), indent=1) if args.json else "\n".join(system_lines(plan)))
        return 0
    if args.settle:
        if folder:
            raise MCUDeployError(f"--settle compiles the model again each round: give the model file, not {args.model}")
        return _settle(args)
    target = None
    if args.estimate_for:
        from mcudeploy.boards import load_board
        from mcudeploy.estimate.cycles import target_for
    loaded = _target(args, say=_to_stderr if args.json else print)[0] if folder else None
    with _pool(args, loaded.board.name if loaded else args.board) as pool:  # checked before the compile
        compiled = loaded or _compile(args)
        if args.estimate_for:
            target = target_for(load_board(args.estimate_for), compiled.board)
        result = measure_model(compiled, repeat=args.repeat, pool=pool, estimate_for=target)
    if args.json:
        print(json.dumps(result.as_dict(), indent=1))
    else:
        for line in (result.memory.lines() if result.memory else []) + result.lines():
            print(line)
    if output is not None:
        _keep_timings(result, compiled, output, folder, say=_to_stderr if args.json else print)
    return 0


def _measure_output(args, folder: bool, system):
    """The folder measure writes its timings and report into: a compile or tune folder itself, or -o DIR
    (checked before any work); None for a model file without -o."""
    from mcudeploy.project import plan_file

    if args.output is None:
        if not folder:
            return None
        where = plan_file(args.model).parent
        if where.is_dir() and not os.access(where, os.W_OK | os.X_OK):
            _to_stderr(f"the folder {where} is not writable: the timings are printed, not kept in it (give a copy)")
            return None
        return where
    if folder:
        raise MCUDeployError(f"measure {args.model} writes its timings into that folder; -o applies to a model file")
    if system is not None or args.settle:
        raise MCUDeployError("-o keeps one board's plan and timings; it applies neither to a system nor to --settle")
    return check_output(args.output, folder=True)


def _keep_timings(result, compiled, output: Path, folder: bool, say) -> None:
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
        if not folder:
            write_project(compiled, output)
        write_timings(output, measured, read_plan(output))
        page = write_report(output, say=_to_stderr)
    say(f"wrote {output / TIMINGS_FILE} and {page}" + ("" if folder else f" (and the plan measured: {output}/plan.json, "
                                                                          f"model.c and the build files)"))


def _settle(args) -> int:
    """measure --settle: the stall feedback's rounds (search/stalls.py) on a board whose DMA engine copies
    the swaps, one line per round."""
    from mcudeploy import check
    from mcudeploy.search.stalls import round_lines, settle_on_board

    if not args.fast_memory:
        raise MCUDeployError("--settle needs --fast-memory: without a budget nothing is swapped, so no copy can stall")
    if len(args.port) > 1 or args.boards > 1 or args.place is not None or args.estimate_for:
        raise MCUDeployError("--settle runs on one board: give at most one --port, and no --boards, --place or "
                             "--estimate-for")
    first = _compile(args)
    if first.offload is None or not first.offload.asynchronous:
        raise MCUDeployError(f"--settle: nothing is copied by DMA on {first.board.name} at this budget (a board "
                             f"with a dma_engine reaching its slow region swaps asynchronously)")
    budget = first.offload.budget_bytes
    samples = check.random_inputs(first.graph, 1)
    _, history = settle_on_board(lambda earlier: first if not earlier else _compile(args, budget, earlier),
                                        samples, port=args.port[0] if args.port else None)
    for line in round_lines(history):
        print(line)
    return 0


def cmd_tune(args) -> int:
    check_output(args.output, folder=True)
    if args.schedule != "auto":
        raise MCUDeployError(f"tune chooses the execution order itself (it compiles the kept cuts with several "
                             f"methods and keeps the least arena): --schedule {args.schedule} applies to compile, "
                             f"plan, run, measure and flash")
    code = _code(args)
    objective = _objective(args)
    with output_lock(args.output, "tune"):
        return _tune_into(args, code, objective)


def _tune_into(args, code, objective) -> int:
    from mcudeploy.frontend import parse_input_shapes
    from mcudeploy.search import Tuner, write_result
    from mcudeploy.search.fast import offload_line
    from mcudeploy.device.pool import BOARD_LOST, NoBoardLeft
    from mcudeploy.search.state import STATE_FILE

    BOARD_GONE = (NoBoardLeft, *BOARD_LOST)
    try:
        with _pool(args, args.board) as pool:
            tuner = Tuner(args.model, args.board, args.output, max_overhead=args.max_overhead,
                          time_limit=args.time_limit, input_shapes=parse_input_shapes(args.input_shape),
                          budget=args.budget, int8_input=args.int8_input, fast_memory=args.fast_memory, pool=pool,
                          stream_input=args.stream_input, objective=objective)
            result = tuner.run()
    except KeyboardInterrupt:
        print(f"mcudeploy: tune interrupted; what it learnt is in {Path(args.output) / STATE_FILE}: run the same "
              f"command to resume", file=sys.stderr)
        return 130
    except BOARD_GONE as exc:
        raise MCUDeployError(f"{str(exc).rstrip('.')}; what the tune learnt is in {Path(args.output) / STATE_FILE}: "
                             f"run the same command to resume") from None
    _check_fit(args, result.best.compiled)
    with writing(args.output):
        out = write_result(result, code)
    best, base = result.best, result.baseline
    if objective.name != "memory":
        print(f"objective {objective.name}: arena {best.arena:,} B (the memory objective's {base.arena:,} B); "
              f"{best.ticks:,} ticks measured (the memory objective's {base.ticks:,}, "
              f"{best.ticks / base.ticks - 1:+.1%}); whole runs {best.run_ticks:,} and {base.run_ticks:,} ticks")
        print(f"wrote {out}/model.c, {code.c_name(args.model)}.h, the build files and plan.json")
        return 0
    saved = 1 - best.arena / base.arena
    if best.compiled.offload is not None:
        print(offload_line(best))
    print(f"arena {best.arena:,} B (unsplit {base.arena:,} B, {saved:.1%} less); "
          f"{best.ticks:,} ticks (unsplit {base.ticks:,}, {best.ticks / base.ticks - 1:+.1%}, budget "
          f"{result.budget_ticks:,})")
    print(f"explored: {result.work.summary()} (budget {result.budget} candidates); {result.seconds:.0f} s")
    if result.timed_out:
        print(f"stopped at the time limit ({result.time_limit:g} s) before the search was done: this plan is not the "
              f"reproducible result of --budget {result.budget}; run the same command again to resume, or give a "
              f"larger --time-limit")
    else:
        print("stopped: " + ("the budget was spent" if result.stopped_by == "budget" else
                             "no cut near the peak lowered the arena within the latency budget"))
    print(f"wrote {out}/model.c, {code.c_name(args.model)}.h, the build files and plan.json")
    return 0


def cmd_flash(args) -> int:
    from mcudeploy.boards import load_board
    from mcudeploy.device import emulator, flash

    if args.stop or args.all:
        if args.board is None:
            raise MCUDeployError("give the board whose emulator to stop with -b BOARD")
        args.port = _one_port(args, "flash --stop takes one --port, the emulator's")
        if args.all:
            stopped = emulator.stop_emulators(args.board)
        else:
            emu = emulator.stop_emulator(args.board, emulator.socket_port(args.port) if args.port else None)
            stopped = [emu] if emu else []
        for emu in stopped:
            print(f"stopped the emulator of {emu.board} on {emu.url} (pid {emu.pid})")
        if not stopped:
            print(f"no emulator runs for {args.board}" + (f" on {args.port}" if args.port else ""))
        return 0
    from mcudeploy.project import is_project

    if args.project_dir:
        check_output(args.project_dir, folder=True)
    folder = args.model is not None and is_project(args.model)
    system = None if folder else _system(args)
    if system is not None:
        return _flash_system(args, system)
    args.port = _one_port(args, f"flash takes one --port for the board {args.board or args.model}; several are for "
                                f"a system's stages (-b SYSTEM)")
    if folder:
        compiled = _target(args)[0]
    elif args.board is None:
        raise MCUDeployError("give the board with -b BOARD (see mcudeploy boards)")
    elif args.model is None:
        if _given_plan_options(args):
            raise MCUDeployError(f"{_given_plan_options(args)[0]} changes a model's plan: flash the measurer alone "
                                 f"without it, or give a model")
        compiled = None
    else:
        flash.flashable(load_board(args.board), args.port)  # refused before the compile
        compiled = _compile(args)
    result = flash.flash_plan(compiled, compiled.board.name if compiled else args.board, port=args.port,
                              project=args.project_dir, upload_firmware=not args.no_upload)
    for line in flash.summary(result):
        print(line)
    return 0


def _one_port(args, refusal: str):
    """The one --port of a command that takes at most one (None without), or ``refusal`` as its error."""
    if len(args.port) > 1:
        raise MCUDeployError(refusal)
    return args.port[0] if args.port else None


def _flash_system(args, system) -> int:
    from mcudeploy.device.pio_project import default_project_dir
    from mcudeploy.stages.flash import flash_system, summary

    if not args.model:
        raise MCUDeployError(f"flash -b {system.name} needs the model its stages run (the measurer alone is one board's)")
    plan = _compile_system(args, system)
    project = Path(args.project_dir or default_project_dir(plan.staged.stages[0].compiled.board, args.model)
                   .with_name(f"{system.name}-{Path(args.model).stem}")).resolve()
    results = flash_system(plan, project, args.port, upload=not args.no_upload)
    print("\n".join(summary(plan, results)))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcudeploy", description="Deploy ONNX and TFLite models on microcontrollers.")
    _global_options(p)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("boards", help="list the known boards")
    s.set_defaults(run=cmd_boards)

    s = sub.add_parser("ops", help="list the operators mcudeploy runs, per format and type")
    s.add_argument("--format", choices=("tflite", "onnx"), help="one format only (default: both)")
    s.add_argument("--type", metavar="TYPE", help="only the operators that run at TYPE (int16, int8, float32, ...)")
    s.set_defaults(run=cmd_ops)

    s = sub.add_parser("compile", help="generate the C project and plan.json")
    _model_options(s)
    s.add_argument("-o", "--output", required=True, help="output directory")
    _c_options(s)
    _system_options(s)
    s.set_defaults(run=cmd_compile)

    s = sub.add_parser("plan", help="print the memory plan, no C")
    _model_options(s)
    s.add_argument("--show-axes", action="store_true",
                   help="print the loop axes that connect operators (the components a split can cut) and stop")
    s.set_defaults(run=cmd_plan)

    s = sub.add_parser("report", help="draw a plan.json as a self-contained HTML page")
    s.add_argument("plan", help="a plan.json (or the folder `compile` wrote it to)")
    s.add_argument("-o", "--output", help="the HTML file to write (default: report.html beside the plan)")
    s.add_argument("--text", action="store_true", help="print the plan's summary as text instead (what `plan` prints)")
    s.set_defaults(run=cmd_report)

    s = sub.add_parser("run", help="build and run the model (or a compiled or tuned project) on a board")
    _model_options(s, project=True)
    s.add_argument("--input", help="an input as .npy (one input) or .npz (by input name)")
    s.add_argument("--check", action="store_true",
                   help="check every operator against onnxruntime (a .tflite: the outputs against TensorFlow Lite "
                        "Micro, bit for bit) and the C against the numpy reference")
    s.add_argument("--samples", type=int,
                   help=f"random inputs for --check (default {RANDOM_SAMPLES}; a stateful model runs at least "
                        f"{STREAM_STEPS} in sequence); with --dataset, its first N samples")
    s.add_argument("--dataset", metavar="DIR|FILE.npz",
                   help="run every sample of a data set (a .npz of many samples, arrays keyed by input name or x, "
                        "labels as y; or a folder of one-sample .npy/.npz files) on the model, its reference and "
                        "--float-model: agreement per output, top-1 accuracy against the labels, the per-layer error "
                        "on the worst sample (docs/user-guide.md: Validate on your data)")
    s.add_argument("--json", action="store_true", help="with --dataset: print the report as JSON")
    s.add_argument("--float-model", metavar="FILE",
                   help="with --check, also report the outputs' SNR and top-1 against this float ONNX model (the "
                        "one the int8 model was quantized from); with --dataset, a float ONNX or .tflite model")
    s.add_argument("-o", "--output", help="save the outputs to this .npz")
    _pool_options(s)
    _system_options(s)
    s.set_defaults(run=cmd_run)

    s = sub.add_parser("measure", help="per-operator timings on a board (cached per kernel)")
    _model_options(s, project=True)
    _pool_options(s)
    s.add_argument("--json", action="store_true", help="print the timings as JSON")
    s.add_argument("-o", "--output", metavar="DIR",
                   help="keep the timings: DIR/timings.json (with the firmware's flash, code and constants sizes from "
                        "its ELF) and DIR/report.html showing them, beside the plan measured (its C project and "
                        "plan.json, written there too); a compile -o or tune -o folder gets them without -o")
    s.add_argument("--repeat", type=int, default=5, help="runs of each operator; the least ticks count (default 5)")
    s.add_argument("--estimate-for", metavar="BOARD",
                   help="on an emulated board: also estimate the cycles and milliseconds on this real board (its core, "
                        "clock and flash wait states) from a traced run; an estimate, not a measurement")
    s.add_argument("--settle", action="store_true",
                   help="with --fast-memory on a board with a DMA engine: run the model whole, move the trigger of "
                        "each copy back whose wait stalled a step earlier, and run again until no wait stalls; "
                        "prints each round's stalls and moved triggers")
    _system_options(s)
    s.set_defaults(run=cmd_measure)

    s = sub.add_parser("tune", help="split operators for the least memory within a latency budget, timed on a board "
                                    "(--objective latency: the least ticks within a memory budget)")
    s.add_argument("model", help="the model file (.onnx or .tflite)")
    _board_option(s)
    _plan_options(s, tune=True)
    _allow_overflow_option(s)
    s.add_argument("--max-overhead", type=float, default=0.05, metavar="F",
                   help="latency the split may add, as a fraction of the unsplit model's (default 0.05; the memory "
                        "objective's)")
    s.add_argument("--budget", type=int, default=CANDIDATES, metavar="N",
                   help="candidate schemes the search may evaluate (compile and estimate; the best are timed on the "
                        f"board): work, not seconds, so the same options give the same plan on a busy machine "
                        f"(default {CANDIDATES})")
    s.add_argument("--time-limit", type=float, default=TUNE_TIME_LIMIT, metavar="S",
                   help="an outer bound in wall-clock seconds: the search stops there (keeping the best plan found) "
                        f"and says it was cut short; run again to resume (default {TUNE_TIME_LIMIT:g})")
    _pool_options(s)
    s.add_argument("-o", "--output", required=True, help="output directory (C project, plan.json, tune-state.json)")
    _c_options(s)
    s.set_defaults(run=cmd_tune)

    s = sub.add_parser("flash", help="build the measurer (and a model) with PlatformIO and upload it")
    s.add_argument("model", nargs="?", help="the model file, .onnx or .tflite, or a folder written by compile -o or "
                                            "tune -o (or its plan.json): exactly the plan recorded there (none: the "
                                            "measurer alone)")
    _board_option(s, required=False, help="; for a folder, its plan's board; or a system (boards/systems/): each "
                                          "stage's firmware on its own chip")
    _plan_options(s)
    _allow_overflow_option(s)
    s.add_argument("--port", action="append", default=[],
                   help="emulated board: socket://127.0.0.1:PORT to listen on (default: a free port); real board: its "
                        "serial port, e.g. /dev/ttyACM0; with a system, once per stage in stage order")
    _system_options(s)
    s.add_argument("--project-dir", help="where to write the PlatformIO project (default: in the mcudeploy cache)")
    s.add_argument("--no-upload", action="store_true", help="build and report memory use, do not upload")
    s.add_argument("--stop", action="store_true", help="stop the emulator an earlier flash of BOARD started (the one "
                                                      "on --port when several run)")
    s.add_argument("--all", action="store_true", help="with --stop: stop every emulator of BOARD")
    s.set_defaults(run=cmd_flash)
    for command in sub.choices.values():  # the global options are taken after the command too
        _global_options(command, argparse.SUPPRESS)  # (there, not given: the value before the command stands)
    return p


def _global_options(p: argparse.ArgumentParser, default=False) -> None:
    p.add_argument("--version", action="version", version=f"mcudeploy {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", default=default, help="log progress and decisions")


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    interrupts.install()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    try:
        interrupts.import_deferred()
        code = args.run(args)
        if interrupts.received():  # a signal whose KeyboardInterrupt a library turned into something it handled
            print("mcudeploy: interrupted", file=sys.stderr)
            return 130
        return code
    except KeyboardInterrupt:
        print("mcudeploy: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (`| head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # noqa: BLE001  (the last resort below: a bug, told in one sentence)
        if interrupts.received():  # the interruption surfaced as another error (e.g. in an import)
            print("mcudeploy: interrupted", file=sys.stderr)
            return 130
        if isinstance(exc, MCUDeployError):
            print(f"mcudeploy: error: {exc}", file=sys.stderr)
            return 1
        if args.verbose:
            traceback.print_exc()
        text = str(exc).strip().splitlines()
        print(f"mcudeploy: internal error: {type(exc).__name__}: {text[0] if text else '(no message)'}; please "
              f"report it with the model and this command{'' if args.verbose else ' (-v shows the traceback)'}",
              file=sys.stderr)
        return INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())


def entry() -> None:
    """The `mcudeploy` command: main(), then exit with its status."""
    code = main()
    if code == 130:
        # Interrupted. CPython remembers a KeyboardInterrupt that went through PyRun_String (some
        # C extensions run Python that way while they are imported) even after main() caught it,
        # and would kill itself with SIGINT at exit instead of returning 130. Exit by hand, after
        # what a normal exit does (atexit hooks, temporary folders, buffered output).
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)
