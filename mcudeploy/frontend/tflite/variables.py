"""Resource variables: CALL_ONCE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE (a streaming model keeps its
state between calls); WHILE and IF are refused by name.

TFLite Micro's semantics (micro_resource_variable.cc, kernels/{call_once,var_handle,read_variable,
assign_variable}.cc): a variable is named by its shared name; its buffer is allocated at its first
ASSIGN_VARIABLE and filled with the zero point of that tensor's quantization cast to a byte (0 for a
float); CALL_ONCE runs an initialisation subgraph on the first call, which assigns the initial values; a
READ_VARIABLE copies the variable's bytes out, an ASSIGN_VARIABLE copies bytes in, in the order of the
operators.

In the IR that is dataflow: each variable the main subgraph assigns is a state (Graph.states), a tensor of
kind "state" holding its initial value; a READ_VARIABLE is the variable's current value (the state, or
what an earlier ASSIGN_VARIABLE of the call gave it: no node at all), and the value it holds after the
last ASSIGN_VARIABLE is the state's next value, a graph output the runtime copies back (or the plan
writes in place). A variable the main subgraph never assigns is a constant. A 4-D state is kept NCHW, as the
4-D activations it is read into and assigned from are (the importer's layout): a ring buffer of frames is then
concatenated and sliced with no transpose, its next value a window of the memory in the state's own bytes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend.tflite.importer import TO_NCHW, handles
from mcudeploy.frontend.tflite.reader import DTYPES
from mcudeploy.ir import Node, Quant, Tensor, constant


@dataclass
class Variable:
    key: str  # its shared name
    name: str  # the IR name of its state tensor
    initial: Optional[np.ndarray] = None  # what CALL_ONCE's subgraph assigns; None: the zero point's bytes
    state: Optional[str] = None  # the state tensor, once the main subgraph reads or assigns the variable
    value: Optional[str] = None  # the IR tensor holding its value now (in the file's layout)
    constant: bool = False  # never assigned by the main subgraph: its initial value, for good
    nchw: bool = False  # a 4-D variable, kept NCHW inside like the activations it is concatenated with


@dataclass
class Variables:
    """The resource variables of one import: by shared name, and the variable of each resource tensor."""

    assigned: set  # shared names the main subgraph assigns
    by_key: dict = field(default_factory=dict)
    of_resource: dict = field(default_factory=dict)  # TFLite tensor index (main subgraph) -> shared name
    used: bool = False  # a variable was read or assigned (CALL_ONCE must come before)

    def finish(self, imp, outputs) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the states, their next values) once every operator is read and the graph's ``outputs`` known. A
        next value that is not a tensor of its own made by an operator (a graph input or output, a constant,
        another state, another state's next value) is copied first; a variable the main subgraph only
        assigns what it holds is a constant."""
        states, values = [], []
        for v in self.by_key.values():
            if v.state is None:
                continue
            value, t = v.value, imp.tensors[v.value]
            if not any(v.state in n.inputs for n in imp.nodes):  # assigned, never read: nothing depends on it
                del imp.tensors[v.state]
                continue
            if value == v.state:
                imp.tensors[v.state] = constant(v.state, t.data, t.quant)
                continue
            if t.kind != "activation" or value in outputs or value in values:
                out = f"{v.state}/next"
                imp.tensors[out] = Tensor(out, t.shape, t.dtype, quant=t.quant)
                imp.nodes.append(Node(f"{out}/copy", "Copy", (value,), (out,)))
                value = out
            states.append(v.state)
            values.append(value)
        return tuple(states), tuple(values)


def _shared_name(imp, op) -> str:
    opts = imp.options(op, "VarHandleOptions")
    raw = opts.SharedName() if opts is not None else None
    return raw.decode("utf-8", errors="replace") if raw else ""


