"""The models the fuzzer mutates: the zoo's small float and int8 QDQ models (generated here, so the
fuzzer runs without ../shared) and the MLPerf Tiny reference models where they are; for .tflite, the
committed corpora's files (tests/field_corpus, tests/keras_corpus: float32, int8, int16) and the MLPerf
Tiny .tflite models. A seed is (name, bytes) for ONNX, (name, bytes, "tflite") for a .tflite: the
runner picks the mutators and the case file's suffix by it."""
from __future__ import annotations

import logging
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent

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


SLOW = ("gru_kws", "lstm_kws")  # the recurrent Keras models: 0.4 to 0.7 s a plan, where the others take 10 to 120 ms


def tflite_seed_models(shared: bool = True, limit: int = 400_000, slow: bool = False) -> list[tuple[str, bytes, str]]:
    """(name, bytes, "tflite") of every .tflite seed of at most ``limit`` bytes, in a fixed order: the field
    corpus, the Keras corpus, then the shared models. A case must be cheap: files over ``limit`` (MobileNetV2,
    the float reference models) are left out, and so are the recurrent models (SLOW) unless ``slow``."""
    paths = sorted((TESTS / "field_corpus").glob("*.tflite")) + sorted((TESTS / "keras_corpus").glob("*.tflite"))
    if shared:
        paths += shared_models("*.tflite", kind="tflite")
    return [(path.stem, path.read_bytes(), "tflite") for path in paths
            if path.stat().st_size <= limit and (slow or not path.stem.startswith(SLOW))]
