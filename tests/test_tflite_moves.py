"""TFLite's data-moving operators beyond the conformance cases (tests/conformance/tflite/): the arithmetic
of QUANTIZE between integer quantizations against a literal transcription of TFLite Micro's
(reference/requantize.h), STRIDED_SLICE's resolution against TFLite Micro's loops, and one-operator files
the converter does not write (QUANTIZE int8 -> int8 / int16 and back, SQUEEZE, PADV2 of an int8 code,
GATHER with positions outside the tensor, TILE) bit for bit with TFLite Micro, or with numpy where TFLite
Micro has no kernel (TILE); the layouts the importer keeps through reshapes (no transpose between the
layers of a Keras Conv1D)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tflite_build
from mcudeploy import check
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.frontend.tflite.layout import same_order
from mcudeploy.frontend.tflite.slicing import tflm_strided_slice
from mcudeploy.ir import Graph, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.requant import tflite_multiplier
from mcudeploy.compile import compile_model, lower
from mcudeploy.reference import run_reference
from tflite_build import OPS, Model, Op, T, _options

CONFORMANCE = tflite_build.__file__.replace("tflite_build.py", "conformance/tflite")



# ---------------------------------------------------------------- QUANTIZE between integer quantizations


def _multiply_literal(x: int, mult: int, exponent: int) -> int:
    """MultiplyByQuantizedMultiplier as TFLite writes it (left shift, SaturatingRoundingDoublingHighMul,
    RoundingDivideByPOT), on Python integers."""
    left, right = max(exponent, 0), max(-exponent, 0)
    a = ((x * (1 << left)) + 2**31) % 2**32 - 2**31
    if a == mult == -2**31:
        h = 2**31 - 1
    else:
        ab = a * mult
        nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
        n = ab + nudge
        h = n // (1 << 31) if n >= 0 else -((-n) // (1 << 31))
    mask = (1 << right) - 1
    return (h >> right) + ((h & mask) > (mask >> 1) + (1 if h < 0 else 0))


def _requantize_literal(values, s_in, z_in, s_out, z_out, lo, hi):
    """reference_ops::Requantize: each value less the input zero point, multiplied, plus the output's,
    clamped to the output type."""
    mult, shift = tflite_multiplier(float(np.float64(np.float32(s_in)) / np.float64(np.float32(s_out))))
    return [min(max(_multiply_literal(int(v) - z_in, mult, 31 - shift) + z_out, lo), hi) for v in values]


def _requantize_graph(din, dout, s_in, z_in, s_out, z_out, n):
    x = Tensor("x", (n,), din, "input", Quant((s_in,), (z_in,)))
    y = Tensor("y", (n,), dout, "output", Quant((s_out,), (z_out,)))
    from mcudeploy.ir import Node
    node = Node("q", "Requantize", ("x",), ("y",), {"qdtype": dout})
    return Graph("g", {"x": x, "y": y}, (node,), ("x",), ("y",), arithmetic="tflite"), node


@given(st.sampled_from([("int8", "int8"), ("int8", "int16"), ("int16", "int8"), ("int16", "int16"),
                        ("int32", "int8"), ("int32", "int16"), ("int8", "int32"), ("int16", "int32")]),
       st.floats(1e-4, 1.0), st.floats(1e-4, 1.0), st.integers(-128, 127), st.integers(-128, 127),
       st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_requantize_reference_is_tflite_micros(types, s_in, s_out, z_in, z_out, seed):
    din, dout = types
    z_in = 0 if din == "int16" else z_in
    z_out = 0 if dout == "int16" else z_out
    s_in, s_out = float(np.float32(s_in)), float(np.float32(s_out))
    info = np.iinfo(din)
    lo_in, hi_in = (info.min, info.max) if din != "int32" else (-2**20, 2**20)
    values = np.random.default_rng(seed).integers(lo_in, hi_in + 1, 64).astype(din)
    graph, node = _requantize_graph(din, dout, s_in, z_in, s_out, z_out, 64)
    got = registry.get("Requantize").reference(graph, node, [values])[0]
    out = np.iinfo(dout)
    assert got.tolist() == _requantize_literal(values, s_in, z_in, s_out, z_out, out.min, out.max)


def _quantize_model(din, dout, q_in, q_out, shape=(1, 4, 5, 3)):
    return Model([T("x", shape, din, scale=(q_in[0],), zero_point=(q_in[1],)),
                  T("y", shape, dout, scale=(q_out[0],), zero_point=(q_out[1],))],
                 [Op(OPS.QUANTIZE, ("x",), ("y",))], ("x",), ("y",))


def _full_range(graph, count=4, seed=0):
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        sample = {}
        for name in graph.inputs:
            t = graph[name]
            if t.dtype == "float32":
                sample[name] = rng.uniform(-3, 3, t.shape).astype(np.float32)
            elif t.dtype == "bool":
                sample[name] = rng.integers(0, 2, t.shape).astype(np.bool_)
            else:
                info = np.iinfo(t.dtype)
                sample[name] = rng.integers(info.min, int(info.max) + 1, t.shape).astype(t.dtype)
        samples.append(sample)
    return samples


def _bit_for_bit(model: Model, tmp_path, samples=None):
    path = tmp_path / "m.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, "host")
    samples = samples or _full_range(compiled.graph)
    outputs = run_compiled_on_host(compiled, samples, tmp_path)
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert verdict.ok, "\n".join(verdict.lines())
    return compiled


@pytest.mark.parametrize("din,dout,q_in,q_out", [
    ("int8", "int8", (0.05, 3), (0.02, -7)),
    ("int8", "int8", (0.05, 3), (0.4, 100)),
    ("int8", "int16", (0.05, -4), (0.0004, 0)),
    ("int16", "int8", (0.0005, 0), (0.03, 11)),
    ("int16", "int16", (0.0005, 0), (0.00031, 0)),
    ("int16", "int32", (0.0005, 0), (0.00002, 0)),
])
def test_quantize_between_integers_bit_for_bit_with_tflite_micro(din, dout, q_in, q_out, tmp_path, need_tflm):
    compiled = _bit_for_bit(_quantize_model(din, dout, q_in, q_out), tmp_path)
    assert [n.op for n in compiled.graph.nodes if n.op != "TransposeView"] == ["Requantize"]


# ---------------------------------------------------------------- STRIDED_SLICE's resolution


def _tflm_loop(shape, begin, end, strides, bm, em, sm):
    """TFLite Micro's strided slice written out: the indices it reads along each dimension."""
    out = []
    for d, n in enumerate(shape):
        s = strides[d]
        start = begin[d] + n if begin[d] < 0 else begin[d]
        start = min(max(start, 0), n) if s > 0 else min(max(start, -1), n - 1)
        if bm >> d & 1:
            start = 0 if s > 0 else n - 1
        if sm >> d & 1:
            stop = start if start >= n else start + 1
        else:
            stop = end[d] + n if end[d] < 0 else end[d]
            stop = min(max(stop, 0), n) if s > 0 else min(max(stop, -1), n - 1)
            if em >> d & 1:
                stop = n if s > 0 else -1
        index, read = start, []
        while (index < stop) if s > 0 else (index > stop):
            read.append(index)
            index += s
        out.append(read)
    return out


