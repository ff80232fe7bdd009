"""ONNX -> IR: static shapes, constant subgraphs folded, every node checked against the registry.

What this module does not handle gets one sentence naming the file, the node (its name and op
type) or the tensor, and why.
"""
from __future__ import annotations

import logging
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping, Optional, Union

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper

from mcudeploy.errors import InvalidModelError, MCUDeployError, UnsupportedError
from mcudeploy.files import read_model
from mcudeploy.frontend.onnx_check import check_shape, check_wiring, node_label, nonfinite, tensor_value
from mcudeploy.frontend.onnx_fold import evaluate_node, output_shapes
from mcudeploy.frontend.refusals import Refusals
from mcudeploy.ir import Graph, Node, Tensor, constant, dtype_of, itemsize, verify
from mcudeploy.ops import registry
from mcudeploy.ops.base import OnnxNode

log = logging.getLogger(__name__)

ONNX_DTYPES = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.BOOL: "bool",
}
# Ops evaluated at compile time when all their inputs are known. DequantizeLinear is kept
# as a node so QDQ lowering can see which constants are quantized weights.
NEVER_FOLD = {"DequantizeLinear"}
SHAPE_OPS = {"Shape", "Size"}
# onnxruntime's quantizer writes 16-bit QuantizeLinear/DequantizeLinear in its own domain below opset 21: the
# same operators (inputs, axis attribute and arithmetic) as the standard ones
STANDARD_IN = {"com.microsoft": {"QuantizeLinear", "DequantizeLinear"}}


