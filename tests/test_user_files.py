"""Issue 37, what compile writes for a user: files and folders get the umask's modes (not a temporary's
0600/0700), the header says whether NAME_run() writes over each input (checked against the bytes a run
leaves), and the Arduino library's example sketch compiles and prints what the model computes."""
from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.codegen import write_project
from mcudeploy.plan import CompileOptions
from mcudeploy.plan.code_options import CodeOptions
from mcudeploy.device import host
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.compile import compile_model
from test_user_c import image_model, two_layer_model

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="needs gcc and g++")


def _modes(root):
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_written_files_follow_the_umask(tmp_path, mask):
    c = compile_model(two_layer_model(tmp_path / "m.onnx"), "host")
    old = os.umask(mask)
    try:
        out = write_project(dataclasses.replace(c, code=CodeOptions(name="mlp", arduino=True)), tmp_path / "out")
        out = write_project(dataclasses.replace(c, code=CodeOptions(name="mlp", arduino=True)), out)  # rewritten
    finally:
        os.umask(old)
    modes = _modes(out)
    for name in ("model.c", "mlp.h", "plan.json", "arduino/mlp/library.properties", "arduino/mlp/src/mlp.h",
                 "mcud/kernels/conv.c", "arduino/mlp/examples/mlp/mlp.ino"):
        assert modes[name] == 0o666 & ~mask, (name, oct(modes[name]))
    for name in ("mcud", "mcud/kernels", "arduino", "arduino/mlp", "arduino/mlp/src"):
        assert modes[name] == 0o777 & ~mask, (name, oct(modes[name]))
    assert not [n for n in modes if n != "." and os.path.basename(n).startswith(".")], "a temporary was left"


CHECK_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "m.h"

