"""SOFTMAX and the element-wise activations: LOGISTIC, TANH, HARD_SWISH, RELU, RELU6."""
from __future__ import annotations

from mcudeploy.frontend.tflite.importer import handles


@handles("SOFTMAX")
def softmax(imp, op, ins, outs):
    o = imp.options(op, "SoftmaxOptions")
    beta = float(o.Beta()) if o is not None else 1.0
    x = ins[0]
    rank = len(imp.shape(x))
    layout = "nchw" if rank == 4 else "plain"
    axis = 1 if layout == "nchw" else -1
    if imp.dtype(x) == "float32" and beta != 1.0:
        imp.fail(f"with beta {beta:g} is not supported for float models")
    imp.emit("Softmax", (imp.value(x, layout),), outs[0], {"axis": axis, "beta": beta}, layout)


def _unary(imp, kind: str, ins, outs, attrs=None):
    x = ins[0]
    if imp.dtype(x) != "float32":
        if kind not in ("Relu", "Clip"):
            imp.fail(f"of {imp.dtype(x)} is not supported (TFLite's integer arithmetic for it is not "
                      f"implemented)")
        if imp.quant(x, 1) != imp.quant(outs[0], 1):
            imp.fail("with different input and output quantization is not supported")
    layout = "nchw" if len(imp.shape(x)) == 4 and x in imp.nchw else "plain"
    imp.emit(kind, (imp.value(x, layout),), outs[0], attrs or {}, layout)


@handles("LOGISTIC")
def logistic(imp, op, ins, outs):
    _unary(imp, "Sigmoid", ins, outs)


@handles("TANH")
def tanh(imp, op, ins, outs):
    _unary(imp, "Tanh", ins, outs)


@handles("HARD_SWISH")
def hard_swish(imp, op, ins, outs):
    _unary(imp, "HardSwish", ins, outs)


@handles("RELU")
def relu(imp, op, ins, outs):
    _unary(imp, "Relu", ins, outs)


@handles("RELU6")
def relu6(imp, op, ins, outs):
    _unary(imp, "Clip", ins, outs, {"min": 0.0, "max": 6.0})
