"""AVERAGE_POOL_2D, MAX_POOL_2D (TFLite's SAME padding) and MEAN."""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import handles
from mcudeploy.ir import Node, Tensor


def _pool(imp, kind: str, op, ins, outs):
    o = imp.options(op, "Pool2DOptions")
    kernel, stride = (o.FilterHeight(), o.FilterWidth()), (o.StrideH(), o.StrideW())
    attrs = {"kernel_shape": kernel, "strides": stride, "auto_pad": "NOTSET",
             "pads": imp.pads(o.Padding(), imp.shape(ins[0])[1:3], kernel, stride, (1, 1)), **imp.activation(o)}
    if kind == "AveragePool":
        attrs["count_include_pad"] = 0
    imp.emit(kind, (imp.value(ins[0], "nchw"),), outs[0], attrs, "nchw")


@handles("AVERAGE_POOL_2D")
def average_pool_2d(imp, op, ins, outs):
    x, y = ins[0], outs[0]
    if imp.dtype(x) == "int8" and imp.quant(x, 4) != imp.quant(y, 4):
        imp.fail("has different input and output quantization, which TFLite's int8 AVERAGE_POOL_2D does "
                  "not allow", True)
    _pool(imp, "AveragePool", op, ins, outs)


@handles("MAX_POOL_2D")
def max_pool_2d(imp, op, ins, outs):
    _pool(imp, "MaxPool", op, ins, outs)


@handles("MEAN")
def mean(imp, op, ins, outs):
    x = ins[0]
    axes = sorted(int(a) % 4 for a in np.ravel(imp.const_data(ins[1]))) if imp.is_const(ins[1]) else None
    if len(imp.shape(x)) != 4 or axes != [1, 2]:
        imp.fail("averages other axes than the height and width of a 4-D tensor, which is not supported")
    if imp.dtype(x) != "float32":
        imp.fail("of int8 is not supported (TFLite's integer MEAN arithmetic is not implemented)")
    out = outs[0]
    if len(imp.shape(out)) == 4:
        imp.emit("GlobalAveragePool", (imp.value(x, "nchw"),), out, {"global": 1}, "nchw")
        return
    pooled = f"{imp.tname(out)}/pooled"
    n, c = imp.shape(x)[0], imp.shape(x)[3]
    imp.tensors[pooled] = Tensor(pooled, (n, c, 1, 1), imp.dtype(x))
    imp.nodes.append(Node(f"{pooled}/pool", "GlobalAveragePool", (imp.value(x, "nchw"),), (pooled,),
                           {"global": 1}))
    imp.emit("Reshape", (pooled,), out, {"shape": imp.shape(out), "allowzero": 0})
