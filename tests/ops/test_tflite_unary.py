"""TFLite's activations, math functions and row normalisations against TensorFlow Lite Micro itself (its
Python interpreter, in one child process per test): every int8 code and every int16 code through each
element-wise operator at several quantizations (mcudeploy's numpy reference, and its C for the int16
kernels), rows through SOFTMAX int16, LOG_SOFTMAX and L2_NORMALIZATION (reference and C); the kernels on
strided and in-place views; and what TFLite Micro refuses, refused in one sentence."""
from __future__ import annotations

import numpy as np
import pytest
import tflite_build
from tflite_build import OPS, T

from mcudeploy.check.tflm import run_tflm_many
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.ops import registry
from mcudeploy.compile import compile_model
from mcudeploy.reference import run_reference

from .kernel_harness import needs_gcc, run_unary_kernel

INT8 = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
INT16 = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)



def _options(table: str, **fields):
    return tflite_build._options(table, **fields)


def _model(code, options, shape, dtype, qin, qout) -> bytes:
    x = T("x", shape, dtype, scale=(qin[0],), zero_point=(qin[1],))
    y = T("y", shape, dtype, scale=(qout[0],), zero_point=(qout[1],))
    return tflite_build._one(code, ("x",), ("y",), options, [x, y]).build()


def _against_tflm(tmp_path, cases: dict, c_too=()) -> list[str]:
    """cases: name -> (model bytes, [input samples]). Every sample through TensorFlow Lite Micro and
    mcudeploy's numpy reference (and, for the names in ``c_too``, its C on the host); the disagreements."""
    paths = {}
    for name, (model, _) in cases.items():
        paths[name] = tmp_path / f"{name}.tflite"
        paths[name].write_bytes(model)
    results = run_tflm_many([(paths[n], ["x"], [{"x": x} for x in xs]) for n, (_, xs) in cases.items()])
    bad = []
    for (name, (_, xs)), want in zip(cases.items(), results):
        if isinstance(want, Exception):
            bad.append(f"{name}: TensorFlow Lite Micro failed: {want}")
            continue
        graph = import_model(paths[name])
        got = {"the reference": [run_reference(graph, [x])[0] for x in xs]}
        if name in c_too:
            compiled = compile_model(paths[name], "host")
            outs = run_compiled_on_host(compiled, [{compiled.graph.inputs[0]: x} for x in xs], tmp_path)
            got["the C"] = [o[0] for o in outs]
        for what, values in got.items():
            for k, (value, w) in enumerate(zip(values, want)):
                w = np.asarray(w[0])
                value = np.asarray(value).reshape(w.shape)
                if w.dtype.kind == "f":
                    ok = np.allclose(value, w, rtol=0, atol=1e-5 * max(1.0, float(np.max(np.abs(w)))))
                else:
                    ok = np.array_equal(value.astype(np.int64), w.astype(np.int64))
                if not ok:
                    bad.append(f"{name}, sample {k}: {what} differs from TensorFlow Lite Micro")
    return bad


# ---------------------------------------------------------------- every code


def _int8_cases() -> dict:
    cases = {}
    for s, z in [(0.047, 0), (0.02, -10), (0.11, 30), (0.0031, 5), (0.5, -100)]:
        cases[f"logistic-{s}-{z}"] = (OPS.LOGISTIC, None, (s, z), (1 / 256, -128))
        cases[f"tanh-{s}-{z}"] = (OPS.TANH, None, (s, z), (1 / 128, 0))
        ops = [("hard_swish", OPS.HARD_SWISH, None), ("elu", OPS.ELU, None), ("relu", OPS.RELU, None),
               ("relu6", OPS.RELU6, None), ("abs", OPS.ABS, None), ("rsqrt", OPS.RSQRT, None)]
        ops += [(f"leaky_relu{a}", OPS.LEAKY_RELU, _options("LeakyReluOptions", Alpha=a)) for a in (0.2, 1.5, -0.3)]
        for so, zo in [(0.03, -50), (s * 0.7, 12), (s * 3, -128)]:
            for name, code, opts in ops:
                cases[f"{name}-{s}-{z}-{so:.4g}-{zo}"] = (code, opts, (s, z), (so, zo))
        cases[f"abs-same-scale-{s}-{z}"] = (OPS.ABS, None, (s, z), (s, 7))
    # scale ratios on a rounding tie: TFLite Micro divides the float scales in double
    cases["relu-tie"] = (OPS.RELU, None, (0.0105, 0), (0.01, -10))
    cases["abs-tie"] = (OPS.ABS, None, (0.0115, 0), (0.02, -10))
    cases["leaky_relu-tie"] = (OPS.LEAKY_RELU, _options("LeakyReluOptions", Alpha=1.5), (0.047, 0), (0.03, -50))
    return cases