@given(st.lists(st.integers(1, 7), min_size=1, max_size=4).flatmap(lambda shape: st.tuples(
    st.just(tuple(shape)), st.lists(st.integers(-9, 9), min_size=len(shape), max_size=len(shape)),
    st.lists(st.integers(-9, 9), min_size=len(shape), max_size=len(shape)),
    st.lists(st.sampled_from([-3, -2, -1, 1, 2, 3]), min_size=len(shape), max_size=len(shape)),
    st.integers(0, 15), st.integers(0, 15), st.integers(0, 15))))
@settings(max_examples=300, deadline=None)
def test_strided_slice_resolution_is_tflite_micros(case):
    shape, begin, end, strides, bm, em, sm = case
    start, count, out_shape = tflm_strided_slice(shape, begin, end, strides, bm, em, sm)
    read = _tflm_loop(shape, begin, end, strides, bm, em, sm)
    for d in range(len(shape)):
        assert [start[d] + k * strides[d] for k in range(count[d])] == read[d]
    assert out_shape == tuple(len(r) for d, r in enumerate(read) if not sm >> d & 1)


# ---------------------------------------------------------------- operators the converter does not write


def _squeeze_options(dims):
    import tflite

    def make(b):
        vector = b.CreateNumpyVector(np.array(dims, np.int32))
        tflite.SqueezeOptionsStart(b)
        tflite.SqueezeOptionsAddSqueezeDims(b, vector)
        return tflite.BuiltinOptions.SqueezeOptions, tflite.SqueezeOptionsEnd(b)
    return make


def test_squeeze_bit_for_bit_with_tflite_micro(tmp_path, need_tflm):
    q = dict(scale=(0.05,), zero_point=(-3,))
    model = Model([T("x", (1, 6, 1, 4), **q), T("y", (1, 6, 4), **q)],
                  [Op(OPS.SQUEEZE, ("x",), ("y",), _squeeze_options([2]))], ("x",), ("y",))
    _bit_for_bit(model, tmp_path)


