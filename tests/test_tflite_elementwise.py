"""TFLite's element-wise operators of two inputs on every pair of int8 codes: a (256, 1) tensor of all codes
broadcast against a (1, 256) one makes all 65,536 pairs in one run, in a .tflite made here with quantization
parameters of our choosing. mcudeploy's numpy reference must equal TensorFlow Lite Micro's output everywhere
(the comparisons skip where the tflite-micro package is missing), and the C built for the host must equal the
reference; int16 operators take random codes instead. Also the importer's refusals of what TFLite Micro
does not run."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcudeploy.check.tflm import run_tflm
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.ops import registry
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference
from tflite_build import OPS, RELU, Model, Op, T, _options, add_options, mul_options

CODES = np.arange(-128, 128)



def _model(code, options, qa, qb, qy, dtype="int8", out_dtype=None, shapes=((256, 1), (1, 256))) -> Model:
    out_shape = tuple(max(x, y) for x, y in zip(*shapes))
    q = lambda p: {} if p is None else dict(scale=(p[0],), zero_point=(p[1],))  # noqa: E731
    return Model([T("a", shapes[0], dtype, **q(qa)), T("b", shapes[1], dtype, **q(qb)),
                  T("y", out_shape, out_dtype or dtype, **q(qy))],
                 [Op(code, ("a", "b"), ("y",), options)], ("a", "b"), ("y",))


def _check(model: Model, tmp_path, inputs, need_tflm: bool = True) -> np.ndarray:
    """The reference against TFLite Micro (when installed) and the C against the reference; the output."""
    path = tmp_path / "case.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, "host")
    sample = dict(zip(compiled.graph.inputs, inputs))
    ref = run_reference(compiled.graph, sample)[0]
    if need_tflm:
        want = run_tflm(path, ["a", "b"], [dict(zip("ab", inputs))])[0][0]
        bad = np.argwhere(ref.astype(np.int64) != want.astype(np.int64))
        assert len(bad) == 0, f"{len(bad)} of {want.size} outputs differ from TFLite Micro's, first at " \
                              f"a={inputs[0].ravel()[bad[0][0] % inputs[0].size]}: {ref[tuple(bad[0])]} != " \
                              f"{want[tuple(bad[0])]}"
    got = run_compiled_on_host(compiled, [sample], tmp_path)[0][0]
    np.testing.assert_array_equal(got.reshape(ref.shape), ref)
    return ref


def _pairs(dtype="int8"):
    return [CODES.reshape(256, 1).astype(dtype), CODES.reshape(1, 256).astype(dtype)]


# quantization parameters (scale, zero point) of a, b and y: a usual set, scales far apart, and y finer than both
PARAMS = {
    "usual": ((0.0235, 0), (0.0157, -128), (0.0843, 5)),
    "apart": ((0.5, 17), (0.0007, -3), (0.05, -100)),
    "fine": ((0.02, -7), (0.03, 90), (0.004, 3)),
}
ARITHMETIC = {
    "ADD": (OPS.ADD, add_options()), "ADD_RELU": (OPS.ADD, add_options(RELU)),
    "SUB": (OPS.SUB, _options("SubOptions", FusedActivationFunction=0)),
    "MUL": (OPS.MUL, mul_options()), "MUL_RELU": (OPS.MUL, mul_options(RELU)),
    "DIV": (OPS.DIV, _options("DivOptions", FusedActivationFunction=0)),
    "SQUARED_DIFFERENCE": (OPS.SQUARED_DIFFERENCE, None),
    "MAXIMUM": (OPS.MAXIMUM, None), "MINIMUM": (OPS.MINIMUM, None),
}
COMPARISONS = ("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL")


@pytest.mark.parametrize("params", PARAMS, ids=list(PARAMS))
@pytest.mark.parametrize("op", ARITHMETIC, ids=list(ARITHMETIC))
def test_int8_on_every_pair_of_codes(op, params, tmp_path, need_tflm):
    code, options = ARITHMETIC[op]
    _check(_model(code, options, *PARAMS[params]), tmp_path, _pairs())


@pytest.mark.parametrize("op", COMPARISONS)
def test_int8_comparison_on_every_pair_of_codes(op, tmp_path, need_tflm):
    qa, qb, _ = PARAMS["apart"] if op in ("GREATER", "LESS_EQUAL") else PARAMS["usual"]
    y = _check(_model(getattr(OPS, op), None, qa, qb, None, out_dtype="bool"), tmp_path, _pairs())
    assert 0 < np.count_nonzero(y) < y.size


def test_sub_multipliers_come_from_ratios_in_double(tmp_path, need_tflm):
    """sub_common.cc of the TFLite Micro source at hand divides the scales in float32, add_common.cc in double;
    the interpreter agrees with double. With these scales the float32 ratios give other multipliers, and
    472 of the 65,536 outputs would differ from TFLite Micro's."""
    from mcudeploy.ops import requant

    (sa, za), (sb, zb), (sy, zy) = PARAMS["fine"]
    a, b = _pairs()
    want = _check(_model(OPS.SUB, _options("SubOptions", FusedActivationFunction=0), *PARAMS["fine"]), tmp_path,
                  [a, b])
    f32 = np.float32
    twice = f32(2) * max(f32(sa), f32(sb))
    (am, ash), (bm, bsh), (ym, ysh) = (requant.tflite_multiplier(float(r)) for r in
                                       (f32(sa) / twice, f32(sb) / twice, twice / (f32(1 << 20) * f32(sy))))
    va = requant.tflite_requantize((a.astype(np.int64) - za) << 20, am, ash)
    vb = requant.tflite_requantize((b.astype(np.int64) - zb) << 20, bm, bsh)
    float32_way = np.clip(requant.tflite_requantize(requant.wrap32(va - vb), ym, ysh) + zy, -128, 127)
    assert np.count_nonzero(float32_way != want) == 472


