""".tflite -> IR: the reading of one model, tensor by tensor, and the dispatch of each built-in operator
to its handler (``HANDLERS``; the handlers live one module per family beside this one).

Layout. TFLite's 4-D activations are NHWC; mcudeploy's operators are NCHW. A 4-D tensor made by an
operator that has an NCHW form (convolutions, pools, element-wise operators, softmax, concat,
pad, mean) is kept NCHW inside; the model's inputs and outputs keep the .tflite's own shapes and
bytes. Where an operator needs the other layout (the first convolution reads the NHWC input, a
RESHAPE of a 4-D tensor, an output), a Transpose is inserted (``Importer.value``); the first one,
on a graph input, is usually no copy at all (mcudeploy/memory/alias.py places it as a view).

Arithmetic. The graph is marked ``arithmetic="tflite"``: its integer operators round as TFLite's
reference kernels do (mcudeploy/ops/requant.py), so the C agrees with TFLite Micro bit for bit.

What is not handled (an unknown operator, a hybrid model, a type mcudeploy has no kernel for, a
damaged file) gets one sentence naming the file and the operator with its index.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from mcudeploy.errors import InvalidModelError, MCUDeployError, UnsupportedError
from mcudeploy.frontend.onnx_check import check_shape, nonfinite
from mcudeploy.frontend.refusals import Refusals
from mcudeploy.frontend.tflite.reader import DTYPES, op_names, tflite_schema
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant, itemsize, verify
from mcudeploy.ops import registry

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)
ZERO_POINTS = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535)}
ACTIVATIONS = {0: None, 1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}  # fused: NONE, RELU, RELU_N1_TO_1, RELU6

Handler = Callable[["Importer", object, list, list], None]  # (importer, the operator, input and output indices)
HANDLERS: dict[str, Handler] = {}  # built-in operator name (tflite.BuiltinOperator) -> its handler


def handles(*builtins: str) -> Callable[[Handler], Handler]:
    """Register a handler for the built-in operators named (as the schema spells them: "CONV_2D")."""
    def register(fn: Handler) -> Handler:
        for name in builtins:
            if name in HANDLERS:
                raise ValueError(f"TFLite operator {name} has two handlers")
            HANDLERS[name] = fn
        return fn
    return register


class Importer:
    """One .tflite being read into IR: its tensors by index, the layout each is kept in, the nodes made so
    far. The operator handlers (``HANDLERS``, one module per family) call its methods."""

    def __init__(self, model, data: bytes, where: str):
        self.tfl = tflite_schema()
        self.model = model
        self.data = data
        self.where = where
        self.g = model.Subgraphs(0)
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.names: dict[int, str] = {}  # TFLite tensor index -> IR name, in the layout it was made in
        self.nchw: set[int] = set()  # 4-D tensors kept NCHW inside
        self.channels_first: dict[int, str] = {}  # 3-D (N, L, C) tensors an IR tensor also holds as N, C, L (layout.py)
        self.converted: dict[tuple[int, str], str] = {}  # (index, "nchw"/"plain") -> IR name of the other layout
        self.output_names: dict[int, str] = {}  # graph outputs made NCHW inside: their own names
        self.outputs = [int(i) for i in self.g.OutputsAsNumpy()] if self.g.OutputsLength() else []
        self.op_names = op_names()
        self.folded: dict[int, np.ndarray] = {}  # TFLite tensor index -> its value, computed at import (fold)
        self.variables = None  # resource variables (variables.Variables), made by the first operator using one
        self.kept: list[tuple[str, str]] = []  # (state, its next value) of an operator's own state (an LSTM's)
        self.resolved: dict[int, tuple[int, ...]] = {}  # shapes the file leaves open (a -1), as TFLite Micro sets them
        self.label = ""

    # ------------------------------------------------------------------ tensors
    def fail(self, reason: str, invalid: bool = False):
        cls = InvalidModelError if invalid else UnsupportedError
        raise cls(f"{self.where}: {self.label} {reason}" if self.label else f"{self.where}: {reason}")

    def tensor(self, i: int):
        """TFLite tensor i of the main subgraph; an operator reading none (-1) where it needs one is refused."""
        if not 0 <= i < self.g.TensorsLength():
            self.fail(f"reads no tensor (index {i}) where it needs one", True)
        return self.g.Tensors(i)

    def tname(self, i: int) -> str:
        if i not in self.names:
            raw = self.tensor(i).Name()
            name = raw.decode("utf-8", errors="replace") if raw else f"tensor_{i}"
            name = "".join(c if c.isprintable() else "_" for c in name) or f"tensor_{i}"
            taken = set(self.names.values()) | set(self.tensors)
            if name in taken:
                name = f"{name}#{i}"
            self.names[i] = name
        return self.names[i]

    def shape(self, i: int) -> tuple[int, ...]:
        if i in self.resolved:
            return self.resolved[i]
        t = self.tensor(i)
        return tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()

    def dtype(self, i: int) -> str:
        code = self.tensor(i).Type()
        if code not in DTYPES:
            names = {v: k for k, v in vars(self.tfl.TensorType).items() if not k.startswith("_")}
            self.fail(f"uses tensor {self.tname(i)} of type {names.get(code, code)}, which mcudeploy does not support")
        return DTYPES[code]

    def types(self, ins, outs) -> list[str]:
        """The types of what an operator computes on: its inputs that are no constants, then its outputs, each
        once ("int16"; "float32", "int16" for a QUANTIZE), as the schema names them."""
        names = {v: k.lower() for k, v in vars(self.tfl.TensorType).items() if not k.startswith("_")}
        found = []
        for i in [i for i in ins if i >= 0 and not self._has_data(i)] + [i for i in outs if i >= 0]:
            code = self.tensor(i).Type()
            name = DTYPES.get(code) or names.get(code, str(code))
            if name not in found and name != "resource":
                found.append(name)
        return found

    def _has_data(self, i: int) -> bool:
        """Tensor i holds data in the file (a constant), read without checking it."""
        if i in self.folded:
            return True
        buf = self.model.Buffers(self.tensor(i).Buffer())
        return buf is not None and (buf.Offset() > 1 or buf.DataLength() > 0)

    def refuse_integer(self, decl, scope: Graph, node: Node, dtype: str) -> None:
        """The refusal of an integer ``node`` that ``decl`` does not accept: by its type where the operator runs
        quantized at other types only (an int16 DIV), else by its quantization parameters."""
        quantized = any(scope[n].quant is not None for n in (*node.inputs, *node.outputs) if n)
        known = decl.quantized_dtypes(scope) if hasattr(decl, "quantized_dtypes") else None
        if quantized and known is not None and dtype not in known:
            self.fail(f"of quantized {dtype} is not supported (mcudeploy's quantized {decl.name} takes "
                      f"{' and '.join(known)})" if known else
                      f"of quantized {dtype} is not supported (mcudeploy runs {decl.name} on float32 only)")
        self.fail(f"with these quantization parameters is not supported (mcudeploy's {dtype} {decl.name} does not "
                  f"take them)")

    def quant(self, i: int, rank: int) -> Optional[Quant]:
        q = self.tensor(i).Quantization()
        if q is None or q.ScaleLength() == 0:
            return None
        scale = tuple(float(s) for s in q.ScaleAsNumpy())
        zp = tuple(int(z) for z in q.ZeroPointAsNumpy()) if q.ZeroPointLength() else (0,) * len(scale)
        if any(not (s > 0 and math.isfinite(s)) for s in scale):
            self.fail(f"tensor {self.tname(i)} has a quantization scale that is not positive and finite", True)
        shape = self.shape(i)
        if len(scale) > 1 and not (0 <= q.QuantizedDimension() < len(shape) and shape[q.QuantizedDimension()]
                                   == len(scale)):
            self.fail(f"tensor {self.tname(i)} of shape {shape} has {len(scale)} quantization scales along its "
                      f"dimension {q.QuantizedDimension()}, which does not have as many elements", True)
        low, high = ZERO_POINTS.get(DTYPES.get(self.tensor(i).Type()), (-2 ** 31, 2 ** 31 - 1))
        if any(not low <= z <= high for z in zp):
            self.fail(f"tensor {self.tname(i)} has a zero point outside {low} .. {high}", True)
        if len(zp) != len(scale):
            zp = (zp[0],) * len(scale) if len(zp) == 1 else zp
        axis = int(q.QuantizedDimension()) % max(rank, 1) if len(scale) > 1 else None
        return Quant(scale, zp, axis)

    def const_data(self, i: int) -> Optional[np.ndarray]:
        if i in self.folded:
            return self.folded[i]
        t = self.tensor(i)
        buf = self.model.Buffers(t.Buffer())
        if buf is None:
            return None
        if t.Sparsity() is not None:
            self.fail(f"reads constant {self.tname(i)}, stored sparse (TFLite's sparsity format), which mcudeploy "
                      f"does not read (convert without sparsity)")
        if buf.Offset() > 1:
            raw = self.data[buf.Offset(): buf.Offset() + buf.Size()]
        elif buf.DataLength():
            raw = buf.DataAsNumpy().tobytes()
        else:
            return None
        # float16 weights (behind a DEQUANTIZE) are the one type a constant has that no tensor computes in
        dtype = np.dtype(np.float16) if t.Type() == self.tfl.TensorType.FLOAT16 else np.dtype(self._np(self.dtype(i)))
        shape = self.shape(i)
        if len(raw) != dtype.itemsize * math.prod(shape):
            self.fail(f"tensor {self.tname(i)} holds {len(raw)} bytes where its shape {shape} needs "
                      f"{dtype.itemsize * math.prod(shape)}", True)
        value = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        bad = nonfinite(value)
        if bad:
            self.fail(f"reads constant {self.tname(i)}, which holds {bad}", True)
        return value

    @staticmethod
    def _np(dtype: str):
        return np.bool_ if dtype == "bool" else np.dtype(dtype)

    def is_const(self, i: int) -> bool:
        return self.const_data(i) is not None

    def add_constant(self, name: str, value: np.ndarray, quant: Optional[Quant] = None) -> str:
        base, k = name, 1
        while name in self.tensors and not (self.tensors[name].is_const and
                                            np.array_equal(self.tensors[name].data, value)):
            name = f"{base}#{k}"
            k += 1
        self.tensors[name] = constant(name, value, quant)
        return name

    def const(self, i: int, perm: Optional[tuple[int, ...]] = None, axis_map: Optional[dict] = None) -> str:
        """Constant tensor i in the IR, its dimensions permuted by ``perm`` (its quantization's axis too)."""
        value = self.const_data(i)
        if value is None:
            self.fail(f"reads tensor {self.tname(i)} as a constant, and the file holds no data for it")
        q = self.quant(i, value.ndim) if value.dtype.kind in "iu" else None  # dequantized at import: plain floats
        if perm is not None:
            if value.ndim != len(perm):
                self.fail(f"reads constant {self.tname(i)} of shape {list(value.shape)}, where it needs "
                          f"{len(perm)} dimensions", True)
            value = np.ascontiguousarray(value.transpose(perm))
            if q is not None and q.axis is not None:
                q = Quant(q.scale, q.zero_point, perm.index(q.axis))
        return self.add_constant(self.tname(i), value, q)

    def value(self, i: int, layout: str) -> str:
        """IR name of tensor i in ``layout``: "nchw" (4-D activations as mcudeploy's operators take
        them) or "plain" (the .tflite's own layout); a Transpose is added where they differ."""
        if i < 0:
            return ""
        if self.is_const(i):
            value = self.const_data(i)
            if layout == "nchw" and value.ndim == 4:
                return self.const(i, TO_NCHW)
            return self.const(i)
        if i not in self.names or self.names[i] not in self.tensors:
            self.fail(f"reads tensor {self.tname(i)}, which no earlier operator makes", True)
        name = self.names[i]
        if len(self.shape(i)) != 4 or (layout == "nchw") == (i in self.nchw):
            return name
        key = (i, layout)
        if key not in self.converted:
            perm = TO_NCHW if layout == "nchw" else TO_NHWC
            out = self.output_names.get(i, f"{name}/{layout}") if layout == "plain" else f"{name}/{layout}"
            src = self.tensors[name]
            self.tensors[out] = Tensor(out, tuple(src.shape[p] for p in perm), src.dtype, quant=src.quant)
            # a graph input is read in place through permuted strides; elsewhere the elements move
            op = "TransposeView" if src.kind == "input" else "Transpose"
            channels, pixels = ((src.shape[3], math.prod(src.shape[1:3])) if layout == "nchw"
                                else (src.shape[1], math.prod(src.shape[2:])))
            if 1 in (channels, pixels):
                op = "Reshape"  # one channel, or one pixel: the same order of elements in both layouts
            attrs = {"shape": self.tensors[out].shape, "allowzero": 0} if op == "Reshape" else {"perm": perm}
            self.nodes.append(Node(f"{out}/{op.lower()}", op, (name,), (out,), attrs))
            self.converted[key] = out
        return self.converted[key]

    # ------------------------------------------------------------------ the graph
    def run(self) -> Graph:
        g = self.g  # other subgraphs are reached only by control-flow operators, refused by name below
        inputs = []
        for i in (int(x) for x in g.InputsAsNumpy()) if g.InputsLength() else ():
            if self.is_const(i):
                continue
            name, shape, dtype = self.tname(i), self.shape(i), self.dtype(i)
            check_shape(shape, itemsize(dtype), f"{self.where}: input {name}")
            self.tensors[name] = Tensor(name, shape, dtype, "input", self.quant(i, len(shape)))
            inputs.append(name)
        codes = self.model
        refused = Refusals(self.where, "operator", quote=False)
        for index in range(g.OperatorsLength()):
            op = g.Operators(index)
            oc = codes.OperatorCodes(op.OpcodeIndex())
            code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
            opname = self.op_names.get(code, f"builtin {code}")
            if opname == "CUSTOM":
                raw = oc.CustomCode()
                opname = f"CUSTOM {raw.decode(errors='replace') if raw else '?'}"
            self.label = f"operator {index} ({opname})"
            ins = [int(x) for x in op.InputsAsNumpy()] if op.InputsLength() else []
            outs = [int(x) for x in op.OutputsAsNumpy()] if op.OutputsLength() else []
            handler = HANDLERS.get(opname)
            if refused.reads_refused(ins):  # not importable; refused too if its operator is unknown
                if handler is None:
                    refused.note(self._named(opname, ins, outs), str(index), UnsupportedError(""), outs)
                refused.skip(outs)
                continue
            start = len(self.nodes)
            try:
                self._operator(handler, op, ins, outs)
            except UnsupportedError as exc:
                del self.nodes[start:]
                refused.note(self._named(opname, ins, outs), str(index), exc, outs)
            except MCUDeployError:
                refused.raise_any()  # a consequence of a refused operator, perhaps: those first
                raise
        self.label = ""
        refused.raise_any()
        outputs = []
        for i in self.outputs:
            if i not in self.names or self.names[i] not in self.tensors or self.tensors[self.names[i]].is_const:
                self.fail(f"graph output {self.tname(i)} is not computed by any operator")
            if self.tensors[self.names[i]].kind == "input":
                self.fail(f"graph output {self.tname(i)} is a graph input, passed through by no operator, which "
                          f"mcudeploy does not compile")
            name = self.value(i, "plain")
            self.tensors[name] = self.tensors[name].with_(kind="output")
            outputs.append(name)
        states, values = self.variables.finish(self, outputs) if self.variables is not None else ((), ())
        states, values = states + tuple(k for k, _ in self.kept), values + tuple(v for _, v in self.kept)
        graph = Graph(Path(self.where).stem, self.tensors, self.nodes, inputs + list(states), outputs + list(values),
                      arithmetic="tflite", states=states)
        used = {x for n in graph.nodes for x in n.inputs if x} | set(graph.outputs) | set(graph.inputs)
        return verify(graph.replace(tensors={k: t for k, t in graph.tensors.items() if k in used or not t.is_const}))

    def _named(self, opname: str, ins: list[int], outs: list[int]) -> str:
        types = " and ".join(self.types(ins, outs))
        return f"{opname} on {types}" if types else opname

    def _operator(self, handler: Optional[Handler], op, ins: list[int], outs: list[int]) -> None:
        """One operator imported by its handler; a refusal is one sentence naming it (self.label)."""
        if handler is None:
            types = " and ".join(self.types(ins, outs))
            self.fail(f"is not supported by mcudeploy at any type (here on {types} tensors)" if types else
                      "is not supported by mcudeploy")
        start = len(self.nodes)
        try:
            try:
                handler(self, op, ins, outs)
            except KeyError as exc:  # an input the file leaves out (-1, IR name "") that the operator cannot do without
                if exc.args != ("",):
                    raise
                self.fail(f"leaves out input {ins.index(-1) if -1 in ins else '?'}, which it needs", True)
            except ValueError as exc:  # a handler's unpacking of its inputs, outputs or a shape: their count or rank
                if "values to unpack" not in str(exc):
                    raise
                shapes = ", ".join(str(list(self.shape(i))) if i >= 0 else "none" for i in ins)
                self.fail(f"has {len(ins)} inputs (of shapes {shapes}) and {len(outs)} outputs, not the count or the "
                          f"ranks it takes", True)
            self.fold(start, outs)
        except UnsupportedError as exc:
            text = str(exc)
            if text.startswith(self.where):
                raise
            types = self.types(ins, outs)  # the reason names the type, or the sentence does
            named = not types or any(re.search(rf"\b{t}\b", text) for t in types)
            self.fail(f"is not supported: {text.rstrip('.')}" + ("" if named else
                                                                  f" ({' and '.join(types)} tensors)"))
        except InvalidModelError as exc:
            text = str(exc)
            if text.startswith(self.where):
                raise
            self.fail(text.rstrip("."), True)

    def fold(self, start: int, outs: list[int]) -> None:
        """Compute at import what the operator just read made of constants alone (shape arithmetic: SHAPE,
        STRIDED_SLICE, PACK of a static shape, ...): its nodes (those from ``start``) are evaluated by their
        numpy references and its outputs become constants, in the .tflite's own layout."""
        made = self.nodes[start:]
        if not made or any(o in self.outputs for o in outs):
            return
        inside = {x for n in made for x in n.outputs}
        if not all(x in inside or (x in self.tensors and self.tensors[x].is_const) for n in made for x in n.inputs if x):
            return
        from mcudeploy.reference import evaluate

        scope = Graph("fold", {k: t for k, t in self.tensors.items() if t.is_const or k in inside}, made, (), (),
                      arithmetic="tflite")
        values = evaluate(scope, {})
        for o in outs:
            if self.names.get(o) not in values:
                self.fail(f"has {len(outs)} outputs, more than it makes", True)
            name = self.names[o]
            value = values[name]
            if o in self.nchw:
                value = value.transpose(TO_NHWC)
                self.nchw.discard(o)
            self.folded[o] = np.ascontiguousarray(value)
        del self.nodes[start:]
        for x in inside:
            self.tensors.pop(x, None)

    def emit(self, op: str, inputs, out: int, attrs: Optional[dict] = None, layout: str = "plain",
             name: Optional[str] = None, check: bool = True) -> str:
        """Add IR node ``op`` making TFLite tensor ``out`` in ``layout``; shape, type and (for int8)
        the operator's acceptance of the quantization are checked against the .tflite."""
        shape, dtype = self.shape(out), self.dtype(out)
        q = self.quant(out, len(shape))
        ir_shape = tuple(shape[p] for p in TO_NCHW) if layout == "nchw" and len(shape) == 4 else shape
        oname = self.tname(out)
        if out in self.outputs and ir_shape != shape:  # the graph output keeps its name, in its own layout
            self.output_names[out] = oname
            oname = f"{oname}/nchw"
            self.names[out] = oname
        check_shape(shape, itemsize(dtype), f"{self.where}: {oname}, the output of {self.label},")
        node = Node(name or f"{self.label.split(' (')[0].replace(' ', '_')}:{oname}", registry.get(op).name,
                    tuple(inputs), (oname,), attrs or {})
        q_ir = q
        if q is not None and q.axis is not None and layout == "nchw" and len(shape) == 4:
            q_ir = Quant(q.scale, q.zero_point, TO_NCHW.index(q.axis))
        self.tensors[oname] = Tensor(oname, ir_shape, dtype, quant=q_ir)
        decl = registry.get(op)
        scope = Graph("scope", self.tensors, (), (), (), arithmetic="tflite")
        (got_shape, got_dtype), *_ = decl.infer(scope, node)
        if tuple(got_shape) != ir_shape or got_dtype != dtype:
            self.fail(f"makes {dtype}{list(shape)}, where mcudeploy's {op} gives {got_dtype}{list(got_shape)}", True)
        if check and dtype != "float32" and hasattr(decl, "accepts_int8") and not decl.accepts_int8(scope, node):
            self.refuse_integer(decl, scope, node, dtype)
        self.nodes.append(node)
        if layout == "nchw" and len(shape) == 4:
            self.nchw.add(out)
        return oname

    def options(self, op, cls_name: str, required: bool = False):
        """The operator's builtin options as ``cls_name``; None where it has none (its defaults), unless
        ``required`` (the handler reads fields with no sensible default: a kernel size, an axis)."""
        table = op.BuiltinOptions()
        if table is None:
            if required:
                self.fail(f"has no builtin options, where it needs its {cls_name}", True)
            return None
        kind = op.BuiltinOptionsType()
        if kind != getattr(self.tfl.BuiltinOptions, cls_name, kind):
            names = {v: k for k, v in vars(self.tfl.BuiltinOptions).items() if not k.startswith("_")}
            self.fail(f"has builtin options of type {names.get(kind, kind)} where it takes {cls_name}", True)
        opts = getattr(self.tfl, cls_name)()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def axis(self, a: int, rank: int) -> int:
        """Axis ``a`` (negative from the end) of a tensor of ``rank``; a scalar has none."""
        if rank < 1:
            self.fail(f"has axis {int(a)} on a scalar (a tensor of rank 0)", True)
        return int(a) % rank

    def activation(self, opts) -> dict:
        code = opts.FusedActivationFunction() if opts is not None else 0
        if code not in ACTIVATIONS:
            self.fail(f"has fused activation {code} (TANH or SIGN_BIT), which is not supported")
        bounds = ACTIVATIONS[code]
        return {} if bounds is None else {"clip_min": bounds[0], "clip_max": bounds[1]}

    def dequantize_hybrid(self, x: int, w: int) -> None:
        """Weights of a hybrid model (float activations, int8 weights: dynamic-range quantization) become float
        at import, dequantized with their scales: the operator then computes in float, as the float model
        does (TFLite's hybrid kernels quantize the activations at run time instead; see UNSUPPORTED.md)."""
        if self.dtype(x) != "float32" or self.dtype(w) not in ("int8", "uint8") or not self.is_const(w):
            return
        q = self.quant(w, len(self.shape(w)))
        if q is None:
            self.fail(f"has float activations and int8 weights {self.tname(w)} without quantization", True)
        self.folded[w] = self.dequantized(self.const_data(w), q)

    @staticmethod
    def dequantized(value: np.ndarray, q: Quant) -> np.ndarray:
        """Real values of quantized codes (per tensor or along the quantization axis), as float32."""
        shape = [1] * value.ndim
        if q.axis is not None:
            shape[q.axis] = -1
        real = (value.astype(np.float64) - np.reshape(q.zp_array(), shape)) * np.reshape(q.scale_array(), shape)
        return real.astype(np.float32)

    @staticmethod
    def same_pads(size: int, k: int, s: int, d: int) -> tuple[int, int]:
        """TFLite's SAME padding (ComputePaddingHeightWidth): the odd pixel goes at the end."""
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        return total // 2, total - total // 2

    def pads(self, padding: int, in_hw, kernel, stride, dilation) -> tuple[int, ...]:
        for what, values in (("kernel", kernel), ("stride", stride), ("dilation", dilation)):
            if any(int(v) < 1 for v in values):
                self.fail(f"has {what} {tuple(int(v) for v in values)}, which is not positive", True)
        if padding == self.tfl.Padding.VALID:
            return (0, 0, 0, 0)
        (bh, eh), (bw, ew) = (self.same_pads(n, k, s, d) for n, k, s, d in zip(in_hw, kernel, stride, dilation))
        return (bh, bw, eh, ew)