def test_padv2_pads_int8_with_its_constants_code(tmp_path, need_tflm):
    q = dict(scale=(0.05,), zero_point=(-3,))
    pads = np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32)
    model = Model([T("x", (1, 3, 4, 2), **q), T("p", (4, 2), "int32", data=pads),
                   T("v", (), data=np.array(77, np.int8), **q), T("y", (1, 6, 5, 2), **q)],
                  [Op(OPS.PADV2, ("x", "p", "v"), ("y",))], ("x",), ("y",))
    compiled = _bit_for_bit(model, tmp_path)
    sample = _full_range(compiled.graph, 1)
    assert run_reference(compiled.graph, sample[0])[0][0, 0, 0, 0] == 77


def test_int16_pad_and_strided_slice_keep_codes(tmp_path, need_tflm):
    """int16 tensors through a chain TFLite Micro runs (PAD int16, STRIDED_SLICE with a negative stride)."""
    q = dict(scale=(0.001,), zero_point=(0,))
    pads = np.array([[0, 0], [2, 1], [0, 0]], np.int32)
    b, e, s = (np.array(v, np.int32) for v in ([0, -1, 0], [0, 0, 3], [1, -2, 1]))
    model = Model([T("x", (2, 5, 3), "int16", **q), T("p", (3, 2), "int32", data=pads),
                   T("h", (2, 8, 3), "int16", **q), T("b", (3,), "int32", data=b), T("e", (3,), "int32", data=e),
                   T("s", (3,), "int32", data=s), T("y", (2, 4, 3), "int16", **q)],
                  [Op(OPS.PAD, ("x", "p"), ("h",)),
                   Op(OPS.STRIDED_SLICE, ("h", "b", "e", "s"), ("y",),
                      _options("StridedSliceOptions", BeginMask=1, EndMask=3))], ("x",), ("y",))
    _bit_for_bit(model, tmp_path)


def test_gather_clamps_positions_outside_the_tensor(tmp_path):
    model = Model([T("x", (5, 3), "float32"), T("i", (4,), "int32"), T("y", (4, 3), "float32")],
                  [Op(OPS.GATHER, ("x", "i"), ("y",), _options("GatherOptions", Axis=0))], ("x", "i"), ("y",))
    path = tmp_path / "g.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, "host")
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    sample = {"x": x, "i": np.array([-4, 0, 4, 9], np.int32)}
    got = run_compiled_on_host(compiled, [sample], tmp_path)[0][0]
    np.testing.assert_array_equal(got, x[[0, 0, 4, 4]])


def test_tile_is_numpys(tmp_path):
    """TILE is not in TFLite Micro's resolver (the conformance case is dropped): its C against numpy's
    tile, which is TensorFlow's definition of it."""
    model = Model([T("x", (2, 3, 4), "float32"), T("m", (3,), "int32", data=np.array([1, 2, 3], np.int32)),
                   T("y", (2, 6, 12), "float32")],
                  [Op(OPS.TILE, ("x", "m"), ("y",))], ("x",), ("y",))
    path = tmp_path / "t.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, "host")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    got = run_compiled_on_host(compiled, [{"x": x}], tmp_path)[0][0]
    np.testing.assert_array_equal(got, np.tile(x, (1, 2, 3)))


def test_a_space_to_batch_of_the_wrong_batch_is_one_sentence():
    with pytest.raises(UnsupportedError, match="converted with an unknown batch"):
        import_model(f"{CONFORMANCE}/conv_2d-conv1d-causal-dilated-int8.tflite")


# ---------------------------------------------------------------- layouts kept through reshapes


def test_same_order_tells_a_view_from_a_transpose():
    assert same_order((1, 1, 20, 6), "nchw", (1, 20, 6), "ncl")  # Conv1D's output, squeezed
    assert same_order((1, 20, 6), "ncl", (1, 1, 20, 6), "nchw")  # and expanded again
    assert not same_order((1, 1, 20, 6), "nchw", (1, 20, 6), "plain")
    assert same_order((1, 6, 8, 1), "nchw", (1, 48), "plain")  # one channel: NCHW is NHWC
    assert same_order((1, 1, 1, 8), "nchw", (1, 8), "plain")


def test_a_keras_conv1d_stack_moves_no_data_between_its_layers():
    graph = lower(import_model(f"{CONFORMANCE}/expand_dims-conv1d-stack-int8.tflite"))
    ops = [n.op for n in graph.nodes]
    # the input is read as NCHW through strides; only the Flatten at the end needs the (N, L, C) order
    assert ops.count("Transpose") == 1 and ops[-1] == "Reshape" and ops[-2] == "Transpose"
    assert ops.count("TransposeView") == 1 and ops.count("Conv") == 3 and ops.count("MaxPool") == 1


