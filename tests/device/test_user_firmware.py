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
from mcudeploy.analysis.io import quantization
from mcudeploy.plan import CompileOptions
from mcudeploy.plan.code_options import CodeOptions
from mcudeploy.device.build import ARCH, CFLAGS, firmware_build_spec
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import registry
from mcudeploy.compile import compile_model
from shared_models import MODELS

ONNX_GRAPH = Graph("quantize", {}, (), (), ())  # the helpers follow ONNX's rounding (half to even)

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
    """[(name, model path, int8_input)] of two int8 models with int8 inputs (the zoo's QDQ models take a float
    input: compiled with int8_input, as `--int8-input` does)."""
    kws, vww = MODELS / "onnx" / "kws_dscnn_int8.onnx", MODELS / "onnx" / "vww_mobilenetv1_int8.onnx"
    if kws.is_file() and vww.is_file():
        return [("kws", kws, False), ("vww", vww, False)]
    import onnx
    import zoo

    work = tmp_path_factory.mktemp("zoo")
    out = []
    for name, build in (("convs", zoo.convs), ("branching", zoo.branching)):
        onnx.save(build(work)[1], work / f"{name}_int8.onnx")
        out.append((name, work / f"{name}_int8.onnx", True))
    return out


@pytest.fixture(scope="module")
def compiled(pair):
    """name -> the model compiled for qemu-m4 (default C options: the plan does not depend on them)."""
    return {name: compile_model(path, BOARD, options=CompileOptions(schedule_time_limit=5.0, int8_input=int8_input))
            for name, path, int8_input in pair}


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
    arch = ARCH[load_board(BOARD).arch].runtime  # the start-up and the instruction set's system calls
    sources = [main, *(runtime / f for f in arch), runtime / "system.c", *sorted((library / "kernels").glob("*.c")),
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


# ---------------------------------------------------------------- the header's quantize helper


QUANTIZE_MAIN = textwrap.dedent("""\
    /* x (float32, count) -> NAME_quantize_input0(x) bytes; then all 256 codes -> NAME_dequantize_input0 */
    #include <stdio.h>
    #include <stdlib.h>
    #include "{name}.h"

    int main(int argc, char **argv)
    {{
        (void)argc;
        FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
        long count = strtol(argv[3], NULL, 10);
        for (long k = 0; k < count; k++) {{
            float x;
            if (fread(&x, sizeof x, 1, in) != 1) return 3;
            {name}_input0_t q = {name}_quantize_input0(x);
            fwrite(&q, sizeof q, 1, out);
        }}
        for (int c = -128; c < 128; c++) {{
            float r = {name}_dequantize_input0(({name}_input0_t)c);
            fwrite(&r, sizeof r, 1, out);
        }}
        fclose(in);
        return fclose(out) == 0 ? 0 : 4;
    }}
""")


def test_the_headers_helpers_quantize_as_the_numpy_quantize_linear(compiled, tmp_path):
    _need("gcc")
    name, c = next(iter(compiled.items()))
    c = named(c, name)
    folder = write_project(c, tmp_path / name)
    graph, inp = c.graph, c.graph.inputs[0]
    q = quantization(graph, inp)
    scale, zp = np.float32(q.scale[0]), int(q.zero_point[0])
    header = (folder / f"{name}.h").read_text()
    assert f"#define {name.upper()}_INPUT0_ZERO_POINT {zp if zp >= 0 else f'({zp})'}\n" in header
    rng = np.random.default_rng(7)
    steps = np.arange(-300, 300, dtype=np.float32)
    # ties (k + 1/2 steps: round half to even), whole steps, far outside the int8 range, signed zeros, tiny
    # values; not inf or |x / scale| >= 2^63, where numpy's int64 conversion is undefined
    x = np.concatenate([rng.normal(0, 60, 20000).astype(np.float32) * scale, (steps + 0.5) * scale, steps * scale,
                        np.float32([0.0, -0.0, 1e-30, -1e-30, 1e6, -1e6, 3e9, -3e9]) * scale]).astype(np.float32)
    assert np.sum((x / scale) % 1 == 0.5) > 100  # exact ties, where rounding half to even shows
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    exe = tmp_path / "quantize"
    proc = subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(folder), "-o", str(exe),
                           "-x", "c", "-"], input=QUANTIZE_MAIN.format(name=name), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    subprocess.run([str(exe), str(tmp_path / "x.bin"), str(tmp_path / "q.bin"), str(x.size)], check=True)
    data = (tmp_path / "q.bin").read_bytes()
    got = np.frombuffer(data[:x.size], dtype=np.int8)
    qnode = Node("q", "QuantizeLinear", ("x",), ("y",), {"scale": (float(scale),), "zero_point": (zp,), "axis": 1,
                                                           "qdtype": "int8"})
    want = registry.get("QuantizeLinear").reference(ONNX_GRAPH, qnode, [x])[0]
    assert np.array_equal(got, want), f"{int(np.sum(got != want))} of {x.size} values differ"
    codes = np.arange(-128, 128, dtype=np.int8)
    dnode = Node("d", "DequantizeLinear", ("q",), ("r",), {"scale": (float(scale),), "zero_point": (zp,), "axis": 1})
    real = np.frombuffer(data[x.size:], dtype=np.float32)
    assert np.array_equal(real, registry.get("DequantizeLinear").reference(ONNX_GRAPH, dnode, [codes])[0])


