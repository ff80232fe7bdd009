"""Operators that only move data: Reshape, Flatten, Squeeze, Unsqueeze, Identity (views: no
kernel, the output is the input's bytes), Transpose, Split, BroadcastTo and Gather with constant indices
(one byte-size generic strided copy, firmware/kernels/shape.c; a Gather whose data is constant too is
folded at import).

Every dtype is accepted; an int8 tensor keeps its quantization through these operators (the
output's quant must equal the input's, else the op stays in float). In a TFLite model they move codes
whatever the quantizations say, as TFLite Micro does.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import (Array, Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, elementwise_expr, require,
                                require_valid)
from mcudeploy.ops.registry import register
from mcudeploy.ops.requant import arithmetic
from mcudeploy.ops.util import ints, norm_axis

MAX_DIMS = 6  # MCUD_MAX_DIMS in mcud.h
MAX_SPLIT = 8  # MCUD_SPLIT_MAX_OUTPUTS in mcud_shape.h
# moves of bytes: an unsigned type goes through the kernel of its signed width (the Signal operators' uint16..64)
SUFFIX = {"int8": "s8", "uint8": "u8", "bool": "u8", "int16": "s16", "int32": "s32", "int64": "s64",
          "float32": "f32", "uint16": "s16", "uint32": "s32", "uint64": "s64"}


def kernel_suffix(dtype: str, what: str) -> str:
    require(dtype in SUFFIX, f"{what} of {dtype} tensors has no kernel")
    return SUFFIX[dtype]


def same_quant(graph: Graph, node: Node) -> bool:
    """Every output carries input 0's quantization (what a data-moving int8 op needs); a TFLite model's
    operators move codes as TFLite Micro does, whatever the quantizations."""
    if arithmetic(graph) == "tflite":
        return True
    q = graph[node.inputs[0]].quant
    return all(graph[o].quant == q for o in node.outputs)


def _const_input(onnx: OnnxNode, index: int, what: str):
    if len(onnx.inputs) <= index or not onnx.inputs[index]:
        return None
    value = onnx.const(onnx.inputs[index])
    require(value is not None, f"{what} must be a constant")
    return ints(value)


def reshape_expr(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> TensorExpr:
    """Loop axes are the output's dimensions. A dimension kept as is (same extent, nothing merged
    into it) is `identity`; extent-1 input dimensions are `broadcast`; dimensions that are merged
    or split by the reshape are `full` on both sides (they cannot be cut independently)."""
    axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out_shape))
    in_dims: list = [None] * len(in_shape)
    out_dims: list = [None] * len(out_shape)
    i = j = 0
    while i < len(in_shape) or j < len(out_shape):
        if i < len(in_shape) and in_shape[i] == 1:
            in_dims[i] = Dim.broadcast()
            i += 1
            continue
        if j < len(out_shape) and out_shape[j] == 1:
            out_dims[j] = Dim.identity(f"d{j}")
            j += 1
            continue
        if i >= len(in_shape) or j >= len(out_shape):  # zero-size tensors: nothing to split
            for k in range(i, len(in_shape)):
                in_dims[k] = Dim.full()
            for k in range(j, len(out_shape)):
                out_dims[k] = Dim.full()
            break
        # smallest group of dimensions on each side with equal products
        gi, gj = [i], [j]
        pi, pj = in_shape[i], out_shape[j]
        while pi != pj and (gi[-1] + 1 < len(in_shape) or gj[-1] + 1 < len(out_shape)):
            if (pi < pj and gi[-1] + 1 < len(in_shape)) or gj[-1] + 1 >= len(out_shape):
                gi.append(gi[-1] + 1)
                pi *= in_shape[gi[-1]]
            else:
                gj.append(gj[-1] + 1)
                pj *= out_shape[gj[-1]]
        if len(gi) == 1 and len(gj) == 1:
            in_dims[i], out_dims[j] = Dim.identity(f"d{j}"), Dim.identity(f"d{j}")
        else:
            for k in gi:
                in_dims[k] = Dim.full()
            for k in gj:
                out_dims[k] = Dim.full()
        i, j = gi[-1] + 1, gj[-1] + 1
    return TensorExpr(axes, (tuple(in_dims),), (tuple(out_dims),))


class _View(Op):
    """The output is input 0's bytes with another shape."""

    view = True

    def out_shape(self, graph: Graph, node: Node) -> tuple[int, ...]:
        raise NotImplementedError

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        shape = tuple(int(d) for d in self.out_shape(graph, node))
        require(int(np.prod(shape, dtype=np.int64)) == x.size,
                f"output shape {shape} does not hold the {x.size} elements of input shape {x.shape}")
        return [(shape, x.dtype)]

    def expr(self, graph, node):
        return reshape_expr(graph[node.inputs[0]].shape, graph[node.outputs[0]].shape)

    def reference(self, graph, node, inputs):
        return [np.reshape(inputs[0], graph[node.outputs[0]].shape)]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node)

    def macs(self, graph, node):
        return 0


