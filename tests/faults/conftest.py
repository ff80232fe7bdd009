"""Fault campaigns: those that run emulated boards need qemu-system-arm and arm-none-eabi-gcc, and skip with a
reason without them (CI installs both)."""
from __future__ import annotations

import shutil

import pytest


@pytest.fixture
def need_qemu():
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)} (apt-get install qemu-system-arm gcc-arm-none-eabi "
                    f"libnewlib-arm-none-eabi)")
