"""DynamicUpdateSlice: a tensor with a block written into it at positions read at run time (TFLite's
DYNAMIC_UPDATE_SLICE; firmware/kernels/update.c). Inputs: the operand, the update (same rank, no larger
in any dimension), the start positions (a vector of int32 or int64, one per dimension); each start is
clamped to [0, operand - update] as TFLite Micro's dynamic_update_slice.cc does. The output may take
over the operand's buffer (then only the block is written). Where the block lands is known only at run
time: the operator is not cut into pieces."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.shape import MAX_DIMS, kernel_suffix, same_quant


@register
class DynamicUpdateSlice(Op):
    name = "DynamicUpdateSlice"

    def infer(self, graph, node):
        x, u, p = (graph[n] for n in node.inputs)
        require(u.dtype == x.dtype and len(u.shape) == len(x.shape) and all(a <= b for a, b in zip(u.shape, x.shape)),
                f"DynamicUpdateSlice of {u.dtype}{u.shape} into {x.dtype}{x.shape}")
        require(p.dtype in ("int32", "int64") and p.shape == (len(x.shape),),
                f"DynamicUpdateSlice with positions {p.dtype}{p.shape} for a rank-{len(x.shape)} operand")
        require(len(x.shape) <= MAX_DIMS, f"DynamicUpdateSlice of a {len(x.shape)}-D tensor (at most {MAX_DIMS})")
        kernel_suffix(x.dtype, "DynamicUpdateSlice")
        return [(x.shape, x.dtype)]

    def accepts_int8(self, graph, node):
        return same_quant(graph, node) and graph[node.inputs[1]].quant == graph[node.inputs[0]].quant

    def inplace(self, graph, node):
        return 0

    def macs(self, graph, node):
        return graph[node.inputs[1]].size

    def reference(self, graph, node, inputs):
        x, u, p = inputs
        start = [min(max(0, int(s)), n - k) for s, n, k in zip(np.ravel(p), x.shape, u.shape)]
        y = np.array(x, copy=True)
        y[tuple(slice(s, s + k) for s, k in zip(start, u.shape))] = u
        return [y]

    def kernel(self, graph, node):
        x, p = graph[node.inputs[0]], graph[node.inputs[2]]
        suffix = kernel_suffix(x.dtype, "DynamicUpdateSlice")
        return Call(f"mcud_dynamic_update_slice_{suffix}_{'s64' if p.dtype == 'int64' else 's32'}",
                    (node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]))
