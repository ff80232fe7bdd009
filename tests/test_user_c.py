"""The C options of compile (--name, --arena, --arena-section, --arduino) on the host: names, the
header's facts, a folder written with them run as its plan (`run DIR`), arenas in named sections and
in two regions, the Arduino layout. Two models in one Cortex-M firmware, the CMake and PlatformIO
builds and the quantize helper are in tests/device/test_user_firmware.py."""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.boards import Region, load_board
from mcudeploy.check import random_inputs
from mcudeploy.cli import main
from mcudeploy.codegen import write_project
from mcudeploy.analysis.io import input_layout, output_layout
from mcudeploy.plan.code_options import CodeOptions, default_name
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions, plan_id

RNG = np.random.default_rng(24)


def _save(nodes, inputs, outputs, inits, path):
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


def _value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _w(name, shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.2).astype(np.float32), name)


def image_model(path, nhwc: bool):
    """Conv 3x3 + Relu on a 1x3x8x8 image, given NHWC (through a Transpose) or NCHW; output NHWC likewise."""
    nodes, x = [], "x"
    if nhwc:
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]))
        x = "xt"
    nodes += [helper.make_node("Conv", [x, "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"])]
    y = "r"
    if nhwc:
        nodes.append(helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1]))
        y = "y"
    shape = (1, 8, 8, 3) if nhwc else (1, 3, 8, 8)
    out = (1, 8, 8, 4) if nhwc else (1, 4, 8, 8)
    return _save(nodes, [_value("x", shape)], [_value(y, out)], [_w("w", (4, 3, 3, 3))], path)


