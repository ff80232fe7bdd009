"""SignalFilterBankSquareRoot (signal/src/filter_bank_square_root.cc): the rounded integer square root of each
uint64 channel (TFLite Micro's Sqrt64, signal_arith.sqrt64) shifted right by ``scale_bits``, an int32 scalar input,
as uint32."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.signal_arith import sqrt64


@register
class SignalFilterBankSquareRoot(Op):
    name = "SignalFilterBankSquareRoot"

    def infer(self, graph, node):
        x, s = graph[node.inputs[0]], graph[node.inputs[1]]
        require(x.dtype == "uint64" and s.dtype == "int32",
                f"{self.name} of {x.dtype} scaled by {s.dtype} is not supported (TFLite Micro's takes uint64 and int32)")
        require_valid(len(x.shape) == 1 and s.size == 1, f"{self.name} takes a 1-D input and a scalar scale")
        if s.is_const:
            bits = int(s.data.reshape(-1)[0])
            require(0 <= bits <= 31, f"{self.name} scaled down by {bits} bits is not supported (0 to 31)")
        return [(x.shape, "uint32")]

    def reference(self, graph, node, inputs):
        bits = int(np.asarray(inputs[1]).reshape(-1)[0]) & 31  # a shift of 32 or more: what x86's shift does
        return [(sqrt64(inputs[0]) >> np.uint64(bits)).astype(np.uint32)]

    def kernel(self, graph, node):
        return Call("mcud_signal_filter_bank_square_root", (node.inputs[0], node.inputs[1], node.outputs[0]))
