"""The ``host`` board: build the generated C natively with gcc and run it as a process.

The kernel library is compiled once per set of sources and flags into a cache
(``$MCUDEPLOY_CACHE`` or ``~/.cache/mcudeploy``); only model.c and main_host.c are
compiled per model.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.boards import Board, load_board
from mcudeploy.device import sanitize as sanitizer
from mcudeploy.codegen import write_project
from mcudeploy.codegen.emit import arenas
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import locked
from mcudeploy.ir import Graph


TRACE_HEADER = "mcud_trace.h"  # what write_project(..., trace=True) writes for the trace build (and mcud_trace.c)


class BuildError(RuntimeError):
    """The generated C did not compile: a bug in mcudeploy, reported with the compiler's words."""


def cache_dir() -> Path:
    root = Path(os.environ.get("MCUDEPLOY_CACHE", Path.home() / ".cache" / "mcudeploy"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _compile(cc: str, flags: Sequence[str], source: Path, obj: Path, include: Path) -> None:
    proc = subprocess.run([cc, *flags, "-I", str(include), "-c", str(source), "-o", str(obj)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{cc} failed on {source.name}:\n{proc.stderr[-4000:]}")


def _kernel_objects(cc: str, flags: Sequence[str], lib: Path) -> list[Path]:
    digest = hashlib.sha256(" ".join([cc, *flags]).encode())
    sources = sorted((lib / "kernels").glob("*.c"))
    for path in sorted((lib / "include").glob("*.h")) + sources:
        digest.update(path.name.encode() + path.read_bytes())
    objdir = cache_dir() / "host-kernels" / digest.hexdigest()[:20]
    objs = [objdir / (s.stem + ".o") for s in sources]
    if all(o.exists() for o in objs):
        return objs
    objdir.parent.mkdir(parents=True, exist_ok=True)
    with locked(objdir):  # a second process waits for the first's library, not compiles it too
        if not all(o.exists() for o in objs):
            _compile_library(cc, flags, lib, sources, objdir)
    return objs


def _compile_library(cc: str, flags: Sequence[str], lib: Path, sources: list[Path], objdir: Path) -> None:
    tmp = Path(tempfile.mkdtemp(dir=cache_dir()))
    try:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # gcc runs in processes of its own
            list(pool.map(lambda s: _compile(cc, flags, s, tmp / (s.stem + ".o"), lib / "include"), sources))
        try:
            tmp.rename(objdir)
        except OSError:  # another process built it first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build(project: Path, board: Board, trace: bool = False, sanitize: bool = False, timing: bool = False) -> Path:
    """Compile the project in ``project`` for the host; return the executable. ``trace``: the trace
    build (the project written with ``write_project(..., trace=True)``; see ``trace_compiled_on_host``);
    ``sanitize``: with AddressSanitizer and UndefinedBehaviorSanitizer (``write_project(..., sanitize=True)``;
    device/sanitize.py); ``timing``: the timing runner in place of the host runner (``write_project(...,
    timing=True)``; device/host_measure.py)."""
    cc, flags = board.build.cc, list(board.build.cflags)
    if shutil.which(cc) is None:
        raise MCUDeployError(f"the host board needs the C compiler '{cc}', which is not installed")
    lib = project / "mcud"
    objs = _kernel_objects(cc, sanitizer.cflags(flags, kernels=True) if sanitize else flags, lib)
    if sanitize:
        flags = sanitizer.cflags(flags, kernels=False) + (["-DMCUD_SANITIZE"] if timing else [])
    headers = ([TRACE_HEADER] if trace else []) + ([sanitizer.FILES[0]] if sanitize else []) + \
        (["mcud_timing.h"] if timing else [])
    sources = ["model.c", "main_timing.c" if timing else "main_host.c"] + (["mcud_trace.c"] if trace else []) + \
        ([sanitizer.FILES[1]] if sanitize else [])
    for name in sources:
        extra = [a for h in headers for a in ("-include", str(project / h))] if name == "model.c" else []
        _compile(cc, flags + extra, project / name, project / (name[:-2] + ".o"), lib / "include")
    exe = project / "model"
    link_flags = list(sanitizer.CHECKS) if sanitize else []
    if "MCUD_MODEL_CORES" in (project / "mcud_model.h").read_text():  # a plan on several cores runs them as threads
        link_flags.append("-pthread")
    proc = subprocess.run([cc, *link_flags, *(str(project / (name[:-2] + ".o")) for name in sources), *map(str, objs),
                           "-o", str(exe), *board.build.ldflags], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"linking failed:\n{proc.stderr[-4000:]}")
    return exe


def run(exe: Path, graph: Graph, samples: Sequence[Mapping[str, np.ndarray]],
        trace: Optional[Path] = None, sanitized: Optional[tuple[str, Sequence[str]]] = None,
        reset_every: Optional[int] = None) -> list[list[np.ndarray]]:
    """Run the built model on each sample, in order in one process (a stateful model carries its state from
    one to the next, from its initial value; ``reset_every``: set to its initial value again before every
    reset_every-th sample, so that the samples are sequences of that length); return the model's outputs of each.
    ``trace``: the file a trace build writes its arenas to (MCUD_TRACE_FILE); ``sanitized``: a sanitized build's
    (model name, operator labels), to name the operator of a report."""
    work = exe.parent
    (work / "in.bin").write_bytes(b"".join(b for sample in samples for b in sample_bytes(graph, sample)))
    env = {**os.environ, "MCUD_TRACE_FILE": str(trace)} if trace is not None else None
    if sanitized is not None:
        env = {**os.environ, **sanitizer.ENV}
    proc = subprocess.run([str(exe), str(work / "in.bin"), str(work / "out.bin"), str(len(samples)),
                           *([str(reset_every)] if reset_every else [])],
                          capture_output=True, text=True, env=env, errors="replace")
    if proc.returncode != 0 and sanitized is not None and sanitizer.is_report(proc.stderr):
        raise sanitizer.report_error(proc.stderr, sanitized[1], sanitized[0])
    if proc.returncode != 0:
        raise MCUDeployError(f"the host build of the model exited with status {proc.returncode}: "
                             f"{proc.stderr.strip() or 'no message'}")
    data = (work / "out.bin").read_bytes()
    results, pos = [], 0
    for _ in samples:
        outs = []
        for name in graph.model_outputs():
            outs.append(output_array(graph, name, data[pos:pos + graph[name].nbytes]))
            pos += graph[name].nbytes
        results.append(outs)
    return results


def on_host(compiled):
    """``compiled`` for the host board (the same plan, built natively)."""
    return compiled if compiled.board.kind == "host" else dataclasses.replace(compiled, board=load_board("host"))


def run_compiled_on_host(compiled, samples, workdir: Optional[Path] = None,
                         sanitize: bool = False, reset_every: Optional[int] = None) -> list[list[np.ndarray]]:
    """``compiled`` (a plan for the host board) built and run on ``samples`` (``reset_every``: as ``run``);
    ``sanitize``: built with AddressSanitizer and UndefinedBehaviorSanitizer, a report raised as one sentence
    naming the operator."""
    from mcudeploy.device.labels import model_name, op_labels

    with tempfile.TemporaryDirectory(prefix="mcud-host-") as tmp:
        project = write_project(compiled, Path(workdir or tmp), sanitize=sanitize)
        exe = build(project, compiled.board, sanitize=sanitize)
        return run(exe, compiled.graph, samples,
                   sanitized=(model_name(compiled), op_labels(compiled)) if sanitize else None, reset_every=reset_every)


@dataclass(frozen=True)
class Trace:
    """One sample through a trace build: its outputs, and the bytes of every arena (in the order of
    ``codegen.emit.arenas``) before the first operator and after each one that model.c times."""

    outputs: list[np.ndarray]
    before: tuple[np.ndarray, ...]  # uint8 per arena
    after: list[tuple[np.ndarray, ...]]  # per timed operator (MCUD_OP_END index), uint8 per arena

    def at(self, index: int) -> tuple[np.ndarray, ...]:
        """The arenas after operator ``index`` (-1: before the first)."""
        return self.before if index < 0 else self.after[index]


def trace_compiled_on_host(compiled, sample: Mapping[str, np.ndarray], workdir: Optional[Path] = None,
                           before: Sequence[Mapping[str, np.ndarray]] = ()) -> Trace:
    """Build ``compiled`` (retargeted to the host board) in trace mode and run it on one sample (a stateful
    model: after the samples ``before``, in one run, so that it starts from the state they leave; the
    states' buffer is traced after the arenas)."""
    host = dataclasses.replace(compiled, board=load_board("host")) if compiled.board.kind != "host" else compiled
    sizes = [max(a["bytes"], 1) for a in arenas(host)] + ([host.placement.state_bytes] if host.graph.states else [])
    with tempfile.TemporaryDirectory(prefix="mcud-trace-") as tmp:
        project = write_project(host, Path(workdir or tmp), trace=True)
        exe = build(project, host.board, trace=True)
        outputs = run(exe, host.graph, [*before, sample], trace=project / "trace.bin")[-1]
        data = (project / "trace.bin").read_bytes()
    records, pos, index = [], 0, -1
    while pos < len(data):
        arenas_now = []
        for size in sizes:
            got = int(np.frombuffer(data[pos:pos + 4], dtype=np.int32)[0])
            if got == -1 and index > -1 and not arenas_now:  # the next sample's: only the last one's are kept
                records, index = [], -1
            if got != index:
                raise BuildError(f"the trace build wrote operator {got} where {index} was due")
            arenas_now.append(np.frombuffer(data[pos + 4:pos + 4 + size], dtype=np.uint8))
            pos += 4 + size
        records.append(tuple(arenas_now))
        index += 1
    if not records:
        raise BuildError("the trace build wrote no trace")
    return Trace(outputs, records[0], records[1:])
