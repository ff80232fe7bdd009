"""QUANTIZE and DEQUANTIZE (a DEQUANTIZE of a constant is folded: weights stored quantized)."""
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
    if imp.dtype(x) != "float32":
        imp.fail("requantizes an integer tensor, which is not supported")
    q = imp.quant(y, len(imp.shape(y)))
    if q is None or q.axis is not None:
        imp.fail("needs a per-tensor quantized output")
    layout = "nchw" if len(imp.shape(x)) == 4 and x in imp.nchw else "plain"
    attrs = {"scale": q.scale, "zero_point": q.zero_point, "axis": 1, "qdtype": imp.dtype(y)}
    imp.emit("QuantizeLinear", (imp.value(x, layout),), y, attrs, layout)
