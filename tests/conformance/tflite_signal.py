"""The conformance cases of TensorFlow Lite Micro's Signal operators (its audio front end, registered as CUSTOM
operators): built by hand with tests/tflite_build.py (one custom operator, its flexbuffer options as the Signal
library's Python ops write them), since TensorFlow's converter does not emit them. They live apart from the
converter's cases, in tests/conformance/tflite/signal/ with a cases.json of the same form, so that
tflite_gen.py (which rewrites the converter's folder) leaves them alone; tflite_cases.cases() reads both, and the
suite runs them against TensorFlow Lite Micro like any other case.

    python -m tests.conformance.tflite_signal      (rewrites tests/conformance/tflite/signal/, no TensorFlow needed)

The parameters are those of TensorFlow Lite Micro's micro_speech audio preprocessor (a 30 ms window of 480
samples at 16 kHz, a 512-point FFT, 40 mel channels) where an operator has them; tests/test_tflite_signal.py
varies them further.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from tests import tflite_build as tb

OUT = Path(__file__).resolve().parent / "tflite" / "signal"
I16 = {"dtype": "int16", "low": -32768, "high": 32767}
U32 = {"dtype": "uint32", "low": 0, "high": (1 << 32) - 1}
U64 = {"dtype": "uint64", "low": 0, "high": (1 << 62)}
BINS, CHANNELS, FFT = 257, 40, 512


def _hann(n: int) -> np.ndarray:
    return np.round(4096 * (0.5 - 0.5 * np.cos(2 * math.pi * (np.arange(n) + 0.5) / n))).astype(np.int16)


def window():
    return tb.signal_op("SignalWindow", {"shift": 12}, ("x", "w"), ("y",), [
        tb.T("x", (480,), "int16"), tb.T("w", (480,), "int16", data=_hann(480)), tb.T("y", (480,), "int16")]), [I16]


def fft_auto_scale():
    return tb.signal_op("SignalFftAutoScale", {}, ("x",), ("y", "s"), [
        tb.T("x", (FFT,), "int16"), tb.T("y", (FFT,), "int16"), tb.T("s", (), "int32")]), [I16]


def rfft(dtype="int16"):
    code = {"int16": 7, "int32": 2, "float32": 0}[dtype]
    inputs = {"int16": I16, "int32": {"dtype": "int32", "low": -(1 << 31), "high": (1 << 31) - 1},
              "float32": {"dtype": "float32", "low": -1.0, "high": 1.0}}[dtype]
    return tb.signal_op("SignalRfft", {"T": code, "fft_length": FFT}, ("x",), ("y",), [
        tb.T("x", (480,), dtype), tb.T("y", (FFT + 2,), dtype)]), [inputs]


def energy():
    return tb.signal_op("SignalEnergy", {"start_index": 0, "end_index": BINS}, ("x",), ("y",), [
        tb.T("x", (2 * BINS,), "int16"), tb.T("y", (BINS,), "uint32")]), [I16]


def _bands():
    """40 triangular mel-like channels over bins 4..255: contiguous bands, weights rising over each (in 1/4096),
    their complements as unweights; the first of the 41 is TFLite Micro's scratch channel."""
    edges = np.round(np.geomspace(4, 255, CHANNELS + 2)).astype(int)
    edges = np.maximum.accumulate(np.maximum(edges, np.arange(CHANNELS + 2) + 4))
    starts, widths = edges[:-1], np.maximum(np.diff(edges), 1)
    wstarts = np.concatenate([[0], np.cumsum(widths)[:-1]])
    weights = np.concatenate([np.round(4096 * (np.arange(n) + 1) / (n + 1)) for n in widths]).astype(np.int16)
    return weights, (4096 - weights).astype(np.int16), starts.astype(np.int16), wstarts.astype(np.int16), \
        widths.astype(np.int16)


def filter_bank():
    w, u, s, ws, n = _bands()
    return tb.signal_op("SignalFilterBank", {"num_channels": CHANNELS}, ("x", "w", "u", "s", "ws", "n"), ("y",), [
        tb.T("x", (BINS,), "uint32"), tb.T("w", w.shape, "int16", data=w), tb.T("u", u.shape, "int16", data=u),
        tb.T("s", s.shape, "int16", data=s), tb.T("ws", ws.shape, "int16", data=ws),
        tb.T("n", n.shape, "int16", data=n), tb.T("y", (CHANNELS,), "uint64")]), [U32]


