"""The field corpus (tests/field_corpus): small .tflite files built by hand (tests/tflite_build.py) for what models
from the field hold and the converter's usual output does not (issue 59):

- ``shared_bias-*``: one int32 bias buffer read by two operators of different input scales (Arm ML-Zoo's MicroNet
  anomaly detectors), its declared scale right for the first only; TFLite Micro adds its raw integers to both.
- ``reshape-*``, ``transpose_conv-fed-shape-*``: shape operands fed at run time, and a RESHAPE output stored with
  its batch left open (-1); TFLite Micro sizes each output from its stored shape (a -1 from the input's elements).

    python -m tests.field_corpus.make

writes each file and corpus.json (name, what it holds); weights come from fixed seeds, so a second run writes the
same bytes.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tflite_build as tb  # noqa: E402
from tflite_build import OPS, RELU, SAME, VALID, Model, Op, T  # noqa: E402

OUT = Path(__file__).resolve().parent


def shared_bias_conv_depthwise() -> Model:
    """A CONV_2D and a DEPTHWISE_CONV_2D reading one bias tensor declared at the convolution's scale."""
    rng = np.random.default_rng(59)
    sx = 0.05
    wc, swc = tb._weights(rng, (4, 3, 3, 4))
    wd, swd = tb._weights(rng, (1, 3, 3, 4), channels_axis=3)
    bias = rng.integers(-400, 400, size=4).astype(np.int32)
    return Model([T("x", (1, 6, 6, 4), scale=(sx,), zero_point=(-2,)),
                  T("wc", (4, 3, 3, 4), scale=swc, zero_point=(0,) * 4, data=wc),
                  T("wd", (1, 3, 3, 4), scale=swd, zero_point=(0,) * 4, axis=3, data=wd),
                  T("b", (4,), "int32", scale=tuple(sx * s for s in swc), zero_point=(0,) * 4, data=bias),
                  T("h", (1, 6, 6, 4), scale=(0.04,), zero_point=(-10,)),
                  T("y", (1, 6, 6, 4), scale=(0.03,), zero_point=(3,))],
                 [Op(OPS.CONV_2D, ("x", "wc", "b"), ("h",), tb.conv_options((1, 1), SAME, RELU)),
                  Op(OPS.DEPTHWISE_CONV_2D, ("h", "wd", "b"), ("y",), tb.depthwise_options((1, 1), SAME, 1))],
                 ("x",), ("y",))


def shared_bias_depthwise_conv() -> Model:
    """A DEPTHWISE_CONV_2D then a strided CONV_2D sharing a bias declared at neither's scale. (Per channel: with
    weights per tensor TFLite Micro checks the bias's scale against the sum's, kernel_util.cc's
    GetQuantizedConvolutionMultipler, and refuses; a FULLY_CONNECTED always does.)"""
    rng = np.random.default_rng(60)
    wd, swd = tb._weights(rng, (1, 3, 3, 4), channels_axis=3)
    wc, swc = tb._weights(rng, (4, 3, 3, 4))
    bias = rng.integers(-2000, 2000, size=4).astype(np.int32)
    return Model([T("x", (1, 7, 7, 4), scale=(0.06,), zero_point=(4,)),
                  T("wd", (1, 3, 3, 4), scale=swd, zero_point=(0,) * 4, axis=3, data=wd),
                  T("b", (4,), "int32", scale=(0.123,) * 4, zero_point=(0,) * 4, data=bias),
                  T("h", (1, 5, 5, 4), scale=(0.05,), zero_point=(-7,)),
                  T("wc", (4, 3, 3, 4), scale=swc, zero_point=(0,) * 4, data=wc),
                  T("y", (1, 3, 3, 4), scale=(0.2,), zero_point=(1,))],
                 [Op(OPS.DEPTHWISE_CONV_2D, ("x", "wd", "b"), ("h",), tb.depthwise_options((1, 1), VALID, 1, RELU)),
                  Op(OPS.CONV_2D, ("h", "wc", "b"), ("y",), tb.conv_options((2, 2), SAME))],
                 ("x",), ("y",))


