"""Shared fixtures. Tests that need the MLPerf Tiny reference models read them from
../shared/models (or $MCUDEPLOY_MODELS) and skip with a reason where the folder is absent."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("MCUDEPLOY_MODELS", ROOT.parent / "shared" / "models"))


def shared_models(pattern: str = "*.onnx") -> list[Path]:
    folder = MODELS / "onnx"
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


def need_models():
    if not (MODELS / "onnx").is_dir():
        pytest.skip(f"the MLPerf Tiny reference models are not at {MODELS} (set MCUDEPLOY_MODELS)")


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Kernel objects are cached per test session, not in the user's home."""
    if "MCUDEPLOY_CACHE" not in os.environ:
        os.environ["MCUDEPLOY_CACHE"] = str(tmp_path_factory.mktemp("mcudeploy-cache"))
    yield
