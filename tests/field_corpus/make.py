"""The field corpus (tests/field_corpus): small .tflite files built by hand (tests/tflite_build.py) for what models
from the field hold and the converter's usual output does not (issue 59):

- ``shared_bias-*``: one int32 bias buffer read by two operators of different input scales (Arm ML-Zoo's MicroNet
  anomaly detectors), its declared scale right for the first only; TFLite Micro adds its raw integers to both.

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


MODELS = {
    "shared_bias-conv-depthwise-int8": (shared_bias_conv_depthwise, "one int32 bias for a CONV_2D and a "
                                        "DEPTHWISE_CONV_2D, declared at the first's scale"),
    "shared_bias-depthwise-conv-int8": (shared_bias_depthwise_conv, "one int32 bias for a DEPTHWISE_CONV_2D and a "
                                        "CONV_2D, declared at neither's scale"),
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
