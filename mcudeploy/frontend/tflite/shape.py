"""Operators that move data: RESHAPE, SQUEEZE, CONCATENATION, PAD, TRANSPOSE, STRIDED_SLICE; SHAPE (a constant)."""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles


@handles("RESHAPE", "SQUEEZE")
def reshape(imp, op, ins, outs):
    x, out = ins[0], outs[0]
    shape = imp.shape(x)
    # an NCHW tensor holds its elements in NHWC order when H * W or C is 1
    layout = "nchw" if len(shape) == 4 and (shape[1] * shape[2] == 1 or shape[3] == 1) and x in imp.nchw \
        else "plain"
    if layout == "nchw" and shape[3] == 1 and shape[1] * shape[2] > 1:
        layout = "plain"  # C = 1: NCHW and NHWC hold the same order, but take the plain view to be sure
    src = imp.value(x, layout)
    imp.emit("Reshape", (src,), out, {"shape": imp.shape(out), "allowzero": 0})


@handles("CONCATENATION")
def concatenation(imp, op, ins, outs):
    o = imp.options(op, "ConcatenationOptions")
    rank = len(imp.shape(outs[0]))
    axis = int(o.Axis()) % rank
    if o.FusedActivationFunction():
        imp.fail("with a fused activation is not supported")
    layout = "nchw" if rank == 4 else "plain"
    if layout == "nchw":
        axis = TO_NCHW.index(axis)
    imp.emit("Concat", tuple(imp.value(i, layout) for i in ins), outs[0], {"axis": axis}, layout)


@handles("PAD")
def pad(imp, op, ins, outs):
    x = ins[0]
    if not imp.is_const(ins[1]):
        imp.fail("has paddings that are not constant")
    pads = imp.const_data(ins[1]).astype(np.int64).reshape(-1, 2)
    rank = len(imp.shape(x))
    layout = "nchw" if rank == 4 else "plain"
    if layout == "nchw":
        pads = pads[list(TO_NCHW)]
    # the real 0: an int8 tensor is padded with its zero point, as TFLite's PAD does
    attrs = {"pads": tuple(int(p) for p in pads[:, 0]) + tuple(int(p) for p in pads[:, 1]), "axes": None,
             "mode": "constant", "value": 0.0}
    imp.emit("Pad", (imp.value(x, layout),), outs[0], attrs, layout)


@handles("TRANSPOSE")
def transpose(imp, op, ins, outs):
    if not imp.is_const(ins[1]):
        imp.fail("has a permutation that is not constant")
    perm = tuple(int(p) for p in np.ravel(imp.const_data(ins[1])))
    imp.emit("Transpose", (imp.value(ins[0], "plain"),), outs[0], {"perm": perm})


@handles("STRIDED_SLICE")
def strided_slice(imp, op, ins, outs):
    o = imp.options(op, "StridedSliceOptions")
    if not all(imp.is_const(i) for i in ins[1:4]):
        imp.fail("has begin, end or strides that are not constant")
    begin, end, strides = (np.ravel(imp.const_data(i)).astype(np.int64) for i in ins[1:4])
    if np.any(strides != 1):
        imp.fail("with strides other than 1 is not supported")
    if o is not None and (o.EllipsisMask() or o.NewAxisMask() or o.ShrinkAxisMask() or o.Offset()):
        imp.fail("with an ellipsis, new-axis, shrink-axis mask or offset is not supported")
    shape = imp.shape(ins[0])
    starts, ends = [], []
    for d, (b, e) in enumerate(zip(begin, end)):
        if o is not None and o.BeginMask() >> d & 1:
            b = 0
        if o is not None and o.EndMask() >> d & 1:
            e = shape[d]
        starts.append(int(b))
        ends.append(int(e))
    imp.emit("Slice", (imp.value(ins[0], "plain"),), outs[0],
              {"starts": tuple(starts), "ends": tuple(ends), "axes": tuple(range(len(starts)))})


@handles("SHAPE")
def shape(imp, op, ins, outs):
    """The shape of a tensor, known at import (shapes are static): a constant."""
    dtype = imp.dtype(outs[0])
    imp.folded[outs[0]] = np.array(imp.shape(ins[0]), dtype=dtype)
