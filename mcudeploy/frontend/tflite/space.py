"""Operators that move pixels between space, depth and batch: DEPTH_TO_SPACE, SPACE_TO_DEPTH,
SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND. Each is one Transpose of up to 6 dimensions between two Reshapes
(views), on the tensor as held (NCHW for a 4-D tensor), so it costs one copy; SPACE_TO_BATCH_ND pads
first (a Pad), BATCH_TO_SPACE_ND crops after (a Slice: a view where it can be).

Indices as TFLite Micro's reference kernels (reference/depth_to_space.h, space_to_depth.h,
space_to_batch_nd.h, batch_to_space_nd.h): DEPTH_TO_SPACE's output pixel (h * b + i, w * b + j) takes
channels (i * b + j) * C' .. of input pixel (h, w), SPACE_TO_DEPTH the converse; SPACE_TO_BATCH_ND's
output batch (i * bw + j) * N + n holds the padded input's pixels (h * bh + i, w * bw + j) of batch n,
BATCH_TO_SPACE_ND the converse. A 3-D (N, L, C) tensor has one block dimension.

SPACE_TO_BATCH_ND with paddings is refused: TFLite Micro pads with a value it never sets (the
output_offset of its SpaceToBatchParams: whatever its arena held, 0 in a fresh one, 16 after other
models), so no result is TFLite Micro's.
The converter writes a dilated convolution of an unknown batch as SPACE_TO_BATCH_ND -> CONV_2D ->
BATCH_TO_SPACE_ND with shapes for a batch of 1 where the blocks make several: TFLite Micro, which sizes
nothing at run time, then computes a part of it and leaves the rest of the output unset; such a file is
refused (converting with a batch of 1 gives a dilated CONV_2D).
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.frontend.tflite.importer import handles
from mcudeploy.frontend.tflite.layout import inner


def _block(imp, i: int) -> int:
    if not imp.is_const(i):
        imp.fail("has a block size that is not constant, which is not supported (shapes are static)")
    return [int(v) for v in np.ravel(imp.const_data(i))]


def _moved(imp, src: str, out: int, split, perm, merged, layout: str, last: bool = True) -> str:
    """Reshape ``src`` to ``split``, transpose by ``perm``, reshape to ``merged``: into TFLite tensor ``out``
    (``last``), else into an intermediate."""
    a = inner(imp, "Reshape", (src,), {"shape": tuple(split), "allowzero": 0}, "blocks", out, layout)
    b = inner(imp, "Transpose", (a,), {"perm": tuple(perm)}, "moved", out, layout)
    attrs = {"shape": tuple(merged), "allowzero": 0}
    return imp.emit("Reshape", (b,), out, attrs, layout) if last else inner(imp, "Reshape", (b,), attrs, "merged",
                                                                             out, layout)


def _layout(imp, x: int) -> str:
    if len(imp.shape(x)) not in (3, 4):
        imp.fail(f"of a rank-{len(imp.shape(x))} tensor is not supported (TFLite Micro takes 3 or 4 dimensions)")
    return "nchw" if len(imp.shape(x)) == 4 else "plain"


@handles("DEPTH_TO_SPACE")
def depth_to_space(imp, op, ins, outs):
    x = ins[0]
    o = imp.options(op, "DepthToSpaceOptions", required=True)
    b = o.BlockSize()
    n, h, w, c = imp.shape(x)
    if b < 1 or c % (b * b):
        imp.fail(f"has block size {b} for {c} channels", True)
    cb = c // (b * b)
    _moved(imp, imp.value(x, "nchw"), outs[0], (n, b, b, cb, h, w), (0, 3, 4, 1, 5, 2), (n, cb, h * b, w * b), "nchw")


@handles("SPACE_TO_DEPTH")
def space_to_depth(imp, op, ins, outs):
    x = ins[0]
    o = imp.options(op, "SpaceToDepthOptions", required=True)
    b = o.BlockSize()
    n, h, w, c = imp.shape(x)
    if b < 1 or h % b or w % b:
        imp.fail(f"has block size {b} for {h} x {w} pixels", True)
    _moved(imp, imp.value(x, "nchw"), outs[0], (n, c, h // b, b, w // b, b), (0, 3, 5, 1, 2, 4),
           (n, b * b * c, h // b, w // b), "nchw")


def _check_batch(imp, batch: int, blocks, out_batch: int, what: str) -> None:
    if out_batch != batch:
        imp.fail(f"has {what} of batch {out_batch} where blocks {blocks} make {batch} (a model converted with an "
                 f"unknown batch: TFLite Micro computes a part of it and leaves the rest unset; convert it with a "
                 f"batch of 1)")


@handles("SPACE_TO_BATCH_ND")
def space_to_batch_nd(imp, op, ins, outs):
    x, out = ins[0], outs[0]
    layout = _layout(imp, x)
    blocks = _block(imp, ins[1])
    if not imp.is_const(ins[2]):
        imp.fail("has paddings that are not constant, which is not supported (shapes are static)")
    pads = imp.const_data(ins[2]).astype(np.int64).reshape(-1, 2)
    shape = imp.shape(x)
    spatial = len(shape) - 2
    if len(blocks) != spatial or pads.shape[0] != spatial or min(blocks) < 1 or pads.min() < 0:
        imp.fail(f"has blocks {blocks} and paddings {pads.tolist()} for shape {list(shape)}", True)
    padded = [n + int(p0) + int(p1) for n, (p0, p1) in zip(shape[1:-1], pads)]
    if any(p % b for p, b in zip(padded, blocks)):
        imp.fail(f"pads {list(shape[1:-1])} to {padded}, which blocks {blocks} do not divide", True)
    _check_batch(imp, shape[0] * math.prod(blocks), blocks, imp.shape(out)[0], "an output")
    if pads.any():
        imp.fail(f"has paddings {pads.tolist()}, which TFLite Micro fills with a value it never sets (its "
                 f"SpaceToBatchParams.output_offset), which is not supported")
    n, c = shape[0], shape[-1]
    src = imp.value(x, layout)
    if layout == "nchw":
        (hb, wb), (hp, wp) = blocks, padded
        _moved(imp, src, out, (n, c, hp // hb, hb, wp // wb, wb), (3, 5, 0, 1, 2, 4),
               (hb * wb * n, c, hp // hb, wp // wb), layout)
    else:
        (b,), (lp,) = blocks, padded
        _moved(imp, src, out, (n, lp // b, b, c), (2, 0, 1, 3), (b * n, lp // b, c), layout)


@handles("BATCH_TO_SPACE_ND")
def batch_to_space_nd(imp, op, ins, outs):
    x, out = ins[0], outs[0]
    layout = _layout(imp, x)
    blocks = _block(imp, ins[1])
    if not imp.is_const(ins[2]):
        imp.fail("has crops that are not constant, which is not supported (shapes are static)")
    crops = imp.const_data(ins[2]).astype(np.int64).reshape(-1, 2)
    shape = imp.shape(x)
    spatial = len(shape) - 2
    if len(blocks) != spatial or crops.shape[0] != spatial or min(blocks) < 1 or crops.min() < 0:
        imp.fail(f"has blocks {blocks} and crops {crops.tolist()} for shape {list(shape)}", True)
    if shape[0] % math.prod(blocks):
        imp.fail(f"has batch {shape[0]}, which blocks {blocks} do not divide", True)
    n, c = shape[0] // math.prod(blocks), shape[-1]
    _check_batch(imp, shape[0], blocks, imp.shape(out)[0] * math.prod(blocks), "an output (times the blocks)")
    full = [m * b for m, b in zip(shape[1:-1], blocks)]
    kept = [f - int(c0) - int(c1) for f, (c0, c1) in zip(full, crops)]
    if min(kept) < 1 or list(imp.shape(out)[1:-1]) != kept:
        imp.fail(f"crops {crops.tolist()} from {full}, which does not make shape {list(imp.shape(out))}", True)
    src = imp.value(x, layout)
    if layout == "nchw":
        (hb, wb), (h, w) = blocks, shape[1:3]
        split, perm, merged = (hb, wb, n, c, h, w), (2, 3, 4, 0, 5, 1), (n, c, h * hb, w * wb)
        starts, ends = (0, 0, int(crops[0, 0]), int(crops[1, 0])), (n, c, int(crops[0, 0]) + kept[0],
                                                                  int(crops[1, 0]) + kept[1])
    else:
        (b,), (length,) = blocks, shape[1:2]
        split, perm, merged = (b, n, length, c), (1, 2, 0, 3), (n, length * b, c)
        starts, ends = (0, int(crops[0, 0]), 0), (n, int(crops[0, 0]) + kept[0], c)
    if not crops.any():
        _moved(imp, src, out, split, perm, merged, layout)
        return
    whole = _moved(imp, src, out, split, perm, merged, layout, last=False)
    imp.emit("Slice", (whole,), out, {"starts": starts, "ends": ends, "axes": tuple(range(len(starts)))}, layout)