def two_layer_model(path):
    """Y = Relu(X @ W1) @ W2: a hidden tensor that is neither input nor output (it may go to a second region)."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    return _save(nodes, [_value("x", (8, 64))], [_value("y", (8, 32))], [_w("w1", (64, 128)), _w("w2", (128, 32))],
                 path)


def _error(capsys, argv) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcudeploy: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_the_default_name_is_the_model_file_as_a_c_identifier():
    assert default_name("/m/kws_dscnn_int8.onnx") == "kws_dscnn_int8"
    assert default_name("My Model-v2.onnx") == "my_model_v2"
    assert default_name("2stage.onnx") == "m_2stage"
    assert default_name("mcud_net.onnx") == "m_mcud_net"  # the kernel library's prefix is not a model's
    assert default_name("---.onnx") == "model"


def test_c_options_that_cannot_work_are_one_sentence(tmp_path, capsys):
    model = str(two_layer_model(tmp_path / "m.onnx"))
    out = str(tmp_path / "out")
    assert "--name '9lives' is not a C identifier" in _error(capsys, ["compile", model, "-b", "host", "-o", out,
                                                                       "--name", "9lives"])
    assert "belong to the kernel library" in _error(capsys, ["compile", model, "-b", "host", "-o", out,
                                                             "--name", "mcud_net"])
    assert "applies to the static arena" in _error(capsys, ["compile", model, "-b", "host", "-o", out, "--arena",
                                                            "extern", "--arena-section", ".fast"])
    assert "the plan has no arena in region ccm" in _error(capsys, ["compile", model, "-b", "host", "-o", out,
                                                                    "--arena-section", "ccm=.slow"])
    assert "is not a linker section name" in _error(capsys, ["compile", model, "-b", "host", "-o", out,
                                                             "--arena-section", '.a"b'])


def test_the_header_says_the_layout_of_image_inputs_and_outputs(tmp_path):
    for nhwc in (True, False):
        graph = compile_model(image_model(tmp_path / f"m{nhwc}.onnx", nhwc), "host").graph
        want = "NHWC" if nhwc else "NCHW"
        assert input_layout(graph, graph.inputs[0]) == want and output_layout(graph, graph.outputs[0]) == want
    graph = compile_model(two_layer_model(tmp_path / "v.onnx"), "host").graph
    assert input_layout(graph, graph.inputs[0]) == "" and output_layout(graph, graph.outputs[0]) == ""


def test_a_named_extern_folder_runs_as_its_plan(tmp_path, capsys):
    model = image_model(tmp_path / "net.onnx", nhwc=True)
    out = tmp_path / "out"
    assert main(["compile", str(model), "-b", "host", "-o", str(out), "--name", "vision", "--arena", "extern",
                 "--arduino"]) == 0
    capsys.readouterr()
    for name in ("model.c", "vision.h", "mcud_model.h", "main_host.c", "CMakeLists.txt", "library.json", "README.txt",
                 "mcud/include/mcud_library.h", "arduino/vision/library.properties", "arduino/vision/src/vision.h"):
        assert (out / name).is_file(), name
    plan = json.loads((out / "plan.json").read_text())
    assert plan["c"] == {"name": "vision", "arena": "extern", "sections": [], "arduino": True}
    header = (out / "vision.h").read_text()
    assert f"#define VISION_PLAN_ID {plan_id(plan)}" in header
    assert f"#define VISION_ARENA_BYTES {plan['arena_bytes']}u" in header
    assert '#define VISION_INPUT0_LAYOUT "NHWC"' in header and "#define VISION_INPUT0_SHAPE { 1, 8, 8, 3 }" in header
    assert "void vision_run(void *arena);" in header and "void *vision_input(void *arena, int32_t index);" in header
    assert f'#define VISION_MODEL_SHA256 "{plan["model_sha256"]}"' in header
    assert main(["run", str(out), "--check", "--samples", "3"]) == 0
    assert "PASS on 3 input(s)" in capsys.readouterr().out
    with open(out / "vision.h", "a") as f:
        f.write("/* edited */\n")
    assert f"{out / 'vision.h'} is not the C of {out / 'plan.json'}" in _error(capsys, ["run", str(out)])


def test_the_arduino_library_compiles_with_only_src_on_the_include_path(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    c = compile_model(two_layer_model(tmp_path / "m.onnx"), "host")
    out = write_project(dataclasses.replace(c, code=CodeOptions(name="mlp", arduino=True)), tmp_path / "out")
    src = out / "arduino" / "mlp" / "src"
    props = (out / "arduino" / "mlp" / "library.properties").read_text()
    assert "name=mlp\n" in props and "includes=mlp.h\n" in props and "dot_a_linkage=true\n" in props
    for source in sorted(src.glob("*.c")):
        proc = subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(src), "-c",
                               str(source), "-o", str(tmp_path / (source.stem + ".o"))], capture_output=True, text=True)
        assert proc.returncode == 0, f"{source.name}: {proc.stderr[-2000:]}"
    assert len(list(src.glob("*.c"))) == 1 + len(list((out / "mcud" / "kernels").glob("*.c")))


def two_region_board(first_bytes):
    host = load_board("host")
    regions = (Region("sram", first_bytes), Region("ccm", 1 << 20, section=".mcud_ccm", dma=False))
    return dataclasses.replace(host, regions=regions)


def test_arenas_in_two_regions_static_in_named_sections_or_extern(tmp_path):
    model = two_layer_model(tmp_path / "m.onnx")
    one = compile_model(model, "host", options=CompileOptions(schedule_method="model"))
    io = (8 * 64 + 8 * 32) * 4
    two = compile_model(model, two_region_board(io + 1024), options=CompileOptions(schedule_method="model"))
    assert two.placement.arenas.get("ccm", 0) > 0, "the hidden tensor should go to the second region"
    samples = random_inputs(two.graph, 2, seed=5)
    want = run_compiled_on_host(one, samples, tmp_path / "one")
    static = dataclasses.replace(two, code=CodeOptions.parse("two", "static", [".fast_arena", "ccm=.slow_arena"]))
    source = (write_project(static, tmp_path / "static") / "model.c").read_text()
    assert 'static uint8_t mcud_arena[' in source and 'section(".fast_arena")' in source
    assert 'static uint8_t mcud_arena_ccm[' in source and 'section(".slow_arena")' in source
    extern = dataclasses.replace(two, code=CodeOptions(name="two", arena="extern"))
    header = (write_project(extern, tmp_path / "extern") / "two.h").read_text()
    assert "void two_run(void *arena, void *arena_ccm);" in header
    assert f"#define TWO_ARENA_CCM_BYTES {two.placement.arenas['ccm']}u" in header
    for variant in (static, extern):
        got = run_compiled_on_host(variant, samples, tmp_path / variant.code.arena)
        assert all(np.array_equal(g, w) for gs, ws in zip(got, want) for g, w in zip(gs, ws))


USER_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "cam.h"

static float frame[CAM_INPUT0_ELEMENTS]; /* the sensor's next frame, outside the model's arena */

void cam_read_input(int32_t index, int32_t offset, int32_t count, void *dst)
{
    printf("read %d %d %d\n", (int)index, (int)offset, (int)count);
    memcpy(dst, frame + offset, (size_t)count * sizeof(float));
}

int main(void)
{
    if (fread(frame, sizeof(float), CAM_INPUT0_ELEMENTS, stdin) != CAM_INPUT0_ELEMENTS || cam_input(0) != NULL) {
        return 1;
    }
    cam_run();
    const float *y = cam_output(0);
    for (size_t i = 0; i < CAM_OUTPUT0_ELEMENTS; i++) {
        printf("y %.9g\n", (double)y[i]);
    }
    return 0;
}
"""


