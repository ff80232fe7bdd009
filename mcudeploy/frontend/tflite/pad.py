"""PAD, PADV2, MIRROR_PAD (NCHW inside for a 4-D tensor).

An integer tensor is padded with a code, as TFLite Micro does (kernels/pad.cc): PAD pads int8 with the
output's zero point and int16, int32 with 0; PADV2 with its constant's code (no requantization: the
converter gives the constant the output's quantization); MIRROR_PAD reflects without (REFLECT) or with
(SYMMETRIC) the edge.

A 3-D (N, L, C) tensor that an IR tensor also holds as N, C, L (a Conv1D's output, layout.py) is padded in
that order too, so a causal Conv1D's PAD -> RESHAPE -> CONV_2D needs no transpose between layers (the plain
pad is made as well, and dropped when nothing reads it); a 3-D graph input is read so through permuted
strides (a TransposeView)."""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles
from mcudeploy.frontend.tflite.layout import inner, of_input

MIRROR_MODES = {0: "reflect", 1: "symmetric"}  # tflite.MirrorPadMode


def _pad(imp, x: int, paddings: int, out: int, mode: str, value: float, code: int) -> None:
    if not imp.is_const(paddings):
        imp.fail("has paddings that are not constant")
    pads = imp.const_data(paddings).astype(np.int64).reshape(-1, 2)
    rank = len(imp.shape(x))
    layout = "nchw" if rank == 4 else "plain"
    if layout == "nchw":
        pads = pads[list(TO_NCHW)]
    attrs = {"pads": tuple(int(p) for p in pads[:, 0]) + tuple(int(p) for p in pads[:, 1]), "axes": None,
             "mode": mode, "value": value}
    if imp.dtype(x) != "float32":
        attrs["code"] = code
    imp.emit("Pad", (imp.value(x, layout),), out, attrs, layout)
    if rank == 3 and x not in imp.channels_first and not imp.is_const(x) and of_input(imp, imp.value(x, "plain")):
        imp.channels_first[x] = inner(imp, "TransposeView", (imp.value(x, "plain"),), {"perm": (0, 2, 1)}, "ncl", x)
    if rank == 3 and x in imp.channels_first:
        n, length, c = imp.shape(x)
        ncl = imp.channels_first[x]
        if imp.tensors[ncl].shape != (n, c, length):
            ncl = inner(imp, "Reshape", (ncl,), {"shape": (n, c, length), "allowzero": 0}, "ncl", out)
        pads = pads[[0, 2, 1]]
        attrs = {**attrs, "pads": tuple(int(p) for p in pads[:, 0]) + tuple(int(p) for p in pads[:, 1])}
        imp.channels_first[out] = inner(imp, "Pad", (ncl,), attrs, "ncl_padded", out)


def _zero_code(imp, out: int) -> int:
    q = imp.quant(out, len(imp.shape(out)))
    return int(q.zero_point[0]) if imp.dtype(out) == "int8" and q is not None else 0


@handles("PAD")
def pad(imp, op, ins, outs):
    _pad(imp, ins[0], ins[1], outs[0], "constant", 0.0, _zero_code(imp, outs[0]))


@handles("PADV2")
def padv2(imp, op, ins, outs):
    if len(ins) < 3 or ins[2] < 0:
        return pad(imp, op, ins[:2], outs)
    if not imp.is_const(ins[2]):
        imp.fail("has a pad value that is not constant")
    value = imp.const_data(ins[2]).reshape(-1)
    if value.size != 1:
        imp.fail(f"has {value.size} pad values where one is needed", True)
    v = value[0]
    _pad(imp, ins[0], ins[1], outs[0], "constant", float(v) if imp.dtype(ins[0]) == "float32" else 0.0, int(v))


@handles("MIRROR_PAD")
def mirror_pad(imp, op, ins, outs):
    o = imp.options(op, "MirrorPadOptions")
    mode = MIRROR_MODES.get(o.Mode() if o is not None else 0)
    if mode is None:
        imp.fail(f"has mirror mode {o.Mode()}, which is not supported")
    _pad(imp, ins[0], ins[1], outs[0], mode, 0.0, 0)
