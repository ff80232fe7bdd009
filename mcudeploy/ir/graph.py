"""Nodes and graphs. Both are immutable: a pass builds a new Graph with ``Graph.replace``."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, wraps
from types import MappingProxyType
from typing import Iterable, Mapping, Optional

from mcudeploy.ir.tensor import Tensor

ARITHMETICS = ("onnx", "tflite")


def freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def frozen_attrs(attrs: Mapping | None = None) -> Mapping:
    return MappingProxyType({k: freeze(v) for k, v in dict(attrs or {}).items()})


@dataclass(frozen=True)
class Piece:
    """What a node of a split graph is of the graph before the split: piece ``index`` of node
    ``of``, or (index None) a Slice or Concat the split added to feed or reassemble ``of``'s pieces."""

    of: str
    index: Optional[int] = None


@dataclass(frozen=True, eq=False)
class Node:
    name: str
    op: str
    inputs: tuple[str, ...]  # "" marks an absent optional input
    outputs: tuple[str, ...]
    attrs: Mapping = field(default_factory=frozen_attrs)
    piece: Optional[Piece] = None  # set by the split rewrite (mcudeploy/partition)

    def __post_init__(self):
        if not isinstance(self.attrs, MappingProxyType):
            object.__setattr__(self, "attrs", frozen_attrs(self.attrs))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    @property
    def original(self) -> str:
        """The node of the graph before the split that this one is (a piece of) or serves."""
        return self.piece.of if self.piece is not None else self.name

    @property
    def piece_index(self) -> Optional[int]:
        """j of piece j of an operator cut by the split; None for any other node."""
        return self.piece.index if self.piece is not None else None

    def with_(self, **changes) -> "Node":
        if "attrs" in changes:
            changes["attrs"] = frozen_attrs(changes["attrs"])
        return replace(self, **changes)

    def __repr__(self):
        return f"Node({self.name!r}, {self.op}, {list(self.inputs)} -> {list(self.outputs)})"


@dataclass(frozen=True, eq=False)
class Graph:
    name: str
    tensors: Mapping[str, Tensor]
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    # the integer arithmetic of the model's origin (mcudeploy/ops/requant.py): "onnx" rounds half to
    # even as QuantizeLinear does, "tflite" as TFLite's reference kernels and CMSIS-NN do
    arithmetic: str = "onnx"
    # graph inputs with no bytes in the arena: ReadInput nodes (mcudeploy/ops/read_input.py) ask the
    # application for their rows (passes/stream_input.py)
    streamed: tuple[str, ...] = ()
    # a stateful model's variables (tensors of kind "state", their initial value as data): graph inputs
    # whose value is the one the call before left, and the last len(states) graph outputs are their values
    # at the end of a call, in this order (model_inputs/model_outputs are the caller's own)
    states: tuple[str, ...] = ()

    def __post_init__(self):
        if self.arithmetic not in ARITHMETICS:
            raise ValueError(f"graph {self.name}: unknown arithmetic {self.arithmetic!r}")
        if not isinstance(self.tensors, MappingProxyType):
            object.__setattr__(self, "tensors", MappingProxyType(dict(self.tensors)))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "streamed", tuple(self.streamed))
        object.__setattr__(self, "states", tuple(self.states))

    def stored_inputs(self) -> tuple[str, ...]:
        """The graph inputs that hold bytes before the first step: all but the streamed ones (the states'
        bytes are in the state buffer, mcudeploy/memory/state.py; the others in the arena)."""
        return tuple(name for name in self.inputs if name not in self.streamed)

    def model_inputs(self) -> tuple[str, ...]:
        """The inputs the caller gives (all but the states)."""
        return tuple(name for name in self.inputs if name not in self.states)

    def model_outputs(self) -> tuple[str, ...]:
        """The outputs the caller reads (all but the states' next values)."""
        return self.outputs[:len(self.outputs) - len(self.states)]

    def state_updates(self) -> tuple[tuple[str, str], ...]:
        """(state, the tensor whose value it takes at the end of a call) per state, in order."""
        return tuple(zip(self.states, self.outputs[len(self.outputs) - len(self.states):]))

    def replace(self, *, tensors: Optional[Iterable[Tensor] | Mapping[str, Tensor]] = None, **changes) -> "Graph":
        if tensors is not None:
            if not isinstance(tensors, Mapping):
                tensors = {t.name: t for t in tensors}
            changes["tensors"] = tensors
        return replace(self, **changes)

    def __getitem__(self, name: str) -> Tensor:
        return self.tensors[name]

    @cached_property
    def memo(self) -> dict:
        """Results of pure functions of this graph and one of its nodes (:func:`per_node`)."""
        return {}

    @cached_property
    def producers(self) -> Mapping[str, Node]:
        return MappingProxyType({out: n for n in self.nodes for out in n.outputs})

    @cached_property
    def consumers(self) -> Mapping[str, tuple[Node, ...]]:
        table: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i:
                    table.setdefault(i, []).append(n)
        return MappingProxyType({k: tuple(v) for k, v in table.items()})

    def producer(self, tensor: str) -> Optional[Node]:
        return self.producers.get(tensor)

    def users(self, tensor: str) -> tuple[Node, ...]:
        return self.consumers.get(tensor, ())

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def is_const(self, tensor: str) -> bool:
        return bool(tensor) and self.tensors[tensor].is_const


def per_node(fn):
    """``fn(graph, node)`` computed once per graph and node: both are immutable, so the result stays
    theirs (kept on the graph, it goes with it). For the facts the passes ask again and again (a
    convolution's geometry: 250,000 times in a tune of 340 trials). ``fn`` must return an immutable
    value; an exception is not kept."""
    name = f"{fn.__module__}.{fn.__qualname__}"  # not fn itself: a graph may be pickled with its memo

    @wraps(fn)
    def once(graph: Graph, node: Node):
        key = (name, node)
        memo = graph.memo
        if key in memo:
            return memo[key]
        value = memo[key] = fn(graph, node)
        return value
    return once
