"""Inputs as the generated C takes them and outputs as it gives them: the bytes of each graph
input of a sample, row-major in the tensor's dtype, and arrays back from an output's bytes. The
host build and the boards share this layout."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, Graph


def sample_bytes(graph: Graph, sample: Mapping[str, np.ndarray]) -> list[bytes]:
    """The bytes of each input the caller gives (Graph.model_inputs) of ``sample``, in graph order."""
    out = []
    for name in graph.model_inputs():
        t = graph[name]
        x = np.asarray(sample[name])
        if x.shape != t.shape:
            raise MCUDeployError(f"input {name} has shape {x.shape}; the model expects {t.shape}")
        out.append(np.ascontiguousarray(x.astype(DTYPES[t.dtype], copy=False)).tobytes())
    return out


def output_array(graph: Graph, name: str, data: bytes) -> np.ndarray:
    """Graph output ``name`` from its bytes."""
    t = graph[name]
    return np.frombuffer(data, dtype=DTYPES[t.dtype]).reshape(t.shape).copy()
