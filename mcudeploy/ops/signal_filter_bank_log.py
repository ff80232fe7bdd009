"""SignalFilterBankLog (signal/src/filter_bank_log.cc): per uint32 channel, x << input_correction_bits (wrapping),
its natural log in fixed point (TFLite Micro's Log32: log2 from the bit length and a table-corrected fraction, times
ln 2, times output_scale / 2^16), capped at INT16_MAX, as int16; 0 where the shifted value is 0 or 1."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Array, Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.signal_arith import log32, log_lut


@register
class SignalFilterBankLog(Op):
    name = "SignalFilterBankLog"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype == "uint32", f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes uint32)")
        require_valid(len(x.shape) == 1, f"{self.name} takes a 1-D input, not {len(x.shape)}-D")
        bits = int(node.attr("input_correction_bits"))
        require(0 <= bits <= 31, f"{self.name} with input_correction_bits {bits} is not supported (0 to 31)")
        return [(x.shape, "int16")]

    def reference(self, graph, node, inputs):
        bits, scale = int(node.attr("input_correction_bits")), int(node.attr("output_scale"))
        scaled = (inputs[0].astype(np.int64) << bits) & 0xFFFFFFFF
        value = np.minimum(log32(np.maximum(scaled, 2), scale), 32767)
        return [np.where(scaled > 1, value, 0).astype(np.int16)]

    def kernel(self, graph, node):
        return Call("mcud_signal_filter_bank_log", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_signal_log_params", correction_bits=int(node.attr("input_correction_bits")),
                              output_scale=int(node.attr("output_scale")), lut=Array("uint16_t", log_lut())))