def load_model(path: Union[str, os.PathLike]) -> onnx.ModelProto:
    path, data = read_model(path)
    try:
        model = onnx.load_from_string(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise MCUDeployError(f"{path} is not a readable ONNX model: the file is truncated or not in ONNX format "
                              f"({_first_line(exc)})") from None
    if not model.graph.node and not model.graph.output:
        raise MCUDeployError(f"{path} is not an ONNX model (it parses to an empty graph)")
    if model.graph.node and not model.opset_import:
        raise MCUDeployError(f"{path} is not a complete ONNX model (it declares no opset)")
    check_wiring(model.graph, str(path))
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise MCUDeployError(f"{path} is not a valid ONNX model ({_first_line(exc)})") from None
    except UnicodeDecodeError:
        raise MCUDeployError(f"{path} is not a valid ONNX model (a name or text in it is not UTF-8)") from None
    return model


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


def parse_input_shapes(specs) -> dict[str, tuple[int, ...]]:
    """``["x=1x3x96x96", ...]`` -> {"x": (1, 3, 96, 96)}."""
    shapes = {}
    for spec in specs or ():
        name, sep, dims = spec.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = tuple(int(d) for d in dims.lower().split("x"))
            if any(d <= 0 for d in shapes[name]):
                raise ValueError
        except ValueError:
            raise MCUDeployError(f"--input-shape {spec!r} is not of the form NAME=1x3x96x96") from None
    return shapes


def import_onnx(source: Union[str, os.PathLike, onnx.ModelProto],
                input_shapes: Optional[Mapping[str, tuple[int, ...]]] = None) -> Graph:
    model = source if isinstance(source, onnx.ModelProto) else load_model(source)
    where = "the model" if isinstance(source, onnx.ModelProto) else str(source)
    return _Importer(model, dict(input_shapes or {}), where).run()


class _Importer:
    def __init__(self, model: onnx.ModelProto, input_shapes: dict, where: str):
        self.model = model
        self.where = where
        self.input_shapes = input_shapes
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        if self.opset and self.opset < 7:
            raise UnsupportedError(f"{where} uses opset {self.opset}; mcudeploy needs opset 7 or later (11+ tested)")
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.node_names: set[str] = set()

    # ----------------------------------------------------------------- inputs and constants
    def run(self) -> Graph:
        g = self.model.graph
        check_wiring(g, self.where)
        for init in g.initializer:
            self._add_const(init.name, tensor_value(init, f"{self.where}: initializer {init.name}"))
        unknown = set(self.input_shapes)
        inputs = []
        for vi in g.input:
            if vi.name in self.tensors:  # an initializer listed as input (old exporters)
                continue
            unknown.discard(vi.name)
            shape, dtype = self._input_shape(vi), self._dtype(vi)
            check_shape(shape, itemsize(dtype), f"{self.where}: input {vi.name}")
            self.tensors[vi.name] = Tensor(vi.name, shape, dtype, "input")
            inputs.append(vi.name)
        if unknown:
            raise MCUDeployError(f"--input-shape names {', '.join(sorted(unknown))}, which is not an input of "
                                 f"{self.where} (inputs: {', '.join(inputs)})")
        refused = Refusals(self.where)
        for index, proto in enumerate(g.node):
            made, node = [o for o in proto.output if o], proto.name or f"{proto.op_type}_{index}"
            if refused.reads_refused(proto.input):  # not importable; refused too if its operator is unknown
                if not self._known(proto):
                    refused.note(self._operator(proto), node, UnsupportedError(""), made)
                refused.skip(made)
                continue
            try:
                self._node(index, proto)
            except UnsupportedError as exc:
                refused.note(self._operator(proto), node, exc, made)
            except MCUDeployError:
                refused.raise_any()  # a consequence of a refused node, perhaps: those first
                raise
        refused.raise_any()
        outputs = []
        for vi in g.output:
            t = self.tensors.get(vi.name)
            if t is None:
                raise MCUDeployError(f"{self.where}: graph output {vi.name} is never produced")
            if t.kind in ("constant", "input"):
                raise UnsupportedError(f"{self.where}: graph output {vi.name} is a {t.kind}, not computed by any "
                                       f"operator")
            self.tensors[vi.name] = t.with_(kind="output")
            outputs.append(vi.name)
        name = g.name or Path(self.where).stem
        graph = Graph(name, self.tensors, self.nodes, inputs, outputs)
        return verify(_drop_unused_constants(graph))

    def _dtype(self, vi: onnx.ValueInfoProto) -> str:
        elem = vi.type.tensor_type.elem_type
        if elem not in ONNX_DTYPES:
            name = onnx.TensorProto.DataType.Name(elem) if elem in onnx.TensorProto.DataType.values() else elem
            raise UnsupportedError(f"{self.where}: input {vi.name} has element type {name}, which is not supported")
        return ONNX_DTYPES[elem]

    def _input_shape(self, vi: onnx.ValueInfoProto) -> tuple[int, ...]:
        if vi.name in self.input_shapes:
            return self.input_shapes[vi.name]
        if not vi.type.tensor_type.HasField("shape"):
            raise MCUDeployError(f"{self.where}: input {vi.name} has no declared shape; pin it with "
                                 f"--input-shape {vi.name}=1x...")
        dims = []
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(d.dim_value)
            elif i == 0:
                dims.append(1)  # a symbolic batch dimension
            else:
                label = d.dim_param or (f"declared as {d.dim_value}" if d.HasField("dim_value") else "no size")
                pinned = "x".join(str(x.dim_value) if x.dim_value > 0 else "1" if j == 0 else "N"
                                  for j, x in enumerate(vi.type.tensor_type.shape.dim))
                raise MCUDeployError(f"{self.where}: input {vi.name} has an unknown dimension {i} ({label}); pin it "
                                     f"with --input-shape {vi.name}={pinned}")
        return tuple(dims)

    def _add_const(self, name: str, value: np.ndarray) -> None:
        value = np.asarray(value)
        if value.dtype == np.float64:
            value = value.astype(np.float32)
        try:
            dtype_of(value)
        except TypeError:
            raise UnsupportedError(f"{self.where}: constant {name} has element type {value.dtype}, which is not "
                                   f"supported") from None
        self.tensors[name] = constant(name, value)

    def _const(self, name: str) -> Optional[np.ndarray]:
        t = self.tensors.get(name)
        return t.data if t is not None and t.is_const else None

    # ----------------------------------------------------------------- nodes
    @staticmethod
    def _standard(proto: onnx.NodeProto) -> bool:
        return proto.domain in ("", "ai.onnx") or proto.op_type in STANDARD_IN.get(proto.domain, ())

    def _operator(self, proto: onnx.NodeProto) -> str:
        return proto.op_type if self._standard(proto) else f"{proto.domain}.{proto.op_type}"

    def _known(self, proto: onnx.NodeProto) -> bool:
        """An operator mcudeploy imports (whatever its attributes)."""
        return self._standard(proto) and (proto.op_type == "Constant" or proto.op_type in SHAPE_OPS
                                          or registry.for_onnx(proto.op_type) is not None)

    def _node(self, index: int, proto: onnx.NodeProto) -> None:
        name = proto.name or f"{proto.op_type}_{index}"
        while name in self.node_names:
            name = f"{name}_{index}"
        self.node_names.add(name)
        label = node_label(proto, index)
        for i in proto.input:
            if i and i not in self.tensors:
                raise MCUDeployError(f"{self.where}: {label} reads {i}, which no earlier node produces")
        if proto.op_type in STANDARD_IN.get(proto.domain, ()):
            proto = _in_standard_domain(proto)
        if proto.domain not in ("", "ai.onnx"):
            raise UnsupportedError(f"{self.where}: {label} is in domain {proto.domain}, which is not supported")

        if proto.op_type == "Constant":
            self._add_const(proto.output[0], _constant_value(proto, f"{self.where}: {label}"))
            return
        if proto.op_type in SHAPE_OPS and proto.input[0] in self.tensors:
            shape = np.array(self.tensors[proto.input[0]].shape, dtype=np.int64)
            value = shape if proto.op_type == "Shape" else np.array(shape.prod(), dtype=np.int64)
            if proto.op_type == "Shape":
                attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
                value = value[attrs.get("start", 0): attrs.get("end", len(shape))]
            self._add_const(proto.output[0], value)
            return
        known = [i for i in proto.input if i]
        if proto.op_type not in NEVER_FOLD and known and all(self._const(i) is not None for i in known):
            self._fold(proto, name, label)
            return

        op = registry.for_onnx(proto.op_type)
        if op is None:
            raise UnsupportedError(f"{self.where}: {label} uses operator {proto.op_type}, which mcudeploy does not "
                                   f"support")
        with self._about(label):
            inputs, ir_attrs = op.from_onnx(self._onnx_node(proto, name))
            node = Node(name, op.name, tuple(inputs), tuple(o for o in proto.output if o), ir_attrs)
            self._check_values(node)
            partial = Graph("partial", self.tensors, self.nodes, (), ())
            types = op.infer(partial, node)
        for out, (shape, dtype) in zip(node.outputs, types):
            shape = tuple(int(d) for d in shape)
            check_shape(shape, itemsize(dtype), f"{self.where}: {out}, the output of {label},")
            self.tensors[out] = Tensor(out, shape, dtype)
        self.nodes.append(node)

    @contextmanager
    def _about(self, label: str):
        """An operator's complaint about a node, prefixed with the file and the node."""
        try:
            yield
        except UnsupportedError as exc:
            raise UnsupportedError(f"{self.where}: {label} is not supported: {str(exc).rstrip('.')}") from None
        except InvalidModelError as exc:
            raise InvalidModelError(f"{self.where}: {label} {str(exc).rstrip('.')}") from None

    def _onnx_node(self, proto: onnx.NodeProto, name: str) -> OnnxNode:
        attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
        attrs = {k: (v.decode(errors="replace") if isinstance(v, bytes) else v) for k, v in attrs.items()}
        return OnnxNode(name, proto.op_type, tuple(proto.input), tuple(o for o in proto.output), attrs, self._const,
                        self.opset)

    def _fold(self, proto: onnx.NodeProto, name: str, label: str) -> None:
        """Evaluate a node whose inputs are all constants (onnx's reference evaluator), once it reads no
        NaN, a QuantizeLinear's scale and zero point pass the checks they pass when it runs (and its
        input over its scale stays within int32), and the outputs' sizes, as shape inference
        predicts them, are within MAX_TENSOR_BYTES."""
        values = [self._const(i) if i else None for i in proto.input]
        for i, value in zip(proto.input, values):
            if value is not None and value.dtype.kind == "f" and np.isnan(value).any():
                raise InvalidModelError(f"{self.where}: {label} reads constant {i}, which holds NaN values "
                                        f"({int(np.isnan(value).sum())} of {value.size})")
        if proto.op_type == "QuantizeLinear":  # weights quantized at compile time
            with self._about(label):
                _, attrs = registry.for_onnx("QuantizeLinear").from_onnx(self._onnx_node(proto, name))
            with np.errstate(all="ignore"):
                steps = float(np.abs(values[0]).max(initial=0)) / min(attrs["scale"])
            if not steps < 2 ** 31:  # onnx's reference casts x / scale to int32 before it saturates: INT_MIN
                raise InvalidModelError(f"{self.where}: {label} quantizes {proto.input[0]} to {steps:.3g} steps of "
                                        f"its scale, beyond the int32 range constant folding computes in")
        for out, shape in zip(proto.output, output_shapes(proto, values, self.opset)):
            if out and shape is not None:
                check_shape(shape, 1, f"{self.where}: {out}, which {label} would make at compile time,", empty_ok=True)
        try:
            results = evaluate_node(proto, values, self.opset)
        except Exception as exc:  # the reference evaluator raises many types
            raise UnsupportedError(f"{self.where}: {label} has constant inputs but could not be folded "
                                   f"({_first_line(exc)})") from None
        for out, value in zip(proto.output, results):
            if out:
                check_shape(np.shape(value), np.asarray(value).dtype.itemsize, f"{self.where}: {out}, made by {label} "
                            f"at compile time,", empty_ok=True)
                self._add_const(out, value)

    def _check_values(self, node: Node) -> None:
        """The constants an operator reads (weights, biases) and its float attributes are finite."""
        for i in node.inputs:
            value = self._const(i) if i else None
            bad = nonfinite(value) if value is not None else None
            if bad:
                raise InvalidModelError(f"reads constant {i}, which holds {bad}")
        for key, value in node.attrs.items():
            values = value if isinstance(value, tuple) else (value,)
            if any(isinstance(v, float) and math.isnan(v) for v in values):
                raise InvalidModelError(f"has attribute {key} = NaN")


def _in_standard_domain(proto: onnx.NodeProto) -> onnx.NodeProto:
    standard = onnx.NodeProto()
    standard.CopyFrom(proto)
    standard.domain = ""
    return standard


def _constant_value(proto: onnx.NodeProto, label: str) -> np.ndarray:
    for a in proto.attribute:
        if a.name == "value":
            return tensor_value(a.t, f"{label}'s value")
        if a.name in ("value_float", "value_int"):
            return np.array(helper.get_attribute_value(a), dtype=np.float32 if a.name == "value_float" else np.int64)
        if a.name in ("value_floats", "value_ints"):
            return np.array(helper.get_attribute_value(a), dtype=np.float32 if a.name == "value_floats" else np.int64)
    raise UnsupportedError(f"{label} holds a kind of constant mcudeploy does not read")


def _drop_unused_constants(graph: Graph) -> Graph:
    used = {i for n in graph.nodes for i in n.inputs if i} | set(graph.outputs) | set(graph.inputs)
    return graph.replace(tensors={k: t for k, t in graph.tensors.items() if k in used or not t.is_const})
