"""SVDF: TFLite's singular-value-decomposition filter, as TensorFlow Lite Micro computes it (kernels/svdf.cc and
svdf_common.cc: EvalFloatSvdfReference, EvalIntegerSvdfReference); firmware/kernels/svdf.c.

Inputs: x [B, I]; weights_feature [F, I] and weights_time [F, M], constants; bias [U] (a constant, or "" for
none), U = F / rank; state [B, F x M], the activation state, per batch row F rows of M columns, the oldest first.
Outputs: y [B, U] and the next state. Attributes: rank, and activation ("NONE", "RELU", "RELU_N1_TO_1", "RELU6",
"TANH", "SIGN_BIT": TFLite's ActivationFunctionType).

Per call, each row of the state moves one column to the left and takes in its last column the feature
projection of x; each filter's row is then dotted with its time weights, the ``rank`` filters of a unit summed
onto the unit's bias:

    state[b, f] = state[b, f, 1:] ++ (wf[f] . x[b])
    y[b, u]     = act(bias[u] + sum_r (wt[f] . state[b, f])),   f = u rank + r

float32 computes every sum in float, one term after the other from 0 (the bias first), as TFLite Micro does, and
applies the fused activation as its ActivationValFloat does: a clamp, tanhf (std::tanh of a float), or the sign
bit as 1.0 or 0.0 (std::signbit). The integer form (int8 x and y, int8 feature weights, int16 or int8 time weights
and state of one type, an int32 bias) is TFLite Micro's:

    v       = clamp_T(rq(sum wf (x - z_x), s_x s_wf / s_state)),  stored as z_state + v (taken to T, wrapping)
    acc     = bias[u] + sum_r sum_m wt (state - z_state)                          (int32, wrapping)
    y       = clamp8(rq(acc, s_state s_wt / s_y) + z_y)

rq being TFLite's MultiplyByQuantizedMultiplier (requant.tflite_requantize), its multipliers QuantizeMultiplier of
the scales multiplied and divided in float32, as TFLite Micro's Prepare does. TFLite Micro's integer SVDF applies
no fused activation (a RELU in the file changes nothing there), and so does this one.

The state is a state of the model (Graph.states): the importer makes the file's variable tensor one, starting
as TFLite Micro's reset leaves it (the zero point of an int8 state, else 0), the node's second output its next
value; the kernel may write the next state over the state itself.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ops import requant
from mcudeploy.ops.base import Call, Op, Struct, opaque_expr, require, require_valid
from mcudeploy.ops.registry import register

# the fused activation: (low, high) of its clamp (None: no bound), and the function after it (FUNCTIONS' code)
ACTIVATIONS = {"NONE": (None, None), "RELU": (0.0, None), "RELU_N1_TO_1": (-1.0, 1.0), "RELU6": (0.0, 6.0),
               "TANH": (None, None), "SIGN_BIT": (None, None)}
FUNCTIONS = {"TANH": 1, "SIGN_BIT": 2}  # mcud_svdf_f32_params.function; 0: none
RANGES = {"int8": (-128, 127), "int16": (-32768, 32767)}


def dims(graph, node) -> tuple[int, int, int, int, int, int]:
    """(batch, input size, filters, units, rank, memory)."""
    batch, features = graph[node.inputs[0]].shape
    filters, memory = graph[node.inputs[2]].shape
    rank = int(node.attr("rank"))
    return batch, features, filters, filters // rank, rank, memory


def int_params(graph, node) -> dict:
    """TFLite Micro's Prepare of the integer SVDF: zero points and the two (mult, shift) pairs (requant.py's
    convention); UnsupportedError where TFLite Micro refuses the quantization."""
    x, wf, wt, bias, state, y = (node.inputs[0], node.inputs[1], node.inputs[2], node.inputs[3], node.inputs[4],
                                 node.outputs[0])
    q = {}
    for name, what in ((x, "input"), (wf, "feature weights"), (wt, "time weights"), (state, "state"), (y, "output")):
        p = requant.qparams(graph, name)
        require(len(p.scale) == 1, f"an integer SVDF needs its {what} quantized per tensor")
        q[name] = p.single()
    (s_x, z_x), (s_wf, _), (s_wt, _), (s_st, z_st), (s_y, z_y) = (q[n] for n in (x, wf, wt, state, y))
    f32 = np.float32
    eff1 = float(f32(s_x) * f32(s_wf) / f32(s_st))
    eff2 = float(f32(s_st) * f32(s_wt) / f32(s_y))
    if bias:
        s_b = requant.qparams(graph, bias).scale[0]
        require(abs(float(f32(s_b)) - float(f32(s_st) * f32(s_wt))) < 1e-5,
                f"an integer SVDF needs a bias of scale state x time weights ({float(f32(s_st) * f32(s_wt)):g}), "
                f"not {s_b:g} (TensorFlow Lite Micro refuses it)")
    m1, sh1 = requant.tflite_multiplier(eff1)
    m2, sh2 = requant.tflite_multiplier(eff2)
    return {"x_zero": int(z_x), "state_zero": int(z_st), "y_zero": int(z_y), "mult1": int(m1), "shift1": int(sh1),
            "mult2": int(m2), "shift2": int(sh2)}


def _shifted(state: np.ndarray, column: np.ndarray, shape) -> np.ndarray:
    batch, filters, memory = shape
    s = state.reshape(batch, filters, memory)
    return np.concatenate([s[:, :, 1:], column.reshape(batch, filters, 1).astype(s.dtype)], axis=2)


def float_reference(x, wf, wt, bias, state, rank: int, activation: str):
    batch, features = x.shape
    filters, memory = wt.shape
    units = filters // rank
    col = np.zeros((batch, filters), np.float32)
    for k in range(features):  # one term after the other, each rounded to float32
        col = (col + (wf[None, :, k] * x[:, k, None]).astype(np.float32)).astype(np.float32)
    nxt = _shifted(state, col, (batch, filters, memory))
    t = np.zeros((batch, filters), np.float32)
    for m in range(memory):
        t = (t + (wt[None, :, m] * nxt[:, :, m]).astype(np.float32)).astype(np.float32)
    y = np.broadcast_to(bias if bias is not None else np.float32(0), (batch, units)).astype(np.float32)
    t = t.reshape(batch, units, rank)
    for r in range(rank):
        y = (y + t[:, :, r]).astype(np.float32)
    low, high = ACTIVATIONS[activation]
    if low is not None:
        y = np.maximum(y, np.float32(low))
    if high is not None:
        y = np.minimum(y, np.float32(high))
    if activation == "TANH":
        y = np.tanh(y)
    elif activation == "SIGN_BIT":
        y = np.signbit(y)
    return y.astype(np.float32), nxt.reshape(state.shape)


def int_reference(x, wf, wt, bias, state, rank: int, p: dict):
    batch, features = x.shape
    filters, memory = wt.shape
    units = filters // rank
    low, high = RANGES[state.dtype.name]
    acc1 = requant.wrap32((x.astype(np.int64) - p["x_zero"]) @ wf.astype(np.int64).T)
    v = np.clip(requant.tflite_requantize(acc1, p["mult1"], p["shift1"]), low, high)
    col = (v + p["state_zero"]).astype(np.int64)
    col = ((col - low) % (high - low + 1)) + low  # z_state + v taken to the state's type, wrapping as C does
    nxt = _shifted(state, col, (batch, filters, memory))
    dots = requant.wrap32(np.sum(wt.astype(np.int64)[None] * (nxt.astype(np.int64) - p["state_zero"]), axis=2))
    acc = np.zeros((batch, units), np.int64) if bias is None else np.broadcast_to(
        bias.astype(np.int64), (batch, units))
    acc = requant.wrap32(acc + dots.reshape(batch, units, rank).sum(axis=2))
    y = np.clip(requant.tflite_requantize(acc, p["mult2"], p["shift2"]) + p["y_zero"], -128, 127)
    return y.astype(np.int8), nxt.reshape(state.shape)


@register
class SVDF(Op):
    name = "SVDF"
    onnx_types = ()

    def infer(self, graph, node):
        require_valid(len(node.inputs) == 5 and len(node.outputs) == 2,
                      "an SVDF takes x, weights_feature, weights_time, bias (or none) and state, and gives y and the "
                      "next state")
        x, wf, wt, state = (graph[node.inputs[k]] for k in (0, 1, 2, 4))
        rank = int(node.attr("rank", 0))
        require_valid(len(x.shape) == 2, f"an SVDF's input is [batch, features], not {list(x.shape)}")
        batch, features = x.shape
        require_valid(len(wf.shape) == 2 and wf.shape[1] == features,
                      f"an SVDF's feature weights are [filters, {features}], not {list(wf.shape)}")
        filters = wf.shape[0]
        require_valid(rank >= 1 and filters % rank == 0,
                      f"an SVDF's rank {rank} does not divide its {filters} filters")
        require_valid(len(wt.shape) == 2 and wt.shape[0] == filters,
                      f"an SVDF's time weights are [{filters}, memory], not {list(wt.shape)}")
        memory, units = wt.shape[1], filters // rank
        require_valid(memory >= 1, "an SVDF's memory is at least 1")
        require_valid(state.shape == (batch, memory * filters),
                      f"an SVDF's state is [{batch}, {memory * filters}], not {list(state.shape)}")
        if node.inputs[3]:
            require_valid(graph[node.inputs[3]].shape == (units,),
                          f"an SVDF's bias is [{units}], not {list(graph[node.inputs[3]].shape)}")
        require(all(graph.is_const(n) for n in node.inputs[1:4] if n), "an SVDF's weights and bias must be constants")
        require(str(node.attr("activation", "NONE")) in ACTIVATIONS,
                f"an SVDF with activation {node.attr('activation')} is not supported ({', '.join(ACTIVATIONS)} are)")
        if x.dtype == "float32":
            require(all(graph[n].dtype == "float32" for n in node.inputs if n),
                    "a float32 SVDF needs float32 weights, bias and state")
            return [((batch, units), "float32"), (state.shape, "float32")]
        require(x.dtype == "int8", f"an SVDF of {x.dtype} is not supported (float32 and int8 are)")
        require(wf.dtype == "int8" and wt.dtype in ("int8", "int16") and state.dtype == wt.dtype,
                f"an int8 SVDF needs int8 feature weights and time weights and state of one type, int16 or int8 "
                f"(not {wf.dtype}, {wt.dtype} and {state.dtype})")
        require(not node.inputs[3] or graph[node.inputs[3]].dtype == "int32", "an int8 SVDF needs an int32 bias")
        return [((batch, units), "int8"), (state.shape, state.dtype)]

    def accepts_int8(self, graph, node) -> bool:
        try:
            int_params(graph, node)
        except Exception:  # noqa: BLE001  (UnsupportedError, or a multiplier out of range)
            return False
        return True

    def expr(self, graph, node):
        return opaque_expr(graph, node)

    def macs(self, graph, node):
        batch, features, filters, units, rank, memory = dims(graph, node)
        return batch * filters * (features + memory)

    def reference(self, graph, node, inputs):
        x, wf, wt, bias, state = inputs
        rank = int(node.attr("rank"))
        if x.dtype == np.float32:
            return list(float_reference(x, wf, wt, bias, state, rank, str(node.attr("activation", "NONE"))))
        return list(int_reference(x, wf, wt, bias, state, rank, int_params(graph, node)))

    def kernel(self, graph, node):
        views = tuple(node.inputs) + tuple(node.outputs)
        rank = int(node.attr("rank"))
        if graph[node.inputs[0]].dtype == "float32":
            activation = str(node.attr("activation", "NONE"))
            low, high = ACTIVATIONS[activation]
            return Call("mcud_svdf_f32", views, Struct.of(
                "mcud_svdf_f32_params", rank=rank, clip_low=int(low is not None), low=float(low or 0.0),
                clip_high=int(high is not None), high=float(high or 0.0), function=FUNCTIONS.get(activation, 0)))
        p = int_params(graph, node)
        fn = "mcud_svdf_s8_s16" if graph[node.inputs[4]].dtype == "int16" else "mcud_svdf_s8_s8"
        return Call(fn, views, Struct.of("mcud_svdf_q_params", rank=rank, **p))
