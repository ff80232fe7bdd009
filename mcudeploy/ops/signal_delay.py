"""SignalDelay (signal/micro/kernels/delay.cc): each row of an int16 x (its last dimension) delayed by
``delay_length`` samples across calls. TFLite Micro keeps a circular buffer per row, ``delay_length`` zeros at reset;
here the delayed samples are a state of the model (Graph.states: the node's second input, its next value the second
output), of shape (*rows, delay_length). With a delay of 0 there is no state and the row is copied."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register


def stream(x: np.ndarray, state, frames: int, frame_size: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of x read after the samples ``state`` holds: (frames of each, the next state: the last samples)."""
    keep = 0 if state is None else state.shape[-1]
    c = x if state is None else np.concatenate([state, x], axis=-1)
    y = np.stack([c[..., f * step: f * step + frame_size] for f in range(frames)], axis=-2)
    return y, (None if state is None else np.ascontiguousarray(c[..., c.shape[-1] - keep:]))


@register
class SignalDelay(Op):
    name = "SignalDelay"

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        d = int(node.attr("delay_length"))
        require(x.dtype == "int16", f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes int16)")
        require_valid(len(x.shape) >= 1 and d >= 0, f"{self.name} needs an input of 1 dimension or more and a delay "
                                                     f"of 0 or more")
        if d:
            s = graph[node.inputs[1]]
            require_valid(s.shape == (*x.shape[:-1], d) and s.dtype == "int16",
                          f"{self.name}'s state is not int16{list((*x.shape[:-1], d))}")
            return [(x.shape, "int16"), (s.shape, "int16")]
        return [(x.shape, "int16")]

    def reference(self, graph, node, inputs):
        x = inputs[0]
        y, nxt = stream(x, inputs[1] if int(node.attr("delay_length")) else None, 1, x.shape[-1], 0)
        y = y.reshape(x.shape)
        return [y] if nxt is None else [y, nxt]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        d = int(node.attr("delay_length"))
        state, nxt = (node.inputs[1], node.outputs[1]) if d else ("", "")
        return Call("mcud_signal_stream_s16", (node.inputs[0], state, node.outputs[0], "", nxt),
                    Struct.of("mcud_signal_stream_params", keep=d, frames=1, frame_size=x.shape[-1], step=0))
