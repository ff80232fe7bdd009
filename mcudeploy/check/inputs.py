"""The inputs ``run`` feeds a model: seeded random samples, or the arrays of a .npy/.npz file."""
from __future__ import annotations

import os
from typing import Union

import numpy as np

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, Graph


def random_inputs(graph: Graph, count: int = 20, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """``count`` seeded samples: float inputs standard normal, quantized integer inputs over all their codes,
    plain integers in [-128, 127], bools either way."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        sample = {}
        for name in graph.model_inputs():
            t = graph[name]
            if t.dtype == "bool":
                sample[name] = rng.integers(0, 2, size=t.shape).astype(np.bool_)
            elif t.dtype in ("int8", "uint8", "int16", "int32"):
                # a quantized input over every code of its type; plain integers (indices, counts) in [-128, 127]
                info = np.iinfo(DTYPES[t.dtype])
                lo, hi = (int(info.min), int(info.max)) if t.quant is not None and t.dtype != "int32" else \
                    (max(int(info.min), -128), min(int(info.max), 127))
                sample[name] = rng.integers(lo, hi + 1, size=t.shape).astype(DTYPES[t.dtype])
            else:
                sample[name] = rng.standard_normal(t.shape).astype(DTYPES[t.dtype])
        samples.append(sample)
    return samples


def load_input(path: Union[str, os.PathLike], graph: Graph) -> list[dict[str, np.ndarray]]:
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise MCUDeployError(f"{path} is not a .npy or .npz file ({exc})") from None
    names = graph.model_inputs()
    if isinstance(data, np.lib.npyio.NpzFile):
        missing = [n for n in names if n not in data.files]
        if missing:
            raise MCUDeployError(f"{path} has no array named {missing[0]} (the model's inputs: "
                                 f"{', '.join(names)})")
        sample = {n: data[n] for n in names}
    else:
        if len(names) != 1:
            raise MCUDeployError(f"{path} holds one array but the model has {len(names)} inputs; use .npz")
        sample = {names[0]: data}
    for name, x in sample.items():
        t = graph[name]
        if tuple(x.shape) != t.shape:
            raise MCUDeployError(f"{path}: input {name} has shape {tuple(x.shape)}; the model expects {t.shape}")
        sample[name] = x.astype(DTYPES[t.dtype])
    return [sample]