INT16 = {"ADD": (OPS.ADD, add_options()), "SUB": (OPS.SUB, _options("SubOptions", FusedActivationFunction=0)),
         "MUL": (OPS.MUL, mul_options()), "SQUARED_DIFFERENCE": (OPS.SQUARED_DIFFERENCE, None),
         "MAXIMUM": (OPS.MAXIMUM, None)}


@pytest.mark.parametrize("op", INT16, ids=list(INT16))
def test_int16_on_random_codes(op, tmp_path, need_tflm):
    code, options = INT16[op]
    rng = np.random.default_rng(16)
    shapes = ((64, 1), (1, 64))
    xs = [rng.integers(-32768, 32768, s).astype(np.int16) for s in shapes]
    xs[0][:4, 0] = (-32768, 32767, 0, -1)
    _check(_model(code, options, (0.0009, 0), (0.0012, 0), (0.002, 0), "int16", shapes=shapes), tmp_path, xs)


def test_prelu_on_every_pair_of_codes(tmp_path, need_tflm):
    """PRELU of every x code with every alpha code (alpha an input here, a constant in Keras' models)."""
    _check(_model(OPS.PRELU, None, (0.0235, 3), (0.0034, -20), (0.0138, -91)), tmp_path, _pairs())


def test_int16_prelu_with_an_int8_alpha(tmp_path, need_tflm):
    """PRELU of int16 x takes an int8 alpha (prelu.cc); the converter does not make it, TFLite Micro runs it."""
    model = _model(OPS.PRELU, None, (0.0009, 0), (0.0034, -20), (0.0007, 0), shapes=((64, 1), (1, 256)))
    model.tensors[0].dtype, model.tensors[2].dtype = "int16", "int16"
    rng = np.random.default_rng(12)
    x = rng.integers(-32768, 32768, (64, 1)).astype(np.int16)
    x[:3, 0] = (-32768, 32767, 0)
    _check(model, tmp_path, [x, CODES.reshape(1, 256).astype(np.int8)])