# ---------------------------------------------------------------- the folder as a CMake and a PlatformIO library

CPU = "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
WARNINGS = "-Wall -Wextra -Werror"

FIRMWARE_MAIN = textwrap.dedent("""\
    /* A user's firmware with two models: alpha (static arena) and beta (extern arena, in a buffer). */
    #include "alpha.h"
    #include "beta.h"

    static uint8_t arena[BETA_ARENA_BYTES] __attribute__((aligned(BETA_ARENA_ALIGN)));

    int main(void)
    {
        if (alpha_plan_id() != ALPHA_PLAN_ID || beta_plan_id() != BETA_PLAN_ID) {
            return 1;
        }
        float *a = alpha_input(0);
        float *b = beta_input(arena, 0);
        for (uint32_t k = 0; k < ALPHA_INPUT0_ELEMENTS; k++) {
            a[k] = (float)k;
        }
        for (uint32_t k = 0; k < BETA_INPUT0_ELEMENTS; k++) {
            b[k] = (float)k;
        }
        alpha_run();
        beta_run(arena);
        return (int)(((float *)alpha_output(0))[0] + ((float *)beta_output(arena, 0))[0]);
    }
""")


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """Two output folders (alpha: static arena; beta: extern arena) of small float models."""
    from devmodels import matmul

    work = tmp_path_factory.mktemp("libraries")
    out = {}
    for name, rows, arena in (("alpha", 8, "static"), ("beta", 4, "extern")):
        c = compile_model(matmul(work / f"{name}.onnx", rows, seed=rows), BOARD)
        out[name] = write_project(named(c, name, arena), work / name)
    return out


