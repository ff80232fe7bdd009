"""Operators that take parts of a tensor: STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK, REVERSE_V2, GATHER,
GATHER_ND, EMBEDDING_LOOKUP (rows of a table; an int8 table with a float output is dequantized after, as
TFLite Micro's hybrid kernel does: scale times the code, zero point 0); and DYNAMIC_UPDATE_SLICE, which
writes a part in (mcudeploy/ops/update.py).

Each part is a Slice (a view: no copy, mcudeploy/memory/alias.py) where its steps are 1, else a
StridedSlice (a strided copy; REVERSE_V2 is one with step -1); a dimension the operator drops (a
shrink axis, UNPACK's axis) is a Reshape after it. A 4-D tensor kept NCHW is sliced as it is held.

GATHER with constant positions and no batch dimensions is a Gather (the positions in flash with the
kernel's parameters); otherwise, and for GATHER_ND, the positions are a tensor the kernel reads
(mcudeploy/ops/gather.py).

STRIDED_SLICE resolves begin, end and strides as TensorFlow Lite Micro does (reference/strided_slice.h,
strided_slice_logic.h): a begin or end mask replaces the clamped index by the first or last one of the
direction of the stride, a shrink axis takes one element. TFLite Micro reads no ellipsis or new-axis mask
and no offset (the converter writes neither: it reshapes instead); the slice it computes is kept where the
file's output shape agrees with it, which is then also what the masks describe, and refused elsewhere.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles
from mcudeploy.frontend.tflite.layout import inner, reshape, to_plain


def _ints(imp, i: int, what: str) -> list[int]:
    if not imp.is_const(i):
        imp.fail(f"has {what} that are not constant, which is not supported (shapes are static)")
    return [int(v) for v in np.ravel(imp.const_data(i))]


def take(imp, x: int, out: int, start, step, count) -> str:
    """TFLite tensor ``out`` as elements start[d] + k * step[d], k < count[d], of tensor x (per dimension
    of x), reshaped to ``out``'s shape (dimensions of one element dropped)."""
    shape = imp.shape(x)
    if 0 in count:
        imp.fail("makes an empty tensor, which mcudeploy does not compile")
    layout = "nchw" if len(shape) == 4 and x in imp.nchw else "plain"
    kept = tuple(count)  # the part in the file's order, before dimensions are dropped
    if layout == "nchw":
        start, step, count = ([v[p] for p in TO_NCHW] for v in (start, step, count))
    src = imp.value(x, layout)
    if all(s == 1 for s in step):
        op, attrs = "Slice", {"starts": tuple(start), "ends": tuple(b + k for b, k in zip(start, count)),
                              "axes": tuple(range(len(start)))}
    else:
        op, attrs = "StridedSlice", {"begin": tuple(start), "step": tuple(step), "size": tuple(count)}
    if kept == imp.shape(out):
        return imp.emit(op, (src,), out, attrs, layout)
    part = inner(imp, op, (src,), attrs, "part", out, layout)
    return reshape(imp, {layout: part}, kept, out, lambda: to_plain(imp, part, out))


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def tflm_strided_slice(shape, begin, end, strides, begin_mask: int, end_mask: int, shrink_mask: int):
    """(start, count) per dimension and the output shape, as TFLite Micro's STRIDED_SLICE resolves them."""
    start_, count_, out = [], [], []
    for d, n in enumerate(shape):
        b, e, s = begin[d], end[d], strides[d]
        start = b + n if b < 0 else b
        start = _clamp(start, 0, n) if s > 0 else _clamp(start, -1, n - 1)
        if begin_mask >> d & 1:
            start = 0 if s > 0 else n - 1
        if shrink_mask >> d & 1:
            stop = start if start >= n else start + 1
        else:
            stop = e + n if e < 0 else e
            stop = _clamp(stop, 0, n) if s > 0 else _clamp(stop, -1, n - 1)
            if end_mask >> d & 1:
                stop = n if s > 0 else -1
        count = max(0, -((start - stop) // s))  # ceil((stop - start) / s)
        start_.append(start)
        count_.append(count)
        if not shrink_mask >> d & 1:
            out.append(count)
    return start_, count_, tuple(out)


@handles("STRIDED_SLICE")
def strided_slice(imp, op, ins, outs):
    x = ins[0]
    shape = imp.shape(x)
    begin, end, strides = (_ints(imp, i, "begin, end or strides") for i in ins[1:4])
    o = imp.options(op, "StridedSliceOptions")
    masks = (o.BeginMask(), o.EndMask(), o.ShrinkAxisMask()) if o is not None else (0, 0, 0)
    if not len(begin) == len(end) == len(strides) == len(shape):
        imp.fail(f"has {len(begin)} begins for a rank-{len(shape)} input (an ellipsis or new axis), which "
                 f"TFLite Micro does not read")
    if 0 in strides:
        imp.fail("has a stride of 0", True)
    start, count, out_shape = tflm_strided_slice(shape, begin, end, strides, *masks)
    if out_shape != imp.shape(outs[0]):
        imp.fail(f"makes shape {list(imp.shape(outs[0]))} where TFLite Micro's slice gives {list(out_shape)} "
                 f"(it reads no ellipsis or new-axis mask and no offset)")
    take(imp, x, outs[0], start, strides, count)


@handles("SLICE")
def slice_(imp, op, ins, outs):
    x = ins[0]
    shape = imp.shape(x)
    begin, size = _ints(imp, ins[1], "begin or size"), _ints(imp, ins[2], "begin or size")
    size = [n - b if k == -1 else k for n, b, k in zip(shape, begin, size)]
    if any(b < 0 or k < 0 or b + k > n for n, b, k in zip(shape, begin, size)):
        imp.fail(f"reads begin {begin} and size {size} outside shape {list(shape)}", True)
    take(imp, x, outs[0], begin, [1] * len(shape), size)


def _parts(imp, x: int, outs, axis: int, sizes) -> None:
    shape = imp.shape(x)
    at = 0
    for out, k in zip(outs, sizes):
        start = [at if d == axis else 0 for d in range(len(shape))]
        count = [k if d == axis else n for d, n in enumerate(shape)]
        take(imp, x, out, start, [1] * len(shape), count)
        at += k


@handles("SPLIT")
def split(imp, op, ins, outs):
    axis_t, x = ins[0], ins[1]
    rank = len(imp.shape(x))
    axis = imp.axis(_ints(imp, axis_t, "an axis")[0], rank)
    n = imp.shape(x)[axis]
    if n % len(outs):
        imp.fail(f"splits extent {n} into {len(outs)} parts", True)
    _parts(imp, x, outs, axis, [n // len(outs)] * len(outs))


@handles("SPLIT_V")
def split_v(imp, op, ins, outs):
    x = ins[0]
    rank = len(imp.shape(x))
    axis = imp.axis(_ints(imp, ins[2], "an axis")[0], rank)
    sizes = _ints(imp, ins[1], "split sizes")
    n = imp.shape(x)[axis]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = n - sum(s for s in sizes if s != -1)
    if sum(sizes) != n or min(sizes) < 0 or len(sizes) != len(outs):
        imp.fail(f"splits extent {n} into sizes {sizes}", True)
    _parts(imp, x, outs, axis, sizes)


@handles("UNPACK")
def unpack(imp, op, ins, outs):
    x = ins[0]
    o = imp.options(op, "UnpackOptions")
    rank = len(imp.shape(x))
    axis = imp.axis(o.Axis() if o is not None else 0, rank)
    _parts(imp, x, outs, axis, [1] * imp.shape(x)[axis])


@handles("REVERSE_V2")
def reverse_v2(imp, op, ins, outs):
    x = ins[0]
    shape = imp.shape(x)
    axes = {a % len(shape) for a in _ints(imp, ins[1], "axes")}
    start = [n - 1 if d in axes else 0 for d, n in enumerate(shape)]
    step = [-1 if d in axes else 1 for d in range(len(shape))]
    take(imp, x, outs[0], start, step, list(shape))


@handles("GATHER")
def gather(imp, op, ins, outs):
    """A 4-D tensor held NCHW gathered by a vector of positions stays NCHW (its axis moved)."""
    x, p, out = ins[0], ins[1], outs[0]
    o = imp.options(op, "GatherOptions")
    axis, batch = (o.Axis(), o.BatchDims()) if o is not None else (0, 0)
    rank = len(imp.shape(x))
    axis %= rank
    if imp.dtype(p) != "int32":
        imp.fail(f"has {imp.dtype(p)} positions, which TFLite Micro does not take (int32)")
    layout = "nchw" if rank == 4 and x in imp.nchw and len(imp.shape(p)) == 1 and batch == 0 else "plain"
    at = TO_NCHW.index(axis) if layout == "nchw" else axis
    src = imp.value(x, layout)
    if imp.is_const(p) and batch == 0:
        value = imp.const_data(p)
        n = imp.shape(x)[axis]
        if value.size and (value.min() < 0 or value.max() >= n):
            imp.fail(f"reads position {int(value.min() if value.min() < 0 else value.max())} of an axis of "
                     f"{n}", True)
        imp.emit("Gather", (src,), out, {"axis": at, "indices": tuple(int(v) for v in value.ravel()),
                                         "indices_shape": value.shape}, layout)
        return
    imp.emit("GatherIndexed", (src, imp.value(p, "plain")), out, {"axis": at, "batch_dims": batch}, layout)


@handles("EMBEDDING_LOOKUP")
def embedding_lookup(imp, op, ins, outs):
    ids, table, out = ins[0], ins[1], outs[0]
    if imp.dtype(ids) != "int32" or len(imp.shape(ids)) != 1:
        imp.fail("has ids that are not a vector of int32, which TFLite Micro does not take")
    if imp.dtype(table) == imp.dtype(out):
        imp.emit("GatherIndexed", (imp.value(table, "plain"), imp.value(ids, "plain")), out, {"axis": 0})
        return
    q = imp.quant(table, len(imp.shape(table)))
    if imp.dtype(table) != "int8" or imp.dtype(out) != "float32" or q is None or q.axis is not None or q.zero_point[0]:
        imp.fail(f"of a {imp.dtype(table)} table into {imp.dtype(out)} is not supported (TFLite Micro takes an "
                 f"int8 table of zero point 0 into float32)")
    rows = inner(imp, "GatherIndexed", (imp.value(table, "plain"), imp.value(ids, "plain")), {"axis": 0}, "rows", out,
                 quant=q)
    imp.emit("DequantizeLinear", (rows,), out, {"scale": q.scale, "zero_point": (0,), "axis": 0, "qdtype": "int8"})


@handles("GATHER_ND")
def gather_nd(imp, op, ins, outs):
    if imp.dtype(ins[1]) != "int32":
        imp.fail(f"has {imp.dtype(ins[1])} positions, which TFLite Micro does not take (int32)")
    imp.emit("GatherND", (imp.value(ins[0], "plain"), imp.value(ins[1], "plain")), outs[0])


@handles("DYNAMIC_UPDATE_SLICE")
def dynamic_update_slice(imp, op, ins, outs):
    imp.emit("DynamicUpdateSlice", tuple(imp.value(i, "plain") for i in ins[:3]), outs[0])
