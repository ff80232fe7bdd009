"""The ``mcudeploy`` command: thin commands over the library."""
from __future__ import annotations

import atexit
import argparse
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Optional

from mcudeploy import __version__, interrupts
from mcudeploy.choices import BOARD_OBJECTIVES, SCHEDULE_METHODS, SYSTEM_OBJECTIVES
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import check_output, output_lock, writing
from mcudeploy.search.budget import CANDIDATES, EFFORT as TUNE_EFFORT, TIME_LIMIT as TUNE_TIME_LIMIT
from mcudeploy.target.board import to_stderr as _to_stderr
from mcudeploy.target.request import RANDOM_SAMPLES, STREAM_STEPS, MeasureRequest, Request, RunRequest

log = logging.getLogger("mcudeploy")
SCHEDULE_TIME_LIMIT = 10.0  # --time-limit of the commands that compile a model, in effort seconds
INTERNAL_ERROR = 3  # exit status of a bug (1: an error the user can fix, 2: argparse's usage errors)


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
# every command that builds a plan, handed to the target as one Request (_request; target/board.py's
# plan_options turns them into a CompileOptions), and refused with a folder, whose plan already
# fixes them (_given_plan_options).
PLAN_OPTIONS = (("--input-shape", "input_shape", []), ("--int8-input", "int8_input", False),
                ("--stream-input", "stream_input", False), ("--fast-memory", "fast_memory", None),
                ("--schedule", "schedule", "auto"), ("--time-limit", "time_limit", SCHEDULE_TIME_LIMIT),
                ("--objective", "objective", None), ("--memory-budget", "memory_budget", None))
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
                        "scratch unless it must go to fit; the constants they read copied to SRAM where room is "
                        "left); balanced, the fastest within 1.25x the memory "
                        "objective's arena" + ("; tune: memory, the least arena within --max-overhead, or latency, "
                                               "the least measured ticks within the budget" if tune else
                                               ". A system (-b SYSTEM): throughput (default), the least bottleneck "
                                               "over --stages stages; fit, the fewest stages whose weights and arena "
                                               "fit their chips") + "; latency on a system whose chip's cores share "
                                               "its memory (-b qemu-an521): one inference on all its cores"
                        + (", the plan chosen by measuring plans on them" if tune else ""))
    p.add_argument("--memory-budget", metavar="BYTES",
                   help="with --objective latency or balanced: the bytes the arena (and latency's constants in SRAM) "
                        "may take in the board's first region (65536, 64K; default: the region, less the stack)")
    if not tune:
        p.add_argument("--time-limit", type=float, default=SCHEDULE_TIME_LIMIT, metavar="S",
                       help="effort the schedule method may spend, in seconds of work on an idle machine (CP-SAT's "
                            "deterministic time, the heuristics' own counts): the same order on a loaded machine, "
                            "where it takes longer (default 10)")


def _given_plan_options(args) -> list[str]:
    """The plan-changing options given other than their defaults, in PLAN_OPTIONS' order."""
    return [option for option, dest, default in PLAN_OPTIONS if getattr(args, dest, default) != default]


def _request(args) -> Request:
    """What the command asks of its target (mcudeploy/target/), from its options, once."""
    return Request(command=args.command, model=getattr(args, "model", None), board=args.board,
                   input_shape=tuple(args.input_shape), int8_input=args.int8_input, stream_input=args.stream_input,
                   fast_memory=args.fast_memory, schedule=args.schedule,
                   time_limit=getattr(args, "time_limit", SCHEDULE_TIME_LIMIT), objective=args.objective,
                   memory_budget=args.memory_budget, stages=getattr(args, "stages", None),
                   allow_overflow=getattr(args, "allow_overflow", False), given=tuple(_given_plan_options(args)),
                   ports=tuple(getattr(args, "port", ())), boards=getattr(args, "boards", 1),
                   place=getattr(args, "place", None))


def _resolve(args, folders: bool = True, check_options: bool = True):
    """The board or system -b names (or a compile or tune folder's plan): mcudeploy/target/."""
    from mcudeploy.target import resolve

    return resolve(_request(args), folders, check_options)


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


def _allow_overflow_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-overflow", action="store_true",
                   help="go on with a plan that does not fit the board (a region or its flash; refused by default, "
                        "before anything is written), saying by how much as a warning")


