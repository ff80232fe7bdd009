"""TensorFlow Lite Micro's Signal library: the custom operators of its audio front end ("CUSTOM SignalWindow",
...), whose options are a flexbuffer map (``op.CustomOptionsAsNumpy()``).

TFLite Micro reads the options by position in the map's sorted keys (``FlexbufferWrapper::ElementAsInt32(i)``), so
a map with other keys than the operator's own would be read as other values: such options are refused, as are
missing or unreadable ones, in one sentence naming the operator (the importer's label).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.errors import InvalidModelError
from mcudeploy.frontend.tflite.importer import handles
from mcudeploy.ir import Graph, Node, Tensor
from mcudeploy.ops import registry


def custom_options(imp, op, keys: tuple[str, ...]) -> dict:
    """The operator's flexbuffer options as a dict holding exactly ``keys``."""
    from flatbuffers import flexbuffers

    raw = op.CustomOptionsAsNumpy() if op.CustomOptionsLength() else None
    if raw is None or not len(raw):
        raise InvalidModelError(f"has no options (TFLite Micro needs {', '.join(keys)})")
    try:
        found = flexbuffers.Loads(bytes(raw.tobytes()))
    except Exception as exc:  # noqa: BLE001  (the flexbuffers reader raises what a damaged buffer makes it)
        raise InvalidModelError(f"has options that are not a readable flexbuffer ({type(exc).__name__})") from None
    if not isinstance(found, dict):
        raise InvalidModelError(f"has options that are not a flexbuffer map (TFLite Micro needs {', '.join(keys)})")
    if sorted(found) != sorted(keys):
        raise InvalidModelError(f"has options {', '.join(sorted(found)) or '(none)'} where TFLite Micro reads exactly "
                                f"{', '.join(sorted(keys))} by position")
    return found


def int_option(opts: dict, key: str) -> int:
    """An integer option (a flexbuffer bool or int, as TFLite Micro's AsInt32/AsBool read either)."""
    value = opts[key]
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int):
        raise InvalidModelError(f"has option {key} = {value!r} where TFLite Micro reads an integer")
    return value


def _check_arity(imp, ins, outs, n_in: int, n_out: int) -> None:
    if len(ins) != n_in or len(outs) != n_out or any(i < 0 for i in ins):
        imp.fail(f"has {len(ins)} inputs and {len(outs)} outputs where TFLite Micro's takes {n_in} and {n_out}", True)


def _node(imp, op: str, inputs, outs, attrs: dict) -> None:
    """IR node ``op`` making TFLite tensors ``outs`` (several outputs), each checked against the operator's rule."""
    names = []
    for o in outs:
        name = imp.tname(o)
        imp.tensors[name] = Tensor(name, imp.shape(o), imp.dtype(o))
        names.append(name)
    node = Node(f"{imp.label.split(' (')[0].replace(' ', '_')}:{names[0]}", op, tuple(inputs), tuple(names), attrs)
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    for (shape, dtype), name in zip(registry.get(op).infer(scope, node), names):
        t = imp.tensors[name]
        if (tuple(shape), dtype) != (t.shape, t.dtype):
            imp.fail(f"makes {t.dtype}{list(t.shape)} where mcudeploy's {op} gives {dtype}{list(shape)}", True)
    imp.nodes.append(node)


def _values(imp, ins) -> tuple[str, ...]:
    return tuple(imp.value(i, "plain") for i in ins)


@handles("CUSTOM SignalWindow")
def signal_window(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 2, 1)
    opts = custom_options(imp, op, ("shift",))
    imp.emit("SignalWindow", _values(imp, ins), outs[0], {"shift": int_option(opts, "shift")})


@handles("CUSTOM SignalFftAutoScale")
def signal_fft_auto_scale(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 2)
    _node(imp, "SignalFftAutoScale", _values(imp, ins), outs, {})


@handles("CUSTOM SignalEnergy")
def signal_energy(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 1)
    opts = custom_options(imp, op, ("end_index", "start_index"))
    shape = imp.shape(outs[0])
    if len(shape) != 1:
        imp.fail(f"makes a {len(shape)}-D output where TFLite Micro's makes 1-D", True)
    imp.emit("SignalEnergy", _values(imp, ins), outs[0], {"start_index": int_option(opts, "start_index"),
                                                          "end_index": int_option(opts, "end_index"),
                                                          "bins": shape[0]})


