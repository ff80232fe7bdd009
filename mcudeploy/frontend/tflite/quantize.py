"""QUANTIZE, DEQUANTIZE (a DEQUANTIZE of a constant is folded: weights stored quantized) and CAST.

QUANTIZE of an integer tensor requantizes it (Requantize: int8, int16, int32 to int8, int16 and int8,
int16 to int32, as TFLite Micro's quantize_common.cc); the converter writes one before a CONCATENATION or PACK whose inputs it
quantized differently, and at int8 <-> int16 boundaries."""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import handles


@handles("DEQUANTIZE")
def dequantize(imp, op, ins, outs):
    x = ins[0]
    if imp.is_const(x):  # weights stored as float16 or quantized: a float constant, computed at import
        value = imp.const_data(x)
        if value.dtype == np.float16:
            imp.folded[outs[0]] = value.astype(np.float32)
            return
        q = imp.quant(x, value.ndim)
        if q is None:
            imp.fail("reads a tensor without quantization")
        imp.folded[outs[0]] = imp.dequantized(value, q)
        return
    q = imp.quant(x, len(imp.shape(x)))
    if q is None:
        imp.fail("reads a tensor without quantization")
    layout = "nchw" if len(imp.shape(x)) == 4 and x in imp.nchw else "plain"
    attrs = {"scale": q.scale, "zero_point": q.zero_point, "axis": q.axis or 0, "qdtype": imp.dtype(x)}
    imp.emit("DequantizeLinear", (imp.value(x, layout),), outs[0], attrs, layout)


@handles("QUANTIZE")
def quantize(imp, op, ins, outs):
    x, y = ins[0], outs[0]
    q = imp.quant(y, len(imp.shape(y)))
    if q is None or q.axis is not None:
        imp.fail("needs a per-tensor quantized output")
    layout = "nchw" if len(imp.shape(x)) == 4 and x in imp.nchw else "plain"
    if imp.dtype(x) != "float32":
        qx = imp.quant(x, len(imp.shape(x)))
        if qx is None or qx.axis is not None:
            imp.fail("requantizes a tensor that is not quantized per tensor, which is not supported")
        imp.emit("Requantize", (imp.value(x, layout),), y, {"qdtype": imp.dtype(y)}, layout)
        return
    attrs = {"scale": q.scale, "zero_point": q.zero_point, "axis": 1, "qdtype": imp.dtype(y)}
    imp.emit("QuantizeLinear", (imp.value(x, layout),), y, attrs, layout)


@handles("CAST")
def cast(imp, op, ins, outs):
    """A value converted to another type as C converts it (TFLite Micro's cast.cc: static_cast), codes as
    they are: a quantized tensor's quantization plays no part."""
    x = ins[0]
    layout = "nchw" if len(imp.shape(x)) == 4 and x in imp.nchw else "plain"
    imp.emit("Cast", (imp.value(x, layout),), outs[0], {"to": imp.dtype(outs[0])}, layout, check=False)