def test_every_int8_code_as_tflite_micro(tmp_path, need_tflm):
    cases = {}
    for name, (code, opts, qin, qout) in _int8_cases().items():
        x = INT8[:, qin[1] + 128:] if code == OPS.RSQRT else INT8  # TFLite Micro stops below RSQRT's zero point
        cases[name] = (_model(code, opts, x.shape, "int8", qin, qout), [x])
    assert _against_tflm(tmp_path, cases) == []


def test_every_int16_code_as_tflite_micro(tmp_path, need_tflm):
    cases = {}
    for s in (2**-12, 2**-11, 1 / 3000, 0.0004, 2**-13):
        cases[f"logistic-{s:.4g}"] = (OPS.LOGISTIC, None, s, 2**-15)
        cases[f"tanh-{s:.4g}"] = (OPS.TANH, None, s, 2**-15)
        for so in (s, s * 0.8, s * 2.3):
            cases[f"relu-{s:.4g}-{so:.4g}"] = (OPS.RELU, None, s, so)
            cases[f"relu6-{s:.4g}-{so:.4g}"] = (OPS.RELU6, None, s, so)
            cases[f"abs-{s:.4g}-{so:.4g}"] = (OPS.ABS, None, s, so)
            cases[f"leaky_relu-{s:.4g}-{so:.4g}"] = (OPS.LEAKY_RELU, _options("LeakyReluOptions", Alpha=-0.7), s, so)
    models = {name: (_model(code, opts, INT16.shape, "int16", (s, 0), (so, 0)), [INT16])
              for name, (code, opts, s, so) in cases.items()}
    c_too = ("logistic-0.0004", "logistic-0.0002441", "tanh-0.0004", "tanh-0.0004883", "relu-0.0004-0.00032",
             "relu6-0.0004-0.0004", "abs-0.0004-0.00092", "leaky_relu-0.0004-0.00032")
    assert set(c_too) <= set(models)
    assert _against_tflm(tmp_path, models, c_too) == []


# ---------------------------------------------------------------- rows


def test_rows_as_tflite_micro(tmp_path, need_tflm):
    rng = np.random.default_rng(5)
    cases, c_too = {}, []
    for shape in [(2, 40), (1, 3, 5, 7), (3, 300)]:
        def ints(dtype, lo=None, hi=None, n=2, shape=shape):
            info = np.iinfo(dtype)
            return [rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, shape)
                    .astype(dtype) for _ in range(n)]
        for s in (0.01, 0.7, 3e-4):
            tag = f"{'x'.join(map(str, shape))}-{s}"
            cases[f"log_softmax-{tag}"] = (_model(OPS.LOG_SOFTMAX, None, shape, "int8", (s, 5), (16 / 256, 127)),
                                           ints(np.int8))
            cases[f"l2_normalization-{tag}"] = (_model(OPS.L2_NORMALIZATION, None, shape, "int8", (s, -3),
                                                       (1 / 128, 0)), ints(np.int8) + ints(np.int8, -4, -2))
            for beta in (1.0, 0.3):
                cases[f"softmax-{tag}-{beta}"] = (_model(OPS.SOFTMAX, _options("SoftmaxOptions", Beta=beta), shape,
                                                         "int16", (s / 100, 0), (2**-15, 0)), ints(np.int16))
            c_too += [f"log_softmax-{tag}", f"l2_normalization-{tag}", f"softmax-{tag}-0.3"]
        floats = [rng.uniform(-4, 4, shape).astype(np.float32) for _ in range(2)]
        for name, code in (("log_softmax", OPS.LOG_SOFTMAX), ("l2_normalization", OPS.L2_NORMALIZATION)):
            x = T("x", shape, "float32")
            model = tflite_build._one(code, ("x",), ("y",), None, [x, T("y", shape, "float32")]).build()
            cases[f"{name}-float-{'x'.join(map(str, shape))}"] = (model, floats)
            c_too.append(f"{name}-float-{'x'.join(map(str, shape))}")
    assert _against_tflm(tmp_path, cases, c_too) == []


