"""Resize and Upsample: numpy reference against onnxruntime over modes, coordinate transforms and
nearest modes (float within 1e-5, int8 QDQ within 2 steps), the C kernels against the reference
on strided views and through the host build."""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry

from .onnx_helpers import (check_float, check_int8, check_strided_c, compile_graph, host_run,
                           int8_input, make_model, ort_run, ref_run, single_node)

COORDS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
          "half_pixel_symmetric")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_model(shape, mode="nearest", coord="half_pixel", nearest="round_prefer_floor", scales=None, sizes=None,
                 opset=19, qdq=None, axes=None, policy=None):
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest
    if axes is not None:
        attrs["axes"] = list(axes)
    if policy is not None:
        attrs["keep_aspect_ratio_policy"] = policy
    empty = np.zeros(0, np.float32)
    extra = [("roi", empty if opset < 13 else None),
             ("scales", np.array(scales, np.float32) if scales is not None else (empty if opset < 13 else None))]
    if sizes is not None:
        extra.append(("sizes", np.array(sizes, np.int64)))
    return make_model("Resize", attrs, shape, opset=opset, extra_inputs=extra, qdq=qdq)


SHAPE = (1, 2, 5, 7)
GEOMETRIES = [  # (scales, sizes)
    ([1, 1, 2, 3], None),
    ([1, 1, 0.5, 0.75], None),
    ([1, 1, 1.6, 0.6], None),
    (None, [1, 2, 8, 4]),
    (None, [1, 2, 3, 11]),
    (None, [1, 2, 1, 1]),
]
NEAREST_CASES = [(c, n, s, z) for c, n, (s, z) in itertools.product(COORDS, NEAREST, GEOMETRIES)]
LINEAR_CASES = [(c, s, z) for c, (s, z) in itertools.product(COORDS, GEOMETRIES)]


def exact_coordinate(coord, x, n_in, n_out, scale):
    """The source coordinate of output x in exact arithmetic (scale as written in the model)."""
    half = Fraction(1, 2)
    if coord == "half_pixel":
        return (x + half) / scale - half
    if coord == "half_pixel_symmetric":
        offset = Fraction(n_in, 2) * (1 - n_out / (scale * n_in))
        return offset + (x + half) / scale - half
    if coord == "pytorch_half_pixel":
        return (x + half) / scale - half if n_out > 1 else Fraction(0)
    if coord == "align_corners":
        return Fraction(0) if n_out == 1 else Fraction(x * (n_in - 1), n_out - 1)
    if coord == "asymmetric":
        return x / scale
    return (x + half) / scale  # tf_half_pixel_for_nn


def on_boundary(c, nearest):
    """Whether the nearest mode's choice at c depends on float rounding (a tie, or an integer for floor/ceil)."""
    frac = c - (c.numerator // c.denominator)
    return frac == (Fraction(1, 2) if nearest.startswith("round") else 0)


def source_maps(model, shape):
    """(rows, cols) each output row and column reads, probed with an input coded h * 100 + w."""
    coded = np.zeros(shape, np.float32)
    coded[...] = np.arange(shape[-2])[:, None] * 100 + np.arange(shape[-1])[None, :]
    maps = []
    for y in (ort_run(model, coded), ref_run(model, coded)):
        maps.append(((y[0, 0, :, 0] // 100).astype(int), (y[0, 0, 0, :] % 100).astype(int)))
    return maps


@pytest.mark.parametrize("coord,nearest,scales,sizes", NEAREST_CASES)
def test_nearest_float_matches_onnxruntime(coord, nearest, scales, sizes):
    """The same source pixel as onnxruntime, except where the exact source coordinate is a tie: there
    onnxruntime's choice depends on float rounding inside its build (its nearest and linear paths even
    disagree), and the reference follows its source's float32 formulas."""
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    model = resize_model(SHAPE, "nearest", coord, nearest, scales, sizes)
    want, got = ort_run(model, x), ref_run(model, x)
    assert got.shape == want.shape
    (ort_rows, ort_cols), (rows, cols) = source_maps(model, SHAPE)
    for d, (theirs, ours) in enumerate(((ort_rows, rows), (ort_cols, cols))):
        n_in, n_out = SHAPE[2 + d], got.shape[2 + d]
        scale = Fraction(str(scales[2 + d])) if scales else Fraction(n_out, n_in)
        if scale == 1:
            np.testing.assert_array_equal(ours, np.arange(n_in))
            continue
        for o in np.flatnonzero(theirs != ours):
            assert on_boundary(exact_coordinate(coord, int(o), n_in, n_out, scale), nearest), (d, o)
    exact = (rows == ort_rows)[:, None] & (cols == ort_cols)[None, :]
    np.testing.assert_array_equal(got[..., exact], want[..., exact])


@pytest.mark.parametrize("coord,scales,sizes", LINEAR_CASES)
def test_linear_float_matches_onnxruntime(coord, scales, sizes):
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    check_float(resize_model(SHAPE, "linear", coord, scales=scales, sizes=sizes), x)


@pytest.mark.parametrize("shape,mode,scales,sizes", [
    ((2, 3, 9), "nearest", [1, 1, 2.5], None),
    ((2, 3, 9), "linear", [1, 1, 2.5], None),
    ((2, 3, 9), "linear", None, [2, 3, 4]),
    ((6, 5), "linear", [2, 0.6], None),
    ((6, 5), "nearest", None, [3, 12]),
])
def test_other_ranks(shape, mode, scales, sizes):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    check_float(resize_model(shape, mode, "half_pixel", scales=scales, sizes=sizes), x)


@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_opsets(opset, mode):
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    check_float(resize_model(SHAPE, mode, "asymmetric", scales=[1, 1, 2, 1.5], opset=opset), x)
    check_float(resize_model(SHAPE, mode, "align_corners", sizes=[1, 2, 9, 4], opset=opset), x)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_axes_and_aspect_policy(policy):
    x = np.random.default_rng(4).standard_normal(SHAPE).astype(np.float32)
    check_float(resize_model(SHAPE, "linear", "half_pixel", sizes=[8, 9], axes=[2, 3], policy=policy), x)
    check_float(resize_model(SHAPE, "nearest", "half_pixel", scales=[2.0, 0.5], axes=[-1, -2]), x)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.6]])
def test_resize10_and_upsample(mode, scales):
    x = np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32)
    r10 = make_model("Resize", {"mode": mode}, SHAPE, opset=10, extra_inputs=[("scales", np.array(scales, np.float32))])
    check_float(r10, x)
    if min(scales) >= 1:
        up9 = make_model("Upsample", {"mode": mode}, SHAPE, opset=9,
                         extra_inputs=[("scales", np.array(scales, np.float32))])
        check_float(up9, x)
        up7 = make_model("Upsample", {"mode": mode, "scales": [float(s) for s in scales]}, SHAPE, opset=7)
        check_float(up7, x)