def test_the_folder_builds_as_a_cmake_library(libraries, tmp_path):
    _need("cmake", ARM)
    project = tmp_path / "app"
    project.mkdir()
    (project / "main.c").write_text(FIRMWARE_MAIN)
    (project / "toolchain.cmake").write_text(textwrap.dedent(f"""\
        set(CMAKE_SYSTEM_NAME Generic)
        set(CMAKE_SYSTEM_PROCESSOR arm)
        set(CMAKE_C_COMPILER {ARM})
        set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
        set(CMAKE_C_FLAGS_INIT "{CPU} {WARNINGS}")
        set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nano.specs --specs=nosys.specs -Wl,--gc-sections")
    """))
    (project / "CMakeLists.txt").write_text(textwrap.dedent(f"""\
        cmake_minimum_required(VERSION 3.13)
        project(app C)
        add_subdirectory({libraries['alpha'].as_posix()} alpha)
        add_subdirectory({libraries['beta'].as_posix()} beta)
        add_executable(app.elf main.c)
        target_link_libraries(app.elf PRIVATE alpha mcud::beta)
    """))
    build = tmp_path / "build"
    configure = subprocess.run(["cmake", "-S", str(project), "-B", str(build), "-G", "Unix Makefiles",
                                f"-DCMAKE_TOOLCHAIN_FILE={project / 'toolchain.cmake'}"], capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout[-2000:] + configure.stderr[-2000:]
    made = subprocess.run(["cmake", "--build", str(build), "--", "VERBOSE=1", f"-j{min(os.cpu_count() or 1, 2)}"],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stdout[-4000:] + made.stderr[-2000:]
    assert (build / "app.elf").is_file()
    compiles = [line for line in made.stdout.splitlines() if " -c " in line and ARM in line]
    assert all(WARNINGS in line and CPU in line for line in compiles)
    kernels = [line for line in compiles if "/mcud/kernels/" in line]
    assert len(kernels) == len(list((libraries["alpha"] / "mcud" / "kernels").glob("*.c")))  # one copy for both


PIO_BUILDER = textwrap.dedent("""\
    # PlatformIO's usual program build (project sources, libraries found by the LDF) with arm-none-eabi-gcc from PATH
    from SCons.Script import Default, DefaultEnvironment

    env = DefaultEnvironment()
    cpu = "{cpu}".split()
    env.Replace(CC="{arm}", AS="{arm}", LINK="{arm}", AR="arm-none-eabi-gcc-ar", RANLIB="arm-none-eabi-gcc-ranlib",
                OBJCOPY="arm-none-eabi-objcopy", SIZETOOL="arm-none-eabi-size", PROGSUFFIX=".elf", ARFLAGS=["rc"])
    env.Append(CCFLAGS=cpu + ["-O2", "-ffunction-sections", "-fdata-sections"],
               LINKFLAGS=cpu + ["--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections"], LIBS=["m"])
    Default(env.BuildProgram())
""")


@pytest.fixture(scope="module")
def pio_core_dir(tmp_path_factory):
    from mcudeploy.device import pio_core
    from mcudeploy.errors import MCUDeployError

    path = tmp_path_factory.mktemp("pio-core")
    try:
        pio_core.prepare_core(path)
    except MCUDeployError as exc:
        pytest.skip(str(exc))
    return path


def test_the_folder_builds_as_a_platformio_library(libraries, pio_core_dir, tmp_path):
    """lib_deps = file://alpha, and beta found by the library finder in a lib_extra_dirs folder; the
    platform is a small one of the test's own (PlatformIO's registry is out of reach)."""
    _need(ARM)
    from mcudeploy.device import pio_core

    platform = tmp_path / "platform"
    (platform / "builder").mkdir(parents=True)
    (platform / "platform.json").write_text('{"name": "usertest", "title": "usertest", "version": "0.1.0", '
                                            '"description": "Cortex-M, arm-none-eabi-gcc from PATH", '
                                            '"engines": {"platformio": "^6"}, "frameworks": {}, "packages": {}}')
    (platform / "platform.py").write_text("from platformio.public import PlatformBase\n\n\n"
                                          "class UsertestPlatform(PlatformBase):\n    pass\n")
    (platform / "builder" / "main.py").write_text(PIO_BUILDER.format(cpu=CPU, arm=ARM))
    extra = tmp_path / "libs"
    extra.mkdir()
    shutil.copytree(libraries["beta"], extra / "beta")
    project = tmp_path / "app"
    (project / "src").mkdir(parents=True)
    (project / "boards").mkdir()
    (project / "src" / "main.c").write_text(FIRMWARE_MAIN)
    (project / "boards" / "m4.json").write_text(
        '{"build": {"cpu": "cortex-m4", "mcu": "cortex-m4", "f_cpu": "25000000L"}, "frameworks": [], '
        '"name": "A Cortex-M4", "upload": {"maximum_size": 4194304, "maximum_ram_size": 4194304}, '
        '"url": "https://example.com", "vendor": "test"}')
    (project / "platformio.ini").write_text(textwrap.dedent(f"""\
        [env:m4]
        platform = file://{platform.as_posix()}
        board = m4
        build_flags = {WARNINGS} -std=c99
        lib_deps = file://{libraries['alpha'].as_posix()}
        lib_extra_dirs = {extra.as_posix()}
        test_framework = custom
    """))
    proc = pio_core.run_pio(project, core=pio_core_dir)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert (project / ".pio" / "build" / "m4" / "program.elf").is_file()
    assert "alpha" in proc.stdout and "beta" in proc.stdout  # both libraries in the dependency graph
