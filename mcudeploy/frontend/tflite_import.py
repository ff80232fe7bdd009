""".tflite -> IR: the flatbuffer read with the ``tflite`` package (the TFLite schema's generated
Python classes), each built-in operator mapped onto the registry's operators.

Layout. TFLite's 4-D activations are NHWC; mcudeploy's operators are NCHW. A 4-D tensor made by an
operator that has an NCHW form (convolutions, pools, element-wise operators, softmax, concat,
pad, mean) is kept NCHW inside; the model's inputs and outputs keep the .tflite's own shapes and
bytes. Where an operator needs the other layout (the first convolution reads the NHWC input, a
RESHAPE of a 4-D tensor, an output), a Transpose is inserted (``_Layouts``); the first one,
on a graph input, is usually no copy at all (mcudeploy/memory/alias.py places it as a view).

Arithmetic. The graph is marked ``arithmetic="tflite"``: its integer operators round as TFLite's
reference kernels do (mcudeploy/ops/requant.py), so the C agrees with TFLite Micro bit for bit.

What is not handled (an unknown operator, a hybrid model, a type mcudeploy has no kernel for, a
damaged file) gets one sentence naming the file and the operator with its index.
"""
from __future__ import annotations

import math
import os
import struct
from pathlib import Path
from typing import Optional, Union

import numpy as np

from mcudeploy.errors import InvalidModelError, MCUDeployError, UnsupportedError
from mcudeploy.files import read_model
from mcudeploy.frontend.onnx_check import check_shape, nonfinite
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant, itemsize, verify
from mcudeploy.ops import registry

IDENTIFIER = b"TFL3"
DTYPES = {0: "float32", 2: "int32", 3: "uint8", 4: "int64", 6: "bool", 7: "int16", 9: "int8"}
TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)
ACTIVATIONS = {0: None, 1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}  # fused: NONE, RELU, RELU_N1_TO_1, RELU6


