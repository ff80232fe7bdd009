"""Seeded random samples of a graph's inputs: what ``run`` feeds a model without --input, and what
measure, the traced build and tune's timing run once (below both check/ and device/)."""
from __future__ import annotations

import numpy as np

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
            elif t.dtype in ("int8", "uint8", "int16", "int32", "uint16", "uint32", "uint64"):
                # a quantized input over every code of its type; plain integers (indices, counts) in [-128, 127]
                info = np.iinfo(DTYPES[t.dtype])
                lo, hi = (int(info.min), int(info.max)) if t.quant is not None and t.dtype != "int32" else \
                    (max(int(info.min), -128), min(int(info.max), 127))
                sample[name] = rng.integers(lo, hi + 1, size=t.shape).astype(DTYPES[t.dtype])
            else:
                sample[name] = rng.standard_normal(t.shape).astype(DTYPES[t.dtype])
        samples.append(sample)
    return samples
