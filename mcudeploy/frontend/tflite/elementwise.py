"""Element-wise operators of two or more inputs with broadcasting (NCHW inside where every operand is 4-D or a
constant): arithmetic, MAXIMUM and MINIMUM, PRELU, comparisons, logic, SELECT_V2 and ADD_N."""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, handles

# builtin -> (IR operator, its options table when it has a fused activation)
BUILTINS = {
    "ADD": ("Add", "AddOptions"), "SUB": ("Sub", "SubOptions"), "MUL": ("Mul", "MulOptions"),
    "DIV": ("Div", "DivOptions"), "SQUARED_DIFFERENCE": ("SquaredDifference", None),
    "FLOOR_DIV": ("FloorDiv", None), "FLOOR_MOD": ("FloorMod", None),
    "MAXIMUM": ("Maximum", None), "MINIMUM": ("Minimum", None), "PRELU": ("PRelu", None),
    "EQUAL": ("Equal", None), "NOT_EQUAL": ("NotEqual", None), "GREATER": ("Greater", None),
    "GREATER_EQUAL": ("GreaterOrEqual", None), "LESS": ("Less", None), "LESS_EQUAL": ("LessOrEqual", None),
    "LOGICAL_AND": ("And", None), "LOGICAL_OR": ("Or", None), "LOGICAL_NOT": ("Not", None),
    "SELECT_V2": ("Where", None),
}


def elementwise(imp, kind: str, ins, outs, attrs=None):
    """Emit ``kind`` on the inputs broadcast together: NCHW where the output is 4-D and every input is 4-D, a
    scalar, a row or a constant (a constant of lower rank is made 4-D, then NCHW, as broadcasting
    aligns it), the .tflite's own layout otherwise."""
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
    imp.emit(kind, names, outs[0], attrs or {}, layout)


def _handler(builtin: str):
    kind, options = BUILTINS[builtin]

    @handles(builtin)
    def handle(imp, op, ins, outs):
        attrs = imp.activation(imp.options(op, options)) if options else {}
        if attrs and imp.quant(outs[0], 1) is None and imp.dtype(outs[0]) != "float32":
            imp.fail(f"of {imp.dtype(outs[0])} with a fused activation is not supported")
        elementwise(imp, kind, ins, outs, attrs)

    handle.__name__ = builtin.lower()
    return handle


for _builtin in BUILTINS:
    _handler(_builtin)


@handles("ADD_N")
def add_n(imp, op, ins, outs):
    if imp.dtype(outs[0]) not in ("float32", "int8"):
        imp.fail(f"of {imp.dtype(outs[0])} is not supported (TFLite Micro runs float32 and int8)")
    elementwise(imp, "Sum", ins, outs)
