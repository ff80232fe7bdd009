"""The samples of ``run --dataset``: a data set, labelled or not, from one .npz file of many samples or a
folder of one-sample files.

- ``FILE.npz`` (many samples): one array per model input, named as the input (or ``x`` for a model of one
  input), whose first axis counts the samples: ``[N, *shape]`` of the input, or ``[N, *shape[1:]]`` where the
  input's first dimension is a batch of 1. Labels, optional, under ``y``, ``label`` or ``labels``: integer
  class indices, ``[N]``.
- ``DIR`` (one sample per file): every .npy and .npz file in it, in the order of their names (not its
  subfolders). A .npy holds the input of a model of one input; a .npz an array per input (by name, or ``x``)
  and optionally the sample's label (``y``, ``label`` or ``labels``, one integer). Shapes are the input's, or
  without its batch of 1. Either every file has a label or none.

Values are taken as ``run --input`` takes them (check/inputs.py): in the input's type, a type that converts
without loss, or float for a quantized input, which is quantized with its scale and zero point (said once
per input, not per sample). Anything else, an array the model has no input for, an input named twice (its
name and ``x``), two label arrays, is refused in one sentence naming the file and what it expected.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

from mcudeploy.check.inputs import as_input, input_tensor, quantized_sentence, wanted
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph

LABEL_KEYS = ("y", "label", "labels")
SINGLE_INPUT_KEY = "x"


@dataclass(frozen=True)
class Dataset:
    source: str  # the file or folder given
    samples: list  # per sample: input name -> array of the input's shape and type
    labels: Optional[np.ndarray]  # int64[N], or None
    names: tuple[str, ...]  # per sample, where it came from: "FILE" (a folder's) or "FILE[k]"

    def __len__(self) -> int:
        return len(self.samples)

    def head(self, count: int) -> "Dataset":
        """The first ``count`` samples."""
        return Dataset(self.source, self.samples[:count], None if self.labels is None else self.labels[:count],
                       self.names[:count])


def load_dataset(path: Union[str, os.PathLike], graph: Graph,
                 say: Callable[[str], None] = lambda message: None) -> Dataset:
    """The data set at ``path`` (a .npz of many samples or a folder of one-sample files, see above) as inputs of
    ``graph``; MCUDeployError (one sentence) where it is not one."""
    p = Path(path)
    quantized: dict[str, object] = {}  # input -> the float dtype quantized for it
    if p.is_dir():
        data = _folder(p, graph, quantized)
    elif not p.exists():
        raise MCUDeployError(f"--dataset {path}: no such file or folder")
    elif p.suffix.lower() != ".npz":
        raise MCUDeployError(f"--dataset takes a .npz file of many samples or a folder of .npy/.npz files (one sample "
                             f"each); {path} is neither")
    else:
        data = _many(p, graph, quantized)
    for name, dtype in quantized.items():
        say(quantized_sentence(path, input_tensor(graph, name), dtype))
    return data


def _open(path: Path):
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise MCUDeployError(f"{path} is not a .npy or .npz file ({exc})") from None
    return data


def _array(path: Path, data, key: str) -> np.ndarray:
    try:
        return np.asarray(data[key])
    except (OSError, ValueError, EOFError) as exc:  # an object array (pickled), a damaged member
        raise MCUDeployError(f"{path}: array {key} cannot be read as plain numbers ({exc})") from None


def _keys(path: Path, files: list[str], graph: Graph) -> tuple[dict[str, str], Optional[str]]:
    """(input name -> the array holding it, the label array or None) of an .npz with arrays ``files``."""
    names = graph.model_inputs()
    labels = [k for k in LABEL_KEYS if k in files and k not in names]
    if len(labels) > 1:
        raise MCUDeployError(f"{path} holds labels under both {labels[0]} and {labels[1]}: keep one")
    single = len(names) == 1 and SINGLE_INPUT_KEY in files and SINGLE_INPUT_KEY not in names
    if single and names[0] in files:
        raise MCUDeployError(f"{path} holds both {names[0]} and {SINGLE_INPUT_KEY} for the model's one input: keep one")
    if single:
        inputs = {names[0]: SINGLE_INPUT_KEY}
    else:
        missing = [n for n in names if n not in files]
        if missing:
            also = f"; a model of one input also takes {SINGLE_INPUT_KEY}" if len(names) == 1 else ""
            raise MCUDeployError(f"{path} has no array named {missing[0]} (the model's inputs: {', '.join(names)}{also})")
        inputs = {n: n for n in names}
    extra = [k for k in files if k not in inputs.values() and k not in labels]
    if extra:
        raise MCUDeployError(f"{path}: array {extra[0]} is neither an input of the model ({', '.join(names)}) nor "
                             f"labels ({', '.join(LABEL_KEYS)})")
    return inputs, labels[0] if labels else None


def _batched(t) -> str:
    """The shapes an input's stack of N samples may have."""
    shape = list(t.shape)
    text = f"[N, {', '.join(map(str, shape))}]"
    return text + (f" or [N, {', '.join(map(str, shape[1:]))}]" if shape and shape[0] == 1 else "")


