"""CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED, BATCH_MATMUL: convolutions (NCHW inside, weights
permuted at import) and the matrix products."""
from __future__ import annotations

import math

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles
from mcudeploy.ir import Graph, Node, Tensor
from mcudeploy.ops import registry


@handles("CONV_2D")
def conv_2d(imp, op, ins, outs):
    x, w = ins[0], ins[1]
    imp.refuse_hybrid(x, w)
    o = imp.options(op, "Conv2DOptions")
    wshape = imp.shape(w)
    stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    in_shape = imp.shape(x)
    groups = in_shape[3] // wshape[3] if wshape[3] else 1
    attrs = {"group": groups, "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
             "pads": imp.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **imp.activation(o)}
    bias = imp.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
    if imp.dtype(x) == "int16":
        attrs["accumulator"] = accumulator(imp, o, ins)
    imp.emit("Conv", (imp.value(x, "nchw"), imp.const(w, TO_NCHW), bias), outs[0], attrs, "nchw")


def accumulator(imp, opts, ins) -> str:
    """The sum of a 16x8 CONV_2D or FULLY_CONNECTED as TFLite Micro chooses it: int32 with an int32 bias, or
    with none where the options' quantized_bias_type says INT32; int64 otherwise."""
    if len(ins) > 2 and ins[2] >= 0:
        return "int32" if imp.dtype(ins[2]) == "int32" else "int64"
    int32 = imp.tfl.TensorType.INT32
    return "int32" if opts is not None and opts.QuantizedBiasType() == int32 else "int64"


@handles("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(imp, op, ins, outs):
    x, w = ins[0], ins[1]
    imp.refuse_hybrid(x, w)
    o = imp.options(op, "DepthwiseConv2DOptions")
    wshape = imp.shape(w)  # [1, KH, KW, C * multiplier]
    stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    in_shape = imp.shape(x)
    attrs = {"group": in_shape[3], "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
             "pads": imp.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **imp.activation(o)}
    bias = imp.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
    if imp.dtype(x) == "int16":
        if bias and imp.dtype(ins[2]) != "int64":
            imp.fail(f"has an {imp.dtype(ins[2])} bias at 16x8, which TensorFlow Lite Micro reads as int64")
        attrs["accumulator"] = "int64"
    imp.emit("Conv", (imp.value(x, "nchw"), imp.const(w, (3, 0, 1, 2)), bias), outs[0], attrs, "nchw")


@handles("FULLY_CONNECTED")
def fully_connected(imp, op, ins, outs):
    """A Gemm of the input's rows (flattened to 2-D first), reshaped back to the output's dimensions where the
    operator keeps them (keep_num_dims)."""
    x, w = ins[0], ins[1]
    imp.refuse_hybrid(x, w)
    if not imp.is_const(w):
        imp.fail("has weights that are not constant, which is not supported")
    o = imp.options(op, "FullyConnectedOptions")
    if o is not None and o.WeightsFormat() != 0:
        imp.fail("uses shuffled weights, which are not supported")
    k, n = imp.shape(w)[1], imp.shape(w)[0]
    a = imp.value(x, "plain")
    rows = math.prod(imp.shape(x)) // k
    if len(imp.shape(x)) != 2:
        a = _inner(imp, f"{a}/flat", "Reshape", (a,), (rows, k), imp.tensors[a].dtype, imp.tensors[a].quant,
                   {"shape": (rows, k), "allowzero": 0})
    bias = imp.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
    attrs = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1, **imp.activation(o)}
    if imp.dtype(x) == "int16":
        attrs["accumulator"] = accumulator(imp, o, ins)
    inputs = (a, imp.const(w), bias)
    out_shape = imp.shape(outs[0])
    if len(out_shape) == 2:
        imp.emit("Gemm", inputs, outs[0], attrs)
        return
    if out_shape[:-1] != imp.shape(x)[:-1] or out_shape[-1] != n:
        imp.fail(f"makes {list(out_shape)} of an input {list(imp.shape(x))}, which is not what keep_num_dims "
                 f"keeps", True)
    rows_out = _inner(imp, f"{imp.tname(outs[0])}/rows", "Gemm", inputs, (rows, n), imp.dtype(outs[0]),
                      imp.quant(outs[0], 2), attrs)
    imp.emit("Reshape", (rows_out,), outs[0], {"shape": out_shape, "allowzero": 0})


def _inner(imp, name: str, op: str, inputs, shape, dtype, quant, attrs) -> str:
    """An IR tensor no TFLite tensor stands for, made by one node of ``op`` (its shape and int8 acceptance
    checked as Importer.emit checks them)."""
    imp.tensors[name] = Tensor(name, tuple(shape), dtype, quant=quant)
    node = Node(f"{name}/{op.lower()}", op, tuple(inputs), (name,), attrs)
    decl = registry.get(op)
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    (got, got_dtype), *_ = decl.infer(scope, node)
    if tuple(got) != tuple(shape) or got_dtype != dtype:
        imp.fail(f"makes {dtype}{list(shape)}, where mcudeploy's {op} gives {got_dtype}{list(got)}", True)
    if dtype != "float32" and hasattr(decl, "accepts_int8") and not decl.accepts_int8(scope, node):
        imp.fail(f"with these quantization parameters is not supported (mcudeploy's int8 {op} does not take them)")
    imp.nodes.append(node)
    return name


@handles("BATCH_MATMUL")
def batch_matmul(imp, op, ins, outs):
    """A MatMul with TFLite's batch broadcasting; adj_x and adj_y transpose the operands' last two dimensions."""
    a, b = ins[0], ins[1]
    if imp.dtype(a) != imp.dtype(b):
        imp.fail(f"multiplies {imp.dtype(a)} by {imp.dtype(b)}, which TensorFlow Lite Micro does not (a hybrid model)")
    o = imp.options(op, "BatchMatMulOptions")
    adj_x, adj_y = (bool(o.AdjX()), bool(o.AdjY())) if o is not None else (False, False)
    if len(imp.shape(a)) < 2 or len(imp.shape(b)) < 2:
        imp.fail("has an operand of fewer than 2 dimensions, which TensorFlow Lite Micro does not take", True)
    imp.emit("MatMul", (imp.value(a, "plain"), imp.value(b, "plain")), outs[0],
             {"transA": int(adj_x), "transB": int(adj_y)})