def cmd_boards(args) -> int:
    from mcudeploy.boards import all_boards

    boards = all_boards()
    width = max(len(b.name) for b in boards)
    for b in boards:
        alias = f" (alias of {b.alias_of})" if b.alias_of else ""
        alias += "" if b.silicon else " [not yet run on silicon]"
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
    _resolve(args, folders=False).write(args.output, lambda: _code(args))
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
    from mcudeploy.target.board import BoardTarget

    print(summary(BoardTarget(_request(args)).compile(), detail=True))
    return 0


def cmd_report(args) -> int:
    from mcudeploy.report.show import report_plan

    for line in report_plan(args.plan, args.output, args.text, say=_to_stderr):
        print(line)
    return 0


def cmd_run(args) -> int:
    if args.output:
        check_output(args.output, folder=False)
    if args.sanitize:
        _host_only("--sanitize", args.board)
    run = RunRequest(input=args.input, samples=args.samples, check=args.check, float_model=args.float_model,
                     output=args.output, dataset=args.dataset, json=args.json, sanitize=args.sanitize)
    if args.dataset:
        given = [o for o, v in (("--input", args.input), ("--check", args.check)) if v]
        if given:
            raise MCUDeployError(f"give --dataset or {given[0]}, not both (--dataset compares every sample with the "
                                 f"reference itself)")
        return _resolve(args, check_options=bool(args.board)).run_dataset(run)
    if args.json:
        raise MCUDeployError("--json applies to run --dataset (the report as JSON)")
    if args.float_model and not args.check:
        raise MCUDeployError("--float-model applies only with --check")
    return _resolve(args).run(run)


def _host_only(option: str, board: Optional[str]) -> None:
    """Refuse ``option`` with a -b that is not the host board, before any work."""
    from mcudeploy.boards import load_board

    if board is None or board == "host":
        return
    try:
        kind = load_board(board).kind
    except MCUDeployError:
        kind = None
    if kind != "host":
        raise MCUDeployError(f"{option} builds the generated C for this computer with AddressSanitizer and "
                             f"UndefinedBehaviorSanitizer: give -b host, not -b {board}")


def cmd_measure(args) -> int:
    if args.sanitize:
        _host_only("--sanitize", args.board)
    target = _resolve(args)
    output = target.timings_folder(args.output, args.settle)
    measure = MeasureRequest(repeat=args.repeat, json=args.json, estimate_for=args.estimate_for, settle=args.settle,
                             sanitize=args.sanitize)
    return target.measure(measure, output, _settle_rounds)


def _settle_rounds(build, samples, port) -> list[str]:
    """measure --settle's rounds (search/stalls.py: above the targets, which hand it their compile)."""
    from mcudeploy.search.stalls import round_lines, settle_on_board

    return round_lines(settle_on_board(build, samples, port=port)[1])


def cmd_tune(args) -> int:
    check_output(args.output, folder=True)
    if args.schedule != "auto":
        raise MCUDeployError(f"tune chooses the execution order itself (it compiles the kept cuts with several "
                             f"methods and keeps the least arena): --schedule {args.schedule} applies to compile, "
                             f"plan, run, measure and flash")
    from mcudeploy.target import system_of
    from mcudeploy.target.board import objective as board_objective

    code = _code(args)
    if system_of(_request(args)) is not None:
        if args.objective != "latency":
            raise MCUDeployError(f"tune takes a board, or with --objective latency a system whose chip's cores share "
                                 f"its memory (one inference on its cores); {args.board} is a system")
        with output_lock(args.output, "tune"):
            return _resolve(args, folders=False).tune(args.output, lambda: _code(args), budget=args.budget)
    objective = board_objective(_request(args))
    with output_lock(args.output, "tune"):
        return _tune_into(args, code, objective)