@handles("CUSTOM SignalFilterBank")
def signal_filter_bank(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 6, 1)
    opts = custom_options(imp, op, ("num_channels",))
    imp.emit("SignalFilterBank", _values(imp, ins), outs[0], {"num_channels": int_option(opts, "num_channels")})


@handles("CUSTOM SignalFilterBankSquareRoot")
def signal_filter_bank_square_root(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 2, 1)
    imp.emit("SignalFilterBankSquareRoot", _values(imp, ins), outs[0], {})


@handles("CUSTOM SignalFilterBankLog")
def signal_filter_bank_log(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 1)
    opts = custom_options(imp, op, ("input_correction_bits", "output_scale"))
    imp.emit("SignalFilterBankLog", _values(imp, ins), outs[0],
             {k: int_option(opts, k) for k in ("input_correction_bits", "output_scale")})


@handles("CUSTOM SignalPCAN")
def signal_pcan(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 3, 1)
    opts = custom_options(imp, op, ("snr_shift",))
    imp.emit("SignalPCAN", _values(imp, ins), outs[0], {"snr_shift": int_option(opts, "snr_shift")})


@handles("CUSTOM SignalFilterBankSpectralSubtraction")
def signal_spectral_subtraction(imp, op, ins, outs):
    """The noise estimate TFLite Micro keeps in the operator (zeros at reset) is a state of the model; its next
    value is the node's second output, which the file's second output tensor copies."""
    from mcudeploy.ops.signal_spectral_subtraction import KEYS

    _check_arity(imp, ins, outs, 1, 2)
    attrs = {k: int_option(custom_options(imp, op, KEYS), k) for k in KEYS}
    if imp.dtype(outs[1]) != "uint32" or imp.shape(outs[1]) != imp.shape(outs[0]):
        imp.fail(f"makes a noise estimate of {imp.dtype(outs[1])}{list(imp.shape(outs[1]))} where TFLite Micro's is "
                 f"uint32{list(imp.shape(outs[0]))}", True)
    nxt = _stateful(imp, "SignalFilterBankSpectralSubtraction", ins[0], outs[:1], attrs, imp.shape(outs[1]), "uint32")
    imp.emit("Copy", (nxt,), outs[1])


@handles("CUSTOM SignalRfft")
def signal_rfft(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 1)
    opts = custom_options(imp, op, ("T", "fft_length"))
    imp.emit("SignalRfft", _values(imp, ins), outs[0], {"fft_length": int_option(opts, "fft_length")})


def _stateful(imp, op: str, x: int, outs, attrs: dict, state_shape, dtype: str) -> str:
    """IR node ``op`` reading TFLite tensor ``x`` and, when ``state_shape`` is given, a state of the model (zeros, as
    TFLite Micro's reset leaves the operator's buffer) whose next value is the node's last output; it makes the TFLite
    tensors ``outs`` first. Returns the next value's name ("" without a state)."""
    names = []
    for o in outs:
        name = imp.tname(o)
        imp.tensors[name] = Tensor(name, imp.shape(o), imp.dtype(o))
        names.append(name)
    inputs, nxt = [imp.value(x, "plain")], ""
    if state_shape is not None:
        state = f"{names[0]}/state"
        imp.tensors[state] = Tensor(state, tuple(state_shape), dtype, "state", None,
                                    np.zeros(tuple(state_shape), np.dtype(dtype)))
        nxt = f"{state}/next"
        imp.tensors[nxt] = Tensor(nxt, tuple(state_shape), dtype)
        inputs.append(state)
    node = Node(f"{imp.label.split(' (')[0].replace(' ', '_')}:{names[0]}", op, tuple(inputs),
                tuple(names) + ((nxt,) if nxt else ()), attrs)
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    for (shape, got), name in zip(registry.get(op).infer(scope, node), node.outputs):
        t = imp.tensors[name]
        if (tuple(shape), got) != (t.shape, t.dtype):
            imp.fail(f"makes {t.dtype}{list(t.shape)} where mcudeploy's {op} gives {got}{list(shape)}", True)
    imp.nodes.append(node)
    if nxt:
        imp.kept.append((inputs[1], nxt))
    return nxt


