"""SignalFilterBankSpectralSubtraction (signal/src/filter_bank_spectral_subtraction.cc): a noise estimate per
uint32 channel, smoothed towards the signal (x << smoothing_bits) by a first-order filter (``smoothing`` and
``one_minus_smoothing`` on even channels, the ``alternate_`` pair on odd ones, in 1 / 2^spectral_subtraction_bits),
subtracted from the signal, the result at least x * min_signal_remaining / 2^spectral_subtraction_bits; with
``clamping``, an estimate above the signal is brought down to it.

The estimate is TFLite Micro's state: zeros at its reset, kept from one call to the next. Here it is the node's
second input (a state of the model, Graph.states) and its second output the next value; TFLite Micro's second
output tensor is that value too."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register

KEYS = ("alternate_one_minus_smoothing", "alternate_smoothing", "clamping", "min_signal_remaining", "num_channels",
        "one_minus_smoothing", "smoothing", "smoothing_bits", "spectral_subtraction_bits")


@register
class SignalFilterBankSpectralSubtraction(Op):
    name = "SignalFilterBankSpectralSubtraction"

    def infer(self, graph, node):
        x, noise = graph[node.inputs[0]], graph[node.inputs[1]]
        n = int(node.attr("num_channels"))
        require(x.dtype == noise.dtype == "uint32",
                f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes uint32)")
        require_valid(len(x.shape) == 1 and x.shape == noise.shape == (n,),
                      f"{self.name} takes a 1-D input and estimate of num_channels ({n}) elements")
        for key in ("smoothing_bits", "spectral_subtraction_bits"):
            bits = int(node.attr(key))
            require(0 <= bits <= 31, f"{self.name} with {key} {bits} is not supported (0 to 31)")
        return [(x.shape, "uint32"), (x.shape, "uint32")]

    def inplace(self, graph, node):
        return None

    def reference(self, graph, node, inputs):
        a = {k: int(node.attr(k)) for k in KEYS}
        x, noise = inputs[0].astype(np.uint64), inputs[1].astype(np.uint64)
        odd = (np.arange(x.shape[0]) & 1).astype(bool)
        s = np.where(odd, a["alternate_smoothing"], a["smoothing"]).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        oms = np.where(odd, a["alternate_one_minus_smoothing"], a["one_minus_smoothing"]).astype(np.uint64) \
            & np.uint64(0xFFFFFFFF)
        mask32 = np.uint64(0xFFFFFFFF)
        sb, ssb = np.uint64(a["smoothing_bits"]), np.uint64(a["spectral_subtraction_bits"])
        with np.errstate(over="ignore"):
            up = (x << sb) & mask32
            est = ((up * s + noise * oms) >> ssb) & mask32
            clipped = np.minimum(est, up)
            kept = clipped if a["clamping"] else est
            floor = ((x * (np.uint64(a["min_signal_remaining"]) & mask32)) >> ssb) & mask32
            sub = (up - clipped) >> sb
        return [np.maximum(sub, floor).astype(np.uint32), kept.astype(np.uint32)]

    def kernel(self, graph, node):
        a = {k: int(node.attr(k)) for k in KEYS}
        return Call("mcud_signal_spectral_subtraction", (*node.inputs[:2], *node.outputs[:2]),
                    Struct.of("mcud_signal_spectral_subtraction_params", channels=a["num_channels"],
                              smoothing=a["smoothing"] & 0xFFFFFFFF,
                              one_minus_smoothing=a["one_minus_smoothing"] & 0xFFFFFFFF,
                              alternate_smoothing=a["alternate_smoothing"] & 0xFFFFFFFF,
                              alternate_one_minus_smoothing=a["alternate_one_minus_smoothing"] & 0xFFFFFFFF,
                              min_signal_remaining=a["min_signal_remaining"] & 0xFFFFFFFF,
                              smoothing_bits=a["smoothing_bits"],
                              spectral_subtraction_bits=a["spectral_subtraction_bits"],
                              clamping=int(bool(a["clamping"]))))