@register
class Reshape(_View):
    name = "Reshape"
    onnx_types = ("Reshape",)

    def from_onnx(self, onnx):
        attrs = {"allowzero": int(onnx.attrs.get("allowzero", 0))}
        shape = _const_input(onnx, 1, "the target shape of Reshape")
        if shape is None:
            require("shape" in onnx.attrs, "Reshape needs a target shape")
            shape = ints(onnx.attrs["shape"])  # opset < 5
        attrs["shape"] = shape
        return onnx.inputs[:1], attrs

    def out_shape(self, graph, node):
        in_shape = graph[node.inputs[0]].shape
        shape = list(node.attr("shape"))
        allowzero = node.attr("allowzero", 0)
        require(shape.count(-1) <= 1, f"Reshape target {tuple(shape)} has more than one -1")
        require(all(d >= -1 for d in shape), f"Reshape target {tuple(shape)} has a negative dimension")
        if not allowzero:
            for i, d in enumerate(shape):
                if d == 0:
                    require(i < len(in_shape), f"Reshape target {tuple(shape)} copies dimension {i} the input lacks")
                    shape[i] = in_shape[i]
        else:
            require(not (0 in shape and -1 in shape), "Reshape with allowzero=1 cannot have both 0 and -1")
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            total = int(np.prod(in_shape, dtype=np.int64))
            require(known > 0 and total % known == 0, f"Reshape cannot infer -1 in {tuple(shape)} from {in_shape}")
            shape[shape.index(-1)] = total // known
        return tuple(shape)


@register
class Flatten(_View):
    name = "Flatten"
    onnx_types = ("Flatten",)

    def out_shape(self, graph, node):
        in_shape = graph[node.inputs[0]].shape
        axis = node.attr("axis", 1)
        require(-len(in_shape) <= axis <= len(in_shape), f"Flatten axis {axis} is out of range for {in_shape}")
        axis = axis + len(in_shape) if axis < 0 else axis
        return (int(np.prod(in_shape[:axis], dtype=np.int64)), int(np.prod(in_shape[axis:], dtype=np.int64)))


def _axes_from_onnx(onnx: OnnxNode, what: str):
    """Squeeze/Unsqueeze axes: an attribute before opset 13, a constant input from 13."""
    attrs = {k: v for k, v in onnx.attrs.items() if k != "axes"}
    axes = _const_input(onnx, 1, f"the axes of {what}")
    if axes is None and "axes" in onnx.attrs:
        axes = ints(onnx.attrs["axes"])
    if axes is not None:
        attrs["axes"] = axes
    return onnx.inputs[:1], attrs


