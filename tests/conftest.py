"""Fixtures for every test. Helpers to import live in plainly named modules (shared_models.py),
not here: pytest loads several conftest.py files under one module name."""
from __future__ import annotations

import os
import shutil

import pytest

import object_cache
import spread


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """The cache is per test session, not in the user's home; under xdist, each worker has its own (timings,
    state), but the workers, and the fresh caches tests make (object_cache.fresh_cache), share the compiled
    kernels: each board's library is compiled once per session, not once per worker or per test."""
    if "MCUDEPLOY_CACHE" not in os.environ:
        shared = object_cache.run_folder(tmp_path_factory) / "mcudeploy-objects"
        os.environ[object_cache.SHARED_ENV] = str(shared)
        cache = tmp_path_factory.mktemp("mcudeploy-cache")
        object_cache.link_objects(cache, shared)
        os.environ["MCUDEPLOY_CACHE"] = str(cache)
    yield


QEMU_TOOLS = ("qemu-system-arm", "arm-none-eabi-gcc")


def missing_tools(tools=QEMU_TOOLS) -> list[str]:
    return [t for t in tools if shutil.which(t) is None]


@pytest.fixture
def need_qemu():
    """Tests that run emulated boards skip with a reason without QEMU and the cross compiler (CI installs both,
    .ci/setup.sh)."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"needs {' and '.join(missing)} (apt-get install qemu-system-arm gcc-arm-none-eabi "
                    f"libnewlib-arm-none-eabi)")


@pytest.fixture
def need_arm_gcc():
    missing = missing_tools(("arm-none-eabi-gcc",))
    if missing:
        pytest.skip("needs arm-none-eabi-gcc (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)")


@pytest.fixture(scope="module")
def need_tflm():
    """Tests whose reference is TensorFlow Lite Micro (the specification of a .tflite) skip with a reason without it."""
    from mcudeploy.check.tflm import available
    why = available()
    if why is not None:
        pytest.skip(f"TensorFlow Lite Micro is not installed: {why}")


def pytest_addoption(parser):
    parser.addoption("--test-boards", type=int, default=None, metavar="N",
                     help="run the tests that start emulators on N boards at once: N xdist groups instead of one "
                          "(default $MCUDEPLOY_TEST_BOARDS, else 1); give pytest -n N or more workers")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n 2 --dist loadgroup`, as .ci/test runs), every test that starts
    emulators, PlatformIO or a board runs on one worker, one after the other: they share the
    session's PlatformIO core and measure ticks and idle CPU, which two at once would disturb. The
    other tests spread over both workers. With ``--test-boards N`` (or MCUDEPLOY_TEST_BOARDS=N) they
    are spread over N groups, N emulators at once (tests/spread.py).

    Under pytest 9 with pytest-xdist 3.8 (what CI installs today) no group takes effect: xdist writes
    the group into ``item._nodeid``, which pytest 9 no longer reads (a test marked with a plain
    ``xdist_group`` spreads too), so every test spreads over both workers, two emulators at once, and
    a module's fixture may be set up on each. CI's 40-minute figure is that spread: the board tests
    alone add up to 50 minutes. Under pytest 8 the groups hold."""
    board_tests = [item for item in items if item.get_closest_marker("qemu") or "device" in item.path.parts]
    for item, group in zip(board_tests, spread.groups(board_tests, spread.board_count(config))):
        item.add_marker(pytest.mark.xdist_group(group))


# CI draws hypothesis examples from a fixed seed, so that a landing passes or fails on the code alone;
# a run on a developer's machine keeps drawing new examples (a failure found there is kept as a test).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")
