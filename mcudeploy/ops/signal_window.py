"""SignalWindow (TensorFlow Lite Micro's Signal library, signal/src/window.cc): int16 x times an int16 window,
shifted right by ``shift`` (arithmetic, in int32) and saturated to int16. The window is repeated over x's elements
in row-major order (TFLite Micro walks the flat tensor in steps of the window's length), so x's element count must
be a multiple of it."""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register


@register
class SignalWindow(Op):
    name = "SignalWindow"

    def infer(self, graph, node):
        x, w = graph[node.inputs[0]], graph[node.inputs[1]]
        require(x.dtype == "int16" and w.dtype == "int16", f"{self.name} of {x.dtype} with a {w.dtype} window is not "
                                                          f"supported (TFLite Micro's takes int16)")
        require_valid(len(x.shape) >= 1 and len(w.shape) == 1, f"{self.name} needs x of 1 dimension or more and a "
                                                                "1-D window")
        require_valid(w.shape[0] > 0 and math.prod(x.shape) % w.shape[0] == 0,
                      f"{self.name}'s {math.prod(x.shape)} elements are not a whole number of windows of "
                      f"{w.shape[0]}")
        shift = int(node.attr("shift"))
        require(0 <= shift <= 31, f"{self.name} with shift {shift} is not supported (0 to 31)")
        return [(x.shape, "int16")]

    def inplace(self, graph, node):
        return 0  # element i is read before it is written

    def reference(self, graph, node, inputs):
        x, w = inputs[0], inputs[1]
        v = (x.reshape(-1, w.shape[0]).astype(np.int32) * w.astype(np.int32)) >> int(node.attr("shift"))
        return [np.clip(v, -32768, 32767).astype(np.int16).reshape(x.shape)]

    def kernel(self, graph, node):
        return Call("mcud_signal_window", (node.inputs[0], node.inputs[1], node.outputs[0]),
                    Struct.of("mcud_signal_window_params", shift=int(node.attr("shift"))))