@register
class Squeeze(_View):
    name = "Squeeze"
    onnx_types = ("Squeeze",)

    def from_onnx(self, onnx):
        return _axes_from_onnx(onnx, "Squeeze")

    def out_shape(self, graph, node):
        in_shape = graph[node.inputs[0]].shape
        axes = node.attr("axes")
        if axes is None:
            return tuple(d for d in in_shape if d != 1)
        axes = {norm_axis(a, len(in_shape), "Squeeze") for a in axes}
        for a in axes:
            require(in_shape[a] == 1, f"Squeeze of axis {a}, which has extent {in_shape[a]}")
        return tuple(d for i, d in enumerate(in_shape) if i not in axes)


@register
class Unsqueeze(_View):
    name = "Unsqueeze"
    onnx_types = ("Unsqueeze",)

    def from_onnx(self, onnx):
        return _axes_from_onnx(onnx, "Unsqueeze")

    def out_shape(self, graph, node):
        in_shape = graph[node.inputs[0]].shape
        require(node.attr("axes") is not None, "Unsqueeze needs axes")
        rank = len(in_shape) + len(node.attr("axes"))
        axes = sorted(norm_axis(a, rank, "Unsqueeze") for a in node.attr("axes"))
        require(len(set(axes)) == len(axes), f"Unsqueeze axes {node.attr('axes')} repeat")
        shape, rest = [], iter(in_shape)
        for i in range(rank):
            shape.append(1 if i in axes else next(rest))
        return tuple(shape)


@register
class Identity(_View):
    name = "Identity"
    onnx_types = ("Identity",)

    def out_shape(self, graph, node):
        return graph[node.inputs[0]].shape


# --------------------------------------------------------------------------- data-moving kernels