def test_int16_select_v2(tmp_path, need_tflm):
    """SELECT_V2 of int16 (the converter does not make it, TFLite Micro runs it): the codes are copied."""
    q = dict(scale=(0.001,), zero_point=(0,))
    model = Model([T("c", (4, 1), "bool"), T("a", (4, 6), "int16", **q), T("b", (1, 6), "int16", **q),
                   T("y", (4, 6), "int16", **q)], [Op(OPS.SELECT_V2, ("c", "a", "b"), ("y",))], ("c", "a", "b"), ("y",))
    rng = np.random.default_rng(13)
    xs = [np.array([[True], [False], [True], [False]]), rng.integers(-32768, 32768, (4, 6)).astype(np.int16),
          rng.integers(-32768, 32768, (1, 6)).astype(np.int16)]
    path = tmp_path / "select.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, "host")
    sample = dict(zip(compiled.graph.inputs, xs))
    want = run_tflm(path, ["c", "a", "b"], [dict(zip("cab", xs))])[0][0]
    np.testing.assert_array_equal(run_reference(compiled.graph, sample)[0], want)
    np.testing.assert_array_equal(run_compiled_on_host(compiled, [sample], tmp_path)[0][0], want)


def test_maximum_compares_codes_whatever_the_quantization(tmp_path):
    """TFLite's MAXIMUM keeps the larger code even where the scales differ (maximum_minimum.cc)."""
    y = _check(_model(OPS.MAXIMUM, None, (1.0, 0), (0.01, 0), (1.0, 0)), tmp_path, _pairs(), need_tflm=False)
    assert y[0, 255] == 127  # code -128 at scale 1 against code 127 at scale 0.01: 127


# ---------------------------------------------------------------------------------------------- refusals


def _import_error(model: Model, tmp_path) -> str:
    path = tmp_path / "refused.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError) as info:
        import_model(path)
    return str(info.value)


def test_int16_add_with_a_zero_point_is_refused(tmp_path):
    text = _import_error(_model(OPS.ADD, add_options(), (0.001, 5), (0.001, 0), (0.002, 0), "int16"), tmp_path)
    assert "operator 0 (ADD)" in text and "with these quantization parameters is not supported" in text


def test_int8_div_of_a_huge_scale_ratio_is_refused(tmp_path):
    """s_a / (s_b s_y) >= 2^22 would make TFLite's rounding divide by a negative power of two."""
    model = _model(OPS.DIV, _options("DivOptions", FusedActivationFunction=0), (1.0, 0), (1e-4, 0), (1e-3, 0))
    assert "operator 0 (DIV)" in _import_error(model, tmp_path)


def test_int8_add_n_of_three_inputs(tmp_path, need_tflm):
    """TFLite Micro's int8 ADD_N (the converter keeps ADD_N in float; other tools need not): its sum starts from
    the scaled value of code 0, which a zero point other than 0 shows."""
    q = dict(scale=(0.05,), zero_point=(-20,))
    model = Model([T("a", (256,), **q), T("b", (256,), **q), T("c", (256,), **q),
                   T("y", (256,), scale=(0.11,), zero_point=(9,))],
                  [Op(OPS.ADD_N, ("a", "b", "c"), ("y",))], ("a", "b", "c"), ("y",))
    rng = np.random.default_rng(11)
    xs = [CODES.astype(np.int8)] + [rng.integers(-128, 128, 256).astype(np.int8) for _ in range(2)]
    path = tmp_path / "add_n.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, "host")
    sample = dict(zip(compiled.graph.inputs, xs))
    ref = run_reference(compiled.graph, sample)[0]
    np.testing.assert_array_equal(ref, run_tflm(path, ["a", "b", "c"], [dict(zip("abc", xs))])[0][0])
    np.testing.assert_array_equal(run_compiled_on_host(compiled, [sample], tmp_path)[0][0], ref)


