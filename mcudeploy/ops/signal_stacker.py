"""SignalStacker (signal/micro/kernels/stacker.cc): frames of ``num_channels`` int16 stacked with
``stacker_left_context`` frames before and ``stacker_right_context`` after, every ``stacker_step`` frames, across
calls. TFLite Micro keeps a circular buffer of up to context = left + right + 1 frames: each call appends the frame (the
first call appends it left + 1 times, padding the left context); when context frames are held they are the output,
``output_valid`` (a bool scalar) is true and the first step frames go; otherwise output_valid is false and TFLite Micro
does not write the output, which keeps what it held: here its last value, zeros before any valid call. That is TFLite
Micro's output as long as no other tensor shares its memory (a model where it is an output) and, before the first valid
call, as long as its arena starts zeroed (a fresh one does; one reused after another model need not: then nothing can
agree with TFLite Micro on those calls).

Here that is three states of the model: the frames held (context frames, zeros after those held), [frames held, first
call done] (int32) and the last output; the node's inputs are x and the three, its outputs the output, output_valid
and the three next values. A step above the context (TFLite Micro would discard frames it does not hold) is refused."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register


@register
class SignalStacker(Op):
    name = "SignalStacker"

    def _geometry(self, node) -> tuple[int, int, int, int]:
        c, left, right, step = (int(node.attr(k)) for k in ("num_channels", "stacker_left_context",
                                                             "stacker_right_context", "stacker_step"))
        require_valid(c >= 1 and left >= 0 and right >= 0 and step >= 1,
                      f"{self.name} needs num_channels and stacker_step of 1 or more and contexts of 0 or more")
        require(step <= left + right + 1, f"{self.name} with stacker_step {step} above its context of "
                                          f"{left + right + 1} frames is not supported")
        return c, left, left + right + 1, step

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        c, _, context, _ = self._geometry(node)
        require(x.dtype == "int16", f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes int16)")
        require_valid(x.shape == (c,), f"{self.name} takes one frame of num_channels ({c}) values")
        size = (context * c,)
        expected = [(size, "int16"), ((2,), "int32"), (size, "int16")]
        got = [(graph[n].shape, graph[n].dtype) for n in node.inputs[1:4]]
        require_valid(got == expected, f"{self.name}'s states are not {expected}")
        return [(size, "int16"), ((), "bool"), *expected]

    def reference(self, graph, node, inputs):
        x, buf, meta, last = inputs
        c, left, context, step = self._geometry(node)
        held, first = int(meta[0]), int(meta[1]) == 0
        frames = list(buf.reshape(context, c)[:held]) + [x] * (1 + (left if first else 0))
        nbuf = np.zeros((context, c), np.int16)
        if len(frames) >= context:
            y, valid = np.concatenate(frames[:context]).astype(np.int16), True
            frames = frames[step:]
        else:
            y, valid = last.copy(), False
        for k, f in enumerate(frames):
            nbuf[k] = f
        return [y, np.array(valid), nbuf.reshape(-1), np.array([len(frames), 1], np.int32), y.copy()]

    def kernel(self, graph, node):
        c, left, context, step = self._geometry(node)
        return Call("mcud_signal_stacker_s16", (*node.inputs[:4], *node.outputs[:5]),
                    Struct.of("mcud_signal_stacker_params", channels=c, left=left, context=context, step=step))