int main(void)
{
    static unsigned char before[M_INPUT0_BYTES];
    unsigned char *x = (unsigned char *)m_input(0);
    for (size_t i = 0; i < M_INPUT0_BYTES; i++) {
        x[i] = (unsigned char)(i * 7u + 3u) & 0x3f; /* small finite floats */
    }
    memcpy(before, x, sizeof before);
    m_run();
    printf("%d %d\n", memcmp(before, m_input(0), sizeof before) != 0, M_INPUT0_OVERWRITTEN);
    return 0;
}
"""


@needs_gcc
@pytest.mark.parametrize("model", [two_layer_model, image_model])
def test_the_header_says_whether_run_overwrites_the_input(tmp_path, model):
    """two_layer_model's output takes the input's bytes; image_model (NCHW) keeps its input apart."""
    path = model(tmp_path / "net.onnx") if model is two_layer_model else model(tmp_path / "net.onnx", False)
    c = dataclasses.replace(compile_model(path, "host"), code=CodeOptions(name="m"))
    project = write_project(c, tmp_path / "out")
    (project / "main_host.c").write_text(CHECK_MAIN)
    exe = host.build(project, c.board)
    changed, said = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert changed == said == ("1" if model is two_layer_model else "0")
    header = (project / "m.h").read_text()
    assert ("may overwrite the inputs whose _OVERWRITTEN is 1" in header) == (said == "1")


def bias_model(path):
    """An int8 QDQ Gemm with a bias: outputs that are not 0 for an input of 0."""
    rng = np.random.default_rng(37)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 70])
    inits = [numpy_helper.from_array(a, n) for n, a in (
        ("s", np.array(0.05, np.float32)), ("z", np.array(3, np.int8)), ("so", np.array(0.1, np.float32)),
        ("w", (rng.standard_normal((16, 70)) * 0.3).astype(np.float32)),
        ("b", (rng.standard_normal(70) * 2).astype(np.float32)))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("Gemm", ["xd", "w", "b"], ["g"]),
             helper.make_node("QuantizeLinear", ["g", "so", "z"], ["gq"]),
             helper.make_node("DequantizeLinear", ["gq", "so", "z"], ["y"])]
    onnx.save(helper.make_model(helper.make_graph(nodes, "bias", [x], [y], inits),
                                opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


ARDUINO_H = r"""
#include <stdint.h>
#include <stdio.h>
struct FakeSerial {
    void begin(long) {}
    explicit operator bool() const { return true; }
    void print(const char *s) { fputs(s, stdout); }
    void print(double v, int digits) { printf("%.*f", digits, v); }
    void print(long v) { printf("%ld", v); }
    void print(unsigned long v) { printf("%lu", v); }
    void println(const char *s) { puts(s); }
};
inline FakeSerial Serial;  // C++17
static inline unsigned long micros(void) { return 0; }
"""


@needs_gcc
def test_the_arduino_example_prints_what_the_model_computes(tmp_path):
    c = compile_model(bias_model(tmp_path / "bias.onnx"), "host", options=CompileOptions(int8_input=True))
    static = write_project(dataclasses.replace(c, code=CodeOptions(name="m", arduino=True)), tmp_path / "static")
    sketch = static / "arduino" / "m" / "examples" / "m" / "m.ino"
    (tmp_path / "Arduino.h").write_text(ARDUINO_H)
    (tmp_path / "main.cpp").write_text("void setup();\nint main() { setup(); return 0; }\n")
    exe = host.build(static, c.board)  # model.o and the kernel objects
    kernels = [o for o in (exe.parent / "model.o",)] + [str(p) for p in host._kernel_objects(
        c.board.build.cc, list(c.board.build.cflags), static / "mcud")]
    src = static / "arduino" / "m" / "src"
    subprocess.run(["g++", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(tmp_path), "-I", str(src), "-include",
                    "Arduino.h", "-x", "c++", str(sketch), "-x", "none", str(tmp_path / "main.cpp"),
                    *map(str, kernels), "-lm", "-o", str(tmp_path / "sketch")], check=True)
    lines = subprocess.run([str(tmp_path / "sketch")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0].startswith("output 0 (y, 70 elements): ") and lines[0].endswith(" ...")  # a float output
    assert lines[1] == "run: 0 us"
    printed = np.array([float(v) for v in lines[0].split(":")[1].split()[:-1]])
    x = c.graph[c.graph.model_inputs()[0]]
    assert x.dtype == "int8"
    want = run_compiled_on_host(c, [{x.name: np.full(x.shape, 3, np.int8)}])[0][0]  # 0.0 quantized: the zero point
    want = want.ravel()[:64]
    assert len(printed) == 64 and np.abs(want).max() > 0.5
    np.testing.assert_allclose(printed, want, atol=1e-5)


@pytest.mark.skipif(shutil.which("arm-none-eabi-g++") is None, reason="needs arm-none-eabi-g++")
def test_the_arduino_example_compiles_for_cortex_m_with_an_extern_arena(tmp_path):
    c = compile_model(bias_model(tmp_path / "bias.onnx"), "qemu-m4")
    out = write_project(dataclasses.replace(c, code=CodeOptions(name="m", arduino=True, arena="extern")),
                        tmp_path / "out")
    sketch = out / "arduino" / "m" / "examples" / "m" / "m.ino"
    assert "static uint8_t arena[" in sketch.read_text()
    (tmp_path / "Arduino.h").write_text(ARDUINO_H)
    subprocess.run(["arm-none-eabi-g++", "-mcpu=cortex-m4", "-mthumb", "-O1", "-Wall", "-Wextra", "-Werror",
                    "-I", str(tmp_path), "-I", str(out / "arduino" / "m" / "src"), "-include", "Arduino.h", "-x",
                    "c++", "-c", str(sketch), "-o", str(tmp_path / "m.o")], check=True)


def test_plan_and_header_count_the_same_operators(tmp_path, capsys):
    """plan counts every step of the order; the header's NUM_OPS the operators model.c runs: the views (a
    Reshape) between are named in both."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    inits = [numpy_helper.from_array(np.array([1, 16], np.int64), "shape"),
             numpy_helper.from_array(np.ones((16, 8), np.float32), "w")]
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("MatMul", ["f", "w"], ["y"])]
    path = tmp_path / "flat.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "flat", [x], [y], inits),
                                opset_imports=[helper.make_opsetid("", 13)]), path)
    from mcudeploy.cli import main
    assert main(["compile", str(path), "-b", "host", "-o", str(tmp_path / "out"), "--name", "m"]) == 0
    out = capsys.readouterr().out
    assert "3 steps: 2 operators the C runs (the header's NUM_OPS) and 1 view that moves no data (Reshape)" in out, out
    header = (tmp_path / "out" / "m.h").read_text()
    assert "#define M_NUM_OPS 2 /* operators model.c runs, in order (m_op_names); the plan's 1 other step (Reshape) " \
           "is a view that moves no data */" in header, header
