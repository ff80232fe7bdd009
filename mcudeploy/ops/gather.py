"""Gathers whose positions are a tensor (read at run time, or a constant in flash): GatherIndexed
(TFLite's GATHER, with batch dimensions) and GatherND (TFLite's GATHER_ND), firmware/kernels/gather.c.
A Gather with constant positions attached as attributes is mcudeploy/ops/shape.py's Gather.

GatherIndexed: x is (B..., O..., A, I...) with ``batch_dims`` leading dimensions B and the gathered
``axis``; positions p are (B..., C...), int32; y[b, o, c, i] = x[b, o, p[b, c], i] (TFLite Micro's
gather.cc). GatherND: positions p are (C..., n), int32; y[c, i] = x[p[c, 0], .., p[c, n - 1], i], where
the n positions make one row-major element offset over x's first n dimensions, as TFLite Micro's
gather_nd.cc computes it (a position past the end of its dimension reaches into the next).

A position outside the tensor is an error TFLite Micro does not check (GATHER reads whatever lies
there; GATHER_ND stops the model): here it is clamped to the nearest one inside (GATHER to [0, A - 1],
GATHER_ND's offset to the last whole slice), so the kernel never reads outside x.

Tensor expression: every dimension of y is a loop axis; x's batch, outer and inner dimensions and p's
follow them one to one, the gathered dimensions of x are ``full``.
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops.base import Axis, Call, Dim, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS, kernel_suffix, same_quant
from mcudeploy.ops.util import norm_axis

MAX_ND = 5  # MCUD_GATHER_ND_MAX in mcud_gather.h (TFLite Micro's MAX_INDICES_ND)


def _check(graph: Graph, node: Node) -> None:
    x, p = graph[node.inputs[0]], graph[node.inputs[1]]
    require(p.dtype == "int32", f"{node.op} with {p.dtype} positions (TFLite Micro takes int32)")
    require(len(x.shape) <= MAX_DIMS, f"{node.op} of a {len(x.shape)}-D tensor (at most {MAX_DIMS})")
    kernel_suffix(x.dtype, node.op)


@register
class GatherIndexed(Op):
    name = "GatherIndexed"

    def _dims(self, graph: Graph, node: Node) -> tuple[int, int]:
        x, p = graph[node.inputs[0]].shape, graph[node.inputs[1]].shape
        axis = norm_axis(int(node.attr("axis", 0)), len(x), "Gather")
        batch = int(node.attr("batch_dims", 0))
        batch = batch + len(p) if batch < 0 else batch
        require(0 <= batch <= axis and batch <= len(p) and x[:batch] == p[:batch],
                f"Gather with batch_dims {batch} of shapes {x} and {p}")
        return axis, batch

    def infer(self, graph, node):
        _check(graph, node)
        x, p = graph[node.inputs[0]], graph[node.inputs[1]].shape
        axis, batch = self._dims(graph, node)
        shape = x.shape[:axis] + p[batch:] + x.shape[axis + 1:]
        require(len(shape) <= MAX_DIMS, f"Gather output of rank {len(shape)} (at most {MAX_DIMS})")
        return [(shape, x.dtype)]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node)

    def expr(self, graph, node):
        x, p = graph[node.inputs[0]].shape, graph[node.inputs[1]].shape
        axis, batch = self._dims(graph, node)
        out = graph[node.outputs[0]].shape
        coords = len(p) - batch
        axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out))
        x_dims = tuple(Dim.full() if d == axis else Dim.identity(f"d{d if d < axis else d - 1 + coords}")
                       for d in range(len(x)))
        p_dims = tuple(Dim.identity(f"d{d if d < batch else axis + d - batch}") for d in range(len(p)))
        return TensorExpr(axes, (x_dims, p_dims), (tuple(Dim.identity(a.name) for a in axes),))

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        x, p = inputs
        axis, batch = self._dims(graph, node)
        p = np.clip(p.astype(np.int64), 0, x.shape[axis] - 1)
        nb = math.prod(x.shape[:batch])
        xb = x.reshape((nb,) + x.shape[batch:])
        pb = p.reshape((nb,) + p.shape[batch:])
        parts = [np.take(xb[b], pb[b], axis=axis - batch) for b in range(nb)]
        return [np.ascontiguousarray(np.stack(parts).reshape(graph[node.outputs[0]].shape))]

    def kernel(self, graph, node):
        axis, batch = self._dims(graph, node)
        suffix = kernel_suffix(graph[node.inputs[0]].dtype, "Gather")
        return Call(f"mcud_gather_indexed_{suffix}", (node.inputs[0], node.inputs[1], node.outputs[0]),
                    Struct.of("mcud_gather_indexed_params", axis=axis, batch_dims=batch))


@register
class GatherND(Op):
    name = "GatherND"

    def _nd(self, graph: Graph, node: Node) -> int:
        x, p = graph[node.inputs[0]].shape, graph[node.inputs[1]].shape
        require(len(x) >= 1 and len(p) >= 1, "GatherND of a scalar")
        nd = p[-1]
        require(1 <= nd <= min(len(x), MAX_ND), f"GatherND with {nd} positions per slice of a rank-{len(x)} "
                                                f"tensor (at most {MAX_ND})")
        return nd

    def infer(self, graph, node):
        _check(graph, node)
        x, p = graph[node.inputs[0]], graph[node.inputs[1]].shape
        nd = self._nd(graph, node)
        shape = p[:-1] + x.shape[nd:]
        require(len(shape) <= MAX_DIMS and len(p) <= MAX_DIMS, f"GatherND output of rank {len(shape)}")
        return [(shape, x.dtype)]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node)

    def expr(self, graph, node):
        x, p = graph[node.inputs[0]].shape, graph[node.inputs[1]].shape
        nd = self._nd(graph, node)
        out = graph[node.outputs[0]].shape
        lead = len(p) - 1
        axes = tuple(Axis(f"d{i}", n) for i, n in enumerate(out))
        x_dims = tuple(Dim.full() if d < nd else Dim.identity(f"d{lead + d - nd}") for d in range(len(x)))
        p_dims = tuple(Dim.identity(f"d{d}") for d in range(lead)) + (Dim.full(),)
        return TensorExpr(axes, (x_dims, p_dims), (tuple(Dim.identity(a.name) for a in axes),))

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        x, p = inputs
        nd = self._nd(graph, node)
        rows = math.prod(x.shape[:nd])
        flat = x.reshape((rows,) + x.shape[nd:])
        # positions' row-major offset over the first nd dimensions, clamped to a whole row
        counts = np.array([math.prod(x.shape[j + 1:nd]) for j in range(nd)], dtype=np.int64)
        row = np.clip(p.astype(np.int64).reshape(-1, nd) @ counts, 0, rows - 1)
        return [np.ascontiguousarray(flat[row].reshape(graph[node.outputs[0]].shape))]

    def kernel(self, graph, node):
        suffix = kernel_suffix(graph[node.inputs[0]].dtype, "GatherND")
        return Call(f"mcud_gather_nd_{suffix}", (node.inputs[0], node.inputs[1], node.outputs[0]),
                    Struct.of("mcud_gather_nd_params", nd=self._nd(graph, node)))
