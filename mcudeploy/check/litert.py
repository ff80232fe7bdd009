"""LiteRT (TensorFlow Lite's interpreter, PyPI ``ai-edge-litert``) as the second oracle of a .tflite model,
for what TensorFlow Lite Micro cannot run: a Keras 3 export whose nearest upsampling became TILE (not in
TFLite Micro's resolver), float16 weights, and the like. It runs with its reference kernels
(``OpResolverType.BUILTIN_REF``, the same arithmetic as TFLite Micro's; its default resolver where the
reference one lacks an operator's version), in a child process like
check/tflm.py, samples in order on one interpreter (a stateful model's variables carry over).

Where the reference kernels abort on a model too (one Keras MobileNetV2 int8 export: TFLite Micro and LiteRT's
reference resolver both stop), ``kernels="default"`` runs LiteRT's default (optimized) kernels, the last
oracle: their arithmetic is TFLite's but not always rounded as the reference kernels round, and the verdict says
which was used (check/tflite.py).

    python -m mcudeploy.check.litert MODEL.tflite INPUTS.npz OUTPUTS.npz [reference|default]    (the child's side)
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence, Union

import numpy as np

from mcudeploy.errors import MCUDeployError

TIMEOUT_S = 600
NAME = "LiteRT's reference kernels"
DEFAULT_NAME = "LiteRT's default (optimized) kernels"


@functools.lru_cache(maxsize=1)  # a child Python each time: asked once per process
def available() -> str | None:
    """None when ai-edge-litert can be imported, else why not (one clause)."""
    run = subprocess.run([sys.executable, "-c", "from ai_edge_litert import interpreter"], capture_output=True,
                         text=True)
    if run.returncode == 0:
        return None
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    return (lines[-1] if lines else "it does not import") + " (pip install ai-edge-litert)"


def run_litert(model: Union[str, os.PathLike], inputs: Sequence[str], samples,
               kernels: str = "reference") -> list[list[np.ndarray]]:
    """LiteRT's outputs on each sample (dict input name -> array; ``inputs`` the model's input names in the
    .tflite's order), per sample and output; ``kernels`` "reference" or "default" (its optimized ones)."""
    why = available()
    if why is not None:
        raise MCUDeployError(f"LiteRT, the reference for .tflite models TensorFlow Lite Micro cannot run, is not "
                             f"installed: {why}")
    with tempfile.TemporaryDirectory(prefix="mcud-litert-") as tmp:
        src, dst = Path(tmp) / "inputs.npz", Path(tmp) / "outputs.npz"
        np.savez(src, **{f"s{k}_i{i}": np.asarray(s[name]) for k, s in enumerate(samples)
                         for i, name in enumerate(inputs)})
        try:
            run = subprocess.run([sys.executable, "-m", "mcudeploy.check.litert", os.fspath(model), str(src), str(dst),
                                  kernels], capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise MCUDeployError(f"LiteRT gave no answer on {model} within {TIMEOUT_S} s") from None
        if run.returncode != 0 or not dst.is_file():
            lines = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
            how = lines[-1][:200] if lines else f"exit status {run.returncode}"
            which = "" if kernels == "reference" else f" with its {kernels} kernels"
            raise MCUDeployError(f"LiteRT could not run {model}{which} either ({how})")
        with np.load(dst) as data:
            count = int(data["outputs"])
            return [[data[f"s{k}_o{j}"] for j in range(count)] for k in range(len(samples))]


# Operators that only move data, whose reference kernel takes every type whatever version the file names, but
# which LiteRT's reference resolver registers at fewer versions than the converter writes (TILE: version 3 for
# int8, the resolver stops at 2): the copy given to it names the highest version it registers.
MOVES_DATA = ("TILE",)


def _with_version(data: bytes, builtin: str, version: int) -> bytes:
    """The model with every operator code of ``builtin`` at ``version`` (the field rewritten in place)."""
    import tflite

    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    out = bytearray(data)
    model = tflite.Model.GetRootAsModel(data, 0)
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        if names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode())) == builtin:
            slot = code._tab.Offset(8)  # OperatorCode.version
            if slot:
                out[code._tab.Pos + slot:code._tab.Pos + slot + 4] = version.to_bytes(4, "little", signed=True)
    return bytes(out)


def _reference_interpreter(model: str):
    """LiteRT with its reference kernels; a data-moving operator of a version they lack is named at one they
    have (MOVES_DATA); anything else they lack: the default kernels."""
    import re

    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    data = Path(model).read_bytes()
    for _ in range(8):
        try:
            return Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        except (RuntimeError, ValueError) as exc:
            found = re.search(r"builtin opcode '(\w+)' version '(\d+)'", str(exc))
            if not found or found.group(1) not in MOVES_DATA or int(found.group(2)) <= 1:
                break
            data = _with_version(data, found.group(1), int(found.group(2)) - 1)
    return Interpreter(model_path=model)


def _worker(model: str, src: str, dst: str, kernels: str = "reference") -> None:
    if kernels == "default":
        from ai_edge_litert.interpreter import Interpreter
        interp = Interpreter(model_path=model)
    else:
        interp = _reference_interpreter(model)
    interp.allocate_tensors()
    ins, outs = interp.get_input_details(), interp.get_output_details()
    data = np.load(src)
    samples = len({key.split("_")[0] for key in data.files})
    out = {"outputs": np.array(len(outs))}
    for k in range(samples):
        for i, d in enumerate(ins):
            interp.set_tensor(d["index"], data[f"s{k}_i{i}"].astype(d["dtype"]))
        interp.invoke()
        for j, d in enumerate(outs):
            out[f"s{k}_o{j}"] = np.array(interp.get_tensor(d["index"]))
    np.savez(dst, **out)


if __name__ == "__main__":
    _worker(*sys.argv[1:5])
