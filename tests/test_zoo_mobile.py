"""The mobile architectures of issue 17 (tests/zoo.py MOBILE_BUILDERS: ShuffleNetV2-0.5, MnasNet-0.5,
MobileNetV3-Small, EfficientNet-B0, a randomly wired network), float and int8 QDQ, through
``run --check``'s verdict (every operator within a step of onnxruntime given its inputs, the C bit for
bit the numpy reference) on the host and on qemu-m4, the int8 outputs bit for bit the host build's."""
from __future__ import annotations

import dataclasses
import logging
import shutil

import numpy as np
import onnx
import pytest

import bounded
import zoo
from mcudeploy import check
from mcudeploy.errors import MCUDeployError

HOST_SAMPLES = 4
BOARD_SAMPLES = 2

logging.getLogger().setLevel(logging.ERROR)  # onnxruntime's quantizer suggests pre-processing on every call

NAMES = sorted(zoo.MOBILE_BUILDERS)
KINDS = ("float", "int8")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each model built once per module and saved (check_outputs reads the file, as run --check does)."""
    cache = {}

    def get(name: str, kind: str):
        if name not in cache:
            work = tmp_path_factory.mktemp(name)
            float_model, qdq_model, _ = zoo.MOBILE_BUILDERS[name](work)
            cache[name] = {}
            for k, m in (("float", float_model), ("int8", qdq_model)):
                onnx.save(m, work / f"{name}_{k}.onnx")
                cache[name][k] = work / f"{name}_{k}.onnx"
        return cache[name][kind]

    return get


def test_mobile_models_have_their_blocks(saved):
    """Each model has the pieces it stands for, as torch exports them."""
    ops = {name: [n.op_type for n in onnx.load(saved(name, "float")).graph.node] for name in NAMES}
    shuffle = [n for n in onnx.load(saved("shufflenetv2", "float")).graph.node]
    assert any(a.op_type == "Reshape" and b.op_type == "Transpose" and c.op_type == "Reshape"
               for a, b, c in zip(shuffle, shuffle[1:], shuffle[2:])), "no Reshape -> Transpose -> Reshape shuffle"
    assert {"Split", "Concat", "ReduceMean"} <= set(ops["shufflenetv2"])
    assert "ReduceMean" in ops["mnasnet"]
    assert {"HardSwish", "HardSigmoid", "GlobalAveragePool", "Mul"} <= set(ops["mobilenetv3_small"])
    assert {"Sigmoid", "Mul", "GlobalAveragePool"} <= set(ops["efficientnet_b0"])
    sums = [len(n.input) for n in onnx.load(saved("randwire", "float")).graph.node if n.op_type == "Sum"]
    assert max(sums) >= 10
    for name in NAMES:
        qdq = onnx.load(saved(name, "int8"))
        assert sum(n.op_type == "QuantizeLinear" for n in qdq.graph.node) > 1, f"{name} was not quantized"


def _verdict(path, compiled, outputs, samples):
    verdict = check.check_outputs(path, compiled, outputs, samples)
    assert verdict.ok, "\n".join(verdict.lines())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", NAMES)
def test_mobile_model_passes_the_check_on_host(saved, name, kind, tmp_path):
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.compile import compile_model

    path = saved(name, kind)
    compiled = compile_model(path, "host", check=True)
    graph = compiled.graph
    if kind == "int8":  # every operator on int8 but the input's QuantizeLinear and the output's DequantizeLinear
        floats = [n.name for n in graph.nodes if n.op not in ("QuantizeLinear", "DequantizeLinear")
                  and any(graph[o].dtype != "int8" for o in n.outputs)]
        assert not floats, f"operators left in float: {floats}"
    if name == "shufflenetv2":  # each channel shuffle is one Concat of views (passes/shuffle.py)
        assert not any(n.op == "Transpose" for n in graph.nodes)
    if name == "efficientnet_b0":  # SiLU, Mul(x, Sigmoid(x)), is one Swish (passes/activation.py)
        assert any(n.op == "Swish" for n in graph.nodes)
    samples = check.random_inputs(compiled.graph, HOST_SAMPLES, seed=3)
    _verdict(path, compiled, run_compiled_on_host(compiled, samples, tmp_path), samples)


# CI's bounded size (tests/bounded.py): two int8 models (MobileNetV3-Small: hard-swish and squeeze-excite; the randomly
# wired one) and one float one (the same float kernels); the host test above runs every model, the same C. Until stop
# 68 CI ran every int8 model here: EfficientNet-B0, MnasNet and ShuffleNetV2 took 117 s more; what they add to those
# two (Swish, channel shuffles) is portable C with no Arm path (kernels/activation.c, concat.c), which the host runs
BOARD_IN_CI = {("mobilenetv3_small", "int8"), ("randwire", "int8"), (NAMES[-1], "float")}


@pytest.mark.qemu
@pytest.mark.parametrize("name,kind", [bounded.case(name, kind, id=f"{name}-{kind}",
                                                    in_ci=(name, kind) in BOARD_IN_CI)
                                       for name in NAMES for kind in KINDS])
def test_mobile_model_on_qemu_m4(saved, name, kind, tmp_path):
    """Where the weights fit qemu-m4's 4 MiB of flash: the check passes on the board and its outputs equal
    the host build's (int8 bit for bit). Where they do not, the firmware is refused saying by how much."""
    from mcudeploy.boards import load_board
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board
    from mcudeploy.compile import compile_model

    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    path = saved(name, kind)
    compiled = compile_model(path, "qemu-m4")
    samples = check.random_inputs(compiled.graph, BOARD_SAMPLES, seed=3)
    weights = sum(t.nbytes for t in compiled.graph.tensors.values() if t.is_const)
    if weights > compiled.board.flash_bytes:
        with pytest.raises(MCUDeployError, match=r"bytes of flash.*over by"):
            run_on_board(compiled, samples, workdir=tmp_path / "p")
        return
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
    if kind == "int8":  # the dequantized outputs: equal iff the int8 codes are
        host = run_compiled_on_host(dataclasses.replace(compiled, board=load_board("host")), samples, tmp_path / "h")
        for board_out, host_out in zip(result.outputs, host):
            for b, h in zip(board_out, host_out):
                np.testing.assert_array_equal(b, h)
    _verdict(path, compiled, result.outputs, samples)
