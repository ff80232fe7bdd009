"""SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION and the element-wise operators of one input: the activations
(LOGISTIC, TANH, HARD_SWISH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, ELU) and the math functions (ABS, NEG,
EXP, LOG, SQRT, RSQRT, SQUARE, SIN, COS, FLOOR, CEIL, ROUND).

Each runs at the types TensorFlow Lite Micro runs it at (``TYPES``), with TFLite Micro's own integer
arithmetic (mcudeploy/ops/tflite_tables.py); a type or a quantization TFLite Micro refuses is refused
here too, in one sentence.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.frontend.tflite.importer import handles
from mcudeploy.ops import tflite_tables as tfl

FLOAT = ("float32",)
INT8 = ("float32", "int8")
INT16 = ("float32", "int8", "int16")


def _layout(imp, x: int) -> str:
    return "nchw" if len(imp.shape(x)) == 4 and x in imp.nchw else "plain"


def _types(imp, x: int, types: tuple) -> str:
    dtype = imp.dtype(x)
    if dtype not in types:
        imp.fail(f"of {dtype} is not supported (TensorFlow Lite Micro runs it on {', '.join(types)} only)")
    return dtype


def _scales(imp, x: int, y: int):
    """(input scale, input zero point, output scale, output zero point), per tensor."""
    qx, qy = imp.quant(x, len(imp.shape(x))), imp.quant(y, len(imp.shape(y)))
    if qx is None or qy is None or qx.axis is not None or qy.axis is not None:
        imp.fail("needs per-tensor quantized input and output")
    return (*qx.single(), *qy.single())


def _zero_points_zero(imp, x: int, y: int) -> None:
    _, zx, _, zy = _scales(imp, x, y)
    if zx != 0 or zy != 0:
        imp.fail(f"of int16 needs zero points 0 (TensorFlow Lite Micro's condition), got {zx} and {zy}")


def _integer(dtype: str, attrs: dict) -> dict:
    """An integer node is TFLite's integer kernel (not a float operator folded with its DEQUANTIZE and
    QUANTIZE, which computes otherwise): the operators read ``tflite_kernel``."""
    return attrs if dtype == "float32" else {**attrs, "tflite_kernel": True}


def _unary(imp, kind: str, ins, outs, types: tuple, attrs=None) -> str:
    x = ins[0]
    dtype = _types(imp, x, types)
    layout = _layout(imp, x)
    imp.emit(kind, (imp.value(x, layout),), outs[0], _integer(dtype, attrs or {}), layout)
    return dtype


def _sigmoid_like(imp, kind: str, ins, outs, int8_zero_point: int | None):
    x, y = ins[0], outs[0]
    dtype = _types(imp, x, INT16)
    if dtype == "int8" and int8_zero_point is not None and _scales(imp, x, y)[3] != int8_zero_point:
        imp.fail(f"of int8 needs an output zero point of {int8_zero_point} (TensorFlow Lite Micro's condition)")
    if dtype == "int16":
        _zero_points_zero(imp, x, y)
        if not tfl.pot_scale(_scales(imp, x, y)[2], -15):
            imp.fail("of int16 needs an output scale of 2^-15 (TensorFlow Lite Micro's condition)")
    _unary(imp, kind, ins, outs, INT16)


@handles("LOGISTIC")
def logistic(imp, op, ins, outs):
    _sigmoid_like(imp, "Sigmoid", ins, outs, -128)


@handles("TANH")
def tanh(imp, op, ins, outs):
    _sigmoid_like(imp, "Tanh", ins, outs, None)


@handles("HARD_SWISH")
def hard_swish(imp, op, ins, outs):
    _unary(imp, "HardSwish", ins, outs, INT8)


@handles("ELU")
def elu(imp, op, ins, outs):
    _unary(imp, "Elu", ins, outs, INT8)


@handles("RELU")
def relu(imp, op, ins, outs):
    if _types(imp, ins[0], INT16) == "int16":
        _zero_points_zero(imp, ins[0], outs[0])
    _unary(imp, "Relu", ins, outs, INT16)


@handles("RELU6")
def relu6(imp, op, ins, outs):
    _unary(imp, "Clip", ins, outs, INT16, {"min": 0.0, "max": 6.0})


@handles("RELU_N1_TO_1")
def relu_n1_to_1(imp, op, ins, outs):
    _unary(imp, "Clip", ins, outs, FLOAT, {"min": -1.0, "max": 1.0})


@handles("LEAKY_RELU")
def leaky_relu(imp, op, ins, outs):
    o = imp.options(op, "LeakyReluOptions")
    alpha = float(o.Alpha()) if o is not None else 0.0
    if not math.isfinite(alpha):  # its multiplier would be NaN (a fuzzed model's, seed 1 case 1038)
        imp.fail(f"has alpha {alpha}, not a finite number", True)
    _unary(imp, "LeakyRelu", ins, outs, INT16, {"alpha": alpha})


@handles("ABS")
def absolute(imp, op, ins, outs):
    if _types(imp, ins[0], INT16) == "int16":
        _zero_points_zero(imp, ins[0], outs[0])
    _unary(imp, "Abs", ins, outs, INT16)


@handles("RSQRT")
def rsqrt(imp, op, ins, outs):
    _unary(imp, "Rsqrt", ins, outs, INT8)


_FLOAT_FUNCTIONS = {"NEG": "Neg", "EXP": "Exp", "LOG": "Log", "SQRT": "Sqrt", "SQUARE": "Square", "SIN": "Sin",
                    "COS": "Cos", "FLOOR": "Floor", "CEIL": "Ceil", "ROUND": "Round"}


def _float_function(kind: str):
    def handler(imp, op, ins, outs):
        _unary(imp, kind, ins, outs, FLOAT)
    return handler


for _builtin, _kind in _FLOAT_FUNCTIONS.items():
    handles(_builtin)(_float_function(_kind))


# ---------------------------------------------------------------------------------------------- along an axis

def _last_axis(imp, x: int) -> tuple[str, int]:
    """The layout and the IR axis of the .tflite's last dimension (channels of a 4-D NCHW tensor)."""
    layout = "nchw" if len(imp.shape(x)) == 4 else "plain"
    return layout, (1 if layout == "nchw" else -1)


