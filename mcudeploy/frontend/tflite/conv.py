"""CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED: convolutions (NCHW inside, weights permuted at import)
and the matrix product."""
from __future__ import annotations

import math

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles
from mcudeploy.ir import Node, Tensor


@handles("CONV_2D")
def conv_2d(imp, op, ins, outs):
    x, w = ins[0], ins[1]
    imp.dequantize_hybrid(x, w)
    o = imp.options(op, "Conv2DOptions")
    wshape = imp.shape(w)
    stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    in_shape = imp.shape(x)
    groups = in_shape[3] // wshape[3] if wshape[3] else 1
    attrs = {"group": groups, "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
             "pads": imp.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **imp.activation(o)}
    bias = imp.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
    imp.emit("Conv", (imp.value(x, "nchw"), imp.const(w, TO_NCHW), bias), outs[0], attrs, "nchw")


@handles("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(imp, op, ins, outs):
    x, w = ins[0], ins[1]
    imp.dequantize_hybrid(x, w)
    o = imp.options(op, "DepthwiseConv2DOptions")
    wshape = imp.shape(w)  # [1, KH, KW, C * multiplier]
    stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    in_shape = imp.shape(x)
    attrs = {"group": in_shape[3], "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
             "pads": imp.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **imp.activation(o)}
    bias = imp.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
    imp.emit("Conv", (imp.value(x, "nchw"), imp.const(w, (3, 0, 1, 2)), bias), outs[0], attrs, "nchw")


@handles("FULLY_CONNECTED")
def fully_connected(imp, op, ins, outs):
    x, w = ins[0], ins[1]
    imp.dequantize_hybrid(x, w)
    if not imp.is_const(w):
        imp.fail("has weights that are not constant, which is not supported")
    o = imp.options(op, "FullyConnectedOptions")
    if o is not None and o.WeightsFormat() != 0:
        imp.fail("uses shuffled weights, which are not supported")
    k = imp.shape(w)[1]
    a = imp.value(x, "plain")
    out_shape = imp.shape(outs[0])
    if len(imp.shape(x)) != 2 or len(out_shape) != 2:
        if len(out_shape) != 2:
            imp.fail(f"keeps {len(out_shape)} dimensions (keep_num_dims), which is not supported")
        flat = f"{a}/flat"
        rows = math.prod(imp.shape(x)) // k
        imp.tensors[flat] = Tensor(flat, (rows, k), imp.tensors[a].dtype, quant=imp.tensors[a].quant)
        imp.nodes.append(Node(f"{flat}/reshape", "Reshape", (a,), (flat,), {"shape": (rows, k)}))
        a = flat
    bias = imp.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
    imp.emit("Gemm", (a, imp.const(w), bias), outs[0],
              {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1, **imp.activation(o)})