def _variables(imp) -> Variables:
    """The import's variables, made at the first operator that uses one: which variables the main subgraph
    assigns is known before its operators are read (one that it never assigns is a constant)."""
    if imp.variables is None:
        g, names = imp.g, imp.op_names
        handles_, assigned = {}, set()
        for k in range(g.OperatorsLength()):
            op = g.Operators(k)
            oc = imp.model.OperatorCodes(op.OpcodeIndex())
            name = names.get(max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode())))
            if name == "VAR_HANDLE" and op.OutputsLength():
                handles_[int(op.Outputs(0))] = _shared_name(imp, op)
            elif name == "ASSIGN_VARIABLE" and op.InputsLength() and int(op.Inputs(0)) in handles_:
                assigned.add(handles_[int(op.Inputs(0))])
        imp.variables = Variables(assigned)
    return imp.variables


def _variable(imp, resource: int) -> Variable:
    vs = _variables(imp)
    if resource not in vs.of_resource:
        imp.fail(f"uses resource tensor {imp.tname(resource)}, which no VAR_HANDLE before it makes", True)
    vs.used = True
    return vs.by_key[vs.of_resource[resource]]


def _fill(dtype: str, shape: tuple, quant: Optional[Quant]) -> np.ndarray:
    """TFLite Micro's value of a variable no initialisation assigns: every byte the zero point cast to a byte."""
    byte = (int(quant.zero_point[0]) if quant is not None and quant.zero_point else 0) & 0xFF
    np_dtype = np.dtype(np.bool_ if dtype == "bool" else dtype)
    raw = np.full(np_dtype.itemsize * math.prod(shape), byte, dtype=np.uint8)
    return raw.view(np_dtype).reshape(shape).copy()


def _state(imp, v: Variable, i: int) -> str:
    """The variable's state tensor, made with the type, shape and quantization of TFLite tensor ``i`` (the
    first the main subgraph reads it into or assigns it from)."""
    if v.state is None:
        shape, dtype = imp.shape(i), imp.dtype(i)
        q = imp.quant(i, len(shape))
        initial = v.initial if v.initial is not None else _fill(dtype, shape, q)
        if initial.shape != shape or str(initial.dtype) != np.dtype(np.bool_ if dtype == "bool" else dtype).name:
            imp.fail(f"uses variable {v.key} as {dtype}{list(shape)}, but its initialisation assigns it "
                     f"{initial.dtype}{list(initial.shape)}", True)
        name = v.name
        while name in imp.tensors:
            name += "'"
        if len(shape) == 4:  # NCHW inside (the state's bytes are the plan's own: no caller sees its layout)
            v.nchw = True
            shape, initial = tuple(shape[p] for p in TO_NCHW), np.ascontiguousarray(initial.transpose(TO_NCHW))
            if q is not None and q.axis is not None:
                q = Quant(q.scale, q.zero_point, TO_NCHW.index(q.axis))
        imp.tensors[name] = Tensor(name, shape, dtype, "state", q, initial)
        v.state = v.value = name
    return v.state


def _held(imp, v: Variable, i: int) -> tuple[tuple, str]:
    """TFLite tensor i's shape and type as the variable holds them inside (NCHW for a 4-D one)."""
    shape = imp.shape(i)
    return (tuple(shape[p] for p in TO_NCHW) if v.nchw else shape), imp.dtype(i)


@handles("CALL_ONCE")
def call_once(imp, op, ins, outs):
    """The initialisation subgraph, run at the first call: its ASSIGN_VARIABLEs of constants are the variables'
    initial values."""
    vs = _variables(imp)
    if vs.used:
        raise UnsupportedError("it comes after a variable is first used")
    opts = imp.options(op, "CallOnceOptions")
    index = int(opts.InitSubgraphIndex()) if opts is not None else -1
    if not 0 < index < imp.model.SubgraphsLength():
        imp.fail(f"names subgraph {index}, which the file does not have", True)
    g = imp.model.Subgraphs(index)
    handles_: dict[int, str] = {}
    for k in range(g.OperatorsLength()):
        sub = g.Operators(k)
        oc = imp.model.OperatorCodes(sub.OpcodeIndex())
        name = imp.op_names.get(max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode())), "?")
        sub_ins = [int(x) for x in sub.InputsAsNumpy()] if sub.InputsLength() else []
        sub_outs = [int(x) for x in sub.OutputsAsNumpy()] if sub.OutputsLength() else []
        if name == "VAR_HANDLE" and sub_outs:
            handles_[sub_outs[0]] = _shared_name(imp, sub)
            continue
        value = _sub_constant(imp, g, sub_ins[1]) if name == "ASSIGN_VARIABLE" and len(sub_ins) == 2 else None
        if value is None or sub_ins[0] not in handles_:
            raise UnsupportedError(f"its subgraph {index} runs operator {k} ({name}), and mcudeploy imports only "
                                   f"an initialisation that assigns constants to variables")
        key = handles_[sub_ins[0]]
        v = vs.by_key.setdefault(key, Variable(key, key or f"variable{len(vs.by_key)}"))
        v.initial = value


