"""LSTM (mcudeploy/ops/recurrent.py): TFLite's int16 sigmoid and tanh against a literal transcription of its
reference kernels over every int16 input, and their C twins against them; the int8 numpy reference against a
literal transcription of TFLite Micro's LSTM step (lstm_eval.h: gate by gate, its Prepare's multipliers); the C
kernel against the reference on strided views (float32 and int8, with the final state outputs and a cell clip);
the refusals."""
from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant, verify
from mcudeploy.ops import registry
from mcudeploy.ops.recurrent import SIGMOID_TABLE, int_plan, sigmoid_q312, tanh_input, tanh_q
from mcudeploy.resources import firmware_dir

from .kernel_harness import CC, CFLAGS, Place, needs_gcc, run_kernel

INT16 = np.arange(-32768, 32768, dtype=np.int64)

# ---------------------------------------------------------------------------------------------- TFLite, literally


def _wrap16(v: int) -> int:
    return (v + 32768) % 65536 - 32768


def tfl_logistic16(x: int, input_multiplier: int, input_left_shift: int) -> int:
    """reference_integer_ops::Logistic (int16), line by line."""
    if input_multiplier == 0:
        input_multiplier = 3 << input_left_shift
        input_left_shift = 0
    rounding = (1 << (input_left_shift - 1)) if input_left_shift > 0 else 0
    input_data = (x * input_multiplier + rounding) >> input_left_shift
    abs_input_data = abs(input_data)
    uh = abs_input_data >> 9
    if uh >= 255:
        result = 0x7FFF << 10
    else:
        ua, ub = int(SIGMOID_TABLE[uh]), int(SIGMOID_TABLE[uh + 1])
        ut = abs_input_data & 0x1FF
        result = (ua << 9) + ut * (ub - ua)
    result = result + (1 << 9) if input_data >= 0 else (1 << (16 + 9)) - result + (1 << 9) - 1
    result >>= 10
    return _wrap16(result)


def tfl_tanh16(x: int, input_multiplier: int, input_left_shift: int) -> int:
    """reference_integer_ops::Tanh (int16), line by line."""
    if input_multiplier == 0:
        input_multiplier = 3 << input_left_shift
        input_left_shift = 0
    rounding = (1 << (input_left_shift - 1)) if input_left_shift > 0 else 0
    input_data = (x * input_multiplier + rounding) >> input_left_shift
    abs_input_data = abs(input_data)
    uh = abs_input_data >> 8
    if uh >= 255:
        result = 0xFFFF << 8
    else:
        ua, ub = int(SIGMOID_TABLE[uh]), int(SIGMOID_TABLE[uh + 1])
        ut = abs_input_data & 0xFF
        result = (ua << 8) + ut * (ub - ua)
    if input_data >= 0:
        result = result - (1 << (14 + 9)) + (1 << (9 - 2))
    else:
        result = -result + (1 << (14 + 9)) + (1 << (9 - 2)) - 1
    result >>= 9 - 1
    return _wrap16(result)


def tfl_lstm_tanh(cell_state_scale_power: int, x: int) -> int:
    """lstm_internal::Tanh (int16): the cell state's power of two turned into Tanh's multiplier and shift."""
    tanh_input_left_shift = (15 + cell_state_scale_power) - 3
    input_multiplier = 0
    if tanh_input_left_shift < 0:
        tanh_input_left_shift = -tanh_input_left_shift
        input_multiplier = 3
    return tfl_tanh16(x, input_multiplier, tanh_input_left_shift)


