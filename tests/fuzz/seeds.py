"""The models the fuzzer mutates: the zoo's small float and int8 QDQ models (generated here, so the
fuzzer runs without ../shared) and the MLPerf Tiny reference models where they are."""
from __future__ import annotations

import logging
from pathlib import Path

import zoo
from shared_models import shared_models


def seed_models(workdir: Path, shared: bool = True) -> list[tuple[str, bytes]]:
    """(name, serialized model) of every seed, in a fixed order (a case's seed is drawn by index)."""
    seeds = []
    logging.disable(logging.WARNING)  # onnxruntime's quantizer advises pre-processing on every model
    try:
        for name, build in zoo.BUILDERS.items():
            float_model, qdq_model, _ = build(Path(workdir) / name)
            seeds += [(f"zoo-{name}-float", float_model.SerializeToString()),
                      (f"zoo-{name}-int8", qdq_model.SerializeToString())]
    finally:
        logging.disable(logging.NOTSET)
    if shared:
        seeds += [(path.stem, path.read_bytes()) for path in shared_models()]
    return seeds