def _sub_constant(imp, g, i: int) -> Optional[np.ndarray]:
    """The value of constant tensor ``i`` of subgraph ``g`` (None if it holds no data)."""
    if not 0 <= i < g.TensorsLength():
        imp.fail(f"assigns a variable from no tensor (index {i}) in its initialisation subgraph", True)
    t = g.Tensors(i)
    buf = imp.model.Buffers(t.Buffer())
    if buf is None or t.Type() not in DTYPES:
        return None
    if buf.Offset() > 1:
        raw = imp.data[buf.Offset(): buf.Offset() + buf.Size()]
    elif buf.DataLength():
        raw = buf.DataAsNumpy().tobytes()
    else:
        return None
    dtype = DTYPES[t.Type()]
    np_dtype = np.dtype(np.bool_ if dtype == "bool" else dtype)
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    if len(raw) != np_dtype.itemsize * math.prod(shape):
        imp.fail(f"assigns a variable {len(raw)} bytes where its shape {shape} needs "
                 f"{np_dtype.itemsize * math.prod(shape)}", True)
    return np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy()


@handles("VAR_HANDLE")
def var_handle(imp, op, ins, outs):
    vs = _variables(imp)
    key = _shared_name(imp, op)
    v = vs.by_key.setdefault(key, Variable(key, key or f"variable{len(vs.by_key)}"))
    v.constant = key not in vs.assigned
    vs.of_resource[outs[0]] = key


@handles("READ_VARIABLE")
def read_variable(imp, op, ins, outs):
    v, out = _variable(imp, ins[0]), outs[0]
    if v.constant:  # never assigned: the initial value, folded into what reads it
        imp.folded[out] = v.initial if v.initial is not None else _fill(imp.dtype(out), imp.shape(out),
                                                                        imp.quant(out, len(imp.shape(out))))
        if imp.folded[out].shape != imp.shape(out):
            imp.fail(f"reads variable {v.key} as {list(imp.shape(out))}, but it holds {list(imp.folded[out].shape)}",
                     True)
        return
    _state(imp, v, out)
    t = imp.tensors[v.value]
    (shape, dtype), q = _held(imp, v, out), imp.quant(out, len(imp.shape(out)))
    if q is not None and q.axis is not None and v.nchw:
        q = Quant(q.scale, q.zero_point, TO_NCHW.index(q.axis))
    if (t.shape, t.dtype) != (shape, dtype):
        imp.fail(f"reads variable {v.key} as {dtype}{list(shape)}, but it holds {t.dtype}{list(t.shape)}", True)
    if t.quant != q:
        raise UnsupportedError(f"it reads variable {v.key} with another quantization than the value it holds")
    layout = "nchw" if v.nchw else "plain"
    if out in imp.outputs:  # a graph output is a tensor of its own
        imp.emit("Copy", (v.value,), out, layout=layout)
    else:
        imp.names[out] = v.value
        if v.nchw:
            imp.nchw.add(out)


@handles("ASSIGN_VARIABLE")
def assign_variable(imp, op, ins, outs):
    v = _variable(imp, ins[0])
    _state(imp, v, ins[1])
    t = imp.tensors[v.state]
    shape, dtype = _held(imp, v, ins[1])
    if (t.shape, t.dtype) != (shape, dtype):
        imp.fail(f"assigns {dtype}{list(shape)} to variable {v.key}, which holds {t.dtype}{list(t.shape)}", True)
    v.value = imp.value(ins[1], "nchw" if v.nchw else "plain")


@handles("WHILE", "IF")
def control_flow(imp, op, ins, outs):
    raise UnsupportedError("it runs other subgraphs, and mcudeploy imports only the main one and CALL_ONCE's "
                           "initialisation")
