"""The generated C in a user's own firmware (issue 24): two models under names of their own in one
firmware under QEMU, bit for bit the host build; the same two with extern arenas in one shared
buffer; the output folder as a CMake and as a PlatformIO library built for Cortex-M4 with
-Wall -Wextra -Werror; the header's quantize helper against the numpy QuantizeLinear.

The pair is KWS and VWW int8 from the shared models, else two generated int8 models with int8
inputs (tests/zoo.py), so the tier runs everywhere.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from mcudeploy.boards import load_board
from mcudeploy.check import random_inputs
from mcudeploy.codegen import write_project
from mcudeploy.codegen.facts import quantization
from mcudeploy.codegen.options import CodeOptions
from mcudeploy.device.build import CFLAGS, firmware_build_spec
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.ir import Node
from mcudeploy.ops import registry
from mcudeploy.pipeline import compile_model
from shared_models import MODELS

HERE = Path(__file__).resolve().parent
BOARD = "qemu-m4"
SAMPLES = 2
ARM = "arm-none-eabi-gcc"


def _need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """[(name, model path)] of two int8 models with int8 inputs."""
    kws, vww = MODELS / "onnx" / "kws_dscnn_int8.onnx", MODELS / "onnx" / "vww_mobilenetv1_int8.onnx"
    if kws.is_file() and vww.is_file():
        return [("kws", kws), ("vww", vww)]
    import onnx
    import zoo

    work = tmp_path_factory.mktemp("zoo")
    out = []
    for name, build in (("convs", zoo.convs), ("branching", zoo.branching)):
        model, _ = zoo.with_int8_inputs(build(work)[1])
        onnx.save(model, work / f"{name}_int8.onnx")
        out.append((name, work / f"{name}_int8.onnx"))
    return out


@pytest.fixture(scope="module")
def compiled(pair):
    """name -> the model compiled for qemu-m4 (default C options: the plan does not depend on them)."""
    return {name: compile_model(path, BOARD, schedule_time_limit=5.0) for name, path in pair}


def named(c, name: str, arena: str = "static"):
    return dataclasses.replace(c, code=CodeOptions(name=name, arena=arena))


# ---------------------------------------------------------------- two models in one firmware under QEMU


def _build_and_run(models: dict, work: Path, shared: bool) -> dict:
    """Write each model's folder, build the test firmware (tests/device/firmware/two_models.c.j2, the
    runtime's start-up and semihosting, one kernel library) for qemu-m4, run it; name -> outputs per sample."""
    entries = []
    for name, c in models.items():
        folder = write_project(c, work / name)
        samples = random_inputs(c.graph, SAMPLES, seed=len(entries) + 3)
        data = b"".join(b for s in samples for b in sample_bytes(c.graph, s))
        (work / f"{name}.in").write_bytes(data)
        entries.append({"name": name, "NAME": name.upper(), "folder": folder, "samples": samples, "compiled": c,
                        "sample_bytes": len(data) // SAMPLES, "input_file": str(work / f"{name}.in"),
                        "output_file": str(work / f"{name}.out")})
    env = Environment(loader=FileSystemLoader(str(HERE / "firmware")), undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    main = work / "main.c"
    main.write_text(env.get_template("two_models.c.j2").render(models=entries, shared=shared, samples=SAMPLES))
    spec = firmware_build_spec(BOARD, work / "measurer")  # the board's flags, linker script and runtime
    runtime = Path(spec["project_dir"]) / "firmware" / "runtime"
    cpu = list(load_board(BOARD).cpu_flags)
    library = entries[0]["folder"] / "mcud"  # one copy of the kernel library for both models
    includes = [f"-I{d}" for d in [runtime, library / "include", *(e["folder"] for e in entries)]]
    sources = [main, runtime / "startup.c", runtime / "system.c", *sorted((library / "kernels").glob("*.c")),
               *(e["folder"] / "model.c" for e in entries)]
    objects = []
    for k, source in enumerate(sources):
        obj = work / "obj" / f"{k}-{source.stem}.o"
        obj.parent.mkdir(exist_ok=True)
        proc = subprocess.run([ARM, *cpu, *CFLAGS, *includes, "-c", str(source), "-o", str(obj)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{source}:\n{proc.stderr[-3000:]}"
        objects.append(obj)
    # what each model's object defines for the linker: its own names only
    for e, obj in zip(entries, objects[-len(entries):]):
        nm = subprocess.run(["arm-none-eabi-nm", "-g", "--defined-only", str(obj)], capture_output=True, text=True,
                            check=True).stdout.split()[2::3]
        assert nm and all(s.startswith(e["name"] + "_") for s in nm), nm
    elf = work / "two.elf"
    proc = subprocess.run([ARM, *spec["ldflags"], "-T", spec["linker_script"], *map(str, objects), *spec["libs"],
                           "-o", str(elf)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    q = load_board(BOARD).qemu
    run = subprocess.run(["qemu-system-arm", "-M", q.machine, "-display", "none", "-monitor", "none", "-serial", "null",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf), *q.extra_args],
                         capture_output=True, text=True, timeout=300, cwd=work)
    assert run.returncode == 0, f"the firmware exited with {run.returncode}: {run.stderr[-2000:]}"
    got = {}
    for e in entries:
        graph, data, pos = e["compiled"].graph, (work / f"{e['name']}.out").read_bytes(), 0
        per_sample = []
        for _ in range(SAMPLES):
            outs = []
            for out in graph.outputs:
                outs.append(output_array(graph, out, data[pos:pos + graph[out].nbytes]))
                pos += graph[out].nbytes
            per_sample.append(outs)
        assert pos == len(data)
        got[e["name"]] = (per_sample, e["samples"])
    return got


def _same_as_host(models: dict, got: dict, work: Path) -> None:
    for name, c in models.items():
        outputs, samples = got[name]
        want = run_compiled_on_host(dataclasses.replace(c, board=load_board("host")), samples, work / f"host-{name}")
        for g, w in zip(outputs, want):
            for a, b in zip(g, w):
                assert a.dtype == b.dtype and np.array_equal(a, b), f"{name}: the firmware differs from the host build"


@pytest.mark.qemu
def test_two_models_with_names_of_their_own_run_in_one_firmware(compiled, tmp_path):
    _need("qemu-system-arm", ARM)
    models = {name: named(c, name) for name, c in compiled.items()}
    got = _build_and_run(models, tmp_path, shared=False)
    _same_as_host(models, got, tmp_path)


@pytest.mark.qemu
def test_two_models_with_extern_arenas_share_one_buffer(compiled, tmp_path):
    _need("qemu-system-arm", ARM)
    models = {name: named(c, name, "extern") for name, c in compiled.items()}
    source = (write_project(models[next(iter(models))], tmp_path / "peek") / "model.c").read_text()
    assert "static uint8_t mcud_arena" not in source  # the arena is the caller's
    got = _build_and_run(models, tmp_path, shared=True)
    _same_as_host(models, got, tmp_path)  # the host build runs the extern arena too (mcud_model.h)
