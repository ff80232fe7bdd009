"""A copy that runs while the core computes: CopyStart and CopyWait (not ONNX operators; what
mcudeploy/offload inserts for a swap on a board with a DMA engine, firmware/kernels/copy.c).

CopyStart(src) -> dst starts the copy (the board's DMA engine, or memcpy where it has none); dst is
live from there on. CopyWait(dst, src) -> y waits for it before dst's first reader: y takes over
dst's bytes in place, and reading src keeps the source's bytes alive until the copy is done.
Attributes: "of" (the value the copy holds), "slot" (pairs a start with its wait in the firmware),
"ticks" (the copy's estimated time) and "modelled" (1: the memory's speed is a model, and the
firmware waits that long at least, as the real memory would take)."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct
from mcudeploy.ops.registry import register

SLOTS = 16  # MCUD_COPY_SLOTS in mcud_copy.h
COPY_START, COPY_WAIT = "CopyStart", "CopyWait"


def _params(graph, node) -> Struct:
    return Struct.of("mcud_copy_params", slot=int(node.attr("slot", 0)), bytes=graph[node.outputs[0]].nbytes,
                     ticks=int(node.attr("ticks", 0)) if node.attr("modelled", 0) else 0)


class _Copy(Op):
    onnx_types = ()

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        return [(x.shape, x.dtype)]

    def accepts_int8(self, graph, node):
        return True

    def macs(self, graph, node):
        return 0

    def reference(self, graph, node, inputs):
        return [np.array(inputs[0], copy=True)]


@register
class CopyStart(_Copy):
    name = COPY_START

    def kernel(self, graph, node):
        return Call("mcud_copy_start", (node.inputs[0], node.outputs[0]), _params(graph, node))


@register
class CopyWait(_Copy):
    name = COPY_WAIT

    def inplace(self, graph, node):
        return 0

    def kernel(self, graph, node):
        return Call("mcud_copy_wait", (node.inputs[0], node.inputs[1], node.outputs[0]), _params(graph, node))