def tfl_round(v: float) -> int:
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def tfl_quantize_multiplier(d: float) -> tuple[int, int]:
    """QuantizeMultiplier: (significand, exponent)."""
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    q_fixed = tfl_round(q * (1 << 31))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def tfl_mul_by_quantized_multiplier(x: int, multiplier: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (double rounding): gemmlowp's SaturatingRoundingDoublingHighMul, then
    RoundingDivideByPOT."""
    left, right = (shift, 0) if shift > 0 else (0, -shift)
    a = x * (1 << left)
    if a == multiplier == -2 ** 31:
        high = 2 ** 31 - 1
    else:
        ab = a * multiplier
        nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
        total = ab + nudge
        high = -((-total) // (1 << 31)) if total < 0 else total // (1 << 31)  # C's division truncates
    mask = (1 << right) - 1
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if (high & mask) > threshold else 0)


def tfl_mul_by_quantized_multiplier64(x: int, multiplier: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier of an int64 (double-rounding build): a 16-bit multiplier, one rounding."""
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    x = x * reduced + (1 << (total_shift - 1))
    result = x >> total_shift
    return (result + 2 ** 31) % 2 ** 32 - 2 ** 31  # int32_t result = x >> total_shift


def tfl_lstm(x, w, r, bias, s_x, z_x, s_w, s_r, s_h, z_h, s_c, clip, c0, wide=False):
    """TFLite Micro's 8x8->16 LSTM (16x8->16 when ``wide``: EvalLstm, batch-major), one element at a time, with its
    Prepare's parameters."""
    batches, steps, _ = x.shape
    fc_rq = tfl_mul_by_quantized_multiplier64 if wide else tfl_mul_by_quantized_multiplier
    h_lo, h_hi = (-32768, 32767) if wide else (-128, 127)
    units = w.shape[1]
    fc_out = np.float32(2.0 ** -12)

    def fc_mult(s_in, s_weight):  # GetQuantizedConvolutionMultipler: the product of two floats, in float
        return tfl_quantize_multiplier(float(np.float32(s_in) * np.float32(s_weight)) / float(fc_out))

    x_mul = [fc_mult(s_x, s) for s in s_w]
    h_mul = [fc_mult(s_h, s) for s in s_r]
    nl = 2.0 ** -15
    forget_mul = tfl_quantize_multiplier(nl * float(s_c) / float(s_c))
    input_mul = tfl_quantize_multiplier(nl * nl / float(s_c))
    output_mul = tfl_quantize_multiplier(nl * nl / float(s_h))
    power = tfl_round(float(np.float32(np.log(np.float32(s_c))) * (np.float32(1.0) / np.float32(np.log(2.0)))))
    qclip = int(min(max(clip / float(s_c), -32768.0), 32767.0)) if clip > 0 else 0

    def clamp(v, lo, hi):
        return min(hi, max(lo, v))

    y = np.zeros((batches, steps, units), np.int16 if wide else np.int8)
    hidden = np.full((batches, units), 0 if wide else z_h, np.int64)  # ResetVariableTensors: the zero point of int8
    cell = c0.astype(np.int64).copy()
    for b in range(batches):
        for t in range(steps):
            def gate(g, activation, b=b, t=t):
                out = []
                for o in range(units):
                    acc = sum(int(w[g, o, d]) * (int(x[b, t, d]) - z_x) for d in range(x.shape[2])) + int(bias[g, o])
                    fx = clamp(fc_rq(acc, *x_mul[g]), -32768, 32767)
                    acc = sum(int(r[g, o, d]) * (int(hidden[b, d]) - z_h) for d in range(units))
                    fh = clamp(fc_rq(acc, *h_mul[g]), -32768, 32767)
                    out.append(activation(clamp(fx + fh, -32768, 32767)))
                return out

            forget = gate(1, lambda v: tfl_logistic16(v, 0, 0))
            inp = gate(0, lambda v: tfl_logistic16(v, 0, 0))
            cellg = gate(2, lambda v: tfl_lstm_tanh(-12, v))
            for o in range(units):
                c = clamp(tfl_mul_by_quantized_multiplier(forget[o] * int(cell[b, o]), *forget_mul), -32768, 32767)
                u = clamp(tfl_mul_by_quantized_multiplier(inp[o] * cellg[o], *input_mul), -32768, 32767)
                c = clamp(c + u, -32768, 32767)
                if clip > 0:
                    c = max(min(qclip, c), -qclip)
                cell[b, o] = c
            out = gate(3, lambda v: tfl_logistic16(v, 0, 0))
            for o in range(units):
                tc = tfl_lstm_tanh(power, int(cell[b, o]))
                hidden[b, o] = clamp(z_h + tfl_mul_by_quantized_multiplier(tc * out[o], *output_mul), h_lo, h_hi)
            y[b, t] = hidden[b]
    return y, hidden.astype(y.dtype), cell.astype(np.int16)


# ---------------------------------------------------------------------------------------------- the activations


def test_int16_sigmoid_is_tflites_over_every_input():
    want = np.array([tfl_logistic16(int(v), 0, 0) for v in INT16])
    assert np.array_equal(sigmoid_q312(INT16), want)


@pytest.mark.parametrize("power", [-15, -14, -13, -12, -11, -10])
def test_int16_tanh_is_tflites_over_every_input(power):
    want = np.array([tfl_lstm_tanh(power, int(v)) for v in INT16])
    assert np.array_equal(tanh_q(INT16, *tanh_input(power)), want)


@needs_gcc
def test_c_activations_equal_numpy(tmp_path):
    """mcud_sigmoid_s16 and mcud_tanh_s16 over every int16 input (the C table is a copy of SIGMOID_TABLE)."""
    pairs = [tanh_input(p) for p in (-15, -13, -12, -10)]
    calls = "".join(f"        out[{k + 1}] = mcud_tanh_s16((int16_t)v, {m}, {s});\n" for k, (m, s) in enumerate(pairs))
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "mcud_recurrent.h"\nint main(void)\n{\n'
        "    for (int32_t v = -32768; v < 32768; v++) {\n"
        f"        int16_t out[{len(pairs) + 1}];\n        out[0] = mcud_sigmoid_s16((int16_t)v);\n{calls}"
        "        fwrite(out, sizeof(out), 1, stdout);\n    }\n    return 0;\n}\n")
    fw = firmware_dir()
    exe = tmp_path / "act"
    subprocess.run([CC, *CFLAGS, "-I", str(fw / "include"), str(tmp_path / "main.c"), str(fw / "kernels" / "recurrent.c"),
                    "-o", str(exe), "-lm"], check=True)
    got = np.frombuffer(subprocess.run([str(exe)], check=True, capture_output=True).stdout, np.int16)
    got = got.reshape(65536, len(pairs) + 1)
    assert np.array_equal(got[:, 0], sigmoid_q312(INT16))
    for k, pair in enumerate(pairs):
        assert np.array_equal(got[:, k + 1], tanh_q(INT16, *pair)), pair


# ---------------------------------------------------------------------------------------------- graphs


def lstm_graph(dtype: str, batch=2, steps=3, features=3, units=4, seed=0, clip=0.0, power=-13, state_outputs=True):
    """One LSTM node over random weights; the inputs (X, and a non-zero C0) as a dict."""
    rng = np.random.default_rng(seed)
    tensors, inputs = {}, {}
    shapes = {"w": (4, units, features), "r": (4, units, units), "b": (4, units)}
    if dtype == "float32":
        x = Tensor("x", (batch, steps, features), "float32", "input")
        for k, shape in shapes.items():
            tensors[k] = constant(k, (rng.standard_normal(shape) * 0.6).astype(np.float32))
        tensors["h0"] = constant("h0", (rng.standard_normal((batch, units)) * 0.3).astype(np.float32))
        tensors["c0"] = constant("c0", (rng.standard_normal((batch, units))).astype(np.float32))
        inputs["x"] = (rng.standard_normal(x.shape) * 1.5).astype(np.float32)
        hq = cq = None
    else:  # int8, or int16 (16x8: symmetric int16 activations, int64 bias)
        wide = dtype == "int16"
        act = np.dtype(dtype)
        lo, hi = np.iinfo(act).min, np.iinfo(act).max
        s_x, z_x = float(rng.uniform(1e-4, 3e-4) if wide else rng.uniform(0.01, 0.05)), 0 if wide else int(
            rng.integers(-20, 21))
        s_h, z_h = float(rng.uniform(3e-5, 1e-4) if wide else rng.uniform(0.004, 0.01)), 0 if wide else int(
            rng.integers(-20, 21))
        hq, cq = Quant((s_h,), (z_h,)), Quant((2.0 ** power,), (0,))
        x = Tensor("x", (batch, steps, features), dtype, "input", Quant((s_x,), (z_x,)))
        for k in ("w", "r"):
            scales = tuple(float(s) for s in rng.uniform(0.002, 0.01, 4))
            tensors[k] = constant(k, rng.integers(-127, 128, shapes[k]).astype(np.int8), Quant(scales, (0,) * 4, 0))
        bias = 2 * 10 ** 6 if wide else 3000
        tensors["b"] = constant("b", rng.integers(-bias, bias, shapes["b"]).astype(np.int64 if wide else np.int32))
        tensors["h0"] = constant("h0", rng.integers(lo, hi + 1, (batch, units)).astype(act), hq)
        tensors["c0"] = constant("c0", rng.integers(-6000, 6000, (batch, units)).astype(np.int16), cq)
        inputs["x"] = rng.integers(lo, hi + 1, x.shape).astype(act)
    tensors["x"] = x
    outs = ("y", "h_t", "c_t") if state_outputs else ("y",)
    node = Node("lstm", "LSTM", ("x", "w", "r", "b", "h0", "c0"), outs, {"cell_clip": clip})
    scope = Graph("s", dict(tensors), (), (), ())
    for name, (shape, dt), q in zip(outs, registry.get("LSTM").infer(scope, node), (hq, hq, cq)):
        tensors[name] = Tensor(name, tuple(shape), dt, "output", q)
    graph = verify(Graph("lstm", tensors, (node,), ("x",), outs, arithmetic="tflite"))
    return graph, inputs


def _reference(graph, inputs):
    node = graph.nodes[0]
    return registry.get("LSTM").reference(graph, node, [inputs["x"]] + [graph[n].data for n in node.inputs[1:]])


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10 ** 6), clip=st.sampled_from([0.0, 0.3, 2.0]), power=st.integers(-15, -10))
def test_quantized_reference_is_tflite_micros_step(seed, clip, power, dtype):
    graph, inputs = lstm_graph(dtype, batch=2, steps=3, features=3, units=3, seed=seed, clip=clip, power=power)
    g = {n: graph[n] for n in ("x", "w", "r", "b", "h0", "c0")}
    s_x, z_x = g["x"].quant.single()
    s_h, z_h = g["h0"].quant.single()
    # TFLite Micro resets the hidden state (to its zero point if int8); the reference takes any H0: give it that one
    tensors = dict(graph.tensors)
    tensors["h0"] = constant("h0", np.full(g["h0"].shape, z_h if dtype == "int8" else 0, dtype), g["h0"].quant)
    graph = graph.replace(tensors=tensors)
    want = tfl_lstm(inputs["x"], g["w"].data, g["r"].data, g["b"].data, s_x, z_x, g["w"].quant.scale,
                    g["r"].quant.scale, s_h, z_h, 2.0 ** power, clip, g["c0"].data, wide=dtype == "int16")
    got = _reference(graph, inputs)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


