"""LSTM: one direction, batch-major, as TFLite Micro computes UNIDIRECTIONAL_SEQUENCE_LSTM (its lstm_eval.h;
firmware/kernels/recurrent.c).

Inputs: X [B, T, I]; W [4, H, I], R [4, H, H] and bias [4, H], constants, the gates in TFLite's (and Keras')
order input, forget, cell, output; H0 and C0 [B, H], the state before the first step. Outputs: Y [B, T, H], the
hidden state after every step, and optionally H_T and C_T [B, H], the state after the last one. Attribute
cell_clip: the cell state is clipped to [-cell_clip, cell_clip] after each step when it is > 0.

Each batch row runs its own sequence; per step t, from the hidden state h and cell state c of the step before,

    i, f, o = sigmoid(W_g x_t + b_g + R_g h)     g = tanh(W_c x_t + b_c + R_c h)
    c = f c + i g (clipped)                     h = tanh(c) o,  Y[b, t] = h

float32 computes it in float (TFLite's reference sigmoid: 1 above 16.62, exp(x) below -9). int8 (TFLite's
8x8->16 LSTM: int8 input and hidden state, int8 weights quantized per tensor, int32 bias, int16 cell state whose
scale is a power of two) computes every gate in int16:

    gate  = sat16(rq16(sum W (x - z_x) + b, s_x s_W / 2^-12) + rq16(sum R (h - z_h), s_h s_R / 2^-12))   Q3.12
    act   = sigmoid or tanh of Q3.12 in Q0.15 (TFLite's 256-entry table with linear interpolation)
    c     = sat16(rq16(f c, 2^-15) + rq16(i g, 2^-30 / s_c)), clipped to the quantized cell_clip
    h     = clamp8(z_h + rq(tanh_c(c) o, 2^-30 / s_h))

rq being TFLite's MultiplyByQuantizedMultiplier (ops/requant.tflite_requantize) with the multipliers its Prepare
computes, and tanh_c the tanh of the cell state, whose input is first brought to Q3.12 by its power-of-two scale.
int16 (TFLite's 16x8->16 LSTM: int16 input and hidden state, int8 weights, int64 bias) is the same but for the two
products of each gate, summed in int64 and requantized by TFLite's 64-bit MultiplyByQuantizedMultiplier (a 16-bit
multiplier, one rounding: requantize64 below), and the hidden state, clamped to int16. The numpy reference below is this
arithmetic, integer for integer; the C kernel computes it unit by unit.

A graph from a .tflite starts every call from H0 and C0 (TFLite Micro's variable tensors after a reset): the state
is not carried from one call to the next.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Axis, Call, Dim, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register

GATES = 4  # input, forget, cell, output
Q312 = 2.0 ** -12  # the gates' pre-activation scale (Q3.12)
Q015 = 2.0 ** -15  # the gates' scale after the activation (Q0.15)
INT16 = (-32768, 32767)

# TFLite's sigmoid(i / 24) in unsigned 0.16 fixed point (kernels/internal/common.h, sigmoid_table_uint16): data of
# the specification, not a formula (44 of its entries are one above round(65536 sigmoid(i / 24))).
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], dtype=np.int64)


# ---------------------------------------------------------------------------------------------- int16 activations


def sigmoid_q312(x) -> np.ndarray:
    """TFLite's int16 logistic of Q3.12 values (reference_integer_ops::Logistic with multiplier 3, shift 0), Q0.15."""
    v = np.asarray(x, dtype=np.int64) * 3
    a = np.abs(v)
    uh = a >> 9
    low = SIGMOID_TABLE[np.minimum(uh, 254)]
    high = SIGMOID_TABLE[np.minimum(uh, 254) + 1]
    r = np.where(uh >= 255, 0x7FFF << 10, (low << 9) + (a & 0x1FF) * (high - low))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return (r >> 10).astype(np.int16)


def tanh_q(x, mult: int, shift: int) -> np.ndarray:
    """TFLite's int16 tanh (reference_integer_ops::Tanh): x brought to Q3.12 as (x mult + round) >> shift, then
    tanh(v) = 2 sigmoid(2 v) - 1 from the same table, Q0.15."""
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    v = (np.asarray(x, dtype=np.int64) * mult + rounding) >> shift
    a = np.abs(v)
    uh = a >> 8
    low = SIGMOID_TABLE[np.minimum(uh, 254)]
    high = SIGMOID_TABLE[np.minimum(uh, 254) + 1]
    r = np.where(uh >= 255, 0xFFFF << 8, (low << 8) + (a & 0xFF) * (high - low))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return (r >> 8).astype(np.int16)


