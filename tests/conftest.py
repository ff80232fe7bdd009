"""Fixtures for every test. Helpers to import live in plainly named modules (shared_models.py),
not here: pytest loads several conftest.py files under one module name."""
from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Kernel objects are cached per test session, not in the user's home."""
    if "MCUDEPLOY_CACHE" not in os.environ:
        os.environ["MCUDEPLOY_CACHE"] = str(tmp_path_factory.mktemp("mcudeploy-cache"))
    yield