def test_the_multipliers_are_tflites():
    graph, _ = lstm_graph("int8", power=-13, clip=0.5)
    p = int_plan(graph, graph.nodes[0])
    assert p.forget == (1 << 30, 31 + 14)  # 2^-15: significand 1/2, exponent -14
    assert p.update == (1 << 30, 31 + 16)  # 2^-30 / 2^-13 = 2^-17
    assert p.tanh == (3, 1)  # Q2.13 to Q3.12: times 3/2
    assert p.clip == int(0.5 * 2 ** 13)


# ---------------------------------------------------------------------------------------------- the C kernel


@needs_gcc
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("clip", [0.0, 0.4])
def test_kernel_equals_the_reference_on_strided_views(tmp_path, dtype, clip):
    graph, inputs = lstm_graph(dtype, batch=2, steps=4, features=5, units=6, seed=3, clip=clip)
    call = registry.get("LSTM").kernel(graph, graph.nodes[0])
    place = {"x": Place(1, (2, 0, 1)), "y": Place(2, (1, 0, 2), step=2), "h_t": Place(1, (1, 0)), "c_t": 2}
    got = run_kernel(tmp_path, call, graph, inputs, place)
    want = _reference(graph, inputs)
    for name, a, b in zip(("y", "h_t", "c_t"), got, want):
        if dtype == "float32":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            assert np.array_equal(a, b), name


