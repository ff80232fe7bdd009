"""SignalIrfft (signal/src/irfft_*.cc over kiss_fft 1.3.0's kiss_fftri): per row of x (complex bins as interleaved
(re, im) pairs of int16, int32 or float32; the first fft_length / 2 + 1 are read), the ``fft_length`` real samples of
the inverse real FFT. The arithmetic is kiss_fft's as signal_rfft.py states it, with the inverse's twiddles (phases
negated) and its radix-4 butterfly turning the other way; the bins are first folded into n = fft_length / 2 complex
values. In fixed point each stage divides by its radix, as the forward transform does; in float TFLite Micro divides
the result by fft_length.

The C kernel works in the output row alone (no scratch): the folded values go into kiss_fft's input order by
following the cycles of its mixed-radix digit reversal (computed here), then the stages run from the last to the
first, as kf_work's recursion does."""
from __future__ import annotations

from mcudeploy.ops.base import Array, Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.signal_rfft import (TYPES, cycle_leaders, factors, irfft, leaf_order, super_twiddles,
                                       twiddles)


@register
class SignalIrfft(Op):
    name = "SignalIrfft"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        length = int(node.attr("fft_length"))
        require(x.dtype in TYPES, f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes int16, int32 "
                                  f"and float32)")
        require(length >= 4 and length % 2 == 0, f"{self.name} of fft_length {length} is not supported (kiss_fft's "
                                                 f"real FFT takes an even length of 4 or more)")
        require(set(factors(length // 2)[0::2]) <= {2, 3, 4, 5},
                f"{self.name} of fft_length {length} is not supported (n = {length // 2} has a prime factor above 5, "
                f"whose butterfly TFLite Micro's kiss_fft cannot allocate)")
        require_valid(len(x.shape) >= 1 and x.shape[-1] % 2 == 0 and x.shape[-1] >= length + 2,
                      f"{self.name}'s rows of {x.shape[-1] if x.shape else 0} hold fewer than the {length // 2 + 1} "
                      f"complex bins fft_length {length} reads")
        return [((*x.shape[:-1], length), x.dtype)]

    def reference(self, graph, node, inputs):
        return [irfft(inputs[0], int(node.attr("fft_length")), graph[node.inputs[0]].dtype)]

    def kernel(self, graph, node):
        dtype = graph[node.inputs[0]].dtype
        length = int(node.attr("fft_length"))
        bits, n = TYPES[dtype], length // 2
        tw, sup = twiddles(n, bits, True).reshape(-1), super_twiddles(n, bits, True).reshape(-1)
        perm = leaf_order(n)
        leaders = cycle_leaders(perm)
        common = dict(fft_length=length, factors=Array("int32_t", factors(n)), perm=Array("int32_t", perm),
                      leaders=Array("int32_t", leaders or (0,)), nleaders=len(leaders))
        if not bits:
            return Call("mcud_signal_irfft_f32", (node.inputs[0], node.outputs[0]),
                        Struct.of("mcud_signal_irfft_f32_params", **common,
                                  twiddles=Array("float", tuple(float(v) for v in tw)),
                                  super_twiddles=Array("float", tuple(float(v) for v in sup))))
        return Call("mcud_signal_irfft_fixed", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_signal_irfft_fixed_params", **common, bits=bits,
                              twiddles=Array("int32_t", tuple(int(v) for v in tw)),
                              super_twiddles=Array("int32_t", tuple(int(v) for v in sup))))