def test_int8_add_n_of_inputs_quantized_apart_is_refused(tmp_path):
    model = Model([T("a", (4,), scale=(0.05,), zero_point=(0,)), T("b", (4,), scale=(0.06,), zero_point=(0,)),
                   T("y", (4,), scale=(0.1,), zero_point=(0,))], [Op(OPS.ADD_N, ("a", "b"), ("y",))],
                  ("a", "b"), ("y",))
    assert "operator 0 (ADD_N)" in _import_error(model, tmp_path)


def test_int32_mul_with_a_fused_activation_is_refused(tmp_path):
    model = _model(OPS.MUL, mul_options(RELU), None, None, None, "int32", shapes=((2, 3), (2, 3)))
    assert "operator 0 (MUL) of int32 with a fused activation is not supported" in _import_error(model, tmp_path)


def test_a_comparison_of_int16_is_refused(tmp_path):
    """TFLite Micro's int16 GREATER reads comparison parameters it never set: not run."""
    model = _model(OPS.GREATER, None, (0.001, 0), (0.001, 0), None, "int16", out_dtype="bool")
    assert "Greater of int16 is not supported" in _import_error(model, tmp_path)


def test_bool_inputs_and_outputs_run_on_the_host(tmp_path):
    """LOGICAL_AND of two bool graph inputs, a bool graph output."""
    model = Model([T("a", (2, 6), "bool"), T("b", (1, 6), "bool"), T("y", (2, 6), "bool")],
                  [Op(OPS.LOGICAL_AND, ("a", "b"), ("y",))], ("a", "b"), ("y",))
    rng = np.random.default_rng(3)
    xs = [rng.integers(0, 2, (2, 6)).astype(np.bool_), rng.integers(0, 2, (1, 6)).astype(np.bool_)]
    y = _check(model, tmp_path, xs, need_tflm=False)
    np.testing.assert_array_equal(y, xs[0] & xs[1])



# ---------------------------------------------------------------------------------------------- split

SPLIT_CASES = ("select_v2-of-a-comparison-int8", "logical_or-of-comparisons-float32", "prelu-shared-hw-int8",
               "div-broadcast-int8", "squared_difference-broadcast-int16", "add-broadcast-5d-int8")


@pytest.mark.parametrize("case", SPLIT_CASES)
def test_cut_along_a_loop_axis_computes_the_same(case, tmp_path):
    """Each element-wise operator cut in two along its longest loop axis (every piece a kernel call on views
    of the operands): the C computes what the whole operators compute."""
    from mcudeploy.partition import Cut
    from mcudeploy.compile import lower

    path = Path(__file__).parent / "conformance" / "tflite" / f"{case}.tflite"
    graph = lower(import_model(path))
    kinds = {"Transpose", "TransposeView", "Reshape"}
    cuts = []
    for node in graph.nodes:
        if node.op not in kinds:
            axis = max(registry.get(node.op).expr(graph, node).axes, key=lambda a: a.extent)
            cuts.append(Cut(((node.name, axis.name),), 2))
    whole, cut = compile_model(path, "host"), compile_model(path, "host", options=CompileOptions(scheme=tuple(cuts)))
    rng = np.random.default_rng(7)
    sample = {}
    for name in whole.graph.inputs:
        t = whole.graph[name]
        sample[name] = (rng.integers(0, 2, t.shape).astype(np.bool_) if t.dtype == "bool" else
                        rng.uniform(-3, 3, t.shape).astype(np.float32) if t.dtype == "float32" else
                        rng.integers(np.iinfo(t.dtype).min, np.iinfo(t.dtype).max + 1, t.shape).astype(t.dtype))
    want = run_reference(whole.graph, sample)
    got = run_compiled_on_host(cut, [sample], tmp_path)[0]
    assert len(cut.graph.nodes) > len(whole.graph.nodes)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)
