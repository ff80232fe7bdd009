"""SignalFftAutoScale (signal/src/fft_auto_scale.cc): a 1-D int16 x shifted left by as many bits as its largest
magnitude leaves free, and that count, an int32 scalar. The largest magnitude is TFLite Micro's MaxAbs16, which
keeps the running maximum in int16: after a -32768 it holds -32768 and the walk goes on from there (a
sequential rule, reproduced element by element); its bit length is MostSignificantBit32 of that int16 made
unsigned, 32 for 0 (GCC's path), so a zero or -32768 maximum gives a shift of 0."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.signal_arith import msb


def max_abs16(x: np.ndarray) -> int:
    if not np.any(x == -32768):
        return int(np.max(np.abs(x.astype(np.int32)), initial=0))
    m = 0
    for v in x.tolist():
        if v > m:
            m = v
        elif -v > m:
            m = ((-v + 32768) & 0xFFFF) - 32768
    return m


@register
class SignalFftAutoScale(Op):
    name = "SignalFftAutoScale"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype == "int16", f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes int16)")
        require_valid(len(x.shape) == 1, f"{self.name} takes a 1-D input, not {len(x.shape)}-D")
        return [(x.shape, "int16"), ((), "int32")]

    def reference(self, graph, node, inputs):
        x = inputs[0]
        bits = max(16 - int(msb(np.array([max_abs16(x) & 0xFFFFFFFF]))[0]) - 1, 0)
        y = ((x.astype(np.int64) << bits) + 32768 & 0xFFFF) - 32768
        return [y.astype(np.int16), np.array(bits, np.int32)]

    def kernel(self, graph, node):
        return Call("mcud_signal_fft_auto_scale", (node.inputs[0], node.outputs[0], node.outputs[1]))
