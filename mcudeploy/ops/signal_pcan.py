"""SignalPCAN (signal/src/pcan_argc_fixed.cc): per-channel energy normalisation. Each uint32 channel times the gain
its noise estimate gives (TFLite Micro's WideDynamicFunction: a quadratic per octave of the noise from the int16
gain table, signal_arith.pcan_gain; the int16 gain sign-extended to uint32), in 64 bits, shifted right by
``snr_shift``, then shrunk (x^2 / 4 below 2, x - 1 above, in its fixed point), as uint32."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.signal_arith import PCAN_LUT_MIN, pcan_gain, pcan_shrink


@register
class SignalPCAN(Op):
    name = "SignalPCAN"

    def infer(self, graph, node):
        x, noise, lut = (graph[n] for n in node.inputs)
        require(x.dtype == noise.dtype == "uint32" and lut.dtype == "int16",
                f"{self.name} of {x.dtype}, {noise.dtype} and {lut.dtype} is not supported (TFLite Micro's takes "
                f"uint32, uint32 and an int16 table)")
        require_valid(len(x.shape) == len(noise.shape) == len(lut.shape) == 1 and noise.shape[0] >= x.shape[0],
                      f"{self.name} takes 1-D inputs, a noise estimate per channel")
        require_valid(lut.shape[0] >= PCAN_LUT_MIN, f"{self.name}'s gain table has {lut.shape[0]} entries, where a "
                                                    f"32-bit noise estimate reads {PCAN_LUT_MIN}")
        shift = int(node.attr("snr_shift"))
        require(0 <= shift <= 63, f"{self.name} with snr_shift {shift} is not supported (0 to 63)")
        return [(x.shape, "uint32")]

    def reference(self, graph, node, inputs):
        x, noise, lut = inputs
        n = x.shape[0]
        gain = (pcan_gain(noise[:n], lut) & 0xFFFFFFFF).astype(np.uint64)
        with np.errstate(over="ignore"):
            snr = ((x.astype(np.uint64) * gain) >> np.uint64(int(node.attr("snr_shift")))) & np.uint64(0xFFFFFFFF)
        return [pcan_shrink(snr.astype(np.int64)).astype(np.uint32)]

    def kernel(self, graph, node):
        return Call("mcud_signal_pcan", (*node.inputs[:3], node.outputs[0]),
                    Struct.of("mcud_signal_pcan_params", snr_shift=int(node.attr("snr_shift"))))