def reshape_open_batch() -> Model:
    """A RESHAPE whose stored output shape leaves its batch open ([-1, 32]), as a file converted with an unknown
    batch may hold between operators, then a FULLY_CONNECTED; and a RESHAPE whose shape operand is a model input."""
    rng = np.random.default_rng(61)
    q = dict(scale=(0.05,), zero_point=(1,))
    w = rng.integers(-127, 128, size=(6, 32)).astype(np.int8)
    return Model([T("x", (1, 4, 4, 2), **q), T("shape", (2,), "int32", data=np.array([-1, 32], np.int32)),
                  T("flat", (-1, 32), **q), T("w", (6, 32), scale=(0.01,), data=w),
                  T("h", (1, 6), scale=(0.1,), zero_point=(-3,)), T("fed", (3,), "int32"),
                  T("y", (1, 2, 3), scale=(0.1,), zero_point=(-3,))],
                 [Op(OPS.RESHAPE, ("x", "shape"), ("flat",)), Op(OPS.FULLY_CONNECTED, ("flat", "w", ""), ("h",),
                                                                 tb.fc_options()),
                  Op(OPS.RESHAPE, ("h", "fed"), ("y",))],
                 ("x", "fed"), ("y",))


def transpose_conv_fed_shape(dtype: str) -> Model:
    """A TRANSPOSE_CONV whose output_shape is a model input (TensorFlow Lite Micro's seanet transpose_conv tests)."""
    rng = np.random.default_rng(62)
    opts = tb._options("TransposeConvOptions", Padding=SAME, StrideH=2, StrideW=2)
    if dtype == "float32":
        x = T("x", (1, 3, 3, 4), "float32")
        w = T("w", (5, 3, 3, 4), "float32", data=rng.standard_normal((5, 3, 3, 4)).astype(np.float32))
        b = T("b", (5,), "float32", data=rng.standard_normal(5).astype(np.float32))
        y = T("y", (1, 6, 6, 5), "float32")
    else:
        sx = 0.05
        wq, sw = tb._weights(rng, (5, 3, 3, 4))
        x = T("x", (1, 3, 3, 4), scale=(sx,), zero_point=(2,))
        w = T("w", (5, 3, 3, 4), scale=sw, zero_point=(0,) * 5, data=wq)
        b = T("b", (5,), "int32", scale=tuple(sx * s for s in sw), zero_point=(0,) * 5,
              data=rng.integers(-500, 500, size=5).astype(np.int32))
        y = T("y", (1, 6, 6, 5), scale=(0.08,), zero_point=(-4,))
    return Model([T("output_shape", (4,), "int32"), x, w, b, y],
                 [Op(OPS.TRANSPOSE_CONV, ("output_shape", "w", "x", "b"), ("y",), opts)],
                 ("output_shape", "x"), ("y",))


MODELS = {
    "shared_bias-conv-depthwise-int8": (shared_bias_conv_depthwise, "one int32 bias for a CONV_2D and a "
                                        "DEPTHWISE_CONV_2D, declared at the first's scale"),
    "shared_bias-depthwise-conv-int8": (shared_bias_depthwise_conv, "one int32 bias for a DEPTHWISE_CONV_2D and a "
                                        "CONV_2D, declared at neither's scale"),
    "reshape-open-batch-int8": (reshape_open_batch, "a RESHAPE whose stored output shape is [-1, 32] and one "
                                "whose shape operand is a model input"),
    "transpose_conv-fed-shape-int8": (lambda: transpose_conv_fed_shape("int8"), "a TRANSPOSE_CONV whose "
                                      "output_shape is a model input"),
    "transpose_conv-fed-shape-float32": (lambda: transpose_conv_fed_shape("float32"), "a TRANSPOSE_CONV whose "
                                         "output_shape is a model input"),
}


def main() -> None:
    listed = []
    for name, (make, what) in MODELS.items():
        (OUT / f"{name}.tflite").write_bytes(make().build())
        listed.append({"file": f"{name}.tflite", "holds": what})
    (OUT / "corpus.json").write_text(json.dumps({"models": listed}, indent=1) + "\n")
    print(f"wrote {len(listed)} models to {OUT}")


if __name__ == "__main__":
    main()
