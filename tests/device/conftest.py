"""Device tier: the protocol, the transport, the session's fault handling (through a fake
transport), firmware builds and the firmware under QEMU.

Tests marked ``qemu`` need qemu-system-arm and arm-none-eabi-gcc and skip with a reason
without them; CI installs both (.ci/setup.sh)."""
from __future__ import annotations

import shutil

import pytest

QEMU_TOOLS = ("qemu-system-arm", "arm-none-eabi-gcc")


def missing_tools(tools=QEMU_TOOLS) -> list[str]:
    return [t for t in tools if shutil.which(t) is None]


@pytest.fixture
def need_qemu():
    missing = missing_tools()
    if missing:
        pytest.skip(f"needs {' and '.join(missing)} (apt-get install qemu-system-arm gcc-arm-none-eabi "
                    f"libnewlib-arm-none-eabi)")


@pytest.fixture
def need_arm_gcc():
    missing = missing_tools(("arm-none-eabi-gcc",))
    if missing:
        pytest.skip("needs arm-none-eabi-gcc (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)")
