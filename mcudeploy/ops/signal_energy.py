"""SignalEnergy (signal/src/energy.cc): the power re^2 + im^2 of complex bins [start_index, end_index) of a 1-D
int16 spectrum (real and imaginary parts interleaved), as uint32 (the int32 sum of TFLite Micro wraps to the same
bits). TFLite Micro leaves the other output elements as they were in its arena; mcudeploy writes 0 there."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register


@register
class SignalEnergy(Op):
    name = "SignalEnergy"

    def infer(self, graph, node):
        x, n = graph[node.inputs[0]], int(node.attr("bins"))
        require(x.dtype == "int16", f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes int16)")
        require_valid(len(x.shape) == 1, f"{self.name} takes a 1-D spectrum, not {len(x.shape)}-D")
        start, end = int(node.attr("start_index")), int(node.attr("end_index"))
        require_valid(0 <= start <= end and end <= min(n, x.shape[0] // 2),
                      f"{self.name}'s bins [{start}, {end}) do not lie in its {x.shape[0] // 2} complex inputs and "
                      f"{n} outputs")
        return [((n,), "uint32")]

    def reference(self, graph, node, inputs):
        x = inputs[0].astype(np.int64)
        start, end = int(node.attr("start_index")), int(node.attr("end_index"))
        y = np.zeros(int(node.attr("bins")), np.uint32)
        re, im = x[0::2][start:end], x[1::2][start:end]
        y[start:end] = ((re * re + im * im) & 0xFFFFFFFF).astype(np.uint32)
        return [y]

    def kernel(self, graph, node):
        return Call("mcud_signal_energy", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_signal_energy_params", start=int(node.attr("start_index")),
                              end=int(node.attr("end_index"))))
