"""TensorFlow Lite Micro's Signal operators (its audio front end) from .tflite files made in the test
(tflite_build.signal_op: one custom operator with its flexbuffer options): each bit for bit TensorFlow Lite Micro,
mcudeploy's numpy reference and the host-compiled C (check_tflite_outputs compares all three), on several
parameter values and seeded inputs, and the front end and the FFT as firmware on qemu-m4; the refusals in one
sentence naming the operator."""
from __future__ import annotations

import numpy as np
import pytest
import tflite_build as tb

from mcudeploy import check
from mcudeploy.compile import compile_model
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import InvalidModelError, UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.ops.signal_arith import PCAN_LUT_MIN

SAMPLES = 4



def _run(tmp_path, model: tb.Model, samples: list[dict], board: str = "host"):
    """The model through TFLite Micro, the numpy reference and the C (host, or a board under QEMU): the verdict
    must be PASS."""
    path = tmp_path / "signal.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, board)
    if board == "host":
        outputs = run_compiled_on_host(compiled, samples, tmp_path / "c", sanitize=True)
    else:
        from mcudeploy.device.runner import run_on_board
        outputs = run_on_board(compiled, samples, workdir=tmp_path / "fw").outputs
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert verdict.ok, verdict.lines()
    return outputs


def _int16(rng, shape, bound=32768):
    return rng.integers(-bound, bound, size=shape).astype(np.int16)


def _uint32(rng, shape, bits=32):
    return rng.integers(0, 1 << bits, size=shape, dtype=np.uint64).astype(np.uint32)


# ---------------------------------------------------------------- SignalWindow

@pytest.mark.parametrize("shape, length, shift, seed", [((16,), 16, 12, 0), ((3, 8), 8, 0, 1), ((2, 12), 6, 14, 2),
                                                         ((5, 32), 32, 31, 3)])
def test_window(tmp_path, need_tflm, shape, length, shift, seed):
    rng = np.random.default_rng(seed)
    w = _int16(rng, (length,))
    model = tb.signal_op("SignalWindow", {"shift": shift}, ("x", "w"), ("y",), [
        tb.T("x", shape, "int16"), tb.T("w", (length,), "int16", data=w), tb.T("y", shape, "int16")])
    samples = [{"x": _int16(rng, shape, 1 << b)} for b in (15, 15, 8, 3)]
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalFftAutoScale

