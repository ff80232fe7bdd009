"""TensorFlow Lite Micro as the oracle of a .tflite model: its interpreter (PyPI ``tflite-micro``,
reference kernels) runs every sample in a child process, since it prints from C and a model it
cannot run may abort the process. The outputs come back in the order of the model's outputs.

    python -m mcudeploy.check.tflm MODEL.tflite INPUTS.npz OUTPUTS.npz    (the child's side)
    python -m mcudeploy.check.tflm --jobs LISTING   (several: a line of MODEL INPUTS OUTPUTS each, tab-separated)
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

ARENA_BYTES = 16 << 20  # ample for every model a microcontroller runs; TFLM takes what it needs
TIMEOUT_S = 600


@functools.lru_cache(maxsize=1)  # a child Python each time: asked once per process
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
    names in the .tflite's order), per sample and output. The samples run in order on one interpreter, whose
    variable tensors (an LSTM's state) carry over from one to the next."""
    why = available()
    if why is not None:
        raise MCUDeployError(f"run --check of a .tflite compares with TensorFlow Lite Micro, which is not "
                             f"installed: {why}")
    with tempfile.TemporaryDirectory(prefix="mcud-tflm-") as tmp:
        src, dst = Path(tmp) / "inputs.npz", Path(tmp) / "outputs.npz"
        np.savez(src, **{f"s{k}_i{i}": np.asarray(s[name]) for k, s in enumerate(samples)
                         for i, name in enumerate(inputs)})
        try:
            run = subprocess.run([sys.executable, "-m", "mcudeploy.check.tflm", os.fspath(model), str(src), str(dst)], capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise MCUDeployError(f"TensorFlow Lite Micro gave no answer on {model} within {TIMEOUT_S} s") from None
        if run.returncode != 0 or not dst.is_file():
            lines = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
            how = lines[-1][:200] if lines else f"exit status {run.returncode}"
            raise MCUDeployError(f"TensorFlow Lite Micro could not run {model} ({how})")
        with np.load(dst) as data:
            count = int(data["outputs"])
            return [[data[f"s{k}_o{j}"] for j in range(count)] for k in range(len(samples))]


def run_tflm_many(jobs: Sequence[tuple]) -> list:
    """``run_tflm`` on several models in one child process (a test suite's hundreds of small models): per job
    (model, input names, samples), its outputs, or the MCUDeployError saying why TFLite Micro could not run
    it. A child that dies (a model that aborts TFLite Micro) costs only its own job: the rest run again one
    by one."""
    why = available()
    if why is not None:
        raise MCUDeployError(f"TensorFlow Lite Micro is not installed: {why}")
    with tempfile.TemporaryDirectory(prefix="mcud-tflm-") as tmp:
        listing = []
        for k, (model, inputs, samples) in enumerate(jobs):
            src, dst = Path(tmp) / f"in{k}.npz", Path(tmp) / f"out{k}.npz"
            np.savez(src, **{f"s{j}_i{i}": np.asarray(s[name]) for j, s in enumerate(samples)
                             for i, name in enumerate(inputs)})
            listing.append(f"{os.fspath(model)}\t{src}\t{dst}")
        (Path(tmp) / "jobs.txt").write_text("\n".join(listing) + "\n")
        try:
            subprocess.run([sys.executable, "-m", "mcudeploy.check.tflm", "--jobs", str(Path(tmp) / "jobs.txt")],
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
        results = []
        for k, (model, inputs, samples) in enumerate(jobs):
            dst = Path(tmp) / f"out{k}.npz"
            error = Path(tmp) / f"out{k}.npz.error"
            if error.is_file():
                results.append(MCUDeployError(f"TensorFlow Lite Micro could not run {model} ({error.read_text()})"))
                continue
            if not dst.is_file():
                try:
                    results.append(run_tflm(model, inputs, samples))
                except MCUDeployError as exc:
                    results.append(exc)
                continue
            with np.load(dst) as data:
                count = int(data["outputs"])
                results.append([[data[f"s{j}_o{i}"] for i in range(count)] for j in range(len(samples))])
        return results


def _jobs(listing: str) -> None:
    for line in Path(listing).read_text().splitlines():
        if not line.strip():
            continue
        model, src, dst = line.split("\t")
        try:
            _worker(model, src, dst)
        except Exception as exc:  # noqa: BLE001  (the interpreter's refusal, kept for that job alone)
            Path(dst + ".error").write_text(f"{type(exc).__name__}: {exc}"[:200])


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
    if sys.argv[1] == "--jobs":
        _jobs(sys.argv[2])
    else:
        _worker(*sys.argv[1:5])
