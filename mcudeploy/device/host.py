"""The ``host`` board: build the generated C natively with gcc and run it as a process.

The kernel library is compiled once per set of sources and flags into a cache
(``$MCUDEPLOY_CACHE`` or ``~/.cache/mcudeploy``); only model.c and main_host.c are
compiled per model.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import onnx

from mcudeploy.boards import Board, load_board
from mcudeploy.codegen import write_project
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, Graph


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
    tmp = Path(tempfile.mkdtemp(dir=cache_dir()))
    try:
        for s in sources:
            _compile(cc, flags, s, tmp / (s.stem + ".o"), lib / "include")
        objdir.parent.mkdir(parents=True, exist_ok=True)
        try:
            tmp.rename(objdir)
        except OSError:  # another process built it first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return objs


def build(project: Path, board: Board) -> Path:
    """Compile the project in ``project`` for the host; return the executable."""
    build_cfg = board.data["build"]
    cc, flags = build_cfg["cc"], list(build_cfg["cflags"])
    if shutil.which(cc) is None:
        raise MCUDeployError(f"the host board needs the C compiler '{cc}', which is not installed")
    lib = project / "mcud"
    objs = _kernel_objects(cc, flags, lib)
    for name in ("model.c", "main_host.c"):
        _compile(cc, flags, project / name, project / (name[:-2] + ".o"), lib / "include")
    exe = project / "model"
    proc = subprocess.run([cc, str(project / "model.o"), str(project / "main_host.o"), *map(str, objs), "-o",
                           str(exe), *build_cfg.get("ldflags", [])], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"linking failed:\n{proc.stderr[-4000:]}")
    return exe


def run(exe: Path, graph: Graph, samples: Sequence[Mapping[str, np.ndarray]]) -> list[list[np.ndarray]]:
    """Run the built model on each sample; return the outputs of each, in graph order."""
    work = exe.parent
    with open(work / "in.bin", "wb") as f:
        for sample in samples:
            for name in graph.inputs:
                t = graph[name]
                x = np.asarray(sample[name])
                if x.shape != t.shape:
                    raise MCUDeployError(f"input {name} has shape {x.shape}; the model expects {t.shape}")
                f.write(np.ascontiguousarray(x.astype(DTYPES[t.dtype], copy=False)).tobytes())
    proc = subprocess.run([str(exe), str(work / "in.bin"), str(work / "out.bin"), str(len(samples))],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise MCUDeployError(f"the host build of the model exited with status {proc.returncode}: "
                             f"{proc.stderr.strip() or 'no message'}")
    data = (work / "out.bin").read_bytes()
    results, pos = [], 0
    for _ in samples:
        outs = []
        for name in graph.outputs:
            t = graph[name]
            n = t.nbytes
            outs.append(np.frombuffer(data[pos:pos + n], dtype=DTYPES[t.dtype]).reshape(t.shape).copy())
            pos += n
        results.append(outs)
    return results


def run_compiled_on_host(compiled, samples, workdir: Optional[Path] = None) -> list[list[np.ndarray]]:
    with tempfile.TemporaryDirectory(prefix="mcud-host-") as tmp:
        project = write_project(compiled, Path(workdir or tmp))
        exe = build(project, compiled.board)
        return run(exe, compiled.graph, samples)


def run_model_on_host(model: Union[str, os.PathLike, onnx.ModelProto], samples: Sequence[Mapping[str, np.ndarray]],
                      input_shapes=None, workdir: Optional[Path] = None) -> list[list[np.ndarray]]:
    """Compile a model for the host board, build it, and run it on each sample (dict input name -> array)."""
    from mcudeploy.pipeline import compile_model

    compiled = compile_model(model, load_board("host"), input_shapes)
    return run_compiled_on_host(compiled, samples, workdir)
