"""The conformance cases of TFLite's SVDF operator, built by hand (tests/tflite_build.py): TensorFlow's converter
emits SVDF only from a Keras layer TensorFlow no longer ships, so each case is one SVDF with its activation state
a variable tensor, as TensorFlow Lite Micro's svdf.cc takes it. They live in tests/conformance/tflite/svdf/ with a
cases.json of the same form as the converter's; tflite_cases.cases() reads it, and each case runs several calls in
sequence on one interpreter, so that the state (shifted by one column per call) matters.

    python -m tests.conformance.tflite_svdf      (rewrites tests/conformance/tflite/svdf/, no TensorFlow needed)

int8 cases: int8 input, int8 feature weights, int16 time weights and state (TFLite Micro's int8 x int16 path) or
int8 time weights and state, an int32 bias of scale state x time weights, an int8 output. float32 cases: float
everywhere. The scales are chosen so that the state and the output use much of their range (and saturate now and
then); the time weights are kept small enough that TFLite Micro's int32 dot products cannot overflow.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tflite

from tests import tflite_build as tb

OUT = Path(__file__).resolve().parent / "tflite" / "svdf"
ACTIVATIONS = {"none": 0, "relu": 1, "relu_n1_to_1": 2, "relu6": 3, "tanh": 4, "sign_bit": 5}


def svdf_options(rank: int, activation: int = 0):
    def make(b):
        tflite.SVDFOptionsStart(b)
        tflite.SVDFOptionsAddRank(b, rank)
        tflite.SVDFOptionsAddFusedActivationFunction(b, activation)
        return tflite.BuiltinOptions.SVDFOptions, tflite.SVDFOptionsEnd(b)
    return make


def svdf_model(dtype: str, batch: int, features: int, units: int, rank: int, memory: int, bias: bool = True,
               activation: str = "none", seed: int = 0, time_dtype: str = "int16", state_shape=None,
               state_variable: bool = True, input_shape=None, input_zero_point: int = 3, state_zero_point: int = 0,
               output_zero_point: int = -5, bias_scale=None) -> tuple[tb.Model, list]:
    """One SVDF (input x [batch, features], filters = units x rank) and the spec of its input for the samples."""
    rng = np.random.default_rng(seed)
    filters = units * rank
    x_shape = input_shape or (batch, features)
    s_shape = state_shape or (batch, memory * filters)
    T = tb.T
    if dtype == "float32":
        wf = rng.uniform(-0.5, 0.5, (filters, features)).astype(np.float32)
        wt = rng.uniform(-0.5, 0.5, (filters, memory)).astype(np.float32)
        b = rng.uniform(-1.0, 1.0, (units,)).astype(np.float32)
        tensors = [T("x", x_shape, "float32"), T("wf", wf.shape, "float32", data=wf),
                   T("wt", wt.shape, "float32", data=wt), T("b", b.shape, "float32", data=b),
                   T("state", s_shape, "float32", variable=state_variable), T("y", (batch, units), "float32")]
        spec = {"dtype": "float32", "low": -2.0, "high": 2.0}
    else:
        s_x, s_wf = 0.05, 0.01
        # the new state column: sum over features of 127 x 128 at most; about 0.2 of it (int16) or 1/200 (int8)
        s_state = s_x * s_wf / (0.2 if time_dtype == "int16" else 0.005)
        wt_bound = 4096 if time_dtype == "int16" else 127
        wt = rng.integers(-wt_bound, wt_bound + 1, (filters, memory)).astype(time_dtype)
        s_wt = 1e-4 if time_dtype == "int16" else 0.01
        typical = float(np.sqrt(memory * rank)) * wt_bound * (3000 if time_dtype == "int16" else 40) / 2
        s_b = float(np.float32(s_state) * np.float32(s_wt)) if bias_scale is None else bias_scale
        real = s_b * typical / 40  # the output: about 40 steps of int8 for a typical sum
        wf = rng.integers(-127, 128, (filters, features)).astype(np.int8)
        b = rng.integers(-int(typical), int(typical) + 1, (units,)).astype(np.int32)
        tensors = [T("x", x_shape, "int8", (s_x,), (input_zero_point,)),
                   T("wf", wf.shape, "int8", (s_wf,), (0,), data=wf),
                   T("wt", wt.shape, time_dtype, (s_wt,), (0,), data=wt),
                   T("b", b.shape, "int32", (s_b,), (0,), data=b),
                   T("state", s_shape, time_dtype, (s_state,), (state_zero_point,), variable=state_variable),
                   T("y", (batch, units), "int8", (real,), (output_zero_point,))]
        spec = {"dtype": "int8", "low": -128, "high": 127}
    ins = ("x", "wf", "wt", "b" if bias else "", "state")
    if not bias:
        tensors = [t for t in tensors if t.name != "b"]
    op = tb.Op(tb.OPS.SVDF, ins, ("y",), svdf_options(rank, ACTIVATIONS[activation]))
    return tb.Model(tensors, [op], ("x",), ("y",)), [spec]


def _case(dtype, batch, features, units, rank, memory, bias, activation, time_dtype="int16"):
    name = (f"svdf-b{batch}i{features}u{units}r{rank}m{memory}{'' if bias else '-nobias'}"
            f"{'' if activation == 'none' else '-' + activation}"
            f"{'-t8' if dtype == 'int8' and time_dtype == 'int8' else ''}-{dtype}")
    seed = sum(map(ord, name))
    return name, dtype, lambda: svdf_model(dtype, batch, features, units, rank, memory, bias, activation, seed,
                                           time_dtype)


# (name, type, builder): SAMPLES x STEPS = 9 calls in sequence each, more than any memory here holds
CASES = (
    _case("int8", 1, 8, 4, 1, 4, True, "none"),
    _case("int8", 1, 8, 4, 2, 4, True, "none"),
    _case("int8", 2, 6, 3, 2, 5, True, "relu"),
    _case("int8", 2, 10, 5, 1, 3, True, "none"),
    _case("int8", 1, 8, 4, 2, 4, True, "none", "int8"),
    _case("float32", 1, 8, 4, 1, 4, True, "none"),
    _case("float32", 1, 8, 4, 2, 4, True, "relu"),
    _case("float32", 2, 6, 3, 2, 5, True, "relu"),
    _case("float32", 2, 10, 5, 1, 3, True, "relu6"),
    _case("float32", 2, 6, 3, 2, 5, True, "tanh"),
    _case("float32", 1, 8, 4, 2, 4, True, "sign_bit"),
    _case("int8", 2, 6, 3, 2, 5, True, "tanh"),  # TFLite Micro's integer SVDF applies no activation
)
STEPS = 3


def main(argv=None) -> int:
    built = []
    for name, dtype, build in CASES:
        model, inputs = build()
        data = model.build()
        built.append(({"case": name, "builtin": "SVDF", "type": dtype, "operators": ["SVDF"], "bytes": len(data),
                       "reference": "tflm", "steps": STEPS, "quantized_io": dtype == "int8", "inputs": inputs}, data))
    tb.write_cases(OUT, "python -m tests.conformance.tflite_svdf", built)
    return 0


if __name__ == "__main__":
    sys.exit(main())