@handles("SOFTMAX")
def softmax(imp, op, ins, outs):
    o = imp.options(op, "SoftmaxOptions")
    beta = float(o.Beta()) if o is not None else 1.0
    x, y = ins[0], outs[0]
    dtype, out = _types(imp, x, INT16), imp.dtype(outs[0])
    if out != dtype and (dtype, out) != ("int8", "int16"):
        imp.fail(f"with a {out} output from {dtype} is not supported (TensorFlow Lite Micro runs it from int8 to "
                 f"int16 and otherwise at one type only)")
    if not np.isfinite(beta):
        imp.fail(f"has a beta of {beta:g}, which is not finite", True)
    attrs = {"axis": 0, "beta": beta}
    if dtype != "float32":
        _softmax_quantization(imp, x, y, dtype, out)
    if out != dtype:
        attrs["out_dtype"] = out
    layout, attrs["axis"] = _last_axis(imp, x)
    imp.emit("Softmax", (imp.value(x, layout),), y, attrs, layout)


def _near(scale: float, target: float) -> bool:
    """TFLite Micro's TF_LITE_ENSURE_NEAR(scale, target, 0.1% of target), in float32."""
    return bool(abs(np.float32(scale) - np.float32(target)) <= np.float32(0.001 * target))


def _softmax_quantization(imp, x: int, y: int, dtype: str, out: str) -> None:
    """The output quantization TFLite Micro's SoftmaxPrepare requires of each integer type, refused otherwise."""
    _, zx, sy, zy = _scales(imp, x, y)
    if dtype == "int16" and not (zx == 0 and zy == 0 and _near(sy, 1 / 32768)):
        imp.fail(f"of int16 needs zero points 0 and an output scale of 1/32768 within 0.1% (TensorFlow Lite Micro's "
                 f"condition), got zero points {zx} and {zy} and an output scale of {sy:g}")
    if out == "int16" and dtype == "int8" and not (zy == -32768 and _near(sy, 1 / 65536)):
        imp.fail(f"of int8 to int16 needs an output of scale 1/65536 within 0.1% and zero point -32768 (TensorFlow "
                 f"Lite Micro's condition), got {sy:g} and {zy}")
    if out == "int8" and not (zy == -128 and np.float32(sy) == np.float32(1 / 256)):
        imp.fail(f"of int8 needs an output of scale 1/256 and zero point -128 (TensorFlow Lite Micro's condition), "
                 f"got {sy:g} and {zy}")


@handles("LOG_SOFTMAX")
def log_softmax(imp, op, ins, outs):
    x = ins[0]
    dtype = _types(imp, x, INT8)
    if dtype == "int8":
        _, _, sy, zy = _scales(imp, x, outs[0])
        if (sy, zy) != (16 / 256, 127):
            imp.fail(f"of int8 needs an output of scale 16/256 and zero point 127 (TensorFlow Lite Micro's "
                     f"condition), got {sy:g} and {zy}")
    layout, axis = _last_axis(imp, x)
    imp.emit("LogSoftmax", (imp.value(x, layout),), outs[0], _integer(dtype, {"axis": axis}), layout)


@handles("L2_NORMALIZATION")
def l2_normalization(imp, op, ins, outs):
    x = ins[0]
    dtype = _types(imp, x, INT8)
    if imp.activation(imp.options(op, "L2NormOptions")):
        imp.fail("with a fused activation is not supported (TensorFlow Lite Micro refuses it too)")
    if len(imp.shape(x)) > 4:
        imp.fail("of more than 4 dimensions is not supported (TensorFlow Lite Micro refuses it too)")
    layout, axis = _last_axis(imp, x)
    imp.emit("L2Normalization", (imp.value(x, layout),), outs[0], _integer(dtype, {"axis": axis}), layout)