def _tune_into(args, code, objective) -> int:
    from mcudeploy.frontend import parse_input_shapes
    from mcudeploy.search import TuneOptions, Tuner, write_result
    from mcudeploy.search.fast import offload_line
    from mcudeploy.device.pool import BOARD_LOST, NoBoardLeft
    from mcudeploy.search.state import STATE_FILE
    from mcudeploy.target.board import board_pool, check_fit

    BOARD_GONE = (NoBoardLeft, *BOARD_LOST)
    try:
        with board_pool(_request(args), args.board) as pool:
            options = TuneOptions(max_overhead=args.max_overhead, time_limit=args.time_limit, budget=args.budget,
                                  effort=args.effort,
                                  input_shapes=parse_input_shapes(args.input_shape), int8_input=args.int8_input,
                                  stream_input=args.stream_input, fast_memory=args.fast_memory, objective=objective)
            tuner = Tuner(args.model, args.board, args.output, options, pool=pool)
            result = tuner.run()
    except KeyboardInterrupt:
        print(f"mcudeploy: tune interrupted; what it learnt is in {Path(args.output) / STATE_FILE}: run the same "
              f"command to resume", file=sys.stderr)
        return 130
    except BOARD_GONE as exc:
        raise MCUDeployError(f"{str(exc).rstrip('.')}; what the tune learnt is in {Path(args.output) / STATE_FILE}: "
                             f"run the same command to resume") from None
    check_fit(_request(args), result.best.compiled)
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
    if args.stop or args.all:
        from mcudeploy.device import emulator
        from mcudeploy.target.board import one_port

        if args.board is None:
            raise MCUDeployError("give the board whose emulator to stop with -b BOARD")
        args.port = one_port(_request(args), "flash --stop takes one --port, the emulator's")
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
    if args.project_dir:
        check_output(args.project_dir, folder=True)
    _resolve(args).flash(args.project_dir, upload=not args.no_upload)
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
    s.add_argument("--sanitize", action="store_true",
                   help="with -b host: build the generated C, the kernels and the runner with AddressSanitizer and "
                        "UndefinedBehaviorSanitizer (gcc); a report fails the run in one sentence naming the operator")
    s.add_argument("--float-model", metavar="FILE",
                   help="with --check, also report the outputs' SNR and top-1 against this float ONNX model (the "
                        "one the int8 model was quantized from); with --dataset, a float ONNX or .tflite model")
    s.add_argument("-o", "--output", help="save the outputs to this .npz")
    _pool_options(s)
    _system_options(s)
    s.set_defaults(run=cmd_run)

    s = sub.add_parser("measure", help="per-operator timings on a board (cached per kernel), or on this computer "
                                       "(-b host)")
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
                        "clock and flash wait states) from a traced run; an estimate, not a measurement. A model file "
                        "is planned as that board would plan it (its flash cache, its first region as the latency "
                        "budget)")
    s.add_argument("--sanitize", action="store_true",
                   help="with -b host: time each operator in a build of the generated C, the kernels and the runner "
                        "with AddressSanitizer and UndefinedBehaviorSanitizer (gcc); a report fails the measure in "
                        "one sentence naming the operator")
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
                        f"(default {CANDIDATES}); on a system's cores (--objective latency), the plans measured on "
                        f"them")
    s.add_argument("--time-limit", type=float, default=TUNE_TIME_LIMIT, metavar="S",
                   help="an outer bound in wall-clock seconds: the search stops there (keeping the best plan found) "
                        f"and says it was cut short; run again to resume (default {TUNE_TIME_LIMIT:g})")
    s.add_argument("--effort", type=float, default=TUNE_EFFORT, metavar="S",
                   help="effort of each compile's schedule and placement, in seconds of work on an idle machine "
                        f"(CP-SAT's deterministic time: the same plan on a busy machine); less makes a faster tune, "
                        f"perhaps with a larger final arena (default {TUNE_EFFORT:g})")
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
        kept = _keep_report(argv, exc)
        print(f"mcudeploy: internal error: {type(exc).__name__}: {text[0].rstrip(':') if text else '(no message)'}; "
              f"please report it with the model and this command{f' and {kept}' if kept else ''}"
              f"{'' if args.verbose else ' (-v shows the traceback)'}", file=sys.stderr)
        return INTERNAL_ERROR


def _keep_report(argv, exc: BaseException) -> Optional[Path]:
    """The internal error's whole text (a compiler's output, say, below its first line) and traceback, kept in
    the cache folder for the report; None when it cannot be written."""
    from mcudeploy.device.host import cache_dir

    try:
        path = cache_dir() / "internal-error.txt"
        command = " ".join(["mcudeploy", *(sys.argv[1:] if argv is None else argv)])
        body = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        path.write_text(f"mcudeploy {__version__}\n{command}\n\n{body}")
    except OSError:
        return None
    return path


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
