"""What every operator declares, in one place.

An operator is a subclass of :class:`Op` registered under its canonical IR name. Its
declaration carries the shape and dtype rule, the tensor expression (loop axes and how each
input dimension is indexed by them), the numpy reference, the C kernel binding, and whether
the output may reuse an input's buffer. Nothing else in the compiler needs per-operator code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Optional, Sequence, Union

import numpy as np

from mcudeploy.errors import InvalidModelError, UnsupportedError
from mcudeploy.ir import Graph, Node

# --------------------------------------------------------------------------- tensor expressions


@dataclass(frozen=True)
class Axis:
    """A loop axis of an operator's computation."""

    name: str
    extent: int
    kind: str = "spatial"  # "spatial" (appears in the output) or "reduction"


@dataclass(frozen=True)
class Dim:
    """How one dimension of an input is indexed by the loop axes.

    identity:  index = axis
    window:    index = axis * stride + kernel * dilation - pad_begin   (convolution, pooling)
    broadcast: the dimension has extent 1 and is read at 0 whatever the axes
    full:      the whole dimension is read by every point of the computation (not splittable)
    """

    kind: str
    axis: Optional[str] = None
    kernel: Optional[str] = None
    stride: int = 1
    dilation: int = 1
    pad: int = 0

    @staticmethod
    def identity(axis: str) -> "Dim":
        return Dim("identity", axis)

    @staticmethod
    def window(axis: str, kernel: str, stride: int = 1, dilation: int = 1, pad: int = 0) -> "Dim":
        return Dim("window", axis, kernel, stride, dilation, pad)

    @staticmethod
    def broadcast() -> "Dim":
        return Dim("broadcast")

    @staticmethod
    def full() -> "Dim":
        return Dim("full")


@dataclass(frozen=True)
class TensorExpr:
    axes: tuple[Axis, ...]
    inputs: tuple[Optional[tuple[Dim, ...]], ...]  # per node input; None for an absent input
    outputs: tuple[tuple[Dim, ...], ...]  # per node output, one Dim per output dimension

    def axis(self, name: str) -> Axis:
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(name)


def elementwise_expr(graph: Graph, node: Node) -> TensorExpr:
    """Tensor expression of an operator whose output is indexed like its (broadcast) inputs."""
    out = graph[node.outputs[0]]
    axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out.shape))
    inputs = []
    for name in node.inputs:
        if not name:
            inputs.append(None)
            continue
        shape = graph[name].shape
        offset = len(out.shape) - len(shape)
        inputs.append(tuple(
            Dim.broadcast() if (n == 1 and out.shape[offset + i] != 1) else Dim.identity(f"d{offset + i}")
            for i, n in enumerate(shape)))
    outputs = tuple(tuple(Dim.identity(a.name) for a in axes) for _ in node.outputs)
    return TensorExpr(axes, tuple(inputs), outputs)


def opaque_expr(graph: Graph, node: Node) -> TensorExpr:
    """Every output element may depend on every input element: nothing can be split."""
    inputs = tuple(None if not n else tuple(Dim.full() for _ in graph[n].shape) for n in node.inputs)
    outputs = tuple(tuple(Dim.full() for _ in graph[o].shape) for o in node.outputs)
    return TensorExpr((), inputs, outputs)


# --------------------------------------------------------------------------- kernel bindings


@dataclass(frozen=True)
class Array:
    """A constant array the generated code keeps in flash; a struct field points to it."""

    ctype: str
    values: tuple


@dataclass(frozen=True)
class Symbol:
    """A function of the generated model itself, ``<model name>_<suffix>`` (a field of a parameter
    struct: the application's callback that a ReadInput kernel calls, model.h)."""

    suffix: str


@dataclass(frozen=True)
class Struct:
    """A parameter struct: ``static const <ctype> P = { .field = value, ... }``.

    A field's value is an int, a float, a tuple (a fixed-size array field), an Array, or a Symbol.
    """

    ctype: str
    fields: tuple[tuple[str, object], ...]

    @staticmethod
    def of(ctype: str, **fields) -> "Struct":
        return Struct(ctype, tuple(fields.items()))


@dataclass(frozen=True)
class Call:
    """One kernel call: ``fn(&view, ..., &params[, scratch])``; a view of "" is passed as NULL.

    scratch: bytes of working memory the kernel needs during the call (it gets a pointer to them
    in the arena as its last argument when > 0); it must equal ``Op.scratch`` of the node.
    listed: the first ``listed`` views reach the kernel as one argument pair, a constant array of
    their addresses and its length (``fn(list, n, &view, ..., &params)``), for operators of any
    number of inputs."""

    fn: str
    views: tuple[str, ...]
    params: Optional[Struct] = None
    scratch: int = 0
    listed: int = 0


@dataclass(frozen=True)
class OnnxNode:
    """What an importer sees of an ONNX node."""

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict
    const: Callable[[str], Optional[np.ndarray]]  # value of a constant input, else None
    opset: int


@dataclass(frozen=True)
class Partial:
    """How an operator cut along one of its reduction axes is computed (mcudeploy/partition): piece j
    runs ``sum_op`` on its rows and the accumulator piece j - 1 left (none for the first), into an
    accumulator of ``acc_shape`` and ``acc_dtype`` (in place), in the order the whole operator
    sums, so the result is bit for bit the same; then ``finish_op`` turns the last accumulator
    into the operator's output."""

    sum_op: str
    sum_attrs: dict
    acc_shape: tuple[int, ...]
    acc_dtype: str
    finish_op: str
    finish_attrs: dict