@pytest.mark.parametrize("n, seed", [(8, 0), (64, 1), (257, 2)])
def test_fft_auto_scale(tmp_path, need_tflm, n, seed):
    rng = np.random.default_rng(seed)
    model = tb.signal_op("SignalFftAutoScale", {}, ("x",), ("y", "s"), [
        tb.T("x", (n,), "int16"), tb.T("y", (n,), "int16"), tb.T("s", (), "int32")])
    samples = [{"x": _int16(rng, (n,), 1 << b)} for b in (15, 12, 4, 0)]
    edge = _int16(rng, (n,), 100)
    edge[n // 2] = -32768  # TFLite Micro's running maximum in int16 turns negative here
    samples.append({"x": edge})
    samples.append({"x": np.zeros(n, np.int16)})
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalEnergy

@pytest.mark.parametrize("bins, start, end, seed", [(9, 0, 9, 0), (33, 0, 33, 1), (129, 0, 129, 2)])
def test_energy(tmp_path, need_tflm, bins, start, end, seed):
    rng = np.random.default_rng(seed)
    model = tb.signal_op("SignalEnergy", {"start_index": start, "end_index": end}, ("x",), ("y",), [
        tb.T("x", (2 * bins,), "int16"), tb.T("y", (bins,), "uint32")])
    extreme = _int16(rng, (2 * bins,))
    extreme[:4] = -32768  # re^2 + im^2 = 2^31: past int32
    samples = [{"x": _int16(rng, (2 * bins,), 1 << b)} for b in (15, 10, 2)] + [{"x": extreme}]
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalFilterBank

def _mel_like(rng, bins: int, channels: int):
    """Channel bounds over a spectrum of ``bins``: contiguous bands of random widths (channels + 1 of them, the
    first the scratch channel), with random int16 weights and unweights."""
    widths = rng.integers(1, max(2, bins // (channels + 1)) + 1, size=channels + 1)
    starts = np.concatenate([[0], np.cumsum(widths)[:-1]])
    starts = np.minimum(starts, bins - widths)
    wstarts = np.concatenate([[0], np.cumsum(widths)[:-1]])
    total = int(widths.sum())
    w = rng.integers(0, 4096, size=total).astype(np.int16)
    u = (4096 - w).astype(np.int16)
    w[::7] = -w[::7]  # negative weights: sign-extended into uint64
    return w, u, starts.astype(np.int16), wstarts.astype(np.int16), widths.astype(np.int16)


@pytest.mark.parametrize("bins, channels, seed", [(33, 4, 0), (257, 40, 1), (65, 16, 2)])
def test_filter_bank(tmp_path, need_tflm, bins, channels, seed):
    rng = np.random.default_rng(seed)
    w, u, s, ws, n = _mel_like(rng, bins, channels)
    model = tb.signal_op("SignalFilterBank", {"num_channels": channels}, ("x", "w", "u", "s", "ws", "n"), ("y",), [
        tb.T("x", (bins,), "uint32"), tb.T("w", w.shape, "int16", data=w), tb.T("u", u.shape, "int16", data=u),
        tb.T("s", s.shape, "int16", data=s), tb.T("ws", ws.shape, "int16", data=ws),
        tb.T("n", n.shape, "int16", data=n), tb.T("y", (channels,), "uint64")])
    samples = [{"x": _uint32(rng, (bins,), b)} for b in (32, 31, 20, 8)]
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalFilterBankSquareRoot

@pytest.mark.parametrize("channels, bits, seed", [(8, 0, 0), (40, 7, 1), (16, 31, 2)])
def test_filter_bank_square_root(tmp_path, need_tflm, channels, bits, seed):
    rng = np.random.default_rng(seed)
    model = tb.signal_op("SignalFilterBankSquareRoot", {}, ("x", "b"), ("y",), [
        tb.T("x", (channels,), "uint64"), tb.T("b", (), "int32", data=np.array(bits, np.int32)),
        tb.T("y", (channels,), "uint32")])
    samples = []
    for top in (64, 40, 33, 32, 20):
        x = rng.integers(0, 1 << 63, size=channels, dtype=np.uint64) >> np.uint64(64 - top) << np.uint64(1) \
            if top == 64 else rng.integers(0, 1 << top, size=channels, dtype=np.uint64)
        samples.append({"x": x.astype(np.uint64)})
    edge = np.array([0, 1, 2, 3, 0xFFFFFFFF, 0xFFFE0001, 1 << 32, (1 << 64) - 1] * channels, np.uint64)[:channels]
    samples.append({"x": edge})
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalFilterBankLog

@pytest.mark.parametrize("correction, scale, seed", [(0, 1 << 6, 0), (3, 1 << 10, 1), (12, 1 << 16, 2),
                                                     (0, 0x7FFFFFFF, 3)])
def test_filter_bank_log(tmp_path, need_tflm, correction, scale, seed):
    rng = np.random.default_rng(seed)
    channels = 40
    model = tb.signal_op("SignalFilterBankLog", {"input_correction_bits": correction, "output_scale": scale}, ("x",),
                         ("y",), [tb.T("x", (channels,), "uint32"), tb.T("y", (channels,), "int16")])
    samples = [{"x": _uint32(rng, (channels,), b)} for b in (32, 24, 12, 2)]
    samples.append({"x": np.arange(channels, dtype=np.uint32)})
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalPCAN

def _gain_lut(rng, n=PCAN_LUT_MIN):
    """A gain table as TFLite Micro's PCAN reads it: [gain(0), gain(1), gain(2)], then per octave a0, a1, a2."""
    return rng.integers(-2000, 32767, size=n).astype(np.int16)


@pytest.mark.parametrize("channels, shift, seed", [(8, 6, 0), (40, 10, 1), (16, 0, 2)])
def test_pcan(tmp_path, need_tflm, channels, shift, seed):
    rng = np.random.default_rng(seed)
    lut = _gain_lut(rng)
    model = tb.signal_op("SignalPCAN", {"snr_shift": shift}, ("x", "noise", "lut"), ("y",), [
        tb.T("x", (channels,), "uint32"), tb.T("noise", (channels,), "uint32"),
        tb.T("lut", lut.shape, "int16", data=lut), tb.T("y", (channels,), "uint32")])
    samples = [{"x": _uint32(rng, (channels,), b), "noise": _uint32(rng, (channels,), nb)}
               for b, nb in ((32, 32), (20, 12), (12, 3), (4, 20))]
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalFilterBankSpectralSubtraction

def _subtraction_options(channels, clamping, smoothing_bits=10, bits=14, alt=True):
    one = 1 << bits
    s, a = int(0.04 * one), int(0.1 * one) if alt else int(0.04 * one)
    return {"num_channels": channels, "smoothing": s, "one_minus_smoothing": one - s, "alternate_smoothing": a,
            "alternate_one_minus_smoothing": one - a, "min_signal_remaining": int(0.05 * one),
            "smoothing_bits": smoothing_bits, "spectral_subtraction_bits": bits, "clamping": clamping}


@pytest.mark.parametrize("channels, clamping, smoothing_bits, seed", [(8, False, 10, 0), (40, True, 10, 1),
                                                                     (16, True, 4, 2), (5, False, 0, 3)])
def test_spectral_subtraction_keeps_its_estimate(tmp_path, need_tflm, channels, clamping, smoothing_bits, seed):
    """A sequence of calls: the estimate carries over, on every side, from zeros."""
    rng = np.random.default_rng(seed)
    opts = _subtraction_options(channels, clamping, smoothing_bits)
    model = tb.signal_op("SignalFilterBankSpectralSubtraction", opts, ("x",), ("y", "noise"), [
        tb.T("x", (channels,), "uint32"), tb.T("y", (channels,), "uint32"), tb.T("noise", (channels,), "uint32")])
    samples = [{"x": _uint32(rng, (channels,), b)} for b in (16, 16, 12, 20, 8, 2, 16, 21)]
    outputs = _run(tmp_path, model, samples)
    assert np.any(outputs[-1][1] != 0)


# ---------------------------------------------------------------- refusals

def _window(shift=3, length=8, options=None, raw=b""):
    rng = np.random.default_rng(0)
    model = tb.signal_op("SignalWindow", {"shift": shift} if options is None else options, ("x", "w"), ("y",), [
        tb.T("x", (12,), "int16"), tb.T("w", (length,), "int16", data=_int16(rng, (length,))),
        tb.T("y", (12,), "int16")])
    if raw != b"":  # options as these bytes (None: none at all)
        model.ops[0].custom_options = raw
    return model


@pytest.mark.parametrize("model, error, words", [
    (_window(length=5), InvalidModelError, "not a whole number of windows"),
    (_window(options={"shift": 3, "other": 1}), InvalidModelError, "by position"),
    (_window(options={}), InvalidModelError, "has options \\(none\\)"),
    (_window(shift=40, length=6), UnsupportedError, "shift 40"),
    (_window(length=6, raw=None), InvalidModelError, "has no options"),
    (_window(length=6, raw=b"\x01\x02\x03"), InvalidModelError, "not a flexbuffer map"),
    (_window(length=6, raw=b"\xff" * 20), InvalidModelError, "not a readable flexbuffer"),
])
def test_refusals_name_the_operator(tmp_path, model, error, words):
    path = tmp_path / "bad.tflite"
    path.write_bytes(model.build())
    with pytest.raises(error, match=words) as info:
        import_model(path)
    assert "operator 0 (CUSTOM SignalWindow)" in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------- SignalRfft

def _rfft_model(dtype, shape, length):
    return tb.signal_op("SignalRfft", {"T": {"int16": 7, "int32": 2, "float32": 0}[dtype], "fft_length": length},
                        ("x",), ("y",), [tb.T("x", shape, dtype), tb.T("y", (*shape[:-1], length + 2), dtype)])


@pytest.mark.parametrize("shape, length, seed", [((512,), 512, 0), ((400,), 512, 1), ((3, 64), 64, 2),
                                                 ((2, 30), 48, 3), ((60,), 60, 4), ((2, 100), 160, 5),
                                                 ((8,), 8, 6), ((4,), 4, 7), ((2, 2, 36), 36, 8)])
def test_rfft_int16(tmp_path, need_tflm, shape, length, seed):
    """Powers of two (radix 4 and 2) and lengths with radices 3 and 5, rows shorter than the FFT (zero padding),
    several rows, full-scale and small inputs."""
    rng = np.random.default_rng(seed)
    samples = [{"x": _int16(rng, shape, 1 << b)} for b in (15, 15, 12, 6)]
    _run(tmp_path, _rfft_model("int16", shape, length), samples)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("shape, length, seed", [((512,), 512, 0), ((2, 30), 48, 3), ((60,), 60, 4),
                                                 ((2, 100), 160, 5)])
def test_rfft_int32_and_float(tmp_path, need_tflm, dtype, shape, length, seed):
    rng = np.random.default_rng(seed)
    if dtype == "int32":
        samples = [{"x": rng.integers(-(1 << b), 1 << b, size=shape).astype(np.int32)} for b in (31, 31, 24, 10)]
    else:
        samples = [{"x": (rng.standard_normal(shape) * s).astype(np.float32)} for s in (1.0, 1000.0, 1e-3, 30.0)]
    _run(tmp_path, _rfft_model(dtype, shape, length), samples)


# ---------------------------------------------------------------- the front end, operator after operator

def _custom(name: str, options: dict, ins, outs) -> tb.Op:
    from flatbuffers import flexbuffers

    return tb.Op(tb.OPS.CUSTOM, ins, outs, custom=name,
                 custom_options=bytes(flexbuffers.Dumps(dict(sorted(options.items())))))


def _front_end() -> tuple[tb.Model, list[dict]]:
    """micro_speech's audio preprocessor as one model: a Hann window on 30 ms of 16 kHz audio, the auto-scaled
    512-point FFT, its power, 40 channels, their square root scaled back by the FFT's shift (a tensor made at run
    time), the noise subtracted (a state), PCAN and the log; 12 frames in sequence."""
    from tests.conformance import tflite_signal as sig

    w, u, s, ws, n = sig._bands()
    lut = np.random.default_rng(59).integers(0, 32767, size=125).astype(np.int16)
    one = 1 << 14
    sub_opts = {"num_channels": 40, "smoothing": 655, "one_minus_smoothing": one - 655, "alternate_smoothing": 1638,
                "alternate_one_minus_smoothing": one - 1638, "min_signal_remaining": 819, "smoothing_bits": 10,
                "spectral_subtraction_bits": 14, "clamping": False}
    T = tb.T
    model = tb.Model([
        T("audio", (480,), "int16"), T("hann", (480,), "int16", data=sig._hann(480)), T("windowed", (480,), "int16"),
        T("scaled", (480,), "int16"), T("shift", (), "int32"), T("spectrum", (514,), "int16"),
        T("power", (257,), "uint32"), T("w", w.shape, "int16", data=w), T("u", u.shape, "int16", data=u),
        T("s", s.shape, "int16", data=s), T("ws", ws.shape, "int16", data=ws), T("n", n.shape, "int16", data=n),
        T("bank", (40,), "uint64"), T("root", (40,), "uint32"), T("clean", (40,), "uint32"),
        T("noise", (40,), "uint32"), T("lut", lut.shape, "int16", data=lut), T("gained", (40,), "uint32"),
        T("features", (40,), "int16")], [
        _custom("SignalWindow", {"shift": 12}, ("audio", "hann"), ("windowed",)),
        _custom("SignalFftAutoScale", {}, ("windowed",), ("scaled", "shift")),
        _custom("SignalRfft", {"T": 7, "fft_length": 512}, ("scaled",), ("spectrum",)),
        _custom("SignalEnergy", {"start_index": 4, "end_index": 256}, ("spectrum",), ("power",)),
        _custom("SignalFilterBank", {"num_channels": 40}, ("power", "w", "u", "s", "ws", "n"), ("bank",)),
        _custom("SignalFilterBankSquareRoot", {}, ("bank", "shift"), ("root",)),
        _custom("SignalFilterBankSpectralSubtraction", sub_opts, ("root",), ("clean", "noise")),
        _custom("SignalPCAN", {"snr_shift": 6}, ("clean", "noise", "lut"), ("gained",)),
        _custom("SignalFilterBankLog", {"input_correction_bits": 3, "output_scale": 1600}, ("gained",), ("features",)),
    ], ("audio",), ("features",))
    rng = np.random.default_rng(20)
    t = np.arange(480) / 16000
    samples = []
    for k in range(12):
        tone = 6000 * np.sin(2 * np.pi * (300 + 150 * k) * t) + rng.normal(0, 300 + 200 * k, 480)
        samples.append({"audio": np.clip(np.round(tone), -32768, 32767).astype(np.int16)})
    return model, samples


def test_the_audio_front_end_chained(tmp_path, need_tflm):
    outputs = _run(tmp_path, *_front_end())
    features = np.stack([o[0] for o in outputs])
    assert features.std() > 0 and len({f.tobytes() for f in features}) == len(features)


@pytest.mark.qemu
def test_the_audio_front_end_on_qemu_m4(tmp_path, need_qemu, need_tflm):
    """The front end as firmware: its FFT without recursion (a firmware's stack must have a bound, and kiss_fft's
    kf_work recurses), bit for bit TFLite Micro on the board too."""
    _run(tmp_path, *_front_end(), board="qemu-m4")


@pytest.mark.qemu
@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_rfft_of_every_radix_on_qemu_m4(tmp_path, need_qemu, need_tflm, dtype):
    """A 240-point FFT (120 complex points: radices 4, 2, 3 and 5) of two rows of 200 samples, zero padded."""
    rng = np.random.default_rng(4)
    if dtype == "int16":
        samples = [{"x": _int16(rng, (2, 200), 1 << b)} for b in (15, 12, 6)]
    else:
        samples = [{"x": (rng.standard_normal((2, 200)) * s).astype(np.float32)} for s in (1.0, 1000.0, 1e-3)]
    _run(tmp_path, _rfft_model(dtype, (2, 200), 240), samples, board="qemu-m4")


# ---------------------------------------------------------------- CAST to and from uint32

def test_cast_to_and_from_uint32(tmp_path, need_tflm):
    """micro_speech's preprocessor casts SignalEnergy's uint32 to int32 (to slice and pad it) and back to uint32 for
    SignalFilterBank; TFLite Micro's CAST (a static_cast) takes and gives uint32 with every integer type and gives
    float from it: values past int32 wrap, narrowings keep the low bits."""
    T = tb.T
    names = ("as_s32", "back_u32", "as_s8", "as_s16", "as_f32", "from_s16")
    model = tb.Model([T("x", (12,), "uint32"), T("h", (12,), "int16"), T("as_s32", (12,), "int32"),
                      T("back_u32", (12,), "uint32"), T("as_s8", (12,), "int8"), T("as_s16", (12,), "int16"),
                      T("as_f32", (12,), "float32"), T("from_s16", (12,), "uint32")], [
        tb.Op(tb.OPS.CAST, ("x",), ("as_s32",)), tb.Op(tb.OPS.CAST, ("as_s32",), ("back_u32",)),
        tb.Op(tb.OPS.CAST, ("x",), ("as_s8",)), tb.Op(tb.OPS.CAST, ("x",), ("as_s16",)),
        tb.Op(tb.OPS.CAST, ("x",), ("as_f32",)), tb.Op(tb.OPS.CAST, ("h",), ("from_s16",))], ("x", "h"), names)
    rng = np.random.default_rng(59)
    edge = np.array([0, 1, 127, 128, 255, 32767, 32768, 65535, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 16777217],
                    np.uint32)
    samples = [{"x": edge, "h": np.array([0, 1, -1, 127, -128, 32767, -32768, 5, -5, 300, -300, 2], np.int16)}]
    samples += [{"x": _uint32(rng, (12,), b), "h": _int16(rng, (12,))} for b in (32, 31, 16)]
    outputs = _run(tmp_path, model, samples)
    assert outputs[0][0][9] == -(1 << 31) and outputs[0][0][10] == -1 and np.array_equal(outputs[0][1], edge)


def test_cast_of_float_to_uint32_is_refused(tmp_path):
    model = tb.Model([tb.T("x", (4,), "float32"), tb.T("y", (4,), "uint32")],
                     [tb.Op(tb.OPS.CAST, ("x",), ("y",))], ("x",), ("y",))
    path = tmp_path / "cast.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError, match="Cast of float32 to uint32 is not supported"):
        import_model(path)


# ---------------------------------------------------------------- SignalDelay, SignalFramer (streams: states)

@pytest.mark.parametrize("shape, delay, seed", [((16,), 5, 0), ((3, 8), 8, 1), ((2, 10), 23, 2), ((12,), 0, 3)])
def test_delay(tmp_path, need_tflm, shape, delay, seed):
    rng = np.random.default_rng(seed)
    model = tb.signal_op("SignalDelay", {"delay_length": delay}, ("x",), ("y",), [
        tb.T("x", shape, "int16"), tb.T("y", shape, "int16")])
    _run(tmp_path, model, [{"x": _int16(rng, shape)} for _ in range(6)])


@pytest.mark.parametrize("shape, size, step, seed", [((160,), 400, 160, 0), ((2, 48), 20, 8, 1), ((30,), 10, 10, 2),
                                                     ((2, 3, 12), 7, 4, 3)])
def test_framer_with_prefill(tmp_path, need_tflm, shape, size, step, seed):
    rng = np.random.default_rng(seed)
    frames = shape[-1] // step
    model = tb.signal_op("SignalFramer", {"frame_size": size, "frame_step": step, "prefill": True}, ("x",),
                         ("y", "valid"), [tb.T("x", shape, "int16"), tb.T("y", (*shape[:-1], frames, size), "int16"),
                                          tb.T("valid", (), "bool")])
    _run(tmp_path, model, [{"x": _int16(rng, shape)} for _ in range(6)])


def test_framer_without_prefill_is_refused(tmp_path):
    model = tb.signal_op("SignalFramer", {"frame_size": 20, "frame_step": 8, "prefill": False}, ("x",),
                         ("y", "valid"), [tb.T("x", (16,), "int16"), tb.T("y", (2, 20), "int16"),
                                          tb.T("valid", (), "bool")])
    path = tmp_path / "framer.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError, match=r"operator 0 \(CUSTOM SignalFramer\) .*without prefill"):
        import_model(path)


# ---------------------------------------------------------------- SignalOverlapAdd (a state)

@pytest.mark.parametrize("dtype", ["int16", "float32"])
@pytest.mark.parametrize("shape, step, seed", [((1, 400), 160, 0), ((3, 16), 4, 1), ((2, 2, 10), 10, 2),
                                               ((4, 12), 5, 3)])
def test_overlap_add(tmp_path, need_tflm, dtype, shape, step, seed):
    rng = np.random.default_rng(seed)
    out = (*shape[:-2], shape[-2] * step)
    model = tb.signal_op("SignalOverlapAdd", {"T": 7 if dtype == "int16" else 0, "frame_step": step}, ("x",), ("y",),
                         [tb.T("x", shape, dtype), tb.T("y", out, dtype)])
    if dtype == "int16":
        samples = [{"x": _int16(rng, shape, 1 << b)} for b in (15, 15, 13, 8, 15, 2)]  # full scale: saturates
    else:
        samples = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(6)]
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalIrfft

@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
@pytest.mark.parametrize("rows, length, extra, seed", [((), 512, 0, 0), ((3,), 64, 0, 1), ((2,), 48, 4, 2),
                                                       ((), 60, 0, 3), ((2,), 160, 0, 4), ((), 8, 0, 5)])
def test_irfft(tmp_path, need_tflm, dtype, rows, length, extra, seed):
    """Radices 4, 2, 3 and 5; rows holding more bins than the transform reads (``extra``)."""
    rng = np.random.default_rng(seed)
    shape = (*rows, length + 2 + extra)
    model = tb.signal_op("SignalIrfft", {"T": {"int16": 7, "int32": 2, "float32": 0}[dtype], "fft_length": length},
                         ("x",), ("y",), [tb.T("x", shape, dtype), tb.T("y", (*rows, length), dtype)])
    if dtype == "int16":
        samples = [{"x": _int16(rng, shape, 1 << b)} for b in (15, 15, 12, 6)]
    elif dtype == "int32":
        samples = [{"x": rng.integers(-(1 << b), 1 << b, size=shape).astype(np.int32)} for b in (31, 31, 24, 10)]
    else:
        samples = [{"x": (rng.standard_normal(shape) * s).astype(np.float32)} for s in (1.0, 100.0, 1e-3, 7.0)]
    _run(tmp_path, model, samples)


# ---------------------------------------------------------------- SignalStacker (three states)

@pytest.mark.parametrize("channels, left, right, step, seed", [(8, 2, 1, 1, 0), (40, 0, 0, 1, 1), (5, 3, 2, 2, 2),
                                                               (4, 1, 3, 5, 3), (6, 0, 2, 3, 4)])
def test_stacker(tmp_path, need_tflm, channels, left, right, step, seed):
    """Over 10 calls: the invalid calls of the right context's warm-up, and with a step above 1 those between
    outputs, whose output keeps its last value."""
    rng = np.random.default_rng(seed)
    size = channels * (left + right + 1)
    opts = {"num_channels": channels, "stacker_left_context": left, "stacker_right_context": right,
            "stacker_step": step}
    model = tb.signal_op("SignalStacker", opts, ("x",), ("y", "valid"), [
        tb.T("x", (channels,), "int16"), tb.T("y", (size,), "int16"), tb.T("valid", (), "bool")])
    outputs = _run(tmp_path, model, [{"x": _int16(rng, (channels,))} for _ in range(10)])
    if right or step > 1:
        assert not all(bool(o[1]) for o in outputs)


@pytest.mark.parametrize("op, length, words", [("SignalRfft", 14, "prime factor above 5"),
                                               ("SignalRfft", 2, "even length of 4 or more"),
                                               ("SignalIrfft", 42, "prime factor above 5")])
def test_fft_lengths_tflite_micro_cannot_run_are_refused(tmp_path, op, length, words):
    shape_in, shape_out = ((length,), (length + 2,)) if op == "SignalRfft" else ((length + 2,), (length,))
    model = tb.signal_op(op, {"T": 7, "fft_length": length}, ("x",), ("y",), [
        tb.T("x", shape_in, "int16"), tb.T("y", shape_out, "int16")])
    path = tmp_path / "fft.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError, match=words) as info:
        import_model(path)
    assert f"operator 0 (CUSTOM {op})" in str(info.value) and "\n" not in str(info.value)
