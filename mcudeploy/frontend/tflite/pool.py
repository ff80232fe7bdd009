"""AVERAGE_POOL_2D and MAX_POOL_2D (TFLite's SAME padding)."""
from __future__ import annotations

from mcudeploy.frontend.tflite.importer import handles


def _pool(imp, kind: str, op, ins, outs):
    o = imp.options(op, "Pool2DOptions", required=True)
    kernel, stride = (o.FilterHeight(), o.FilterWidth()), (o.StrideH(), o.StrideW())
    attrs = {"kernel_shape": kernel, "strides": stride, "auto_pad": "NOTSET",
             "pads": imp.pads(o.Padding(), imp.shape(ins[0])[1:3], kernel, stride, (1, 1)), **imp.activation(o)}
    if kind == "AveragePool":
        attrs["count_include_pad"] = 0
    imp.emit(kind, (imp.value(ins[0], "nchw"),), outs[0], attrs, "nchw")


@handles("AVERAGE_POOL_2D")
def average_pool_2d(imp, op, ins, outs):
    x, y = ins[0], outs[0]
    if imp.dtype(x) != "float32" and imp.quant(x, 4) != imp.quant(y, 4):
        imp.fail("has different input and output quantization, which TFLite's integer AVERAGE_POOL_2D does "
                  "not allow", True)
    _pool(imp, "AveragePool", op, ins, outs)


@handles("MAX_POOL_2D")
def max_pool_2d(imp, op, ins, outs):
    _pool(imp, "MaxPool", op, ins, outs)