def tanh_input(power: int) -> tuple[int, int]:
    """(mult, shift) of tanh_q for a Q(15 + power) input (scale 2^power), as TFLite Micro's LSTM gives them: a left
    shift of 15 + power - 3 folded into the multiplier 3, or a right shift of its opposite."""
    left = 15 + power - 3
    return (3 << left, 0) if left >= 0 else (3, -left)


def checked_log2(x: float) -> int:
    """TFLite's CheckedLog2 exponent: log2(x) in float32, rounded half away from zero."""
    value = np.float32(np.log(np.float32(x))) * (np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    return int(requant.tflite_round(np.float32(value)))


# ---------------------------------------------------------------------------------------------- the integers


@dataclass(frozen=True)
class IntPlan:
    """The compile-time integers of an int8 or int16 LSTM (TFLite Micro's Prepare); mult and shift in requant.py's
    convention (shift = 31 - TFLite's exponent)."""

    wide: bool  # 16x8: int16 activations, int64 bias and accumulators
    x_zero: int
    h_zero: int
    x_mult: tuple[int, ...]  # per gate: W x + b -> Q3.12
    x_shift: tuple[int, ...]
    h_mult: tuple[int, ...]  # per gate: R h -> Q3.12
    h_shift: tuple[int, ...]
    forget: tuple[int, int]  # f c -> cell
    update: tuple[int, int]  # i g -> cell
    output: tuple[int, int]  # tanh(c) o -> hidden
    tanh: tuple[int, int]  # the cell state into tanh_q
    clip: int  # the quantized cell clip, 0 for none

    @property
    def hidden_range(self) -> tuple[int, int]:
        return INT16 if self.wide else (-128, 127)


def _gate_scales(graph: Graph, name: str, what: str) -> np.ndarray:
    t = graph[name]
    q = requant.qparams(graph, name)
    require(t.dtype == "int8" and len(q.scale) in (1, GATES) and (len(q.scale) == 1 or q.axis == 0),
            f"a quantized LSTM needs {what} weights of int8, one scale per gate")
    require(not np.any(q.zp_array()), f"a quantized LSTM needs symmetric {what} weights (zero point 0)")
    return np.broadcast_to(q.scale_array(), (GATES,))


def int_plan(graph: Graph, node: Node) -> IntPlan:
    """TFLite Micro's parameters of an int8 or int16 LSTM; UnsupportedError where the tensors do not fit them."""
    x, w, r, b, h0, c0 = (graph[n] for n in node.inputs[:6])
    act = x.dtype
    require(act in ("int8", "int16") and h0.dtype == act and graph[node.outputs[0]].dtype == act,
            "a quantized LSTM needs its input, hidden state and output of one type, int8 or int16")
    wide = act == "int16"
    bias = "int64" if wide else "int32"
    require(b.dtype == bias, f"an {act} LSTM needs an {bias} bias, not {b.dtype}")
    require(c0.dtype == "int16", f"a quantized LSTM needs an int16 cell state, not {c0.dtype}")
    s_x, z_x = requant.qparams(graph, x.name).single()
    s_h, z_h = requant.qparams(graph, h0.name).single()
    s_c, _ = requant.qparams(graph, c0.name).single()
    power = checked_log2(s_c)
    tanh = tanh_input(power)
    require(32767 * tanh[0] < 2 ** 31, f"an {act} LSTM's cell state scale {s_c:g} is too large for TFLite's tanh")

    def gate(scales, s_in):  # FullyConnected's multiplier: the two scales multiplied in float32, then in double
        reals = [float(np.float32(s_in) * np.float32(s)) / Q312 for s in scales]
        mult, shift = requant.tflite_multipliers(reals)
        if wide:
            require(all(sh > 23 for sh in shift), "an int16 LSTM's gate multiplier is too large (at least 2^7)")
        return tuple(int(m) for m in mult), tuple(int(s) for s in shift)

    x_mult, x_shift = gate(_gate_scales(graph, w.name, "input"), s_x)
    h_mult, h_shift = gate(_gate_scales(graph, r.name, "recurrent"), s_h)
    clip = float(node.attr("cell_clip", 0.0))
    qclip = math.trunc(min(max(clip / s_c, -32768.0), 32767.0)) if clip > 0 else 0
    return IntPlan(wide, z_x, z_h, x_mult, x_shift, h_mult, h_shift,
                   requant.tflite_multiplier(Q015 * s_c / s_c), requant.tflite_multiplier(Q015 * Q015 / s_c),
                   requant.tflite_multiplier(Q015 * Q015 / s_h), tanh, qclip)


def requantize64(acc, mult, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator (double-rounding build): the multiplier cut to
    16 bits (rounded), one rounding half up, the result taken to int32."""
    acc = np.asarray(acc, dtype=np.int64)
    mult = np.asarray(mult, dtype=np.int64)
    reduced = np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)
    total = np.asarray(shift, dtype=np.int64) - 16  # TFLite's 15 - exponent
    return requant.wrap32((acc * reduced + (np.int64(1) << (total - 1))) >> total)


# ---------------------------------------------------------------------------------------------- references


def _sigmoid_f32(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        mid = np.float32(1.0) / (np.float32(1.0) + np.exp(-v))
    return np.where(v > np.float32(16.619047164916992), np.float32(1.0),
                    np.where(v < np.float32(-9.0), np.exp(v), mid)).astype(np.float32)


def _float_lstm(x, w, r, b, h, c, clip: float):
    steps = x.shape[1]
    y = np.zeros(x.shape[:2] + (w.shape[1],), np.float32)
    for t in range(steps):
        pre = [(x[:, t] @ w[g].T + b[g]) + (h @ r[g].T) for g in range(GATES)]
        i, f, o = (_sigmoid_f32(pre[g]) for g in (0, 1, 3))
        g = np.tanh(pre[2])
        c = c * f + i * g
        if clip > 0:
            c = np.clip(c, np.float32(-clip), np.float32(clip))
        h = (np.tanh(c) * o).astype(np.float32)
        y[:, t] = h
    return y, h, c.astype(np.float32)


def _rq16(acc, mult, shift, wide: bool = False) -> np.ndarray:
    rq = requantize64 if wide else requant.tflite_requantize
    return np.clip(rq(acc, mult, shift), *INT16)


def _int_lstm(p: IntPlan, x, w, r, b, h, c):
    x = x.astype(np.int64) - p.x_zero
    w, r, b = w.astype(np.int64), r.astype(np.int64), b.astype(np.int64)
    h, c = h.astype(np.int64), c.astype(np.int64)
    dtype = np.int16 if p.wide else np.int8
    y = np.zeros(x.shape[:2] + (w.shape[1],), dtype)
    for t in range(x.shape[1]):
        pre = [np.clip(_rq16(x[:, t] @ w[g].T + b[g], p.x_mult[g], p.x_shift[g], p.wide) +
                       _rq16((h - p.h_zero) @ r[g].T, p.h_mult[g], p.h_shift[g], p.wide), *INT16)
               for g in range(GATES)]
        i, f, o = (sigmoid_q312(pre[g]).astype(np.int64) for g in (0, 1, 3))
        g = tanh_q(pre[2], 3, 0).astype(np.int64)
        c = np.clip(_rq16(f * c, *p.forget) + _rq16(i * g, *p.update), *INT16)
        if p.clip:
            c = np.clip(c, -p.clip, p.clip)
        h = np.clip(p.h_zero + requant.tflite_requantize(tanh_q(c, *p.tanh).astype(np.int64) * o, *p.output),
                    *p.hidden_range)
        y[:, t] = h
    return y, h.astype(dtype), c.astype(np.int16)


# ---------------------------------------------------------------------------------------------- the operator


@register
class LSTM(Op):
    name = "LSTM"
    onnx_types = ()  # ONNX's LSTM (seq-major, gates i, o, f, c) is not mapped to it yet

    def infer(self, graph, node):
        require(len(node.inputs) == 6 and all(node.inputs), "an LSTM takes X, W, R, bias, H0 and C0")
        x, w, r, b, h0, c0 = (graph[n] for n in node.inputs)
        require(len(x.shape) == 3, f"an LSTM's input is [batch, time, features], not {list(x.shape)}")
        batch, steps, features = x.shape
        require(len(w.shape) == 3 and w.shape[0] == GATES and w.shape[2] == features,
                f"an LSTM's W is [4, units, {features}], not {list(w.shape)}")
        units = w.shape[1]
        require(r.shape == (GATES, units, units), f"an LSTM's R is [4, {units}, {units}], not {list(r.shape)}")
        require(b.shape == (GATES, units), f"an LSTM's bias is [4, {units}], not {list(b.shape)}")
        require(h0.shape == (batch, units) and c0.shape == (batch, units),
                f"an LSTM's H0 and C0 are [{batch}, {units}], not {list(h0.shape)} and {list(c0.shape)}")
        require(all(graph.is_const(n) for n in node.inputs[1:4]), "an LSTM's W, R and bias must be constants")
        require(1 <= len(node.outputs) <= 3, "an LSTM gives Y, and optionally H_T and C_T")
        if x.dtype == "float32":
            require(all(t.dtype == "float32" for t in (w, r, b, h0, c0)), "a float32 LSTM needs float32 operands")
        else:
            require(x.dtype in ("int8", "int16"), f"an LSTM of {x.dtype} is not supported (float32, int8 and int16 "
                                                  f"are)")
        state = [((batch, units), h0.dtype), ((batch, units), c0.dtype)]
        return [((batch, steps, units), x.dtype)] + state[:len(node.outputs) - 1]

    def accepts_int8(self, graph, node) -> bool:
        try:
            int_plan(graph, node)
        except (UnsupportedError, ValueError):
            return False
        return True

    def expr(self, graph, node):
        """Batch rows are independent sequences (they may be cut apart); time cannot be cut, nor units."""
        batch = graph[node.inputs[0]].shape[0]

        def dims(name):
            rank = len(graph[name].shape)
            return (Dim.identity("b"),) + (Dim.full(),) * (rank - 1)

        weights = tuple(tuple(Dim.full() for _ in graph[n].shape) for n in node.inputs[1:4])
        return TensorExpr((Axis("b", batch),), (dims(node.inputs[0]),) + weights + (dims(node.inputs[4]),
                                                                                    dims(node.inputs[5])),
                          tuple(dims(o) for o in node.outputs))

    def macs(self, graph, node):
        batch, steps, features = graph[node.inputs[0]].shape
        units = graph[node.inputs[1]].shape[1]
        return batch * steps * GATES * units * (features + units)

    def scratch(self, graph, node):
        """The cell state of one batch row."""
        units = graph[node.inputs[1]].shape[1]
        return units * (4 if graph[node.inputs[0]].dtype == "float32" else 2)

    def reference(self, graph, node, inputs):
        x, w, r, b, h0, c0 = inputs
        if x.dtype == np.float32:
            outs = _float_lstm(x, w, r, b, h0, c0, float(node.attr("cell_clip", 0.0)))
        else:
            outs = _int_lstm(int_plan(graph, node), x, w, r, b, h0, c0)
        return list(outs[:len(node.outputs)])

    def kernel(self, graph, node):
        outs = tuple(node.outputs) + ("",) * (3 - len(node.outputs))
        views = tuple(node.inputs) + outs
        scratch = self.scratch(graph, node)
        if graph[node.inputs[0]].dtype == "float32":
            return Call("mcud_lstm_f32", views, Struct.of("mcud_lstm_f32_params",
                                                          cell_clip=float(node.attr("cell_clip", 0.0))), scratch)
        p = int_plan(graph, node)
        return Call("mcud_lstm_s16" if p.wide else "mcud_lstm_s8", views, Struct.of(
            "mcud_lstm_q_params", x_zero=p.x_zero, h_zero=p.h_zero, cell_clip=p.clip,
            x_mult=p.x_mult, x_shift=p.x_shift, h_mult=p.h_mult, h_shift=p.h_shift,
            forget_mult=p.forget[0], forget_shift=p.forget[1], update_mult=p.update[0], update_shift=p.update[1],
            output_mult=p.output[0], output_shift=p.output[1], tanh_mult=p.tanh[0], tanh_shift=p.tanh[1]), scratch)

