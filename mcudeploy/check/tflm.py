"""TensorFlow Lite Micro as the oracle of a .tflite model: its interpreter (PyPI ``tflite-micro``,
reference kernels) runs every sample in a child process, since it prints from C and a model it
cannot run may abort the process. The outputs come back in the order of the model's outputs.

    python -m mcudeploy.check.tflm MODEL.tflite INPUTS.npz OUTPUTS.npz    (the child's side)
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

ARENA_BYTES = 16 << 20  # ample for every model a microcontroller runs; TFLM takes what it needs
TIMEOUT_S = 600


def available() -> str | None:
    """None when tflite-micro can be imported, else why not (one clause)."""
    run = subprocess.run([sys.executable, "-c", "from tflite_micro.python.tflite_micro import runtime"],
                         capture_output=True, text=True)
    if run.returncode == 0:
        return None
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    return (lines[-1] if lines else "it does not import") + " (pip install tflite-micro)"


def run_tflm(model: Union[str, os.PathLike], inputs: Sequence[str], samples) -> list[list[np.ndarray]]:
    """TFLite Micro's outputs on each sample (dict input name -> array; ``inputs`` the model's input
    names in the .tflite's order), per sample and output."""
    why = available()
    if why is not None:
        raise MCUDeployError(f"run --check of a .tflite compares with TensorFlow Lite Micro, which is not "
                             f"installed: {why}")
    with tempfile.TemporaryDirectory(prefix="mcud-tflm-") as tmp:
        src, dst = Path(tmp) / "inputs.npz", Path(tmp) / "outputs.npz"
        np.savez(src, **{f"s{k}_i{i}": np.asarray(s[name]) for k, s in enumerate(samples)
                         for i, name in enumerate(inputs)})
        try:
            run = subprocess.run([sys.executable, "-m", "mcudeploy.check.tflm", os.fspath(model), str(src), str(dst)],
                                 capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise MCUDeployError(f"TensorFlow Lite Micro gave no answer on {model} within {TIMEOUT_S} s") from None
        if run.returncode != 0 or not dst.is_file():
            lines = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
            how = lines[-1][:200] if lines else f"exit status {run.returncode}"
            raise MCUDeployError(f"TensorFlow Lite Micro could not run {model} ({how})")
        with np.load(dst) as data:
            count = int(data["outputs"])
            return [[data[f"s{k}_o{j}"] for j in range(count)] for k in range(len(samples))]


def _worker(model: str, src: str, dst: str) -> None:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_file(model, arena_size=ARENA_BYTES)
    data = np.load(src)
    n_in = 0
    while True:
        try:
            interp.get_input_details(n_in)
        except (IndexError, RuntimeError):
            break
        n_in += 1
    n_out = 0
    while True:
        try:
            interp.get_output_details(n_out)
        except (IndexError, RuntimeError):
            break
        n_out += 1
    samples = len({key.split("_")[0] for key in data.files})
    out = {"outputs": np.array(n_out)}
    for k in range(samples):
        for i in range(n_in):
            interp.set_input(data[f"s{k}_i{i}"], i)
        interp.invoke()
        for j in range(n_out):
            out[f"s{k}_o{j}"] = np.array(interp.get_output(j))
    np.savez(dst, **out)


if __name__ == "__main__":
    _worker(*sys.argv[1:4])
