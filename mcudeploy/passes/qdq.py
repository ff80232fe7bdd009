"""QDQ lowering: DequantizeLinear -> float op(s) -> QuantizeLinear becomes one integer operator.

1. Quantization parameters move onto tensors: a QuantizeLinear's output and a
   DequantizeLinear's input carry that node's scale and zero point.
2. For every float operator whose activation inputs all come from DequantizeLinear and whose
   output reaches a QuantizeLinear (an operator of several outputs, Split: each output read by
   one QuantizeLinear alone) through at most a bias Add (after Conv/Gemm/MatMul) and
   Relu/Clip, the chain is replaced by the same operator on the integer tensors, with the
   bias requantized to int32 at scale s_x*s_w (held as int64 for int16 activations: the 16x8
   kernels sum in int64) and Relu/Clip kept as the output range. The
   operator may decline (``accepts_int8``); it then stays in float, which is still correct. In a TFLite
   model only an operator whose integer form computes the float chain exactly (``Op.qdq_exact``, a view)
   is folded: there the chain is what the model asks for, not a stand-in for TFLite's integer kernel.
3. DequantizeLinear of a constant that is still needed in float (hybrid models) is folded.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry, requant
from mcudeploy.passes.graph_edit import eliminate_dead

WITH_BIAS = {"Conv": 2, "Gemm": 2, "ConvTranspose": 2}


def _quant_of(node: Node, rank: int) -> Quant:
    scale = tuple(node.attr("scale"))
    zp = tuple(node.attr("zero_point"))
    axis = None
    if len(scale) > 1:
        axis = node.attr("axis", 1) % max(rank, 1)
    return Quant(scale, zp, axis)


def annotate(graph: Graph) -> Graph:
    tensors = dict(graph.tensors)
    for n in graph.nodes:
        if n.op == "QuantizeLinear":
            name = n.outputs[0]
        elif n.op == "DequantizeLinear":
            name = n.inputs[0]
        else:
            continue
        t = tensors[name]
        if t.quant is None:
            tensors[name] = t.with_(quant=_quant_of(n, len(t.shape)))
    return graph.replace(tensors=tensors)


def activation_bounds(node: Node) -> tuple[float, float]:
    """Real-valued output range a Relu or Clip imposes."""
    if node.op == "Relu":
        return 0.0, math.inf
    lo, hi = node.attr("min"), node.attr("max")
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


def _merge_clip(attrs: dict, bounds: tuple[float, float]) -> dict:
    lo = max(attrs.get("clip_min", -math.inf) if attrs.get("clip_min") is not None else -math.inf, bounds[0])
    hi = min(attrs.get("clip_max", math.inf) if attrs.get("clip_max") is not None else math.inf, bounds[1])
    return {**attrs, "clip_min": lo, "clip_max": hi}


def _accepts(op, graph: Graph, node: Node) -> bool:
    """Whether the integer form of `node` computes its output as declared (shape and dtype) and
    the operator takes these quantization parameters."""
    try:
        inferred = op.infer(graph, node)
    except UnsupportedError:
        return False
    for (shape, dtype), name in zip(inferred, node.outputs):
        out = graph[name]
        if tuple(shape) != out.shape or dtype != out.dtype:
            return False
        if op.view and graph[node.inputs[0]].quant != out.quant:
            return False
    if requant.arithmetic(graph) == "tflite" and not (op.qdq_exact or op.view or op.subview):
        return False  # TFLite's integer kernel would round otherwise than its float operator and QUANTIZE do
    accepts = getattr(op, "accepts_int8", None)
    return accepts is None or accepts(graph, node)


class _Lowering:
    def __init__(self, graph: Graph):
        self.g = graph
        self.tensors = dict(graph.tensors)
        self.replaced: dict[str, Optional[Node]] = {}  # node name -> replacement (None: removed)

    def dq_source(self, name: str) -> Optional[tuple[str, Quant]]:
        p = self.g.producer(name)
        if p is None or p.op != "DequantizeLinear":
            return None
        src = p.inputs[0]
        q = _quant_of(p, len(self.g[src].shape))
        return src, q

    def chain(self, node: Node):
        """(bias input or None, clip bounds, QuantizeLinear node, nodes in the chain) or None."""
        cur, members, bias, bounds = node.outputs[0], [node], None, (-math.inf, math.inf)
        while True:
            users = self.g.users(cur)
            if cur in self.g.outputs or len(users) != 1:
                return None
            u = users[0]
            if u.op == "QuantizeLinear":
                return bias, bounds, u, members
            if u.op == "Add" and bias is None and len(members) == 1 and node.op in ("Conv", "MatMul", "Gemm"):
                other = u.inputs[1] if u.inputs[0] == cur else u.inputs[0]
                if node.op in WITH_BIAS and len(node.inputs) > 2 and node.inputs[2]:
                    return None
                if self.dq_source(other) is None and not self.g.is_const(other):
                    return None
                bias = other
            elif u.op in ("Relu", "Clip") and self.g[cur].dtype == "float32":
                b = activation_bounds(u)
                bounds = (max(bounds[0], b[0]), min(bounds[1], b[1]))
            else:
                return None
            members.append(u)
            cur = u.outputs[0]

    def bias_int32(self, bias: str, x_quant: Quant, w_quant: Quant, channels: int, what: str,
                   dtype: str = "int32") -> Optional[str]:
        """The bias as an int32 constant of shape [channels] at scale s_x*s_w (of type ``dtype``)."""
        src = self.dq_source(bias)
        if src is not None:
            name, q = src
            t = self.g[name]
            if not t.is_const:
                return None
            real = (t.data.astype(np.float64) - q.zp_array()) * q.scale_array()
        elif self.g.is_const(bias) and self.g[bias].dtype == "float32":
            real = self.g[bias].data.astype(np.float64)
        else:
            return None
        real = np.asarray(real, dtype=np.float64)
        if real.size == 1:
            real = np.full(channels, float(real.ravel()[0]))
        if real.size != channels:
            return None
        real = real.reshape(channels)
        s_x = x_quant.scale_array()[0]
        s_w = w_quant.scale_array()
        scale = s_x * (s_w if s_w.size == channels else np.full(channels, s_w[0]))
        with np.errstate(all="ignore"):
            q = np.rint(real / scale)
        if not np.all(np.abs(q) <= 2**31 - 1):  # no int32 holds it (or the scale underflowed): stay in float
            return None
        q = q.astype(dtype)
        name = f"{what}/bias_{dtype}"
        self.tensors[name] = constant(name, q, Quant(tuple(float(s) for s in scale), (0,) * channels,
                                                     0 if channels > 1 else None))
        return name

    def integer_inputs(self, node: Node) -> Optional[list[str]]:
        """The integer tensors behind `node`'s inputs (each read through a DequantizeLinear), or None."""
        inputs = []
        for i in node.inputs:
            if not i:
                inputs.append("")
                continue
            src = self.dq_source(i)
            if src is None:
                return None
            inputs.append(src[0])
        return inputs

    def lower_outputs(self, node: Node) -> None:
        """An operator of several outputs (Split), each read by one QuantizeLinear alone, becomes the
        operator on the integer tensors (with no bias or clip to fold)."""
        qnodes = []
        for o in node.outputs:
            users = self.g.users(o)
            if o in self.g.outputs or len(users) != 1 or users[0].op != "QuantizeLinear":
                return
            qnodes.append(users[0])
        inputs = self.integer_inputs(node)
        if inputs is None:
            return
        lowered = Node(node.name, node.op, tuple(inputs), tuple(q.outputs[0] for q in qnodes), dict(node.attrs))
        self.accept(node, lowered, inputs, qnodes)

    def accept(self, node: Node, lowered: Node, inputs: list[str], removed: list[Node]) -> None:
        """Replace `node` by `lowered` (and drop `removed`) if the operator takes the integer form."""
        trial = self.g.replace(tensors={**self.tensors, **{n: self._with_dq_quant(n, node) for n in inputs if n}})
        if not _accepts(registry.get(lowered.op), trial, lowered):
            return
        trial_tensors = trial.tensors
        self.tensors.update({n: trial_tensors[n] for n in inputs if n})
        self.replaced[node.name] = lowered
        for m in removed:
            self.replaced[m.name] = None

    def lower(self, node: Node) -> None:
        if len(node.outputs) > 1:
            return self.lower_outputs(node)
        found = self.chain(node)
        if found is None:
            return
        bias, bounds, qnode, members = found
        inputs = self.integer_inputs(node)
        if inputs is None:
            return
        new_op = node.op
        attrs = dict(node.attrs)
        if bias is not None or (node.op in WITH_BIAS and len(inputs) > 2 and inputs[2]):
            w = self.g[inputs[1]]
            if not w.is_const:
                return
            w_quant = self.dq_source(node.inputs[1])[1]
            x_quant = self.dq_source(node.inputs[0])[1]
            if node.op == "MatMul":
                if len(self.g[inputs[0]].shape) != 2 or len(w.shape) != 2:
                    return
                new_op, attrs = "Gemm", {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
                channels = w.shape[1]
            elif node.op == "Gemm":
                channels = w.shape[0] if node.attr("transB", 0) else w.shape[1]
            elif node.op == "ConvTranspose":
                channels = w.shape[1] * int(node.attr("group", 1))
            else:
                channels = w.shape[0]
            b = bias if bias is not None else node.inputs[2]
            wide = "int64" if self.g[inputs[0]].dtype == "int16" else "int32"
            b_int = self.bias_int32(b, x_quant, w_quant, channels, node.name, wide)
            if b_int is None:
                return
            inputs = inputs[:2] + [b_int]
        if bounds != (-math.inf, math.inf):
            attrs = _merge_clip(attrs, bounds)
        lowered = Node(node.name, new_op, tuple(inputs), (qnode.outputs[0],), attrs)
        self.accept(node, lowered, inputs, members[1:] + [qnode])

    def _with_dq_quant(self, name: str, node: Node) -> Tensor:
        """The tensor with the quantization of the DequantizeLinear through which `node` reads it."""
        t = self.tensors[name]
        if t.quant is not None:
            return t
        for i in node.inputs:
            src = self.dq_source(i) if i else None
            if src and src[0] == name:
                return t.with_(quant=src[1])
        return t

    def run(self) -> Graph:
        for node in self.g.nodes:
            if node.op in ("QuantizeLinear", "DequantizeLinear") or node.name in self.replaced:
                continue
            if any(self.g[o].dtype != "float32" for o in node.outputs):
                continue
            self.lower(node)
        nodes = []
        for n in self.g.nodes:
            if n.name in self.replaced:
                if self.replaced[n.name] is not None:
                    nodes.append(self.replaced[n.name])
            else:
                nodes.append(n)
        return eliminate_dead(self.g.replace(nodes=tuple(nodes), tensors=self.tensors))


def fold_constant_dequantize(graph: Graph) -> Graph:
    """DequantizeLinear of a constant that is still needed becomes a float constant."""
    tensors = dict(graph.tensors)
    nodes = []
    dq = registry.get("DequantizeLinear")
    for n in graph.nodes:
        if n.op == "DequantizeLinear" and graph.is_const(n.inputs[0]):
            value = dq.reference(graph, n, [graph[n.inputs[0]].data])[0]
            tensors[n.outputs[0]] = constant(n.outputs[0], value)
            continue
        nodes.append(n)
    return graph.replace(nodes=tuple(nodes), tensors=tensors)


def lower_qdq(graph: Graph) -> Graph:
    if not any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in graph.nodes):
        return graph
    graph = annotate(graph)
    graph = _Lowering(graph).run()
    graph = fold_constant_dequantize(graph)
    return eliminate_dead(graph)