def is_tflite(path: Union[str, os.PathLike]) -> bool:
    """A TFLite flatbuffer: the file identifier "TFL3" at bytes 4..8 (whatever the extension)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return len(head) == 8 and head[4:8] == IDENTIFIER


def _tflite():
    try:
        import tflite
    except ImportError:  # a dependency of mcudeploy; a broken install
        raise MCUDeployError("reading .tflite files needs the Python package tflite (pip install tflite)") from None
    return tflite


def load_tflite(path: Union[str, os.PathLike]):
    """The parsed model (tflite.Model) and its bytes; one sentence where the file is not one."""
    path, data = read_model(path)
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise MCUDeployError(f"{path} is not a TFLite model (no \"TFL3\" flatbuffer identifier)")
    tflite = _tflite()
    try:
        model = tflite.Model.GetRootAsModel(data, 0)
        model.Version()
        if model.SubgraphsLength() < 1:
            raise ValueError("it has no subgraph")
        g = model.Subgraphs(0)
        for i in range(g.TensorsLength()):
            t = g.Tensors(i)
            t.ShapeAsNumpy() if t.ShapeLength() else None
            t.Name()
        for i in range(g.OperatorsLength()):
            op = g.Operators(i)
            op.InputsAsNumpy() if op.InputsLength() else None
            op.OpcodeIndex()
    except Exception as exc:  # noqa: BLE001  (a damaged flatbuffer fails in struct, index and value errors)
        raise MCUDeployError(f"{path} is not a readable TFLite model: the file is truncated or damaged "
                             f"({type(exc).__name__}: {str(exc) or 'no detail'})") from None
    return model, data


def import_tflite(source: Union[str, os.PathLike]) -> Graph:
    model, data = load_tflite(source)
    try:
        return _Importer(model, data, str(source)).run()
    except (struct.error, IndexError) as exc:  # a table or vector reaching past the end of the file
        raise MCUDeployError(f"{source} is not a readable TFLite model: the file is truncated or damaged "
                             f"({type(exc).__name__}: {str(exc) or 'no detail'})") from None


def _op_names() -> dict[int, str]:
    tflite = _tflite()
    return {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}


class _Importer:
    def __init__(self, model, data: bytes, where: str):
        self.tfl = _tflite()
        self.model = model
        self.data = data
        self.where = where
        self.g = model.Subgraphs(0)
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.names: dict[int, str] = {}  # TFLite tensor index -> IR name, in the layout it was made in
        self.nchw: set[int] = set()  # 4-D tensors kept NCHW inside
        self.converted: dict[tuple[int, str], str] = {}  # (index, "nchw"/"plain") -> IR name of the other layout
        self.output_names: dict[int, str] = {}  # graph outputs made NCHW inside: their own names
        self.outputs = [int(i) for i in self.g.OutputsAsNumpy()] if self.g.OutputsLength() else []
        self.op_names = _op_names()
        self.label = ""

    # ------------------------------------------------------------------ tensors
    def fail(self, reason: str, invalid: bool = False):
        cls = InvalidModelError if invalid else UnsupportedError
        raise cls(f"{self.where}: {self.label} {reason}" if self.label else f"{self.where}: {reason}")

    def tname(self, i: int) -> str:
        if i not in self.names:
            raw = self.g.Tensors(i).Name()
            name = raw.decode("utf-8", errors="replace") if raw else f"tensor_{i}"
            name = "".join(c if c.isprintable() else "_" for c in name) or f"tensor_{i}"
            taken = set(self.names.values()) | set(self.tensors)
            if name in taken:
                name = f"{name}#{i}"
            self.names[i] = name
        return self.names[i]

    def shape(self, i: int) -> tuple[int, ...]:
        t = self.g.Tensors(i)
        return tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()

    def dtype(self, i: int) -> str:
        code = self.g.Tensors(i).Type()
        if code not in DTYPES:
            names = {v: k for k, v in vars(self.tfl.TensorType).items() if not k.startswith("_")}
            self.fail(f"uses tensor {self.tname(i)} of type {names.get(code, code)}, which mcudeploy does not support")
        return DTYPES[code]

    def quant(self, i: int, rank: int) -> Optional[Quant]:
        q = self.g.Tensors(i).Quantization()
        if q is None or q.ScaleLength() == 0:
            return None
        scale = tuple(float(s) for s in q.ScaleAsNumpy())
        zp = tuple(int(z) for z in q.ZeroPointAsNumpy()) if q.ZeroPointLength() else (0,) * len(scale)
        if any(not (s > 0 and math.isfinite(s)) for s in scale):
            self.fail(f"tensor {self.tname(i)} has a quantization scale that is not positive and finite", True)
        if len(zp) != len(scale):
            zp = (zp[0],) * len(scale) if len(zp) == 1 else zp
        axis = int(q.QuantizedDimension()) % max(rank, 1) if len(scale) > 1 else None
        return Quant(scale, zp, axis)

    def const_data(self, i: int) -> Optional[np.ndarray]:
        t = self.g.Tensors(i)
        buf = self.model.Buffers(t.Buffer())
        if buf is None:
            return None
        if buf.Offset() > 1:
            raw = self.data[buf.Offset(): buf.Offset() + buf.Size()]
        elif buf.DataLength():
            raw = buf.DataAsNumpy().tobytes()
        else:
            return None
        dtype = np.dtype(self._np(self.dtype(i)))
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

    def _constant(self, name: str, value: np.ndarray, quant: Optional[Quant] = None) -> str:
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
        q = self.quant(i, value.ndim)
        if perm is not None:
            value = np.ascontiguousarray(value.transpose(perm))
            if q is not None and q.axis is not None:
                q = Quant(q.scale, q.zero_point, perm.index(q.axis))
        return self._constant(self.tname(i), value, q)

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
        for index in range(g.OperatorsLength()):
            op = g.Operators(index)
            oc = codes.OperatorCodes(op.OpcodeIndex())
            code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
            opname = self.op_names.get(code, f"builtin {code}")
            if opname == "CUSTOM":
                raw = oc.CustomCode()
                opname = f"CUSTOM {raw.decode(errors='replace') if raw else '?'}"
            self.label = f"operator {index} ({opname})"
            handler = getattr(self, f"op_{opname.lower()}", None)
            if handler is None:
                self.fail("is not supported by mcudeploy")
            ins = [int(x) for x in op.InputsAsNumpy()] if op.InputsLength() else []
            outs = [int(x) for x in op.OutputsAsNumpy()] if op.OutputsLength() else []
            try:
                handler(index, op, ins, outs)
            except UnsupportedError as exc:
                text = str(exc)
                if text.startswith(self.where):
                    raise
                self.fail(f"is not supported: {text.rstrip('.')}")
            except InvalidModelError as exc:
                text = str(exc)
                if text.startswith(self.where):
                    raise
                self.fail(text.rstrip("."), True)
        self.label = ""
        outputs = []
        for i in self.outputs:
            if i not in self.names or self.names[i] not in self.tensors or self.tensors[self.names[i]].is_const:
                self.fail(f"graph output {self.tname(i)} is not computed by any operator")
            name = self.value(i, "plain")
            self.tensors[name] = self.tensors[name].with_(kind="output")
            outputs.append(name)
        graph = Graph(Path(self.where).stem, self.tensors, self.nodes, inputs, outputs, arithmetic="tflite")
        used = {x for n in graph.nodes for x in n.inputs if x} | set(graph.outputs) | set(graph.inputs)
        return verify(graph.replace(tensors={k: t for k, t in graph.tensors.items() if k in used or not t.is_const}))

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
            self.fail(f"with these quantization parameters is not supported (mcudeploy's int8 {op} does not "
                      f"take them)")
        self.nodes.append(node)
        if layout == "nchw" and len(shape) == 4:
            self.nchw.add(out)
        return oname

    def options(self, op, cls_name: str):
        table = op.BuiltinOptions()
        if table is None:
            return None
        opts = getattr(self.tfl, cls_name)()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def activation(self, opts) -> dict:
        code = opts.FusedActivationFunction() if opts is not None else 0
        if code not in ACTIVATIONS:
            self.fail(f"has fused activation {code} (TANH or SIGN_BIT), which is not supported")
        bounds = ACTIVATIONS[code]
        return {} if bounds is None else {"clip_min": bounds[0], "clip_max": bounds[1]}

    def refuse_hybrid(self, x: int, w: int) -> None:
        if self.dtype(x) == "float32" and self.dtype(w) in ("int8", "uint8"):
            self.fail("has float activations and int8 weights: a hybrid model, which mcudeploy does not run "
                      "(convert it to full int8 or keep it float)")

    @staticmethod
    def same_pads(size: int, k: int, s: int, d: int) -> tuple[int, int]:
        """TFLite's SAME padding (ComputePaddingHeightWidth): the odd pixel goes at the end."""
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        return total // 2, total - total // 2

    def pads(self, padding: int, in_hw, kernel, stride, dilation) -> tuple[int, ...]:
        if padding == self.tfl.Padding.VALID:
            return (0, 0, 0, 0)
        (bh, eh), (bw, ew) = (self.same_pads(n, k, s, d) for n, k, s, d in zip(in_hw, kernel, stride, dilation))
        return (bh, bw, eh, ew)

    # ------------------------------------------------------------------ operators
    def op_conv_2d(self, index, op, ins, outs):
        x, w = ins[0], ins[1]
        self.refuse_hybrid(x, w)
        o = self.options(op, "Conv2DOptions")
        wshape = self.shape(w)
        stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
        in_shape = self.shape(x)
        groups = in_shape[3] // wshape[3] if wshape[3] else 1
        attrs = {"group": groups, "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
                 "pads": self.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **self.activation(o)}
        bias = self.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
        self.emit("Conv", (self.value(x, "nchw"), self.const(w, TO_NCHW), bias), outs[0], attrs, "nchw")

    def op_depthwise_conv_2d(self, index, op, ins, outs):
        x, w = ins[0], ins[1]
        self.refuse_hybrid(x, w)
        o = self.options(op, "DepthwiseConv2DOptions")
        wshape = self.shape(w)  # [1, KH, KW, C * multiplier]
        stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
        in_shape = self.shape(x)
        attrs = {"group": in_shape[3], "kernel_shape": tuple(wshape[1:3]), "strides": stride, "dilations": dil,
                 "pads": self.pads(o.Padding(), in_shape[1:3], wshape[1:3], stride, dil), **self.activation(o)}
        bias = self.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
        self.emit("Conv", (self.value(x, "nchw"), self.const(w, (3, 0, 1, 2)), bias), outs[0], attrs, "nchw")

    def op_fully_connected(self, index, op, ins, outs):
        x, w = ins[0], ins[1]
        self.refuse_hybrid(x, w)
        if not self.is_const(w):
            self.fail("has weights that are not constant, which is not supported")
        o = self.options(op, "FullyConnectedOptions")
        if o is not None and o.WeightsFormat() != 0:
            self.fail("uses shuffled weights, which are not supported")
        k = self.shape(w)[1]
        a = self.value(x, "plain")
        out_shape = self.shape(outs[0])
        if len(self.shape(x)) != 2 or len(out_shape) != 2:
            if len(out_shape) != 2:
                self.fail(f"keeps {len(out_shape)} dimensions (keep_num_dims), which is not supported")
            flat = f"{a}/flat"
            rows = math.prod(self.shape(x)) // k
            self.tensors[flat] = Tensor(flat, (rows, k), self.tensors[a].dtype, quant=self.tensors[a].quant)
            self.nodes.append(Node(f"{flat}/reshape", "Reshape", (a,), (flat,), {"shape": (rows, k)}))
            a = flat
        bias = self.const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else ""
        self.emit("Gemm", (a, self.const(w), bias), outs[0],
                  {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1, **self.activation(o)})

    def _elementwise(self, kind: str, ins, outs, opts):
        rank = len(self.shape(outs[0]))
        layout = "nchw" if rank == 4 and all(len(self.shape(i)) in (4, 0, 1) or self.is_const(i) for i in ins) \
            else "plain"
        names = []
        for i in ins:
            if layout == "nchw" and self.is_const(i) and len(self.shape(i)) < 4:
                value = self.const_data(i)
                value = value.reshape((1,) * (4 - value.ndim) + value.shape).transpose(TO_NCHW)
                q = self.quant(i, 4)
                names.append(self._constant(self.tname(i), np.ascontiguousarray(value), q))
            elif layout == "nchw" and len(self.shape(i)) != 4:
                names.append(self.value(i, "plain"))
                layout = "plain"
            else:
                names.append(self.value(i, layout))
        if layout == "plain":
            names = [self.value(i, "plain") for i in ins]
        self.emit(kind, names, outs[0], self.activation(opts), layout)

    def op_add(self, index, op, ins, outs):
        self._elementwise("Add", ins, outs, self.options(op, "AddOptions"))

    def op_sub(self, index, op, ins, outs):
        self._elementwise("Sub", ins, outs, self.options(op, "SubOptions"))

    def op_mul(self, index, op, ins, outs):
        self._elementwise("Mul", ins, outs, self.options(op, "MulOptions"))

    def _pool(self, kind: str, op, ins, outs):
        o = self.options(op, "Pool2DOptions")
        kernel, stride = (o.FilterHeight(), o.FilterWidth()), (o.StrideH(), o.StrideW())
        attrs = {"kernel_shape": kernel, "strides": stride, "auto_pad": "NOTSET",
                 "pads": self.pads(o.Padding(), self.shape(ins[0])[1:3], kernel, stride, (1, 1)), **self.activation(o)}
        if kind == "AveragePool":
            attrs["count_include_pad"] = 0
        self.emit(kind, (self.value(ins[0], "nchw"),), outs[0], attrs, "nchw")

    def op_average_pool_2d(self, index, op, ins, outs):
        x, y = ins[0], outs[0]
        if self.dtype(x) == "int8" and self.quant(x, 4) != self.quant(y, 4):
            self.fail("has different input and output quantization, which TFLite's int8 AVERAGE_POOL_2D does "
                      "not allow", True)
        self._pool("AveragePool", op, ins, outs)

    def op_max_pool_2d(self, index, op, ins, outs):
        self._pool("MaxPool", op, ins, outs)

    def op_mean(self, index, op, ins, outs):
        x = ins[0]
        axes = sorted(int(a) % 4 for a in np.ravel(self.const_data(ins[1]))) if self.is_const(ins[1]) else None
        if len(self.shape(x)) != 4 or axes != [1, 2]:
            self.fail("averages other axes than the height and width of a 4-D tensor, which is not supported")
        if self.dtype(x) != "float32":
            self.fail("of int8 is not supported (TFLite's integer MEAN arithmetic is not implemented)")
        out = outs[0]
        if len(self.shape(out)) == 4:
            self.emit("GlobalAveragePool", (self.value(x, "nchw"),), out, {"global": 1}, "nchw")
            return
        pooled = f"{self.tname(out)}/pooled"
        n, c = self.shape(x)[0], self.shape(x)[3]
        self.tensors[pooled] = Tensor(pooled, (n, c, 1, 1), self.dtype(x))
        self.nodes.append(Node(f"{pooled}/pool", "GlobalAveragePool", (self.value(x, "nchw"),), (pooled,),
                               {"global": 1}))
        self.emit("Reshape", (pooled,), out, {"shape": self.shape(out), "allowzero": 0})

    def op_reshape(self, index, op, ins, outs):
        x, out = ins[0], outs[0]
        shape = self.shape(x)
        # an NCHW tensor holds its elements in NHWC order when H * W or C is 1
        layout = "nchw" if len(shape) == 4 and (shape[1] * shape[2] == 1 or shape[3] == 1) and x in self.nchw \
            else "plain"
        if layout == "nchw" and shape[3] == 1 and shape[1] * shape[2] > 1:
            layout = "plain"  # C = 1: NCHW and NHWC hold the same order, but take the plain view to be sure
        src = self.value(x, layout)
        self.emit("Reshape", (src,), out, {"shape": self.shape(out), "allowzero": 0})

    op_squeeze = op_reshape

    def op_softmax(self, index, op, ins, outs):
        o = self.options(op, "SoftmaxOptions")
        beta = float(o.Beta()) if o is not None else 1.0
        x = ins[0]
        rank = len(self.shape(x))
        layout = "nchw" if rank == 4 else "plain"
        axis = 1 if layout == "nchw" else -1
        if self.dtype(x) == "float32" and beta != 1.0:
            self.fail(f"with beta {beta:g} is not supported for float models")
        self.emit("Softmax", (self.value(x, layout),), outs[0], {"axis": axis, "beta": beta}, layout)

    def _unary(self, kind: str, ins, outs, attrs=None):
        x = ins[0]
        if self.dtype(x) != "float32":
            if kind not in ("Relu", "Clip"):
                self.fail(f"of {self.dtype(x)} is not supported (TFLite's integer arithmetic for it is not "
                          f"implemented)")
            if self.quant(x, 1) != self.quant(outs[0], 1):
                self.fail("with different input and output quantization is not supported")
        layout = "nchw" if len(self.shape(x)) == 4 and x in self.nchw else "plain"
        self.emit(kind, (self.value(x, layout),), outs[0], attrs or {}, layout)

    def op_logistic(self, index, op, ins, outs):
        self._unary("Sigmoid", ins, outs)

    def op_tanh(self, index, op, ins, outs):
        self._unary("Tanh", ins, outs)

    def op_hard_swish(self, index, op, ins, outs):
        self._unary("HardSwish", ins, outs)

    def op_relu(self, index, op, ins, outs):
        self._unary("Relu", ins, outs)

    def op_relu6(self, index, op, ins, outs):
        self._unary("Clip", ins, outs, {"min": 0.0, "max": 6.0})

    def op_dequantize(self, index, op, ins, outs):
        x = ins[0]
        q = self.quant(x, len(self.shape(x)))
        if q is None:
            self.fail("reads a tensor without quantization")
        if self.is_const(x):  # weights stored quantized: a float constant
            value = self.const_data(x).astype(np.float64)
            shape = [1] * value.ndim
            if q.axis is not None:
                shape[q.axis] = -1
            real = (value - np.reshape(q.zp_array(), shape)) * np.reshape(q.scale_array(), shape)
            self.names[outs[0]] = self._constant(self.tname(outs[0]), real.astype(np.float32))
            return
        layout = "nchw" if len(self.shape(x)) == 4 and x in self.nchw else "plain"
        attrs = {"scale": q.scale, "zero_point": q.zero_point, "axis": q.axis or 0, "qdtype": self.dtype(x)}
        self.emit("DequantizeLinear", (self.value(x, layout),), outs[0], attrs, layout)

    def op_quantize(self, index, op, ins, outs):
        x, y = ins[0], outs[0]
        if self.dtype(x) != "float32":
            self.fail("requantizes an integer tensor, which is not supported")
        q = self.quant(y, len(self.shape(y)))
        if q is None or q.axis is not None:
            self.fail("needs a per-tensor quantized output")
        layout = "nchw" if len(self.shape(x)) == 4 and x in self.nchw else "plain"
        attrs = {"scale": q.scale, "zero_point": q.zero_point, "axis": 1, "qdtype": self.dtype(y)}
        self.emit("QuantizeLinear", (self.value(x, layout),), y, attrs, layout)

    def op_concatenation(self, index, op, ins, outs):
        o = self.options(op, "ConcatenationOptions")
        rank = len(self.shape(outs[0]))
        axis = int(o.Axis()) % rank
        if o.FusedActivationFunction():
            self.fail("with a fused activation is not supported")
        layout = "nchw" if rank == 4 else "plain"
        if layout == "nchw":
            axis = TO_NCHW.index(axis)
        self.emit("Concat", tuple(self.value(i, layout) for i in ins), outs[0], {"axis": axis}, layout)

    def op_pad(self, index, op, ins, outs):
        x = ins[0]
        if not self.is_const(ins[1]):
            self.fail("has paddings that are not constant")
        pads = self.const_data(ins[1]).astype(np.int64).reshape(-1, 2)
        rank = len(self.shape(x))
        layout = "nchw" if rank == 4 else "plain"
        if layout == "nchw":
            pads = pads[list(TO_NCHW)]
        # the real 0: an int8 tensor is padded with its zero point, as TFLite's PAD does
        attrs = {"pads": tuple(int(p) for p in pads[:, 0]) + tuple(int(p) for p in pads[:, 1]), "axes": None,
                 "mode": "constant", "value": 0.0}
        self.emit("Pad", (self.value(x, layout),), outs[0], attrs, layout)

    def op_transpose(self, index, op, ins, outs):
        if not self.is_const(ins[1]):
            self.fail("has a permutation that is not constant")
        perm = tuple(int(p) for p in np.ravel(self.const_data(ins[1])))
        self.emit("Transpose", (self.value(ins[0], "plain"),), outs[0], {"perm": perm})

    def op_strided_slice(self, index, op, ins, outs):
        o = self.options(op, "StridedSliceOptions")
        if not all(self.is_const(i) for i in ins[1:4]):
            self.fail("has begin, end or strides that are not constant")
        begin, end, strides = (np.ravel(self.const_data(i)).astype(np.int64) for i in ins[1:4])
        if np.any(strides != 1):
            self.fail("with strides other than 1 is not supported")
        if o is not None and (o.EllipsisMask() or o.NewAxisMask() or o.ShrinkAxisMask() or o.Offset()):
            self.fail("with an ellipsis, new-axis, shrink-axis mask or offset is not supported")
        shape = self.shape(ins[0])
        starts, ends = [], []
        for d, (b, e) in enumerate(zip(begin, end)):
            if o is not None and o.BeginMask() >> d & 1:
                b = 0
            if o is not None and o.EndMask() >> d & 1:
                e = shape[d]
            starts.append(int(b))
            ends.append(int(e))
        self.emit("Slice", (self.value(ins[0], "plain"),), outs[0],
                  {"starts": tuple(starts), "ends": tuple(ends), "axes": tuple(range(len(starts)))})

    def _resize(self, op, ins, outs, mode: str, opts_name: str):
        o = self.options(op, opts_name)
        align, half = (bool(o.AlignCorners()), bool(o.HalfPixelCenters())) if o is not None else (False, False)
        x = ins[0]
        if self.dtype(x) != "float32" and mode == "linear":
            self.fail("of int8 is not supported (TFLite's integer bilinear arithmetic is not implemented)")
        size = self.shape(outs[0])[1:3]
        if align:
            coord = "align_corners"
        elif half:
            coord = "tf_half_pixel_for_nn" if mode == "nearest" else "half_pixel"
        else:
            coord = "asymmetric"
        nearest = "round_prefer_ceil" if align else "floor"
        n, h, w, c = self.shape(x)
        attrs = {"mode": mode, "antialias": 0, "coordinate_transformation_mode": coord, "nearest_mode": nearest,
                 "scales": None, "sizes": (n, c) + tuple(size), "axes": None, "keep_aspect_ratio_policy": "stretch"}
        self.emit("Resize", (self.value(x, "nchw"),), outs[0], attrs, "nchw")

    def op_resize_nearest_neighbor(self, index, op, ins, outs):
        self._resize(op, ins, outs, "nearest", "ResizeNearestNeighborOptions")

    def op_resize_bilinear(self, index, op, ins, outs):
        self._resize(op, ins, outs, "linear", "ResizeBilinearOptions")


__all__ = ["IDENTIFIER", "import_tflite", "is_tflite", "load_tflite"]
