"""The Helium (MVE) kernels of a Cortex-M55 build (firmware/include/mcud_conv_mve.h, mcud_dw_row_mve): the
qemu-m55 build uses the vector instructions, and under QEMU (mps3-an547) gives the host's bits on a model
that takes every MVE path (the generic, channels-last and gathered pointwise columns, the direct path's
stack columns, depthwise rows wide enough for vectors at stride 1 and 2) and on a shared MLPerf Tiny model
read from .tflite (TFLite's requantization routes)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcudeploy.boards import load_board
from mcudeploy.codegen.emit import write_project
from mcudeploy.device.build import CFLAGS as ARM_CFLAGS
from mcudeploy.ops import registry
from mcudeploy.pipeline import compile_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from shared_models import MODELS, need_models  # noqa: E402

ARM = "arm-none-eabi-gcc"
needs_arm = pytest.mark.skipif(shutil.which(ARM) is None, reason="needs arm-none-eabi-gcc")
needs_qemu = pytest.mark.skipif(any(shutil.which(t) is None for t in ("qemu-system-arm", ARM)),
                                reason="needs qemu-system-arm and arm-none-eabi-gcc")


@pytest.fixture(scope="module")
def mve_model(tmp_path_factory):
    """Every MVE path of the int8 Conv kernels, quantized by onnxruntime."""
    import zoo

    net = zoo.Net("mve", 40)
    x = net.op("Relu", [net.conv("x", 3, 8, 3)])  # C = 3: (c, kh, kw) taps, edges padded
    x = net.op("Relu", [net.conv(x, 8, 16, 3)])  # C % 4 == 0: channels-last taps
    x = net.op("Relu", [net.conv(x, 16, 16, 3, group=16)])  # depthwise rows of 18 at stride 1
    x = net.op("Relu", [net.conv(x, 16, 20, 1)])  # pointwise: gathered channels
    x = net.op("Relu", [net.conv(x, 20, 20, 3, stride=2, group=20)])  # depthwise rows of 9 at stride 2
    x = net.op("Relu", [net.conv(x, 20, 6, 1)])  # pointwise
    x = net.conv(x, 6, 5, 1)  # C % 4 != 0: pointwise taps one by one
    inputs = {"x": (1, 3, 10, 18)}
    return zoo.quantize(net.model(inputs, {"y": x}), inputs, tmp_path_factory.mktemp("mve"))


def _kernels(compiled) -> set[str]:
    return {registry.get(n.op).kernel(compiled.graph, n).fn for n in compiled.graph.nodes
            if not registry.get(n.op).view}


@needs_arm
def test_cortex_m55_build_uses_helium(mve_model, tmp_path):
    compiled = compile_model(mve_model, "qemu-m55")
    out = write_project(compiled, tmp_path / "p")
    asm = subprocess.run([ARM, *load_board("qemu-m55").cpu_flags, *ARM_CFLAGS, "-I", str(out / "mcud" / "include"),
                          "-S", "-o", "-", str(out / "model.c")], check=True, capture_output=True, text=True).stdout
    asm = asm.replace("vldrbt", "vldrb").replace("vstrbt", "vstrb")  # the predicated forms
    for insn in ("vmladava.s8", "vctp.8", "vldrb.s32", "vstrb.32", "vmla.s32"):
        assert insn in asm, f"no {insn} in the Cortex-M55 build"


@pytest.mark.qemu
@needs_qemu
def test_mve_kernels_on_qemu_m55_equal_the_host(mve_model, tmp_path):
    from mcudeploy import check
    from mcudeploy.device.runner import compare_with_host, run_on_board

    compiled = compile_model(mve_model, "qemu-m55")
    assert {"mcud_conv_s8_fast", "mcud_conv_s8_dw"} <= _kernels(compiled)
    samples = check.random_inputs(compiled.graph, 3, seed=3)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


@pytest.mark.qemu
@needs_qemu
def test_kws_tflite_on_qemu_m55_equals_the_host(tmp_path):
    """TFLite's two roundings in vectors, the direct path's stack columns (KWS's first Conv has no scratch
    in the memory-first plan) and the DSP depthwise rows of 5."""
    need_models()
    from mcudeploy import check
    from mcudeploy.device.runner import compare_with_host, run_on_board

    compiled = compile_model(str(MODELS / "tflite" / "kws_dscnn_int8.tflite"), "qemu-m55")
    assert {"mcud_conv_s8_direct", "mcud_conv_s8_fast", "mcud_conv_s8_dw_tfl"} <= _kernels(compiled)
    samples = check.random_inputs(compiled.graph, 2, seed=5)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