def _converted(where: str, t, x: np.ndarray, quantized: dict) -> np.ndarray:
    """One sample of input ``t``, taken as run --input takes it; a float array quantized is noted in ``quantized``."""
    said = []
    value = as_input(where, t, x, said.append)
    if said:
        quantized.setdefault(t.name, x.dtype)
    return value


def _many(path: Path, graph: Graph, quantized: dict) -> Dataset:
    data = _open(path)
    inputs, label_key = _keys(path, list(data.files), graph)
    stacks, count = {}, None
    for name, key in inputs.items():
        t, x = input_tensor(graph, name), _array(path, data, key)
        if x.ndim == len(t.shape) + 1 and x.shape[1:] == t.shape:
            stack = x
        elif t.shape and t.shape[0] == 1 and x.ndim == len(t.shape) and x.shape[1:] == t.shape[1:]:
            stack = x[:, None]
        else:
            raise MCUDeployError(f"{path}: array {key} is {x.dtype}{list(x.shape)}; input {name} takes the samples "
                                 f"as {_batched(t)} of {wanted(t)}")
        if count is not None and len(stack) != count:
            raise MCUDeployError(f"{path}: array {key} holds {len(stack)} samples, {inputs[graph.model_inputs()[0]]} "
                                 f"{count}")
        stacks[name], count = stack, len(stack)
    if not count:
        raise MCUDeployError(f"{path} holds no sample (the first axis of {', '.join(inputs.values())} is 0)")
    labels = None
    if label_key is not None:
        y = _array(path, data, label_key)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.dtype.kind not in "iu" or y.shape != (count,):
            raise MCUDeployError(f"{path}: labels {label_key} are {y.dtype}{list(y.shape)}; --dataset takes integer "
                                 f"class indices, one per sample (int[{count}], not one-hot)")
        labels = y.astype(np.int64)
    samples = [{name: _converted(f"{path} (sample {k})", input_tensor(graph, name), stacks[name][k], quantized)
                for name in stacks}
               for k in range(count)]
    return Dataset(os.fspath(path), samples, labels, tuple(f"{path.name}[{k}]" for k in range(count)))


def _folder(folder: Path, graph: Graph, quantized: dict) -> Dataset:
    files = sorted(f for f in folder.iterdir() if f.is_file() and f.suffix.lower() in (".npy", ".npz"))
    if not files:
        raise MCUDeployError(f"--dataset {folder} holds no .npy or .npz file (one sample each)")
    names = graph.model_inputs()
    samples, labels = [], []
    for f in files:
        data = _open(f)
        if isinstance(data, np.lib.npyio.NpzFile):
            inputs, label_key = _keys(f, list(data.files), graph)
            arrays = {name: _array(f, data, key) for name, key in inputs.items()}
            label = _label(f, _array(f, data, label_key), label_key) if label_key else None
        else:
            if len(names) != 1:
                raise MCUDeployError(f"{f} holds one array but the model has {len(names)} inputs "
                                     f"({', '.join(names)}): give each sample as a .npz with an array per input")
            arrays, label = {names[0]: data}, None
        sample = {}
        for name, x in arrays.items():
            t = input_tensor(graph, name)
            if t.shape and t.shape[0] == 1 and x.shape == t.shape[1:]:
                x = x[None]
            sample[name] = _converted(os.fspath(f), t, x, quantized)
        samples.append(sample)
        labels.append(label)
    given = [label is not None for label in labels]
    if any(given) and not all(given):
        k = given.index(not given[0])
        which = (files[0], files[k]) if given[0] else (files[k], files[0])
        raise MCUDeployError(f"{which[0]} has a label and {which[1]} none: label every sample of {folder} or none")
    return Dataset(os.fspath(folder), samples, np.array(labels, dtype=np.int64) if all(given) else None,
                   tuple(f.name for f in files))


def _label(path: Path, y: np.ndarray, key: str) -> int:
    if y.dtype.kind not in "iu" or y.size != 1:
        raise MCUDeployError(f"{path}: label {key} is {y.dtype}{list(y.shape)}; a sample's label is one integer, "
                             f"its class index")
    return int(y.reshape(()))
