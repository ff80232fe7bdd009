"""UNIDIRECTIONAL_SEQUENCE_LSTM: the IR LSTM (mcudeploy/ops/recurrent.py), its eight weight matrices and four
biases stacked per gate, time-major files transposed to batch-major around it.

The hidden and cell state are the operator's variable tensors. TensorFlow Lite Micro sets them to their zero
point (int8) or to zero when it is reset and keeps them from one call to the next; so does the plan: each is a
state of the model (Graph.states, its buffer apart from the arena) whose next value is the LSTM's H_T or C_T,
and NAME_reset() gives it back its initial value.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import handles
from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry

INPUT, HIDDEN, CELL = 0, 18, 19
INPUT_WEIGHTS, RECURRENT_WEIGHTS, BIASES = (1, 2, 3, 4), (5, 6, 7, 8), (12, 13, 14, 15)  # gates i, f, c, o
VARIANTS = (9, 10, 11, 16, 17, 20, 21, 22, 23)  # peepholes, projection, layer normalisation
TANH = 4


def _stacked(imp, indices, what: str):
    """The constants ``indices`` (one per gate) as one array [4, ...] and their quantization (one scale per gate)."""
    if any(i < 0 or not imp.is_const(i) for i in indices):
        imp.fail(f"has {what} that are not constant, which is not supported")
    values = [imp.const_data(i) for i in indices]
    if len({v.shape for v in values}) != 1:
        imp.fail(f"has {what} of different shapes", True)
    quants = [imp.quant(i, values[0].ndim) for i in indices]
    if all(q is None for q in quants):
        return np.stack(values), None
    if any(q is None or len(q.scale) != 1 for q in quants):
        imp.fail(f"has {what} quantized per channel, which TensorFlow Lite Micro's LSTM does not take")
    return np.stack(values), Quant(tuple(q.scale[0] for q in quants), tuple(q.zero_point[0] for q in quants), 0)


def _state(imp, i: int, batch: int, units: int, name: str) -> str:
    """The variable tensor i (the hidden or the cell state) as a state of the model (Graph.states), starting as
    TFLite Micro's reset leaves it: its zero point (int8) or zero, [batch, units]. TFLite Micro keeps it from one
    call to the next, and so does the plan: the LSTM's H_T or C_T is its next value."""
    t = imp.tensor(i)
    if not t.IsVariable():
        imp.fail(f"has a {name} state that is not a variable tensor (TensorFlow Lite Micro requires one)", True)
    if int(np.prod(imp.shape(i))) != batch * units:
        imp.fail(f"has a {name} state of shape {list(imp.shape(i))}, not {batch} x {units} elements", True)
    dtype = imp.dtype(i)
    q = imp.quant(i, 2)
    if q is not None and len(q.scale) != 1:
        imp.fail(f"has a {name} state quantized per channel", True)
    fill = q.zero_point[0] if q is not None and dtype == "int8" else 0
    state = f"{imp.tname(i)}/state"
    imp.tensors[state] = Tensor(state, (batch, units), dtype, "state", q, np.full((batch, units), fill, np.dtype(dtype)))
    return state


def _final(imp, state: str) -> str:
    """A tensor for the LSTM's final value of ``state`` (H_T or C_T): the state's next value."""
    t = imp.tensors[state]
    out = f"{state}/next"
    imp.tensors[out] = Tensor(out, t.shape, t.dtype, quant=t.quant)
    imp.kept.append((state, out))
    return out


