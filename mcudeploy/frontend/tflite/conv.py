"""CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED, BATCH_MATMUL: convolutions (NCHW inside, weights
permuted at import) and the matrix products."""
from __future__ import annotations

import math

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles
import numpy as np

from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry


def raw_bias(imp, ins, out: int, at: int = 2) -> str:
    """The IR bias of a quantized convolution or product (ins[at]; "" where there is none) as TFLite Micro reads
    it: its raw integers added to the sum whatever scale the tensor declares. Where the declared scale is not the
    sum's (s_x * s_w: one bias buffer shared by operators of different scales, as in Arm ML-Zoo's MicroNet), this
    operator gets its own copy declared at the sum's scale, so the operator's own checks see what is computed."""
    if len(ins) <= at or ins[at] < 0:
        return ""
    bias = imp.const(ins[at])
    b, x, w = imp.tensors[bias], ins[0 if at == 2 else 2], ins[1]
    if b.quant is None or b.dtype not in ("int32", "int64"):
        return bias
    qx, qw = imp.quant(x, len(imp.shape(x))), imp.quant(w, len(imp.shape(w)))
    if qx is None or qw is None or len(qx.scale) != 1:
        return bias
    channels = b.shape[0] if b.shape else 1
    if len(qw.scale) not in (1, channels):
        imp.fail(f"has bias {bias} of {channels} elements where its weights have {len(qw.scale)} quantization scales",
                 True)
    want = np.broadcast_to(qx.scale_array() * qw.scale_array(), (channels,))
    if np.allclose(np.broadcast_to(b.quant.scale_array(), (channels,)), want, rtol=1e-5, atol=0):
        return bias
    quant = Quant(tuple(float(s) for s in want), (0,) * channels, 0 if channels > 1 else None)
    return imp.add_constant(f"{bias}/for {imp.tname(out)}", b.data, quant)


@handles("CONV_2D")
def conv_2d(imp, op, ins, outs):
    x, w = ins[0], ins[1]
    imp.dequantize_hybrid(x, w)
    o = imp.options(op, "Conv2DOptions", required=True)
    wshape = imp.shape(w)
    stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    in_shape = imp.shape(x)
    groups = in_shape[3] // wshape[3] if wshape[3] else 1
    attrs = {"group": groups, "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
             "pads": imp.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **imp.activation(o)}
    bias = raw_bias(imp, ins, outs[0])
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
    imp.dequantize_hybrid(x, w)
    o = imp.options(op, "DepthwiseConv2DOptions", required=True)
    wshape = imp.shape(w)  # [1, KH, KW, C * multiplier]
    stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    in_shape = imp.shape(x)
    attrs = {"group": in_shape[3], "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
             "pads": imp.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **imp.activation(o)}
    bias = raw_bias(imp, ins, outs[0])
    if imp.dtype(x) == "int16":
        if bias and imp.dtype(ins[2]) != "int64":
            imp.fail(f"has an {imp.dtype(ins[2])} bias at 16x8, which TensorFlow Lite Micro reads as int64")
        attrs["accumulator"] = "int64"
    imp.emit("Conv", (imp.value(x, "nchw"), imp.const(w, (3, 0, 1, 2)), bias), outs[0], attrs, "nchw")


@handles("TRANSPOSE_CONV")
def transpose_conv(imp, op, ins, outs):
    """A ConvTranspose: TFLite's weights (OC, KH, KW, IC) as (IC, OC, KH, KW), its padding as begin pads, the
    output's size (TFLite Micro takes it from the output tensor; a constant output_shape must say the same, one fed
    at run time is not read)."""
    shape_in, w, x = ins[0], ins[1], ins[2]
    imp.dequantize_hybrid(x, w)
    out_shape = imp.shape(outs[0])
    given = imp.const_data(shape_in)
    if given is None and any(d <= 0 for d in out_shape):
        imp.fail(f"has an output shape given at run time and an output stored as {list(out_shape)}, which leaves its "
                 f"size open (mcudeploy plans every size before the model runs)")
    # Fed at run time (seanet's models): TFLite Micro sizes the output from its stored shape and never reads the
    # operand, so neither does mcudeploy.
    if given is not None and tuple(int(v) for v in given.reshape(-1)) != out_shape:
        imp.fail(f"has output_shape {[int(v) for v in given.reshape(-1)]} for an output of shape {list(out_shape)}",
                 True)
    o = imp.options(op, "TransposeConvOptions")
    stride = (o.StrideH(), o.StrideW()) if o is not None else (1, 1)
    if min(stride) < 1:
        imp.fail(f"has stride {stride}, which is not positive", True)
    n, h, wd, c = imp.shape(x)
    oc, kh, kw, ic = imp.shape(w)
    if ic != c or out_shape[0] != n or out_shape[3] != oc:
        imp.fail(f"has weights {[oc, kh, kw, ic]} for an input {[n, h, wd, c]} and an output {list(out_shape)}", True)
    pads = [transpose_pad(imp, o.Padding() if o is not None else 0, out_shape[1 + i], (kh, kw)[i], stride[i])
            for i in range(2)]
    # the output's far edge: pads past the natural extent, or output_padding where the output is larger
    end = [stride[i] * ((h, wd)[i] - 1) + (kh, kw)[i] - pads[i] - out_shape[1 + i] for i in range(2)]
    attrs = {"group": 1, "strides": stride, "dilations": (1, 1), "pads": (*pads, *(max(e, 0) for e in end)),
             "output_padding": tuple(max(-e, 0) for e in end), **imp.activation(o)}
    bias = ""
    if len(ins) > 3 and ins[3] >= 0:
        bias = raw_bias(imp, ins, outs[0], 3)
        kind = imp.dtype(ins[3])
        if imp.dtype(x) == "int16" and kind == "int16":  # TFLite Micro widens a 16-bit bias to int64
            bias = imp.add_constant(f"{bias}/int64", imp.const_data(ins[3]).astype("int64"), imp.tensors[bias].quant)
        elif imp.dtype(x) != "float32" and kind != ("int32" if imp.dtype(x) == "int8" else "int64"):
            imp.fail(f"has an {kind} bias at {imp.dtype(x)}, which TensorFlow Lite Micro does not read as such")
    imp.emit("ConvTranspose", (imp.value(x, "nchw"), imp.const(w, (3, 0, 1, 2)), bias), outs[0], attrs, "nchw")


def transpose_pad(imp, padding: int, out: int, k: int, s: int) -> int:
    """TRANSPOSE_CONV's begin padding along one axis: ComputePaddingHeightWidth run from the output's size (as
    TFLite Micro calls it), whose windowed size of the output is SAME's ceil(out / s) or VALID's
    (out + s - k) / s (truncated; 0 padding where that is negative)."""
    if padding == imp.tfl.Padding.SAME:
        windows = (out + s - 1) // s
    else:
        num = out + s - k
        if num < 0:
            return 0
        windows = num // s
    return max((windows - 1) * s + k - out, 0) // 2


@handles("FULLY_CONNECTED")
def fully_connected(imp, op, ins, outs):
    """A Gemm of the input's rows (flattened to 2-D first), reshaped back to the output's dimensions where the
    operator keeps them (keep_num_dims)."""
    x, w = ins[0], ins[1]
    imp.dequantize_hybrid(x, w)
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
    bias = imp.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""  # TFLite Micro checks its scale
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
        imp.refuse_integer(decl, scope, node, dtype)
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