def filter_bank_square_root():
    return tb.signal_op("SignalFilterBankSquareRoot", {}, ("x", "b"), ("y",), [
        tb.T("x", (CHANNELS,), "uint64"), tb.T("b", (), "int32", data=np.array(7, np.int32)),
        tb.T("y", (CHANNELS,), "uint32")]), [U64]


def spectral_subtraction():
    one = 1 << 14
    opts = {"num_channels": CHANNELS, "smoothing": 655, "one_minus_smoothing": one - 655, "alternate_smoothing": 1638,
            "alternate_one_minus_smoothing": one - 1638, "min_signal_remaining": 819, "smoothing_bits": 10,
            "spectral_subtraction_bits": 14, "clamping": False}
    return tb.signal_op("SignalFilterBankSpectralSubtraction", opts, ("x",), ("y", "noise"), [
        tb.T("x", (CHANNELS,), "uint32"), tb.T("y", (CHANNELS,), "uint32"),
        tb.T("noise", (CHANNELS,), "uint32")]), [{"dtype": "uint32", "low": 0, "high": 1 << 16}]


def pcan():
    lut = np.random.default_rng(59).integers(0, 32767, size=125).astype(np.int16)
    return tb.signal_op("SignalPCAN", {"snr_shift": 6}, ("x", "noise", "lut"), ("y",), [
        tb.T("x", (CHANNELS,), "uint32"), tb.T("noise", (CHANNELS,), "uint32"),
        tb.T("lut", lut.shape, "int16", data=lut), tb.T("y", (CHANNELS,), "uint32")]), [U32, U32]


def filter_bank_log():
    return tb.signal_op("SignalFilterBankLog", {"input_correction_bits": 3, "output_scale": 1600}, ("x",), ("y",), [
        tb.T("x", (CHANNELS,), "uint32"), tb.T("y", (CHANNELS,), "int16")]), [U32]


def irfft(dtype):
    code = {"int16": 7, "int32": 2, "float32": 0}[dtype]
    inputs = {"int16": I16, "int32": {"dtype": "int32", "low": -(1 << 31), "high": (1 << 31) - 1},
              "float32": {"dtype": "float32", "low": -100.0, "high": 100.0}}[dtype]
    return tb.signal_op("SignalIrfft", {"T": code, "fft_length": FFT}, ("x",), ("y",), [
        tb.T("x", (FFT + 2,), dtype), tb.T("y", (FFT,), dtype)]), [inputs]


def delay():
    return tb.signal_op("SignalDelay", {"delay_length": 240}, ("x",), ("y",), [
        tb.T("x", (160,), "int16"), tb.T("y", (160,), "int16")]), [I16]


def framer():
    return tb.signal_op("SignalFramer", {"frame_size": 480, "frame_step": 320, "prefill": True}, ("x",),
                        ("y", "valid"), [tb.T("x", (320,), "int16"), tb.T("y", (1, 480), "int16"),
                                         tb.T("valid", (), "bool")]), [I16]


def overlap_add(dtype):
    inputs = I16 if dtype == "int16" else {"dtype": "float32", "low": -1.0, "high": 1.0}
    return tb.signal_op("SignalOverlapAdd", {"T": 7 if dtype == "int16" else 0, "frame_step": 160}, ("x",), ("y",), [
        tb.T("x", (1, 480), dtype), tb.T("y", (160,), dtype)]), [inputs]


def stacker():
    """No right context and a step of 1: every call is valid. Before its first valid call TFLite Micro's output holds
    whatever its arena held, which this suite's shared TFLite Micro process does not keep at zero
    (tests/test_tflite_signal.py::test_stacker runs the invalid calls, each model in a process of its own)."""
    opts = {"num_channels": CHANNELS, "stacker_left_context": 3, "stacker_right_context": 0, "stacker_step": 1}
    return tb.signal_op("SignalStacker", opts, ("x",), ("y", "valid"), [
        tb.T("x", (CHANNELS,), "int16"), tb.T("y", (4 * CHANNELS,), "int16"), tb.T("valid", (), "bool")]), [I16]


