"""Reductions and scans: MEAN, SUM, REDUCE_MAX, REDUCE_MIN, ARG_MAX, ARG_MIN, CUMSUM.

A 4-D tensor kept NCHW inside is reduced there (its axes renumbered) when the result comes out with its
dimensions in the .tflite's order: with keep_dims, or when the channels are reduced or are all that is
kept. Otherwise the reduction reads the tensor in the file's own layout. Keras' GlobalAveragePooling2D
(MEAN over H and W) is so a ReduceMean of the contiguous maps of NCHW, whose outermost reduced axis (the
rows) a split can cut (ops/accumulate.py).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles

REDUCERS = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin"}


def _axes(imp, ins) -> list[int]:
    """The axes tensor resolved as TFLite does: negative ones counted from the end, repeats dropped."""
    if not imp.is_const(ins[1]):
        imp.fail("has axes that are not constant")
    rank = len(imp.shape(ins[0]))
    axes = []
    for a in np.ravel(imp.const_data(ins[1])).astype(np.int64):
        if not -rank <= a < rank:
            imp.fail(f"has axis {int(a)}, out of range for a {rank}-D input", True)
        if int(a) % rank not in axes:
            axes.append(int(a) % rank)
    return sorted(axes)


def _layout(imp, x: int, axes: list[int], keep: bool) -> tuple[str, list[int]]:
    """The layout to reduce tensor x in and its axes there (see the module's docstring)."""
    if len(imp.shape(x)) == 4 and x in imp.nchw:
        moved = sorted(TO_NCHW.index(a) for a in axes)
        kept = [d for d in range(4) if d not in axes]
        if keep or kept == [TO_NCHW[d] for d in range(4) if d not in moved]:
            return "nchw", moved
    return "plain", axes


def _out_layout(imp, out: int, layout: str) -> str:
    return layout if len(imp.shape(out)) == 4 else "plain"


def _reduce(imp, op, ins, outs, builtin: str):
    x, out = ins[0], outs[0]
    axes = _axes(imp, ins)
    o = imp.options(op, "ReducerOptions")
    keep = bool(o.KeepDims()) if o is not None else False
    dtype = imp.dtype(x)
    if dtype not in ("float32", "int8", "int16") or (dtype == "int16" and builtin in ("REDUCE_MAX", "REDUCE_MIN")):
        imp.fail(f"of {dtype} is not supported (TFLite Micro's {builtin} takes float32, int8"
                 f"{'' if builtin in ('REDUCE_MAX', 'REDUCE_MIN') else ' and int16'})")
    if dtype != "float32" and builtin in ("REDUCE_MAX", "REDUCE_MIN") and imp.quant(x, 1) != imp.quant(out, 1):
        imp.fail(f"has different input and output quantization, which TFLite Micro's {dtype} {builtin} does not allow",
                 True)
    layout, moved = _layout(imp, x, axes, keep)
    imp.emit(REDUCERS[builtin], (imp.value(x, layout),), out, {"axes": tuple(moved), "keepdims": int(keep)},
             _out_layout(imp, out, layout))


@handles("MEAN")
def mean(imp, op, ins, outs):
    _reduce(imp, op, ins, outs, "MEAN")


@handles("SUM")
def sum_(imp, op, ins, outs):
    _reduce(imp, op, ins, outs, "SUM")


@handles("REDUCE_MAX")
def reduce_max(imp, op, ins, outs):
    _reduce(imp, op, ins, outs, "REDUCE_MAX")


@handles("REDUCE_MIN")
def reduce_min(imp, op, ins, outs):
    _reduce(imp, op, ins, outs, "REDUCE_MIN")


def _arg(imp, op, ins, outs, builtin: str):
    x, out = ins[0], outs[0]
    axes = _axes(imp, ins)
    if len(axes) != 1:
        imp.fail(f"has {len(axes)} axes where it takes one", True)
    if imp.dtype(x) not in ("float32", "int8"):
        imp.fail(f"of {imp.dtype(x)} is not supported (TFLite Micro's {builtin} takes float32 and int8)")
    layout, moved = _layout(imp, x, axes, False)
    imp.emit("ArgMax" if builtin == "ARG_MAX" else "ArgMin", (imp.value(x, layout),), out,
             {"axis": moved[0], "dtype": imp.dtype(out)}, _out_layout(imp, out, layout))


@handles("ARG_MAX")
def arg_max(imp, op, ins, outs):
    _arg(imp, op, ins, outs, "ARG_MAX")


@handles("ARG_MIN")
def arg_min(imp, op, ins, outs):
    _arg(imp, op, ins, outs, "ARG_MIN")


@handles("CUMSUM")
def cumsum(imp, op, ins, outs):
    x = ins[0]
    axes = _axes(imp, ins)
    if len(axes) != 1:
        imp.fail(f"has {len(axes)} axes where it takes one", True)
    if imp.dtype(x) not in ("float32", "int8"):
        imp.fail(f"of {imp.dtype(x)} is not supported (TFLite Micro's CUMSUM takes float32 and int8)")
    o = imp.options(op, "CumsumOptions")
    exclusive, reverse = (bool(o.Exclusive()), bool(o.Reverse())) if o is not None else (False, False)
    layout, moved = _layout(imp, x, axes, True)
    imp.emit("CumSum", (imp.value(x, layout),), outs[0],
             {"axis": moved[0], "exclusive": int(exclusive), "reverse": int(reverse)}, layout)