@register
class Transpose(Op):
    name = "Transpose"
    onnx_types = ("Transpose",)

    def _perm(self, graph: Graph, node: Node) -> tuple[int, ...]:
        rank = len(graph[node.inputs[0]].shape)
        perm = node.attr("perm")
        return tuple(reversed(range(rank))) if perm is None else tuple(int(p) for p in perm)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        perm = self._perm(graph, node)
        require(sorted(perm) == list(range(len(x.shape))), f"Transpose perm {perm} is not a permutation of "
                                                            f"{len(x.shape)} axes")
        require(len(x.shape) <= MAX_DIMS, f"Transpose of a {len(x.shape)}-D tensor (at most {MAX_DIMS})")
        kernel_suffix(x.dtype, "Transpose")
        return [(tuple(x.shape[p] for p in perm), x.dtype)]

    def accepts_int8(self, graph, node):
        q = graph[node.inputs[0]].quant
        return same_quant(graph, node) and (q is None or not q.per_channel)

    def expr(self, graph, node):
        perm = self._perm(graph, node)
        out = graph[node.outputs[0]].shape
        axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out))
        inv = {p: i for i, p in enumerate(perm)}
        x_dims = tuple(Dim.identity(f"d{inv[j]}") for j in range(len(perm)))
        return TensorExpr(axes, (x_dims,), (tuple(Dim.identity(a.name) for a in axes),))

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        return [np.ascontiguousarray(np.transpose(inputs[0], self._perm(graph, node)))]

    def kernel(self, graph, node):
        perm = self._perm(graph, node)
        perm = perm + tuple(range(len(perm), MAX_DIMS))
        suffix = kernel_suffix(graph[node.inputs[0]].dtype, "Transpose")
        return Call(f"mcud_transpose_{suffix}", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_transpose_params", perm=perm))


@register
class TransposeView(Transpose):
    """A Transpose placed as a view: its output is input 0's elements under permuted strides
    (mcudeploy/memory/alias.py), so it costs no bytes and no time; the kernels that read it take
    strided views. The TFLite frontend reads an NHWC graph input through one as the NCHW tensor
    mcudeploy's kernels take."""

    name = "TransposeView"
    onnx_types = ()
    subview = True

    def bounds(self, graph, node):
        shape = graph[node.inputs[0]].shape
        return (0,) * len(shape), tuple(shape)

    def view_perm(self, graph, node) -> tuple[int, ...]:
        return self._perm(graph, node)

    def kernel(self, graph, node):
        raise NotImplementedError(f"TransposeView {node.name} has no kernel: mcudeploy/memory/alias.py places it "
                                  f"as a view")


@register
class Split(Op):
    name = "Split"
    onnx_types = ("Split",)
    slices = "outputs"

    def from_onnx(self, onnx):
        attrs = {"axis": int(onnx.attrs.get("axis", 0))}
        sizes = _const_input(onnx, 1, "the split sizes of Split")
        if sizes is None and "split" in onnx.attrs:  # opset < 13
            sizes = ints(onnx.attrs["split"])
        if sizes is not None:
            attrs["split"] = sizes
        require(all(onnx.outputs), "Split with an unused (empty) output name")
        return onnx.inputs[:1], attrs

    def _sizes(self, graph: Graph, node: Node) -> tuple[int, tuple[int, ...]]:
        shape = graph[node.inputs[0]].shape
        axis = norm_axis(node.attr("axis", 0), len(shape), "Split")
        n = len(node.outputs)
        sizes = node.attr("split")
        if sizes is None:  # equal parts; opset 18 makes the last one smaller when it does not divide
            part = -(-shape[axis] // n)
            sizes = tuple(min(part, max(0, shape[axis] - part * i)) for i in range(n))
        require(len(sizes) == n, f"Split into {n} outputs with {len(sizes)} sizes")
        require(sum(sizes) == shape[axis] and min(sizes) >= 0,
                f"Split sizes {tuple(sizes)} do not add up to extent {shape[axis]}")
        return axis, tuple(int(s) for s in sizes)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        axis, sizes = self._sizes(graph, node)
        require(len(node.outputs) <= MAX_SPLIT, f"Split into {len(node.outputs)} outputs (at most {MAX_SPLIT})")
        require(len(x.shape) <= MAX_DIMS, f"Split of a {len(x.shape)}-D tensor (at most {MAX_DIMS})")
        kernel_suffix(x.dtype, "Split")
        return [(x.shape[:axis] + (s,) + x.shape[axis + 1:], x.dtype) for s in sizes]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node)

    def expr(self, graph, node):
        shape = graph[node.inputs[0]].shape
        axis, _ = self._sizes(graph, node)
        axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(shape))
        dims = tuple(Dim.full() if i == axis else Dim.identity(a.name) for i, a in enumerate(axes))
        return TensorExpr(axes, (dims,), tuple(dims for _ in node.outputs))

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        axis, sizes = self._sizes(graph, node)
        return [np.ascontiguousarray(p) for p in np.split(inputs[0], np.cumsum(sizes)[:-1], axis=axis)]

    def kernel(self, graph, node):
        axis, _ = self._sizes(graph, node)
        outs = tuple(node.outputs) + ("",) * (MAX_SPLIT - len(node.outputs))
        suffix = kernel_suffix(graph[node.inputs[0]].dtype, "Split")
        return Call(f"mcud_split_{suffix}", (node.inputs[0],) + outs,
                    Struct.of("mcud_split_params", axis=axis, count=len(node.outputs)))


@register
class Copy(Transpose):
    """A tensor copied element for element into a buffer of its own: what mcudeploy/offload inserts
    to move a tensor to another memory region and back (not an ONNX operator). It runs Transpose's
    strided copy with the identity order; attribute "of" names the value the copy holds."""

    name = "Copy"
    onnx_types = ()

    def _perm(self, graph, node):
        return tuple(range(len(graph[node.inputs[0]].shape)))


