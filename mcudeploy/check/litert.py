"""LiteRT (TensorFlow Lite's interpreter, PyPI ``ai-edge-litert``) as the second oracle of a .tflite model,
for what TensorFlow Lite Micro cannot run: a Keras 3 export whose nearest upsampling became TILE (not in
TFLite Micro's resolver), float16 weights, and the like. It runs with its reference kernels
(``OpResolverType.BUILTIN_REF``, the same arithmetic as TFLite Micro's; its default resolver where the
reference one lacks an operator's version), in a child process like
check/tflm.py, samples in order on one interpreter (a stateful model's variables carry over).

    python -m mcudeploy.check.litert MODEL.tflite INPUTS.npz OUTPUTS.npz [--reset]   (the child's side)
"""
from __future__ import annotations

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


def available() -> str | None:
    """None when ai-edge-litert can be imported, else why not (one clause)."""
    run = subprocess.run([sys.executable, "-c", "from ai_edge_litert import interpreter"], capture_output=True,
                         text=True)
    if run.returncode == 0:
        return None
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    return (lines[-1] if lines else "it does not import") + " (pip install ai-edge-litert)"


def run_litert(model: Union[str, os.PathLike], inputs: Sequence[str], samples,
               reset: bool = False) -> list[list[np.ndarray]]:
    """LiteRT's outputs on each sample (dict input name -> array; ``inputs`` the model's input names in the
    .tflite's order), per sample and output; ``reset``: its variable tensors start again at each sample."""
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
                                  *(["--reset"] if reset else [])], capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise MCUDeployError(f"LiteRT gave no answer on {model} within {TIMEOUT_S} s") from None
        if run.returncode != 0 or not dst.is_file():
            lines = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
            how = lines[-1][:200] if lines else f"exit status {run.returncode}"
            raise MCUDeployError(f"LiteRT could not run {model} either ({how})")
        with np.load(dst) as data:
            count = int(data["outputs"])
            return [[data[f"s{k}_o{j}"] for j in range(count)] for k in range(len(samples))]


def _worker(model: str, src: str, dst: str, reset: str = "") -> None:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:
        interp = Interpreter(model_path=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    except (RuntimeError, ValueError):  # an operator version only its default resolver registers (int8 TILE)
        interp = Interpreter(model_path=model)
    interp.allocate_tensors()
    ins, outs = interp.get_input_details(), interp.get_output_details()
    data = np.load(src)
    samples = len({key.split("_")[0] for key in data.files})
    out = {"outputs": np.array(len(outs))}
    for k in range(samples):
        if reset == "--reset":
            interp.reset_all_variables()
        for i, d in enumerate(ins):
            interp.set_tensor(d["index"], data[f"s{k}_i{i}"].astype(d["dtype"]))
        interp.invoke()
        for j, d in enumerate(outs):
            out[f"s{k}_o{j}"] = np.array(interp.get_tensor(d["index"]))
    np.savez(dst, **out)


if __name__ == "__main__":
    _worker(*sys.argv[1:5])