INT8_CASES = [
    ("nearest", "half_pixel", [1, 1, 2, 3], None),
    ("nearest", "asymmetric", [1, 1, 0.5, 0.75], None),
    ("nearest", "align_corners", None, [1, 2, 3, 11]),
    ("linear", "half_pixel", [1, 1, 2, 3], None),
    ("linear", "align_corners", [1, 1, 1.6, 0.6], None),
    ("linear", "asymmetric", None, [1, 2, 8, 4]),
    ("linear", "pytorch_half_pixel", None, [1, 2, 1, 9]),
    ("linear", "half_pixel_symmetric", [1, 1, 0.5, 2.5], None),
]


@pytest.mark.parametrize("mode,coord,scales,sizes", INT8_CASES)
@pytest.mark.parametrize("same_quant", [True, False])
def test_int8_matches_onnxruntime(mode, coord, scales, sizes, same_quant):
    rng = np.random.default_rng(6)
    qdq = (0.04, 5, 0.04, 5) if same_quant else (0.04, 5, 0.03, -9)
    model = resize_model(SHAPE, mode, coord, scales=scales, sizes=sizes, qdq=qdq)
    x = int8_input(rng, SHAPE)
    got = check_int8(model, x, "Resize", steps=2 if mode == "linear" else 1)
    if mode == "nearest" and same_quant:
        np.testing.assert_array_equal(got, ort_run(model, x))


def test_tensor_expression():
    graph = compile_graph(resize_model(SHAPE, "linear", scales=[1, 1, 2, 3]))
    e = registry.get("Resize").expr(graph, graph.nodes[0])
    assert [(a.name, a.extent) for a in e.axes] == [("d0", 1), ("d1", 2), ("d2", 10), ("d3", 21)]
    assert [d.kind for d in e.inputs[0]] == ["identity", "identity", "full", "full"]
    assert registry.get("Resize").macs(graph, graph.nodes[0]) == 2 * 10 * 21 * 4


def test_unsupported():
    with pytest.raises(UnsupportedError, match="last two dims"):
        import_onnx(resize_model(SHAPE, "nearest", scales=[1, 2, 2, 2]))
    with pytest.raises(UnsupportedError, match="cubic"):
        import_onnx(resize_model(SHAPE, "cubic", scales=[1, 1, 2, 2]))
    with pytest.raises(UnsupportedError, match="tf_crop_and_resize"):
        import_onnx(resize_model(SHAPE, "linear", "tf_crop_and_resize", scales=[1, 1, 2, 2]))


C_CASES = [
    ("nearest", "half_pixel", "round_prefer_floor", [1, 1, 2, 3], None),
    ("nearest", "tf_half_pixel_for_nn", "ceil", [1, 1, 0.5, 0.75], None),
    ("nearest", "align_corners", "round_prefer_ceil", None, [1, 2, 3, 11]),
    ("linear", "half_pixel", "", [1, 1, 2, 3], None),
    ("linear", "align_corners", "", [1, 1, 1.6, 0.6], None),
    ("linear", "pytorch_half_pixel", "", None, [1, 2, 1, 9]),
]


@pytest.mark.parametrize("mode,coord,nearest,scales,sizes", C_CASES)
def test_c_strided_views_match_reference(mode, coord, nearest, scales, sizes, tmp_path):
    rng = np.random.default_rng(7)
    check_strided_c(tmp_path, resize_model(SHAPE, mode, coord, nearest, scales, sizes),
                    rng.standard_normal(SHAPE).astype(np.float32))
    for qdq in ((0.04, 5, 0.04, 5), (0.04, 5, 0.03, -9)):
        check_strided_c(tmp_path, resize_model(SHAPE, mode, coord, nearest, scales, sizes, qdq=qdq),
                        int8_input(rng, SHAPE))


@pytest.mark.parametrize("mode,coord,nearest,scales,sizes", C_CASES)
def test_host_build_matches_reference(mode, coord, nearest, scales, sizes):
    rng = np.random.default_rng(8)
    model = resize_model(SHAPE, mode, coord, nearest, scales, sizes)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    np.testing.assert_allclose(host_run(model, x), ref_run(model, x), rtol=1e-5, atol=1e-6)
    model = resize_model(SHAPE, mode, coord, nearest, scales, sizes, qdq=(0.04, 5, 0.03, -9))
    graph = compile_graph(model)
    single_node(graph, "Resize", "int8")
    x = int8_input(rng, SHAPE)
    np.testing.assert_array_equal(host_run(model, x), ref_run(model, x))