@handles("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(imp, op, ins, outs):
    ins = ins + [-1] * (24 - len(ins))
    if any(ins[i] >= 0 for i in VARIANTS):
        imp.fail("with peepholes, a projection or layer normalisation is not supported (TensorFlow Lite Micro does "
                 "not run them either)")
    o = imp.options(op, "UnidirectionalSequenceLSTMOptions")
    if o is None or o.FusedActivationFunction() != TANH:
        imp.fail("with a cell activation other than TANH is not supported (TensorFlow Lite Micro runs TANH and "
                 "SIGMOID only, and a .tflite cannot name SIGMOID)")
    x = ins[INPUT]
    for w in INPUT_WEIGHTS + RECURRENT_WEIGHTS:  # a hybrid LSTM's int8 weights become float: it runs in float
        if w < len(ins) and ins[w] >= 0:
            imp.dequantize_hybrid(x, ins[w])
    shape = imp.shape(x)
    if len(shape) != 3:
        imp.fail(f"has a {len(shape)}-D input, where TensorFlow Lite Micro's LSTM takes 3-D", True)
    time_major = bool(o.TimeMajor())
    steps, batch = shape[:2] if time_major else shape[1::-1]
    w, wq = _stacked(imp, [ins[k] for k in INPUT_WEIGHTS], "input weights")
    r, rq = _stacked(imp, [ins[k] for k in RECURRENT_WEIGHTS], "recurrent weights")
    b, _ = _stacked(imp, [ins[k] for k in BIASES], "biases")
    units = w.shape[1]
    if w.shape != (4, units, shape[2]) or r.shape != (4, units, units) or b.shape != (4, units):
        imp.fail(f"has weights of shapes {list(w.shape[1:])}, {list(r.shape[1:])} and {list(b.shape[1:])} that do "
                 f"not fit {units} units and {shape[2]} features", True)
    base = imp.tname(outs[0])
    inputs = (_batch_major(imp, x, time_major, batch, steps), imp.add_constant(f"{base}/W", w, wq),
              imp.add_constant(f"{base}/R", r, rq), imp.add_constant(f"{base}/bias", b),
              _state(imp, ins[HIDDEN], batch, units, "hidden"), _state(imp, ins[CELL], batch, units, "cell"))
    attrs = {"cell_clip": float(o.CellClip())}
    finals = (_final(imp, inputs[4]), _final(imp, inputs[5]))
    y = f"{base}/batch_major" if time_major else base  # batch-major Y is the file's output itself
    imp.tensors[y] = Tensor(y, (batch, steps, units), imp.dtype(outs[0]), quant=imp.quant(outs[0], 3))
    node = Node(f"{y}/lstm", "LSTM", inputs, (y,) + finals, attrs)
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    inferred = [tuple(shape) for shape, _ in registry.get("LSTM").infer(scope, node)]
    if inferred != [imp.tensors[t].shape for t in node.outputs]:
        imp.fail(f"makes {list(imp.shape(outs[0]))} where mcudeploy's LSTM gives {list(inferred[0])}", True)
    if imp.dtype(x) != "float32" and not registry.get("LSTM").accepts_int8(scope, node):
        imp.fail(f"with these quantization parameters is not supported (mcudeploy's {imp.dtype(x)} LSTM does not "
                 f"take them)")
    imp.nodes.append(node)
    if time_major:
        op, swap = _swap(batch, (steps, batch, units))
        imp.emit(op, (y,), outs[0], swap)


def _swap(batch: int, shape) -> tuple[str, dict]:
    """The node that exchanges the first two dimensions of a 3-D tensor, giving ``shape``: with one batch row a
    Reshape (the same elements in the same order), else a Transpose."""
    if batch == 1:
        return "Reshape", {"shape": tuple(shape), "allowzero": 0}
    return "Transpose", {"perm": (1, 0, 2)}


def _batch_major(imp, x: int, time_major: bool, batch: int, steps: int) -> str:
    """The input as [batch, time, features]."""
    name = imp.value(x, "plain")
    if not time_major:
        return name
    src = imp.tensors[name]
    out = f"{name}/batch_major"
    imp.tensors[out] = Tensor(out, (batch, steps, src.shape[2]), src.dtype, quant=src.quant)
    op, attrs = _swap(batch, imp.tensors[out].shape)
    imp.nodes.append(Node(f"{out}/{op.lower()}", op, (name,), (out,), attrs))
    return out
