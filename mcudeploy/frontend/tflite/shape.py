"""Operators that move data as a whole: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, PACK,
BROADCAST_TO, TILE; and the shape arithmetic a model computes of constants alone: SHAPE, FILL, ZEROS_LIKE,
BROADCAST_ARGS (constants at import; Importer.fold computes the rest, e.g. Keras' Flatten of an unknown
batch: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE).

A reshape is a view (no copy) wherever the order of the elements allows it, as held (layout.py)."""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, TO_NHWC, handles
from mcudeploy.frontend.tflite.layout import inner, nchw, reshape_tensor


@handles("RESHAPE")
def reshape(imp, op, ins, outs):
    resolve_reshape(imp, ins, outs[0])
    reshape_tensor(imp, ins[0], outs[0])


@handles("SQUEEZE", "EXPAND_DIMS")
def squeeze(imp, op, ins, outs):
    reshape_tensor(imp, ins[0], outs[0])


def resolve_reshape(imp, ins, out: int) -> None:
    """RESHAPE's output shape as TFLite Micro's reshape_common.cc sets it: the output tensor's stored shape (not
    the shape operand, which may be fed at run time or disagree with it in a file converted with an unknown
    batch), its one -1 (where the file leaves it open) the input's elements over the other dimensions', and a
    legacy [0] with no shape operand a scalar."""
    stored = imp.shape(out)
    if len(ins) == 1 and stored == (0,):
        imp.resolved[out] = ()
        return
    open_dims = [k for k, d in enumerate(stored) if d == -1]
    if not open_dims:
        return
    if len(open_dims) > 1:
        imp.fail(f"has an output of shape {list(stored)}, more than one dimension left open, which TensorFlow Lite "
                 f"Micro does not resolve", True)
    rest = math.prod(d for d in stored if d != -1)
    total = math.prod(imp.shape(ins[0]))
    if rest <= 0 or total % rest:
        imp.fail(f"makes {list(stored)} of the {total} elements of {list(imp.shape(ins[0]))}, which no size of its "
                 f"open dimension gives", True)
    imp.resolved[out] = tuple(total // rest if d == -1 else d for d in stored)


@handles("CONCATENATION")
def concatenation(imp, op, ins, outs):
    o = imp.options(op, "ConcatenationOptions", required=True)
    rank = len(imp.shape(outs[0]))
    axis = imp.axis(o.Axis(), rank)
    if o.FusedActivationFunction():
        imp.fail("with a fused activation is not supported")
    layout = "nchw" if rank == 4 else "plain"
    file_axis = axis
    if layout == "nchw":
        axis = TO_NCHW.index(axis)
    imp.emit("Concat", tuple(imp.value(i, layout) for i in ins), outs[0], {"axis": axis}, layout)
    if rank == 3 and all(i in imp.channels_first for i in ins):  # Conv1D branches: side by side as held too
        parts = []
        for k, i in enumerate(ins):
            n, length, c = imp.shape(i)
            src = imp.channels_first[i]
            if imp.tensors[src].shape != (n, c, length):
                src = inner(imp, "Reshape", (src,), {"shape": (n, c, length), "allowzero": 0}, f"ncl{k}", outs[0])
            parts.append(src)
        imp.channels_first[outs[0]] = inner(imp, "Concat", parts, {"axis": (0, 2, 1).index(file_axis)}, "ncl",
                                            outs[0])


@handles("PACK")
def pack(imp, op, ins, outs):
    """The inputs, each with a dimension of one inserted at axis (a view), side by side along it."""
    o = imp.options(op, "PackOptions")
    out_shape = imp.shape(outs[0])
    axis = imp.axis(o.Axis() if o is not None else 0, len(out_shape))
    one = out_shape[:axis] + (1,) + out_shape[axis + 1:]
    parts = [inner(imp, "Reshape", (imp.value(i, "plain"),), {"shape": one, "allowzero": 0}, f"in{k}", outs[0])
             for k, i in enumerate(ins)]
    imp.emit("Concat", parts, outs[0], {"axis": axis})


@handles("TRANSPOSE")
def transpose(imp, op, ins, outs):
    """One Transpose from the input as held to the output as its consumers take it (NCHW when 4-D, as
    the file has it when a graph output); none (a view) where some layout of the output has the input's
    order (the transpose moves only dimensions of one)."""
    x, out = ins[0], outs[0]
    if not imp.is_const(ins[1]):
        imp.fail("has a permutation that is not constant")
    rank = len(imp.shape(x))
    perm = tuple(int(p) % rank for p in np.ravel(imp.const_data(ins[1])))
    held = x in imp.nchw and rank == 4
    src = imp.value(x, "nchw" if held else "plain")
    at = TO_NHWC if held else tuple(range(rank))  # where x holds each of its file dimensions
    layouts = ("nchw", "plain") if rank == 4 else ("plain",)
    if out in imp.outputs:
        layouts = tuple(reversed(layouts))
    options = []
    for layout in layouts:
        order = TO_NCHW if layout == "nchw" else tuple(range(rank))
        # output dimension d (as held) is file dimension perm[order[d]] of x
        composite = tuple(at[perm[order[d]]] for d in range(rank))
        moved = [d for d in composite if imp.tensors[src].shape[d] != 1]
        shape = nchw(imp.shape(out)) if layout == "nchw" else imp.shape(out)
        if moved == sorted(moved):
            imp.emit("Reshape", (src,), out, {"shape": shape, "allowzero": 0}, layout)
            return
        options.append((layout, composite))
    layout, composite = options[0]
    imp.emit("Transpose", (src,), out, {"perm": composite}, layout)


@handles("SHAPE")
def shape(imp, op, ins, outs):
    """The shape of a tensor, known at import (shapes are static): a constant."""
    imp.folded[outs[0]] = np.array(imp.shape(ins[0]), dtype=imp.dtype(outs[0]))


@handles("ZEROS_LIKE")
def zeros_like(imp, op, ins, outs):
    """Zeros of a static shape: a constant."""
    imp.folded[outs[0]] = np.zeros(imp.shape(outs[0]), dtype=imp._np(imp.dtype(outs[0])))


@handles("BROADCAST_ARGS")
def broadcast_args(imp, op, ins, outs):
    if not all(imp.is_const(i) for i in ins):
        imp.fail("has shapes that are not constant, which is not supported (shapes are static)")
    shapes = [tuple(int(d) for d in np.ravel(imp.const_data(i))) for i in ins]
    try:
        value = np.broadcast_shapes(*shapes)
    except ValueError:
        imp.fail(f"has shapes {shapes} that do not broadcast", True)
    imp.folded[outs[0]] = np.array(value, dtype=imp.dtype(outs[0]))


@handles("FILL")
def fill(imp, op, ins, outs):
    """A constant value repeated: a constant; a value computed at run time: a BroadcastTo of it."""
    value, out = ins[1], outs[0]
    if imp.is_const(value):
        imp.folded[out] = np.full(imp.shape(out), imp.const_data(value).reshape(()),
                                  dtype=imp._np(imp.dtype(out)))
        return
    _broadcast(imp, value, out)


def _broadcast(imp, x: int, out: int) -> None:
    shape = imp.shape(out)
    src = imp.value(x, "plain")
    lead = (1,) * (len(shape) - len(imp.shape(x)))
    if lead:
        src = inner(imp, "Reshape", (src,), {"shape": lead + imp.shape(x), "allowzero": 0}, "ranked", out)
    imp.emit("BroadcastTo", (src,), out, {"shape": shape})


@handles("BROADCAST_TO")
def broadcast_to(imp, op, ins, outs):
    _broadcast(imp, ins[0], outs[0])


@handles("TILE")
def tile(imp, op, ins, outs):
    """Each dimension d repeated multiples[d] times: the input with a dimension of one before each
    repeated one (a view), broadcast to the multiples (a strided copy), merged back (a view). Not in
    TFLite Micro's resolver; as TensorFlow Lite computes it (Keras' UpSampling2D exports it)."""
    x, out = ins[0], outs[0]
    if not imp.is_const(ins[1]):
        imp.fail("has multiples that are not constant, which is not supported (shapes are static)")
    multiples = [int(m) for m in np.ravel(imp.const_data(ins[1]))]
    shape = imp.shape(x)
    split, wide = [], []
    for n, m in zip(shape, multiples):
        if m != 1:
            split.append(1)
            wide.append(m)
        split.append(n)
        wide.append(n)
    src = inner(imp, "Reshape", (imp.value(x, "plain"),), {"shape": tuple(split), "allowzero": 0}, "split", out)
    wide_t = inner(imp, "BroadcastTo", (src,), {"shape": tuple(wide)}, "tiled", out)
    imp.emit("Reshape", (wide_t,), out, {"shape": imp.shape(out), "allowzero": 0})
