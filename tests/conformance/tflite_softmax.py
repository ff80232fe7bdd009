"""The conformance cases of TFLite's SOFTMAX from int8 to int16, and of a float SOFTMAX with beta other than 1, built
by hand (tests/tflite_build.py): TensorFlow's
converter writes an int8 SOFTMAX with an int8 output, but TensorFlow Lite Micro also runs one with an int16 output
(scale 1/65536 within 0.1%, zero point -32768: its SoftmaxPrepare's conditions), as its keyword models
(tests/svdf_models/) end. Each case is one SOFTMAX over the last dimension; they live in
tests/conformance/tflite/softmax/ with a cases.json of the same form as the converter's, which
tflite_cases.cases() reads.

    python -m tests.conformance.tflite_softmax      (rewrites tests/conformance/tflite/softmax/, no TensorFlow needed)

The cases vary the shape (rows, a 3-D and a 4-D tensor, whose last dimension mcudeploy holds as channels), beta,
the input scale (small: nearly uniform rows; large: differences beyond TFLite's diff_min, which give -32768) and
the output scale, at and near both ends of the 0.1% TFLite Micro allows. The float cases vary beta (TFLite's
float kernel takes exp((x - max) * beta); Keras's Softmax layer always writes 1, so no converter case has another).
"""
from __future__ import annotations

import sys
from pathlib import Path

from tests import tflite_build as tb

OUT = Path(__file__).resolve().parent / "tflite" / "softmax"
UNIT = 1 / 65536  # the output scale TFLite Micro wants of an int16 output from int8


def softmax_model(shape: tuple, beta: float, s_x: float, z_x: int = 0, s_y: float = UNIT, z_y: int = -32768,
                  out_dtype: str = "int16") -> tb.Model:
    """One SOFTMAX of an int8 input ``shape`` to ``out_dtype``, over the last dimension."""
    tensors = [tb.T("x", shape, "int8", (s_x,), (z_x,)), tb.T("y", shape, out_dtype, (s_y,), (z_y,))]
    return tb.Model(tensors, [tb.Op(tb.OPS.SOFTMAX, ("x",), ("y",), tb.softmax_options(beta))], ("x",), ("y",))


# (name, shape, beta, input scale, input zero point, output scale)
CASES = (
    ("softmax_s16out-1x10-int8", (1, 10), 1.0, 0.1, 0, UNIT),
    ("softmax_s16out-3x7-beta0.5-int8", (3, 7), 0.5, 0.05, 5, UNIT),
    ("softmax_s16out-2x3x4-int8", (2, 3, 4), 1.0, 0.0625, -3, UNIT),
    ("softmax_s16out-1x2x3x6-beta2-int8", (1, 2, 3, 6), 2.0, 0.25, 0, UNIT),
    ("softmax_s16out-1x64-beta3-int8", (1, 64), 3.0, 0.01, 0, UNIT),
    ("softmax_s16out-2x5-keyword-int8", (2, 5), 1.0, 0.06996273249387741, 2, 1.5259021893143654e-05),
    ("softmax_s16out-1x16-scale_high-int8", (1, 16), 1.0, 0.02, 0, UNIT * 1.00099),
    ("softmax_s16out-4x9-scale_low-beta0.75-int8", (4, 9), 0.75, 1.0, -10, UNIT * 0.99901),
)


# (name, shape, beta): float32 in and out, inputs in [-8, 8]
FLOAT_CASES = (
    ("softmax-3x7-beta0.5-float32", (3, 7), 0.5),
    ("softmax-1x2x3x6-beta2-float32", (1, 2, 3, 6), 2.0),
    ("softmax-2x10-beta0.1-float32", (2, 10), 0.1),
)


def float_softmax_model(shape: tuple, beta: float) -> tb.Model:
    tensors = [tb.T("x", shape, "float32"), tb.T("y", shape, "float32")]
    return tb.Model(tensors, [tb.Op(tb.OPS.SOFTMAX, ("x",), ("y",), tb.softmax_options(beta))], ("x",), ("y",))


def main(argv=None) -> int:
    built = []
    for name, shape, beta, s_x, z_x, s_y in CASES:
        data = softmax_model(shape, beta, s_x, z_x, s_y).build()
        built.append(({"case": name, "builtin": "SOFTMAX", "type": "int8", "operators": ["SOFTMAX"],
                       "bytes": len(data), "reference": "tflm", "steps": 1, "quantized_io": True,
                       "inputs": [{"dtype": "int8", "low": -128, "high": 127}]}, data))
    for name, shape, beta in FLOAT_CASES:
        data = float_softmax_model(shape, beta).build()
        built.append(({"case": name, "builtin": "SOFTMAX", "type": "float32", "operators": ["SOFTMAX"],
                       "bytes": len(data), "reference": "tflm", "steps": 1, "quantized_io": False,
                       "inputs": [{"dtype": "float32", "low": -8.0, "high": 8.0}]}, data))
    tb.write_cases(OUT, "python -m tests.conformance.tflite_softmax", built)
    return 0


if __name__ == "__main__":
    sys.exit(main())