@pytest.mark.parametrize("hybrid", [False, True])
def test_embedding_lookup_bit_for_bit_with_tflite_micro(hybrid, tmp_path, need_tflm):
    rng = np.random.default_rng(6)
    if hybrid:
        table = T("w", (7, 2, 3), "int8", scale=(0.02,), zero_point=(0,),
                  data=rng.integers(-127, 128, (7, 2, 3)).astype(np.int8))
    else:
        table = T("w", (7, 2, 3), "float32", data=rng.standard_normal((7, 2, 3)).astype(np.float32))
    model = Model([T("i", (4,), "int32"), table, T("y", (4, 2, 3), "float32")],
                  [Op(OPS.EMBEDDING_LOOKUP, ("i", "w"), ("y",))], ("i",), ("y",))
    samples = [{"i": rng.integers(0, 7, 4).astype(np.int32)} for _ in range(3)]
    _bit_for_bit(model, tmp_path, samples)


def test_dynamic_update_slice_bit_for_bit_with_tflite_micro(tmp_path, need_tflm):
    q = dict(scale=(0.05,), zero_point=(2,))
    model = Model([T("x", (2, 6, 5), **q), T("u", (1, 3, 5), **q), T("p", (3,), "int32"), T("y", (2, 6, 5), **q)],
                  [Op(OPS.DYNAMIC_UPDATE_SLICE, ("x", "u", "p"), ("y",))], ("x", "u", "p"), ("y",))
    rng = np.random.default_rng(7)
    samples = [{"x": rng.integers(-128, 128, (2, 6, 5)).astype(np.int8),
                "u": rng.integers(-128, 128, (1, 3, 5)).astype(np.int8),
                "p": np.array(p, np.int32)} for p in ([1, 2, 0], [-3, 9, 4], [0, 0, 0])]  # the second clamped
    _bit_for_bit(model, tmp_path, samples)


def test_a_causal_conv1d_stack_pads_as_held():
    """PAD -> RESHAPE -> CONV_2D per layer: the graph input is read through permuted strides, each pad is
    made in N, C, L order; the one Transpose left makes the (N, L, C) output."""
    graph = lower(import_model(f"{CONFORMANCE}/pad-conv1d-causal-stack-int8.tflite"))
    ops = [n.op for n in graph.nodes]
    assert ops.count("Transpose") == 1 and ops[-2:] == ["Transpose", "Reshape"]
    assert ops[0] == "TransposeView" and ops.count("Pad") == 2 and ops.count("Conv") == 2


def test_space_to_batch_with_paddings_is_refused_in_one_sentence(tmp_path):
    """TFLite Micro pads with a value it never sets (what its arena held before: 0 alone, 16 after other
    cases in one process), so no result is its own."""
    pads = np.array([[1, 1], [0, 2]], np.int32)
    model = Model([T("x", (1, 4, 4, 2), scale=(0.1,), zero_point=(-128,)),
                   T("b", (2,), "int32", data=np.array([2, 2], np.int32)), T("p", (2, 2), "int32", data=pads),
                   T("y", (4, 3, 3, 2), scale=(0.1,), zero_point=(-128,))],
                  [Op(OPS.SPACE_TO_BATCH_ND, ("x", "b", "p"), ("y",))], ("x",), ("y",))
    path = tmp_path / "s2b.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError, match=r"paddings \[\[1, 1\], \[0, 2\]\], which TFLite Micro fills with a "
                                               r"value it never sets"):
        import_model(path)


def test_a_transpose_that_moves_only_dimensions_of_one_is_a_view(tmp_path):
    q = dict(scale=(0.05,), zero_point=(1,))
    model = Model([T("x", (1, 6, 1, 4), **q), T("p", (4,), "int32", data=np.array([0, 2, 1, 3], np.int32)),
                   T("y", (1, 1, 6, 4), **q)], [Op(OPS.TRANSPOSE, ("x", "p"), ("y",))], ("x",), ("y",))
    path = tmp_path / "t.tflite"
    path.write_bytes(model.build())
    graph = lower(import_model(path))
    assert [n.op for n in graph.nodes] == ["Reshape"]
    x = np.arange(24, dtype=np.int8).reshape(1, 6, 1, 4)
    np.testing.assert_array_equal(run_reference(graph, [x])[0], x.transpose(0, 2, 1, 3))
