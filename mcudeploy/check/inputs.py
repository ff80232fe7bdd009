"""The inputs ``run`` feeds a model: the arrays of a .npy/.npz file (seeded random samples: mcudeploy/samples.py)."""
from __future__ import annotations

import dataclasses
import os
import zipfile
from typing import Callable, Union

import numpy as np

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, Graph


def load_input(path: Union[str, os.PathLike], graph: Graph,
               say: Callable[[str], None] = lambda message: None) -> list[dict[str, np.ndarray]]:
    """The one sample of a .npy (a model of one input) or .npz (by input name) file, each array taken as its
    input's type: as it is where the types are the same, or converted where that loses nothing (an integer type
    inside the input's, a float type to float32); a float array for a quantized integer input is quantized with
    the input's scale and zero point, as the quantize helper of the model's header does (``say`` tells which).
    Anything else, and a wrong shape, is refused in one sentence naming the input and what it must be."""
    names = graph.model_inputs()
    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.lib.npyio.NpzFile):
            missing = [n for n in names if n not in data.files]
            if missing:
                raise MCUDeployError(f"{path} has no array named {missing[0]} (the model's inputs: "
                                     f"{_expected(graph)})")
            extra = [n for n in data.files if n not in names]
            if extra:
                raise MCUDeployError(f"{path} holds {len(data.files)} arrays, {extra[0]} being none of the model's "
                                     f"inputs ({_expected(graph)})")
            sample = {n: data[n] for n in names}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise MCUDeployError(f"{path} is not a .npy or .npz file of numbers ({_first(exc)})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        if len(names) != 1:
            raise MCUDeployError(f"{path} holds one array but the model has {len(names)} inputs ({_expected(graph)}); "
                                 f"give them by name in a .npz")
        sample = {names[0]: data}
    return [{name: as_input(path, input_tensor(graph, name), x, say) for name, x in sample.items()}]


def input_tensor(graph: Graph, name: str):
    """Input ``name`` with its quantization: its own, or for an integer input that only layout operators read (an
    ONNX model's NHWC input before its Transpose) theirs, which the model's header gives too (analysis/io.py)."""
    t = graph[name]
    if t.quant is None and t.dtype != "float32":
        from mcudeploy.analysis.io import quantization

        q = quantization(graph, name)
        if q is not None:
            return dataclasses.replace(t, quant=q)
    return t


def _expected(graph: Graph) -> str:
    """"x: int8[1, 49, 10, 1] (...), y: float32[1, 4]": every input with its type and shape."""
    return ", ".join(f"{n}: {wanted(graph[n])}" for n in graph.model_inputs())


def _first(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


def wanted(t) -> str:
    """"int16[1, 49, 10, 1] (scale 0.00013, zero point 0)": an input's type, shape and quantization."""
    if t.quant is None or t.dtype == "float32":
        return f"{t.dtype}{list(t.shape)}"
    if len(t.quant.scale) > 1:
        return f"{t.dtype}{list(t.shape)} (quantized per channel)"
    return f"{t.dtype}{list(t.shape)} (scale {t.quant.scale[0]:.6g}, zero point {t.quant.zero_point[0]})"


def _quant_text(t) -> str:
    if len(t.quant.scale) > 1:
        return "its scales and zero points per channel"
    return f"scale {t.quant.scale[0]:.6g} and zero point {t.quant.zero_point[0]}"


def as_input(path, t, x: np.ndarray, say: Callable[[str], None]) -> np.ndarray:
    """Array ``x`` of the file as input tensor ``t``, or the one-sentence refusal."""
    given = f"{path}: input {t.name} is {x.dtype}{list(x.shape)}"
    if tuple(x.shape) != t.shape:
        raise MCUDeployError(f"{given}; the model expects {wanted(t)}")
    want = np.dtype(DTYPES[t.dtype])
    if x.dtype == want:
        return x
    kind = x.dtype.kind
    if t.dtype == "float32" and kind in "fiu":
        return x.astype(np.float32)
    if want.kind in "iu" and kind in "iu" and np.can_cast(x.dtype, want, "safe"):
        return x.astype(want)
    if want.kind in "iu" and kind == "f" and t.quant is not None:
        if np.isnan(x).any():
            raise MCUDeployError(f"{given} with NaN values, which have no {t.dtype} code: give numbers")
        say(quantized_sentence(path, t, x.dtype))
        return quantize(x, t)
    hint = " (or float values, which are quantized with its scale and zero point)" if t.quant is not None and \
        want.kind in "iu" else ""
    raise MCUDeployError(f"{given}; the model expects {wanted(t)}: give it as {t.dtype}{hint}")


def quantized_sentence(path, t, dtype) -> str:
    """What is said once when the float values of ``path`` are quantized for input ``t``."""
    return (f"input {t.name}: the {np.dtype(dtype)} values of {path} quantized to {t.dtype} with {_quant_text(t)} (to "
            f"the nearest, ties to even, saturated), as the quantize helper of the model's header does")


def quantize(x: np.ndarray, t) -> np.ndarray:
    """Real values ``x`` as the codes of quantized tensor ``t``: x / scale in float32, rounded to the nearest (ties
    to even), plus the zero point, saturated to the type; NaN gives the lowest code. The quantize helper of the
    generated header (templates/model.h.j2) computes the same."""
    info = np.iinfo(DTYPES[t.dtype])
    shape = [1] * len(t.shape)
    if t.quant.axis is not None:
        shape[t.quant.axis] = -1
    scale = np.reshape(t.quant.scale_array().astype(np.float32), shape)
    zero = np.reshape(t.quant.zp_array(), shape)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        v = np.clip(x.astype(np.float32) / scale, -16777216.0, 16777216.0)
    v = np.where(np.isnan(v), -16777216.0, v)
    codes = np.rint(v).astype(np.int64) + zero
    return np.clip(codes, info.min, info.max).astype(DTYPES[t.dtype])
