"""Fresh mcudeploy caches that share the test session's compiled kernels.

A test that needs a cache of its own (no timings measured before it, no state, no running emulators' records)
still need not compile every kernel of its board again: the compiled kernels are keyed by their sources and flags,
written under a temporary name and renamed (device/build.py, device/host.py), so any number of caches and processes
can share them. tests/conftest.py names the session's shared folder in SHARED_ENV."""
from __future__ import annotations

import os
from pathlib import Path

SHARED_ENV = "MCUDEPLOY_TEST_OBJECTS"
OBJECT_CACHES = ("arm-objects", "host-kernels")  # compiled kernels (device/build.py, device/host.py)


def run_folder(tmp_path_factory) -> Path:
    """The folder every pytest-xdist worker of this run shares (their base temporary folders' parent, one per run),
    or the base temporary folder without xdist: for what a run makes once and its workers read."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def link_objects(cache: Path, shared: Path) -> None:
    for name in OBJECT_CACHES:
        (shared / name).mkdir(parents=True, exist_ok=True)
        link = cache / name
        if not link.exists():
            link.symlink_to(shared / name, target_is_directory=True)


def fresh_cache(path: Path) -> Path:
    """``path`` made a new cache folder (for MCUDEPLOY_CACHE) whose compiled kernels are the session's."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    shared = os.environ.get(SHARED_ENV)
    if shared:
        link_objects(path, Path(shared))
    return path
