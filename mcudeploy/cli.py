"""The ``mcudeploy`` command: thin commands over the library."""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from mcudeploy import __version__
from mcudeploy.errors import MCUDeployError

log = logging.getLogger("mcudeploy")


def _model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="the ONNX model file")
    p.add_argument("-b", "--board", required=True, help="target board (see `mcudeploy boards`)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=1x3x96x96",
                   help="pin the shape of an input with unknown dimensions (repeatable)")


def _compile(args):
    from mcudeploy.frontend import parse_input_shapes
    from mcudeploy.pipeline import compile_model

    return compile_model(args.model, args.board, parse_input_shapes(args.input_shape))


def cmd_boards(args) -> int:
    from mcudeploy.boards import all_boards

    boards = all_boards()
    width = max(len(b.name) for b in boards)
    for b in boards:
        alias = f" (alias of {b.alias_of})" if b.alias_of else ""
        sram = " + ".join(f"{r.size // 1024} KB {r.name}" for r in b.regions if not r.excluded)
        print(f"{b.name:<{width}}  {b.kind:<8}  {b.core:<12}  {sram:<24}  {b.description}{alias}")
    return 0


def cmd_compile(args) -> int:
    from mcudeploy.codegen import write_project
    from mcudeploy.report.text import summary

    compiled = _compile(args)
    out = write_project(compiled, args.output)
    print(summary(compiled))
    print(f"wrote {out}/model.c, model.h and plan.json")
    return 0


def cmd_plan(args) -> int:
    from mcudeploy.report.text import summary

    print(summary(_compile(args), detail=True))
    return 0


def cmd_report(args) -> int:
    from mcudeploy.report.html import write_report

    print(f"wrote {write_report(args.plan, args.output)}")
    return 0


def cmd_run(args) -> int:
    from mcudeploy import check
    from mcudeploy.device.host import run_compiled_on_host

    compiled = _compile(args)
    if compiled.board.kind != "host":
        raise MCUDeployError(f"running on board '{compiled.board.name}' needs the device support of a later "
                             f"release; use -b host")
    graph = compiled.graph
    samples = check.load_input(args.input, graph) if args.input else check.random_inputs(graph, args.samples)
    with tempfile.TemporaryDirectory(prefix="mcud-run-") as tmp:
        outputs = run_compiled_on_host(compiled, samples, Path(tmp))
    if args.output:
        import numpy as np

        np.savez(args.output, **{n: np.stack([o[k] for o in outputs]) for k, n in enumerate(graph.outputs)})
        print(f"wrote the outputs of {len(samples)} sample(s) to {args.output}")
    if not args.check:
        for k, name in enumerate(graph.outputs):
            print(f"{name}: {outputs[0][k].ravel()[:16].tolist()}{' ...' if outputs[0][k].size > 16 else ''}")
        return 0
    report = check.compare(graph, outputs, check.run_onnxruntime(args.model, samples), samples)
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcudeploy", description="Deploy ONNX models on microcontrollers.")
    p.add_argument("--version", action="version", version=f"mcudeploy {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress and decisions")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("boards", help="list the known boards")
    s.set_defaults(run=cmd_boards)

    s = sub.add_parser("compile", help="generate the C project and plan.json")
    _model_options(s)
    s.add_argument("-o", "--output", required=True, help="output directory")
    s.set_defaults(run=cmd_compile)

    s = sub.add_parser("plan", help="print the memory plan, no C")
    _model_options(s)
    s.set_defaults(run=cmd_plan)

    s = sub.add_parser("report", help="draw a plan.json as a self-contained HTML page")
    s.add_argument("plan", help="a plan.json (or the folder `compile` wrote it to)")
    s.add_argument("-o", "--output", help="the HTML file to write (default: report.html beside the plan)")
    s.set_defaults(run=cmd_report)

    s = sub.add_parser("run", help="build and run the model on a board")
    _model_options(s)
    s.add_argument("--input", help="an input as .npy (one input) or .npz (by input name)")
    s.add_argument("--check", action="store_true", help="compare with onnxruntime and the numpy reference")
    s.add_argument("--samples", type=int, default=20, help="random inputs for --check (default 20)")
    s.add_argument("-o", "--output", help="save the outputs to this .npz")
    s.set_defaults(run=cmd_run)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    try:
        return args.run(args)
    except MCUDeployError as exc:
        print(f"mcudeploy: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mcudeploy: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