# --------------------------------------------------------------------------- the operator


class Op:
    """Base class of operator declarations; subclasses override what differs."""

    name: ClassVar[str] = ""
    onnx_types: ClassVar[tuple[str, ...]] = ()
    view: ClassVar[bool] = False  # output is input 0's bytes reinterpreted (Reshape-like)
    subview: ClassVar[bool] = False  # output is a strided window into input 0's bytes (Slice): no kernel
    source: ClassVar[bool] = False  # reads no tensor: its attributes say which rows it makes (ReadInput, ``piece``)
    # How it shares buffers with slices of one tensor (memory/alias.py decides, schedule/problem.py models it):
    # "inputs", the output is the inputs side by side along attribute "axis", each input written by its producer
    # into its slice (Concat); "outputs", the outputs are slices of input 0 along "axis" (Split); "" neither.
    slices: ClassVar[str] = ""
    # In a TFLite model, a float operator between DEQUANTIZE and QUANTIZE computes in float and rounds once; its
    # integer form computes that exactly only where it says so (a table made by dequantizing, the float
    # function and quantizing; data moved as it is), so only then may passes/qdq.py fold the chain into it.
    qdq_exact: ClassVar[bool] = False

    def from_onnx(self, onnx: OnnxNode) -> tuple[tuple[str, ...], dict]:
        """Turn an ONNX node into IR inputs and attributes (constant inputs may become attributes)."""
        return onnx.inputs, dict(onnx.attrs)

    def infer(self, graph: Graph, node: Node) -> list[tuple[tuple[int, ...], str]]:
        """Shape and dtype of each output."""
        raise NotImplementedError(f"{self.name} has no shape rule")

    def expr(self, graph: Graph, node: Node) -> TensorExpr:
        return opaque_expr(graph, node)

    def reference(self, graph: Graph, node: Node, inputs: Sequence[Optional[np.ndarray]]) -> list[np.ndarray]:
        raise NotImplementedError(f"{self.name} has no reference")

    def kernel(self, graph: Graph, node: Node) -> Call:
        raise NotImplementedError(f"{self.name} has no kernel")

    def inplace(self, graph: Graph, node: Node) -> Optional[int]:
        """Index of the input whose buffer the output may take over when that input dies here.

        The output is then written from the input's first byte, dense, and may be bigger or smaller
        than the input: the operator's kernel must write no byte it still has to read."""
        return None

    def macs(self, graph: Graph, node: Node) -> int:
        return sum(graph[o].size for o in node.outputs)

    def scratch(self, graph: Graph, node: Node) -> int:
        """Bytes of working memory the kernel needs while it runs (counted in the arena).

        Cheap (the memory planner asks for every order), and equal to ``kernel().scratch``."""
        return 0

    def scratch_pays(self, graph: Graph, node: Node, features: frozenset) -> bool:
        """Whether the kernel with its scratch (``scratch``) runs faster than the one without, on a core with
        ``features`` (boards.Board.features): where it does not, no plan gives the node its scratch
        (offload.scratch.scratch_where_it_pays). The kernels' own fact, per core: by default the scratch buys speed."""
        return True

    def unread_constants(self, graph: Graph, node: Node, call: "Call", features: frozenset) -> frozenset:
        """What of ``call``'s constants its kernel does not read on a core with ``features``: names of the constant
        tensors it is passed (for their shapes only) and of its parameter struct's arrays (another variant's),
        which the latency objective leaves in flash (offload/sram.py). By default it reads them all."""
        return frozenset()

    def partial(self, graph: Graph, node: Node, axis: str) -> Optional[Partial]:
        """How pieces along reduction axis ``axis`` accumulate, or None when they cannot."""
        return None

    def piece(self, graph: Graph, node: Node, axis: str, rows: tuple[int, int],
              pads: Optional[tuple[int, int]]) -> Optional[dict]:
        """Attributes of the piece of `node` that computes output indices [rows[0], rows[1]) of
        loop axis `axis` (mcudeploy/partition), or None when the operator cannot be cut so.

        pads: None when no input reads the axis through a window, else the piece's (pad_begin,
        pad_end) along it, which the partition computed from the rows its windowed input reads.
        The default serves operators whose inputs follow the axis one to one or not at all: the
        attributes stay as they are, unless one holds a value per index of the cut dimension (a
        per-channel scale), which a piece would have to slice. Views refuse: a Reshape-like
        output of a strided slice would have to be contiguous."""
        if self.view or pads is not None:
            return None
        extent = self.expr(graph, node).axis(axis).extent
        if any(isinstance(v, tuple) and len(v) == extent > 1 for v in node.attrs.values()):
            return None
        return dict(node.attrs)



def require(condition: bool, reason: str) -> None:
    if not condition:
        raise UnsupportedError(reason)


def require_valid(condition: bool, reason: str) -> None:
    """A rule of ONNX or of arithmetic the model breaks; `reason` continues "node N (Op) ..."."""
    if not condition:
        raise InvalidModelError(reason)


Shape = tuple[int, ...]
Value = Union[np.ndarray, None]