# ---------------------------------------------------------------- kernels on views


def _graph(tmp_path, code, options, shape, dtype, qin, qout):
    path = tmp_path / "m.tflite"
    path.write_bytes(_model(code, options, shape, dtype, qin, qout))
    graph = import_model(path)
    (node,) = graph.nodes
    return graph, node


VIEW_CASES = [
    ("piecewise_s16", OPS.LEAKY_RELU, _options("LeakyReluOptions", Alpha=0.3), "int16", (3e-4, 0), (5e-4, 0)),
    ("sigmoid_s16", OPS.LOGISTIC, None, "int16", (4e-4, 0), (2**-15, 0)),
    ("tanh_s16", OPS.TANH, None, "int16", (2**-12, 0), (2**-15, 0)),
    ("softmax_s16", OPS.SOFTMAX, _options("SoftmaxOptions", Beta=1.0), "int16", (1e-3, 0), (2**-15, 0)),
    ("log_softmax_s8", OPS.LOG_SOFTMAX, None, "int8", (0.05, 3), (16 / 256, 127)),
    ("log_softmax_f32", OPS.LOG_SOFTMAX, None, "float32", None, None),
    ("l2norm_s8", OPS.L2_NORMALIZATION, None, "int8", (0.05, 3), (1 / 128, 0)),
    ("l2norm_f32", OPS.L2_NORMALIZATION, None, "float32", None, None),
]


@needs_gcc
@pytest.mark.parametrize("inplace", [False, True], ids=["strided", "inplace"])
@pytest.mark.parametrize("case", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_kernel_on_views(tmp_path, case, inplace):
    _, code, options, dtype, qin, qout = case
    shape = (3, 4, 37)
    if dtype == "float32":
        path = tmp_path / "m.tflite"
        path.write_bytes(tflite_build._one(code, ("x",), ("y",), options, [T("x", shape, dtype),
                                                                         T("y", shape, dtype)]).build())
        graph = import_model(path)
        (node,) = graph.nodes
        x = np.random.default_rng(2).uniform(-3, 3, shape).astype(np.float32)
    else:
        graph, node = _graph(tmp_path, code, options, shape, dtype, qin, qout)
        info = np.iinfo(dtype)
        x = np.random.default_rng(2).integers(info.min, info.max + 1, shape).astype(dtype)
    op = registry.get(node.op)
    want = op.reference(graph, node, [x])[0]
    got = run_unary_kernel(tmp_path, op.kernel(graph, node), graph, x, pad=0 if inplace else 2, inplace=inplace)
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1.0, float(np.abs(want).max())))
    else:
        assert np.array_equal(got, want)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("code, dtype, qout, says", [
    (OPS.LOGISTIC, "int8", (1 / 256, 0), "needs an output zero point of -128"),
    (OPS.LOGISTIC, "int16", (2**-14, 0), "needs an output scale of 2^-15"),
    (OPS.RELU, "int16", (0.01, 3), "needs zero points 0"),
    (OPS.LOG_SOFTMAX, "int8", (1 / 256, -128), "needs an output of scale 16/256 and zero point 127"),
    (OPS.EXP, "int8", (0.05, 0), "TensorFlow Lite Micro runs it on float32 only"),
    (OPS.HARD_SWISH, "int16", (0.01, 0), "TensorFlow Lite Micro runs it on float32, int8 only"),
])
def test_what_tflite_micro_refuses_is_one_sentence(tmp_path, code, dtype, qout, says):
    path = tmp_path / "m.tflite"
    path.write_bytes(_model(code, None, (1, 8), dtype, (0.01, 0), qout))
    with pytest.raises(UnsupportedError) as info:
        import_model(path)
    message = str(info.value)
    assert says in message and message.count("\n") == 0 and "operator 0" in message


