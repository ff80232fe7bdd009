"""ADD, SUB, MUL: element-wise operators with broadcasting (NCHW inside where every operand is 4-D or a constant)."""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles


def _elementwise(imp, kind: str, ins, outs, opts):
    rank = len(imp.shape(outs[0]))
    layout = "nchw" if rank == 4 and all(len(imp.shape(i)) in (4, 0, 1) or imp.is_const(i) for i in ins) \
        else "plain"
    names = []
    for i in ins:
        if layout == "nchw" and imp.is_const(i) and len(imp.shape(i)) < 4:
            value = imp.const_data(i)
            value = value.reshape((1,) * (4 - value.ndim) + value.shape).transpose(TO_NCHW)
            q = imp.quant(i, 4)
            names.append(imp.add_constant(imp.tname(i), np.ascontiguousarray(value), q))
        elif layout == "nchw" and len(imp.shape(i)) != 4:
            names.append(imp.value(i, "plain"))
            layout = "plain"
        else:
            names.append(imp.value(i, layout))
    if layout == "plain":
        names = [imp.value(i, "plain") for i in ins]
    imp.emit(kind, names, outs[0], imp.activation(opts), layout)


@handles("ADD")
def add(imp, op, ins, outs):
    _elementwise(imp, "Add", ins, outs, imp.options(op, "AddOptions"))


@handles("SUB")
def sub(imp, op, ins, outs):
    _elementwise(imp, "Sub", ins, outs, imp.options(op, "SubOptions"))


@handles("MUL")
def mul(imp, op, ins, outs):
    _elementwise(imp, "Mul", ins, outs, imp.options(op, "MulOptions"))