@register
class Gather(Op):
    """Gather along ``axis`` with constant indices (attributes ``indices``, flat, and ``indices_shape``)."""

    name = "Gather"
    onnx_types = ("Gather",)

    def from_onnx(self, onnx):
        value = onnx.const(onnx.inputs[1]) if len(onnx.inputs) > 1 and onnx.inputs[1] else None
        require(value is not None, "Gather needs constant indices (shapes are static)")
        return onnx.inputs[:1], {"axis": int(onnx.attrs.get("axis", 0)), "indices": ints(value),
                                 "indices_shape": tuple(int(d) for d in np.shape(value))}

    def _indices(self, graph: Graph, node: Node) -> tuple[int, np.ndarray]:
        shape = graph[node.inputs[0]].shape
        require(len(shape) >= 1, "Gather of a scalar is not supported")
        axis = norm_axis(int(node.attr("axis", 0)), len(shape), "Gather")
        idx = np.array(node.attr("indices"), dtype=np.int64).reshape(node.attr("indices_shape"))
        n = shape[axis]
        require_valid(bool(np.all((idx >= -n) & (idx < n))), f"has an index outside [-{n}, {n}) along axis {axis}")
        return axis, np.where(idx < 0, idx + n, idx)

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        axis, idx = self._indices(graph, node)
        shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
        require(len(shape) <= MAX_DIMS and len(x.shape) <= MAX_DIMS,
                f"Gather output of rank {len(shape)} (at most {MAX_DIMS})")
        kernel_suffix(x.dtype, "Gather")
        return [(shape, x.dtype)]

    def accepts_int8(self, graph, node):
        q = graph[node.inputs[0]].quant
        return same_quant(graph, node) and (q is None or not q.per_channel)

    def expr(self, graph, node):
        """Dimensions before and after axis follow the output one to one; the indexed ones cannot be cut."""
        x = graph[node.inputs[0]].shape
        axis, idx = self._indices(graph, node)
        out = graph[node.outputs[0]].shape
        axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out))
        x_dims = tuple(Dim.full() if d == axis else Dim.identity(f"d{d if d < axis else d - 1 + idx.ndim}")
                       for d in range(len(x)))
        y_dims = tuple(Dim.full() if axis <= i < axis + idx.ndim else Dim.identity(a.name) for i, a in enumerate(axes))
        return TensorExpr(axes, (x_dims,), (y_dims,))

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        axis, idx = self._indices(graph, node)
        return [np.ascontiguousarray(np.take(inputs[0], idx, axis=axis))]

    def kernel(self, graph, node):
        axis, idx = self._indices(graph, node)
        suffix = kernel_suffix(graph[node.inputs[0]].dtype, "Gather")
        return Call(f"mcud_gather_{suffix}", (node.inputs[0], node.outputs[0]), Struct.of(
            "mcud_gather_params", axis=axis, idx_rank=idx.ndim, count=int(idx.size),
            indices=Array("int32_t", tuple(int(v) for v in idx.ravel()))))


@register
class BroadcastTo(Op):
    """The input repeated along its dimensions of one (numpy's broadcast_to, TFLite's BROADCAST_TO): a
    strided copy whose source steps 0 along them. Attribute ``shape``; the input may have fewer
    dimensions (aligned on the last)."""

    name = "BroadcastTo"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        shape = tuple(int(d) for d in node.attr("shape"))
        require(len(shape) >= len(x.shape) and all(
            a in (1, b) for a, b in zip(x.shape, shape[len(shape) - len(x.shape):])),
            f"BroadcastTo of shape {x.shape} to {shape}")
        require(len(shape) <= MAX_DIMS, f"BroadcastTo to a {len(shape)}-D tensor (at most {MAX_DIMS})")
        kernel_suffix(x.dtype, "BroadcastTo")
        return [(shape, x.dtype)]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node)

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def macs(self, graph, node):
        return 0

    def piece(self, graph, node, axis, rows, pads):
        shape = list(node.attr("shape"))
        shape[[a.name for a in self.expr(graph, node).axes].index(axis)] = rows[1] - rows[0]
        return {**node.attrs, "shape": tuple(shape)}

    def reference(self, graph, node, inputs):
        return [np.ascontiguousarray(np.broadcast_to(inputs[0], tuple(node.attr("shape"))))]

    def kernel(self, graph, node):
        suffix = kernel_suffix(graph[node.inputs[0]].dtype, "BroadcastTo")
        return Call(f"mcud_broadcast_to_{suffix}", (node.inputs[0], node.outputs[0]))