def test_a_firmware_streams_an_input_band_by_band_through_its_callback(tmp_path):
    """--stream-input in a user's program: it defines cam_read_input, the model asks it for runs of
    the NHWC input as the cut's pieces need them (never the whole input at once, every element at
    least once), and computes what the plan computes on the host runner."""
    from mcudeploy.partition import Cut, split
    from mcudeploy.compile import compile_graph, lower
    from mcudeploy.frontend import import_model
    from mcudeploy.reference import run_reference

    model = image_model(tmp_path / "cam.onnx", nhwc=True)
    graph = lower(import_model(model), stream_input=True)
    read, transpose, conv = graph.nodes[:3]
    graph = split(graph, (Cut(((read.name, "d1"), (transpose.name, "d2"), (conv.name, "oh")), 4, "keep"),))
    compiled = dataclasses.replace(compile_graph(graph, "host", options=CompileOptions(stream_input=True)),
                                   code=CodeOptions(name="cam"))
    out = write_project(compiled, tmp_path / "out")
    (tmp_path / "main.c").write_text(USER_MAIN)
    kernels = sorted(str(p) for p in (out / "mcud" / "kernels").glob("*.c"))
    exe = tmp_path / "cam"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(out), "-I",
                    str(out / "mcud" / "include"), str(out / "model.c"), *kernels, str(tmp_path / "main.c"), "-lm",
                    "-o", str(exe)], check=True)
    x = RNG.standard_normal((1, 8, 8, 3)).astype(np.float32)
    run = subprocess.run([str(exe)], input=x.tobytes(), capture_output=True, check=True)
    lines = run.stdout.decode().splitlines()
    reads = [tuple(int(v) for v in line.split()[1:]) for line in lines if line.startswith("read ")]
    got = np.array([float(line.split()[1]) for line in lines if line.startswith("y ")], np.float32)
    assert len(reads) >= 4 and all(index == 0 for index, _, _ in reads)
    assert max(count for _, _, count in reads) < x.size  # band by band: no call asks for the whole input
    seen = np.zeros(x.size, bool)
    for _, offset, count in reads:
        seen[offset:offset + count] = True
    assert seen.all()
    want = run_compiled_on_host(compiled, [{"x": x}])[0][0]
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    np.testing.assert_allclose(want, run_reference(graph, {"x": x})[0], rtol=1e-5, atol=1e-5)