# (name, builtin, type, builder, steps): the type is what the operator computes on (its input's)
def cast(source: str, target: str):
    """A builtin CAST to or from uint32, the Signal operators' type (TensorFlow Lite Micro registers it)."""
    spec = {"uint32": U32, "int32": {"dtype": "int32", "low": -(1 << 31), "high": (1 << 31) - 1},
            "int16": I16}[source]
    return tb.Model([tb.T("x", (CHANNELS,), source), tb.T("y", (CHANNELS,), target)],
                    [tb.Op(tb.OPS.CAST, ("x",), ("y",))], ("x",), ("y",)), [spec]


CASES = (
    ("signalwindow-hann480-int16", "CUSTOM SignalWindow", "int16", window, 1),
    ("signalfftautoscale-512-int16", "CUSTOM SignalFftAutoScale", "int16", fft_auto_scale, 1),
    ("signalrfft-480in512-int16", "CUSTOM SignalRfft", "int16", rfft, 1),
    ("signalrfft-480in512-int32", "CUSTOM SignalRfft", "int32", lambda: rfft("int32"), 1),
    ("signalrfft-480in512-float32", "CUSTOM SignalRfft", "float32", lambda: rfft("float32"), 1),
    ("signalenergy-257-int16", "CUSTOM SignalEnergy", "int16", energy, 1),
    ("signalfilterbank-mel40-uint32", "CUSTOM SignalFilterBank", "uint32", filter_bank, 1),
    ("signalfilterbanksquareroot-40-uint64", "CUSTOM SignalFilterBankSquareRoot", "uint64", filter_bank_square_root, 1),
    ("signalfilterbankspectralsubtraction-40-uint32", "CUSTOM SignalFilterBankSpectralSubtraction", "uint32",
     spectral_subtraction, 4),
    ("signalpcan-40-uint32", "CUSTOM SignalPCAN", "uint32", pcan, 1),
    ("signalfilterbanklog-40-uint32", "CUSTOM SignalFilterBankLog", "uint32", filter_bank_log, 1),
    ("signalirfft-512-int16", "CUSTOM SignalIrfft", "int16", lambda: irfft("int16"), 1),
    ("signalirfft-512-int32", "CUSTOM SignalIrfft", "int32", lambda: irfft("int32"), 1),
    ("signalirfft-512-float32", "CUSTOM SignalIrfft", "float32", lambda: irfft("float32"), 1),
    ("signaldelay-240-int16", "CUSTOM SignalDelay", "int16", delay, 4),
    ("signalframer-480by320-int16", "CUSTOM SignalFramer", "int16", framer, 4),
    ("signaloverlapadd-480by160-int16", "CUSTOM SignalOverlapAdd", "int16", lambda: overlap_add("int16"), 4),
    ("signaloverlapadd-480by160-float32", "CUSTOM SignalOverlapAdd", "float32", lambda: overlap_add("float32"), 4),
    ("signalstacker-40l3r0s1-int16", "CUSTOM SignalStacker", "int16", stacker, 4),
    ("cast-uint32toint32-uint32", "CAST", "uint32", lambda: cast("uint32", "int32"), 1),
    ("cast-uint32tofloat32-uint32", "CAST", "uint32", lambda: cast("uint32", "float32"), 1),
    ("cast-int32touint32-uint32", "CAST", "uint32", lambda: cast("int32", "uint32"), 1),
    ("cast-int16touint32-uint32", "CAST", "uint32", lambda: cast("int16", "uint32"), 1),
)


def main(argv=None) -> int:
    built = []
    for name, builtin, dtype, build, steps in CASES:
        model, inputs = build()
        data = model.build()
        built.append(({"case": name, "builtin": builtin, "type": dtype, "operators": [builtin], "bytes": len(data),
                       "reference": "tflm", "steps": steps, "quantized_io": False, "inputs": inputs}, data))
    tb.write_cases(OUT, "python -m tests.conformance.tflite_signal", built)
    return 0


if __name__ == "__main__":
    sys.exit(main())
