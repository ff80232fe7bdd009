"""Device tier: the protocol, the transport, the session's fault handling (through a fake
transport), firmware builds and the firmware under QEMU.

Tests marked ``qemu`` need qemu-system-arm and arm-none-eabi-gcc and skip with a reason
without them (the ``need_qemu`` and ``need_arm_gcc`` fixtures of tests/conftest.py); CI installs
both (.ci/setup.sh)."""
