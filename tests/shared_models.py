"""Where the MLPerf Tiny reference models are: ../shared/models beside the checkout, or
$MCUDEPLOY_MODELS. Tests that need them call need_models() and skip with a reason without them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))


def shared_models(pattern: str = "*.onnx", kind: str = "onnx") -> list[Path]:
    """The reference models of ``kind`` ("onnx", "tflite": the folder under MODELS) matching ``pattern``."""
    folder = MODELS / kind
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


def need_models():
    if not (MODELS / "onnx").is_dir():
        pytest.skip(f"the MLPerf Tiny reference models are not at {MODELS} (set MCUDEPLOY_MODELS)")
