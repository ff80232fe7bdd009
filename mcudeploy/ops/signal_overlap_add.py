"""SignalOverlapAdd (signal/src/overlap_add.cc): frames of x (..., frames, frame_size; int16 or float32) added
overlapping every ``frame_step`` samples into a continuous signal (..., frames * frame_step), across calls. TFLite Micro
keeps a buffer of frame_size values per row (zeros at reset): each frame is added onto it (int16: in int32, saturated to
int16; float: in float), its first frame_step values are output and it shifts by frame_step with zeros coming in. Here
the buffer is a state of the model (the node's second input, its next value the second output)."""
from __future__ import annotations

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register


@register
class SignalOverlapAdd(Op):
    name = "SignalOverlapAdd"

    def infer(self, graph, node):
        x, s = graph[node.inputs[0]], graph[node.inputs[1]]
        step = int(node.attr("frame_step"))
        require(x.dtype in ("int16", "float32"), f"{self.name} of {x.dtype} is not supported (TFLite Micro's takes "
                                                 f"int16 and float32)")
        require_valid(len(x.shape) >= 2, f"{self.name} takes frames of 2 dimensions or more")
        frames, size = x.shape[-2:]
        require_valid(1 <= step <= size, f"{self.name}'s frame_step {step} is not in 1 to its frame size {size}")
        require_valid(s.shape == (*x.shape[:-2], size) and s.dtype == x.dtype,
                      f"{self.name}'s state is not {x.dtype}{list((*x.shape[:-2], size))}")
        return [((*x.shape[:-2], frames * step), x.dtype), (s.shape, x.dtype)]

    def reference(self, graph, node, inputs):
        x, buf = inputs[0], inputs[1].copy()
        step = int(node.attr("frame_step"))
        frames, size = x.shape[-2:]
        out = np.empty((*x.shape[:-2], frames * step), x.dtype)
        for f in range(frames):
            if x.dtype == np.int16:
                buf = np.clip(buf.astype(np.int32) + x[..., f, :], -32768, 32767).astype(np.int16)
            else:
                buf = (buf + x[..., f, :]).astype(np.float32)
            out[..., f * step:(f + 1) * step] = buf[..., :step]
            buf = np.concatenate([buf[..., step:], np.zeros((*buf.shape[:-1], step), buf.dtype)], axis=-1)
        return [out, buf]

    def kernel(self, graph, node):
        x = graph[node.inputs[0]]
        suffix = "s16" if x.dtype == "int16" else "f32"
        return Call(f"mcud_signal_overlap_add_{suffix}", (*node.inputs[:2], *node.outputs[:2]),
                    Struct.of("mcud_signal_overlap_add_params", frames=x.shape[-2], frame_size=x.shape[-1],
                              step=int(node.attr("frame_step"))))