@handles("CUSTOM SignalDelay")
def signal_delay(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 1)
    d = int_option(custom_options(imp, op, ("delay_length",)), "delay_length")
    if d < 0:
        imp.fail(f"has delay_length {d}", True)
    shape = imp.shape(ins[0])
    _stateful(imp, "SignalDelay", ins[0], outs, {"delay_length": d}, (*shape[:-1], d) if d and shape else None,
              "int16")


@handles("CUSTOM SignalFramer")
def signal_framer(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 2)
    opts = custom_options(imp, op, ("frame_size", "frame_step", "prefill"))
    size, step = int_option(opts, "frame_size"), int_option(opts, "frame_step")
    if not int_option(opts, "prefill"):
        imp.fail("without prefill is not supported (TensorFlow Lite Micro leaves its first frames unwritten, holding "
                 "whatever its arena held)")
    shape = imp.shape(ins[0])
    keep = size - step
    _stateful(imp, "SignalFramer", ins[0], outs, {"frame_size": size, "frame_step": step},
              (*shape[:-1], keep) if keep > 0 and shape else None, "int16")


@handles("CUSTOM SignalOverlapAdd")
def signal_overlap_add(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 1)
    opts = custom_options(imp, op, ("T", "frame_step"))
    shape, dtype = imp.shape(ins[0]), imp.dtype(ins[0])
    if len(shape) < 2:
        imp.fail(f"takes a {len(shape)}-D input where TFLite Micro's takes frames of 2 dimensions or more", True)
    _stateful(imp, "SignalOverlapAdd", ins[0], outs, {"frame_step": int_option(opts, "frame_step")},
              (*shape[:-2], shape[-1]), dtype)


@handles("CUSTOM SignalIrfft")
def signal_irfft(imp, op, ins, outs):
    _check_arity(imp, ins, outs, 1, 1)
    opts = custom_options(imp, op, ("T", "fft_length"))
    imp.emit("SignalIrfft", _values(imp, ins), outs[0], {"fft_length": int_option(opts, "fft_length")})


@handles("CUSTOM SignalStacker")
def signal_stacker(imp, op, ins, outs):
    """Three states (signal_stacker.py): the frames held, [count, first call done] and the last output."""
    from mcudeploy.ops.signal_stacker import SignalStacker

    _check_arity(imp, ins, outs, 1, 2)
    keys = ("num_channels", "stacker_left_context", "stacker_right_context", "stacker_step")
    opts = custom_options(imp, op, keys)
    attrs = {k: int_option(opts, k) for k in keys}
    _, _, context, _ = SignalStacker()._geometry(Node("probe", "SignalStacker", (), (), attrs))
    size = (context * attrs["num_channels"],)
    names = []
    for o in outs:
        name = imp.tname(o)
        imp.tensors[name] = Tensor(name, imp.shape(o), imp.dtype(o))
        names.append(name)
    states, nexts = [], []
    for what, shape, dtype in (("frames", size, "int16"), ("count", (2,), "int32"), ("last", size, "int16")):
        state = f"{names[0]}/{what}"
        imp.tensors[state] = Tensor(state, shape, dtype, "state", None, np.zeros(shape, np.dtype(dtype)))
        imp.tensors[f"{state}/next"] = Tensor(f"{state}/next", shape, dtype)
        states.append(state)
        nexts.append(f"{state}/next")
    node = Node(f"{imp.label.split(' (')[0].replace(' ', '_')}:{names[0]}", "SignalStacker",
                (imp.value(ins[0], "plain"), *states), (*names, *nexts), attrs)
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    for (shape, got), name in zip(registry.get(node.op).infer(scope, node), node.outputs):
        t = imp.tensors[name]
        if (tuple(shape), got) != (t.shape, t.dtype):
            imp.fail(f"makes {t.dtype}{list(t.shape)} where mcudeploy's SignalStacker gives {got}{list(shape)}", True)
    imp.nodes.append(node)
    imp.kept.extend(zip(states, nexts))
