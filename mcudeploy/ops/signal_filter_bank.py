"""SignalFilterBank (signal/src/filter_bank.cc): a uint32 power spectrum summed into ``num_channels`` uint64
channels. Inputs: the spectrum, then five constant int16 vectors: weights, unweights (1 - weight), and per channel
(num_channels + 1 of them, the first a scratch channel TFLite Micro computes and drops) its first bin, its first
weight and its width. Each bin's weight goes to its channel and its unweight to the next one; the int16 weights are
sign-extended to uint64 and everything wraps mod 2^64, as TFLite Micro's C does."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register


@register
class SignalFilterBank(Op):
    name = "SignalFilterBank"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        channels = int(node.attr("num_channels"))
        require(x.dtype == "uint32", f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes uint32)")
        consts = [graph[n] for n in node.inputs[1:]]
        require_valid(len(x.shape) == 1 and all(t.dtype == "int16" and len(t.shape) == 1 for t in consts),
                      f"{self.name} takes a 1-D spectrum and five 1-D int16 vectors")
        require(all(t.is_const for t in consts), f"{self.name} with weights or channel bounds computed at run time "
                                                 f"is not supported")
        require_valid(channels >= 1 and all(t.shape[0] >= channels + 1 for t in consts[2:]),
                      f"{self.name} of {channels} channels needs {channels + 1} starts and widths")
        starts, wstarts, widths = (t.data.astype(np.int64)[:channels + 1] for t in consts[2:])
        require_valid(np.all(widths >= 0) and np.all(starts >= 0) and np.all(wstarts >= 0)
                      and np.all(starts + widths <= x.shape[0])
                      and np.all(wstarts + widths <= min(consts[0].shape[0], consts[1].shape[0])),
                      f"{self.name}'s channels reach beyond its spectrum or its weights")
        return [((channels,), "uint64")]

    def reference(self, graph, node, inputs):
        x = inputs[0].astype(np.uint64)
        w, u = (v.astype(np.int64).astype(np.uint64) for v in inputs[1:3])
        starts, wstarts, widths = (v.astype(np.int64) for v in inputs[3:6])
        channels = int(node.attr("num_channels"))
        out = np.zeros(channels, np.uint64)
        carry = np.uint64(0)
        with np.errstate(over="ignore"):
            for c in range(channels + 1):
                f, s, n = starts[c], wstarts[c], widths[c]
                weighted = carry + np.sum(w[s:s + n] * x[f:f + n], dtype=np.uint64)
                carry = np.sum(u[s:s + n] * x[f:f + n], dtype=np.uint64)
                if c:
                    out[c - 1] = weighted
        return [out]

    def kernel(self, graph, node):
        return Call("mcud_signal_filter_bank", (*node.inputs[:6], node.outputs[0]),
                    Struct.of("mcud_signal_filter_bank_params", channels=int(node.attr("num_channels"))))
