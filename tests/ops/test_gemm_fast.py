"""The int8 Gemm/MatMul kernel with packed weights (firmware/kernels/gemm.c, mcudeploy/ops/gemm.py
pack_weights) against the numpy reference, bit for bit: the dual-MAC path (A rows contiguous)
for every K and N remainder modulo 4, both requantization routes, and the path for A read
through strides (transA, a step between elements), on views inside bigger buffers and random
shapes; and a QEMU run of a depthwise + fully connected model on Cortex-M4 and M3."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcudeploy.compile import compile_graph
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry
from mcudeploy.ops.gemm import pack_weights, pairs_fit
from mcudeploy.plan.options import CompileOptions
from mcudeploy.reference import run_reference

from .gemm_graphs import int8_product
from .kernel_harness import Place, needs_gcc, run_kernel


def packed_offset(k: int, n: int, kk: int, nn: int) -> int:
    """Where B[k, n] sits in pack_weights' output: the layout mcud_gemm.h documents, written out."""
    blocks, quads = nn // 4, kk // 4
    if n < 4 * blocks:
        base, i = (n // 4) * 4 * kk, n % 4
        if k < 4 * quads:
            return base + (k // 4) * 16 + i * 4 + k % 4
        return base + 16 * quads + (k - 4 * quads) * 4 + i
    return 4 * kk * blocks + (n - 4 * blocks) * (-(-kk // 4) * 4) + k


@pytest.mark.parametrize("kk,nn", [(1, 1), (3, 5), (4, 4), (7, 9), (16, 12), (33, 6), (640, 13)])
def test_pack_weights_follows_the_documented_layout(kk, nn):
    w = np.random.default_rng(kk * 100 + nn).integers(-128, 128, (kk, nn)).astype(np.int8)
    packed = pack_weights(w)
    blocks = nn // 4
    assert packed.size == 4 * kk * blocks + (nn - 4 * blocks) * (-(-kk // 4) * 4)
    where = np.array([[packed_offset(k, n, kk, nn) for n in range(nn)] for k in range(kk)])
    assert len(np.unique(where)) == kk * nn  # every weight has its own byte
    np.testing.assert_array_equal(packed[where], w)


def paired_value(packed: np.ndarray, k: int, n: int, kk: int, nn: int) -> int:
    """B[k, n] read back from pack_weights(.., paired=True) as mcud_gemm.h documents it: in a quad, the int16 of the
    columns' pair and k, its low byte the even column's weight, the rest over 256 the odd column's."""
    if n >= 4 * (nn // 4) or k >= 4 * (kk // 4):
        return int(packed[packed_offset(k, n, kk, nn)])
    at = (n // 4) * 4 * kk + (k // 4) * 16 + ((n % 4) // 2) * 8 + (k % 2) * 4 + ((k % 4) // 2) * 2
    h = int(packed[at:at + 2].view("<i2")[0])
    even = int(packed[at])
    return even if n % 2 == 0 else (h - even) >> 8


@pytest.mark.parametrize("kk,nn", [(4, 4), (7, 9), (16, 12), (33, 6), (640, 13)])
def test_paired_packing_follows_the_documented_layout(kk, nn):
    w = np.random.default_rng(kk * 10 + nn).integers(-127, 128, (kk, nn)).astype(np.int8)
    assert pairs_fit(w)
    packed = pack_weights(w, paired=True)
    assert packed.size == pack_weights(w).size
    got = np.array([[paired_value(packed, k, n, kk, nn) for n in range(nn)] for k in range(kk)])
    np.testing.assert_array_equal(got, w)


def test_pairs_fit_refuses_what_the_paired_kernel_cannot_hold():
    w = np.ones((8, 4), np.int8)
    assert pairs_fit(w)
    assert not pairs_fit(w[:3]) and not pairs_fit(w[:, :3])  # no quad of k, no block of four columns
    bad = w.copy()
    bad[2, 1], bad[2, 0] = -128, -1  # 256 * -128 - 1 is past int16
    assert not pairs_fit(bad)
    bad[2, 0] = 0
    assert pairs_fit(bad)
    big = np.full((520, 4), 127, np.int8)  # an odd column's sum up to 128 * 127 * 520 > 2^23
    assert not pairs_fit(big) and pairs_fit(big[:512])


def check(tmp_path, graph, node, a, place=None):
    op = registry.get(node.op)
    assert op.accepts_int8(graph, node)
    call = op.kernel(graph, node)
    assert call.views[1] == ""  # B reaches the kernel packed, not through a view
    expected = run_reference(graph, [a])[0]
    got = run_kernel(tmp_path, call, graph, {"a": a}, place or {"a": 1, "y": 2})[0]
    np.testing.assert_array_equal(got, expected)
    return call


FAST_CASES = [  # (id, op, A shape, K, N, attrs)
    ("fc_640_128", "Gemm", (1, 640), 640, 128, {}),
    ("k_tail_n_tail", "Gemm", (2, 37), 37, 11, {}),
    ("k_small", "Gemm", (3, 3), 3, 6, {}),
    ("n_small", "Gemm", (1, 20), 20, 3, {}),
    ("one_quad", "Gemm", (1, 4), 4, 4, {}),
    ("odd_quads", "Gemm", (1, 12), 12, 8, {}),
    ("transB", "Gemm", (2, 41), 41, 9, {"transB": 1}),
    ("matmul_batch", "MatMul", (2, 3, 24), 24, 10, {}),
    ("matmul_vec", "MatMul", (19,), 19, 7, {}),
]


@needs_gcc
@pytest.mark.parametrize("case", FAST_CASES, ids=[c[0] for c in FAST_CASES])
@pytest.mark.parametrize("route", ["hi_shift", "low_shift"])
def test_dual_mac_path_is_bit_exact(tmp_path, case, route):
    _, op, a_shape, k, n, attrs = case
    graph, node, a = int8_product(op, a_shape, k, n, attrs, seed=k + n, s_y=0.2 if route == "hi_shift" else 0.0002)
    call = check(tmp_path, graph, node, a)
    shifts = np.array(dict(call.params.fields)["shift"].values)
    assert np.all(shifts >= 33) if route == "hi_shift" else np.all(shifts < 33)


@needs_gcc
@pytest.mark.parametrize("clip", [(0.0, 6.0), (0.0, None)], ids=["relu6", "relu"])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
def test_activation_and_multiplier_kinds(tmp_path, clip, per_channel):
    lo, hi = clip[0], clip[1] if clip[1] is not None else float("inf")
    graph, node, a = int8_product("Gemm", (2, 30), 30, 10, per_channel=per_channel, clip=(lo, hi), seed=5)
    check(tmp_path, graph, node, a)


@needs_gcc
def test_without_bias(tmp_path):
    graph, node, a = int8_product("MatMul", (3, 13), 13, 6, bias=False, seed=6)
    check(tmp_path, graph, node, a)


STRIDED_CASES = [  # A read through strides: the packed weights through their index
    ("transA", "Gemm", (21, 3), 21, 6, {"transA": 1}, {"a": 1, "y": 2}),
    ("a_step", "Gemm", (2, 18), 18, 9, {}, {"a": Place(1, step=2), "y": Place(1, step=3)}),
    ("y_reversed", "MatMul", (2, 2, 12), 12, 5, {}, {"a": 2, "y": Place(1, (2, 1, 0))}),
]


@needs_gcc
@pytest.mark.parametrize("case", STRIDED_CASES, ids=[c[0] for c in STRIDED_CASES])
def test_strided_views_are_bit_exact(tmp_path, case):
    _, op, a_shape, k, n, attrs, place = case
    graph, node, a = int8_product(op, a_shape, k, n, attrs, seed=7)
    call = check(tmp_path, graph, node, a, place)
    if "_a16" in call.fn:  # a view stepped at run time reads the paired weights one by one
        assert call.fn.endswith("_a16p")


@needs_gcc
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(1, 3), k=st.integers(1, 70), n=st.integers(1, 19), trans_b=st.booleans(),
       per_channel=st.booleans(), s_y=st.sampled_from([0.2, 0.0002]), seed=st.integers(0, 1000))
def test_random_shapes(tmp_path, m, k, n, trans_b, per_channel, s_y, seed):
    graph, node, a = int8_product("Gemm", (m, k), k, n, {"transB": int(trans_b)}, per_channel, seed=seed, s_y=s_y)
    check(tmp_path, graph, node, a)


# --------------------------------------------------------------------------- under QEMU


@pytest.fixture(scope="module")
def dw_fc_model(tmp_path_factory):
    """Conv, depthwise 3x3 (stride 1 and 2), Flatten and two Gemms, quantized by onnxruntime."""
    import zoo

    net = zoo.Net("dw_fc", 21)
    x = net.op("Relu", [net.conv("x", 3, 16, 3)])
    x = net.op("Relu", [net.conv(x, 16, 16, 3, group=16)])  # 20 x 6, as KWS's narrow planes
    x = net.op("Relu", [net.conv(x, 16, 16, 3, stride=2, group=16)])  # 10 x 3
    x = net.op("Flatten", [x])
    x = net.op("Relu", [net.op("Gemm", [x, net.const(net.weights((480, 37), 480), "w"),
                                        net.const(net.bias(37), "b")])])
    x = net.op("Gemm", [x, net.const(net.weights((10, 37), 37), "w"), net.const(net.bias(10), "b")], transB=1)
    inputs = {"x": (1, 3, 20, 6)}
    work = tmp_path_factory.mktemp("dw_fc")
    float_model = net.model(inputs, {"y": x})
    return zoo.quantize(float_model, inputs, work)


needs_qemu = pytest.mark.skipif(any(shutil.which(t) is None for t in ("qemu-system-arm", "arm-none-eabi-gcc")),
                                reason="needs qemu-system-arm and arm-none-eabi-gcc")


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_depthwise_and_fully_connected_on_qemu_equal_the_host(dw_fc_model, board, tmp_path):
    from mcudeploy import check as mcheck
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board
    from mcudeploy.compile import compile_model

    compiled = compile_model(dw_fc_model, board)
    kernels = {registry.get(n.op).kernel(compiled.graph, n).fn for n in compiled.graph.nodes
               if not registry.get(n.op).view}
    assert "mcud_conv_s8_dw" in kernels and kernels & {"mcud_gemm_s8", "mcud_gemm_s8_a16", "mcud_gemm_s8_a16p"}
    samples = mcheck.random_inputs(compiled.graph, 3, seed=4)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines


def _random_gemms(rng, arithmetic: str, count: int = 6) -> Graph:
    """Int8 Gemms, each reading its own input A (1 x K) and writing its own output: random K and N (tails of both
    modulo 4; a block of four columns at least but at j = 5), B as (N, K) with transB or (K, N), every third without
    scratch (mcud_gemm_s8*_p on paired weights, its rows of A widened on the fly; mcud_gemm_s8* at j % 6 == 5) and the
    others with it (mcud_gemm_s8*_a16p on paired weights; mcud_gemm_s8*_a16 at j % 6 == 1). At j % 6 == 1 and 5 an odd
    column's weight -128 beside a negative one, which the paired packing cannot hold (pairs_fit). Every node pairs where
    it can, as offload.dsp_packings has a core without MVE do. With TFLite's arithmetic every other Gemm has a column whose output is its zero
    point (a vanishing scale) and one off the doubled route (an accumulator past 2^30 that is not saturated, or a scale
    near 1), among enough columns that rq2 keeps them; of the others, those at j % 6 == 3 have one weight scale for
    every column (rq2's one multiplier, hoisted out of the loop)."""
    tensors, nodes, inputs, outputs = {}, [], [], []
    for j in range(count):
        off = j % 2 == 0 and arithmetic == "tflite"
        k, n = int(rng.integers(4, 90)), int(rng.integers(9, 20) if off else rng.integers(1 if j == 5 else 4, 12))
        s_a, s_w = 0.03, rng.uniform(0.002, 0.01, n)
        b = rng.integers(-5000, 5000, n).astype(np.int32)
        if off:
            s_w[0] = 1e-13
            if j % 4 == 0:
                s_w[1], b[1] = 2.5e-8, (1 << 30) + int(rng.integers(0, 1000))
            else:
                s_w[-1] = 2.0
        trans_b = j % 2 == 0
        one = not off and j % 6 == 3
        w = rng.integers(-127, 128, (n, k) if trans_b else (k, n)).astype(np.int8)
        if j % 6 in (1, 5) and n >= 4:
            w[0, :2] = (-1, -128)  # (k 0, columns 0 and 1): not transposed at odd j
        tensors[f"a{j}"] = Tensor(f"a{j}", (1, k), "int8", "input", Quant((s_a,), (int(rng.integers(-20, 20)),)))
        if one:
            tensors[f"w{j}"] = constant(f"w{j}", w, Quant((float(s_w[0]),), (0,)))
            tensors[f"b{j}"] = constant(f"b{j}", b, Quant((s_a * float(s_w[0]),), (0,)))
        else:
            tensors[f"w{j}"] = constant(f"w{j}", w, Quant(tuple(s_w), (0,) * n, 0 if trans_b else 1))
            tensors[f"b{j}"] = constant(f"b{j}", b, Quant(tuple(s_a * s_w), (0,) * n, 0))
        tensors[f"y{j}"] = Tensor(f"y{j}", (1, n), "int8", "output",
                                  Quant((float(rng.uniform(0.02, 0.2)),), (int(rng.integers(-10, 10)),)))
        attrs = {"transB": int(trans_b), "dsp": 1, **({"scratch": 0} if j % 3 == 2 else {})}
        nodes.append(Node(f"fc{j}", "Gemm", (f"a{j}", f"w{j}", f"b{j}"), (f"y{j}",), attrs))
        inputs.append(f"a{j}")
        outputs.append(f"y{j}")
    return Graph("gemms", tensors, tuple(nodes), tuple(inputs), tuple(outputs), arithmetic=arithmetic)


def _field(call, name):
    return dict(call.params.fields)[name]


@needs_gcc
@pytest.mark.parametrize("seed", [1, 2])
def test_random_tflite_gemms_on_the_host_equal_numpy(tmp_path, seed):
    """The host's C of _random_gemms' TFLite products, one at a time, bit for bit with the numpy reference (TFLite's
    arithmetic): mcud_requant_tfl_2 on twice the sum (rq2), a column whose output is its zero point, and columns off
    that route, requantized as TFLite does in general, in blocks of four columns and the last ones, with and without
    the widened rows."""
    graph = _random_gemms(np.random.default_rng(seed), "tflite")
    kinds, fns, channels = set(), set(), set()
    for j, node in enumerate(graph.nodes):
        a, y = node.inputs[0], node.outputs[0]
        one = Graph("one", {t: graph[t] for t in (*node.inputs, y)}, (node,), (a,), (y,), arithmetic="tflite")
        call = registry.get("Gemm").kernel(one, node)
        rq2 = _field(call, "rq2")
        assert rq2 != 0, node.name
        kinds |= set(rq2.values[0::3]) & {0, 1}
        fns.add(call.fn)
        channels.add(_field(call, "channels") == 1)
        x = np.random.default_rng(seed + j).integers(-128, 128, graph[a].shape).astype(np.int8)
        (tmp_path / str(j)).mkdir()
        got = run_kernel(tmp_path / str(j), call, one, {a: x}, {a: 1, y: 2})[0]
        np.testing.assert_array_equal(got, run_reference(one, [x])[0], err_msg=node.name)
    assert kinds == {0, 1} and channels == {True, False}
    assert fns == {"mcud_gemm_s8_tfl", "mcud_gemm_s8_tfl_p", "mcud_gemm_s8_tfl_a16", "mcud_gemm_s8_tfl_a16p"}


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("board,arithmetic", [("qemu-m4", "tflite"), ("qemu-m7", "onnx"), ("qemu-m7", "tflite")])
def test_random_gemms_on_qemu_equal_the_host(tmp_path, board, arithmetic):
    """The DSP path of the constant-weight products (their multiply-accumulates in assembly, the widened rows, and for
    TFLite rq2's requantization and the columns off it) on _random_gemms, against the host's C (itself bit for bit
    with the numpy reference, above)."""
    from mcudeploy import check as mcheck
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    graph = _random_gemms(np.random.default_rng(len(board) + len(arithmetic)), arithmetic)
    compiled = compile_graph(graph, board, name="gemms", options=CompileOptions(scratch="keep"))
    calls = [registry.get("Gemm").kernel(compiled.graph, n) for n in compiled.graph.nodes if n.op == "Gemm"]
    base = "mcud_gemm_s8_tfl" if arithmetic == "tflite" else "mcud_gemm_s8"
    assert {c.fn for c in calls} == {base, base + "_p", base + "_a16", base + "_a16p"}
    rq2 = [_field(c, "rq2") for c in calls]
    if arithmetic == "tflite":
        assert all(r != 0 for r in rq2) and {0, 1} <= set().union(*(r.values[0::3] for r in rq2))
    else:
        assert rq2 == [0] * len(calls)
    samples = mcheck.random_inputs(compiled.graph, 3, seed=7)
    result = run_on_board(compiled, samples, workdir=tmp_path / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
