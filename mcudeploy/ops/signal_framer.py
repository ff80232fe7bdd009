"""SignalFramer (signal/micro/kernels/framer.cc) with ``prefill``: each row of an int16 x (its last dimension, a
whole number of ``frame_step`` samples) cut into frames of ``frame_size`` every ``frame_step`` samples, continuing the
rows of the calls before. TFLite Micro keeps a circular buffer per row, prefilled with frame_size - frame_step zeros
at reset, so every frame is whole and ``output_valid`` (a bool scalar) is always true. Here those samples are a state
of the model (the node's second input, its next value the last output), of shape (*rows, frame_size - frame_step);
none when the frames do not overlap.

Without prefill TFLite Micro's first frames are not written at all (its output keeps what its arena held) and
output_valid is false: such a framer is refused, as is a frame shorter than its step (TFLite Micro would prefill a
negative count)."""
from __future__ import annotations

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register
from mcudeploy.ops.signal_delay import stream

import numpy as np


@register
class SignalFramer(Op):
    name = "SignalFramer"

    def _geometry(self, graph, node) -> tuple[int, int, int, int]:
        x = graph[node.inputs[0]]
        size, step = int(node.attr("frame_size")), int(node.attr("frame_step"))
        require_valid(step >= 1 and len(x.shape) >= 1 and x.shape[-1] % step == 0,
                      f"{self.name}'s rows of {x.shape[-1] if x.shape else 0} are not a whole number of steps of {step}")
        require(size >= step, f"{self.name} with frames of {size} shorter than their step {step} is not supported")
        return size, step, x.shape[-1] // step, size - step

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        require(x.dtype == "int16", f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes int16)")
        size, step, frames, keep = self._geometry(graph, node)
        out = [((*x.shape[:-1], frames, size), "int16"), ((), "bool")]
        if keep:
            s = graph[node.inputs[1]]
            require_valid(s.shape == (*x.shape[:-1], keep) and s.dtype == "int16",
                          f"{self.name}'s state is not int16{list((*x.shape[:-1], keep))}")
            out.append((s.shape, "int16"))
        return out

    def reference(self, graph, node, inputs):
        size, step, frames, keep = self._geometry(graph, node)
        y, nxt = stream(inputs[0], inputs[1] if keep else None, frames, size, step)
        return [y, np.array(True)] + ([] if nxt is None else [nxt])

    def kernel(self, graph, node):
        size, step, frames, keep = self._geometry(graph, node)
        state, nxt = (node.inputs[1], node.outputs[2]) if keep else ("", "")
        return Call("mcud_signal_stream_s16", (node.inputs[0], state, node.outputs[0], node.outputs[1], nxt),
                    Struct.of("mcud_signal_stream_params", keep=keep, frames=frames, frame_size=size, step=step))