@needs_gcc
def test_kernel_without_the_state_outputs(tmp_path):
    graph, inputs = lstm_graph("int8", state_outputs=False, seed=5)
    call = registry.get("LSTM").kernel(graph, graph.nodes[0])
    assert call.views[-2:] == ("", "")
    (got,) = run_kernel(tmp_path, call, graph, inputs, {"x": 1, "y": 1})
    assert np.array_equal(got, _reference(graph, inputs)[0])


# ---------------------------------------------------------------------------------------------- refusals


def test_per_channel_weights_along_units_are_refused():
    graph, _ = lstm_graph("int8")
    w = graph["w"]
    tensors = dict(graph.tensors)
    tensors["w"] = constant("w", w.data, Quant((0.01,) * w.shape[1], (0,) * w.shape[1], 1))
    with pytest.raises(UnsupportedError, match="one scale per gate"):
        int_plan(graph.replace(tensors=tensors), graph.nodes[0])


def test_a_cell_state_scale_too_large_for_tanh_is_refused():
    graph, _ = lstm_graph("int8", power=4)
    with pytest.raises(UnsupportedError, match="too large"):
        int_plan(graph, graph.nodes[0])
    assert not registry.get("LSTM").accepts_int8(graph, graph.nodes[0])


def test_time_and_units_cannot_be_cut():
    graph, _ = lstm_graph("float32", batch=3)
    expr = registry.get("LSTM").expr(graph, graph.nodes[0])
    assert [a.name for a in expr.axes] == ["b"]
    assert expr.inputs[0][0].kind == "identity" and all(d.kind == "full" for d in expr.inputs[0][1:])