# ---------------------------------------------------------------- split


SPLIT_CASES = [
    ("logistic_s16", OPS.LOGISTIC, None, "int16", (4e-4, 0), (2**-15, 0)),
    ("leaky_relu_s16", OPS.LEAKY_RELU, _options("LeakyReluOptions", Alpha=0.3), "int16", (3e-4, 0), (5e-4, 0)),
    ("softmax_s16", OPS.SOFTMAX, _options("SoftmaxOptions", Beta=1.0), "int16", (1e-3, 0), (2**-15, 0)),
    ("log_softmax_s8", OPS.LOG_SOFTMAX, None, "int8", (0.05, 3), (16 / 256, 127)),
    ("l2norm_s8", OPS.L2_NORMALIZATION, None, "int8", (0.05, 3), (1 / 128, 0)),
]


@needs_gcc
@pytest.mark.parametrize("case", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_split_into_rows_computes_the_same(tmp_path, case):
    """Cut along the first axis, the pieces (on views) compute bit for bit what the whole does, in numpy
    and in C; a normalised axis cannot be cut."""
    from mcudeploy.partition import Cut, check_cut, split
    from mcudeploy.compile import compile_graph

    _, code, options, dtype, qin, qout = case
    shape = (6, 37)
    graph, node = _graph(tmp_path, code, options, shape, dtype, qin, qout)
    axes = [a.name for a in registry.get(node.op).expr(graph, node).axes]
    assert axes[0] == "d0"
    cut = Cut(((node.name, "d0"),), 3, "keep")
    assert check_cut(graph, cut) is None
    if axes[1].startswith("r"):
        assert check_cut(graph, Cut(((node.name, axes[1]),), 2, "keep")) is not None
    pieces = split(graph, (cut,))
    assert sum(n.op == node.op for n in pieces.nodes) == 3
    info = np.iinfo(dtype)
    x = np.random.default_rng(4).integers(info.min, info.max + 1, shape).astype(dtype)
    want = run_reference(graph, [x])[0]
    assert np.array_equal(run_reference(pieces, [x])[0], want)
    got = run_compiled_on_host(compile_graph(pieces, "host"), [{graph.inputs[0]: x}], tmp_path)[0][0]
    assert np.array_equal(got, want)


def test_a_float_activation_between_dequantize_and_quantize_as_tflite_micro(tmp_path, need_tflm):
    """DEQUANTIZE, a float LOGISTIC (or TANH, ROUND, ...), QUANTIZE folds into one int8 node whose table is
    TFLite's dequantize, float function and quantize (not TFLite's int8 kernel for the operator)."""
    cases = {}
    for name, code in (("logistic", OPS.LOGISTIC), ("tanh", OPS.TANH), ("hard_swish", OPS.HARD_SWISH),
                       ("round", OPS.ROUND), ("exp", OPS.EXP)):
        tensors = [T("x", INT8.shape, "int8", scale=(0.043,), zero_point=(-7,)), T("f", INT8.shape, "float32"),
                   T("g", INT8.shape, "float32"), T("y", INT8.shape, "int8", scale=(0.011,), zero_point=(-100,))]
        ops = [tflite_build.Op(OPS.DEQUANTIZE, ("x",), ("f",)), tflite_build.Op(code, ("f",), ("g",)),
               tflite_build.Op(OPS.QUANTIZE, ("g",), ("y",))]
        cases[name] = (tflite_build.Model(tensors, ops, ("x",), ("y",)).build(), [INT8])
    for name, (model, _) in cases.items():
        path = tmp_path / f"{name}-graph.tflite"
        path.write_bytes(model)
        (node,) = compile_model(path, "host").graph.nodes  # one int8 node
        assert not node.attr("tflite_kernel"), name
    assert _against_tflm(tmp_path, cases, c_too=("logistic",)) == []
