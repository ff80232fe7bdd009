"""Headless Chromium for the report tests: the page's DOM after its scripts ran (--dump-dom), and its
console messages. Without Chromium a test skips with a reason, except in CI (CI=true), which installs it
(.ci/setup.sh: Debian package chromium) and where a report test that does not run is a failure."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0")


def chromium() -> str:
    found = os.environ.get("MCUDEPLOY_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if not found:
        missing = "headless Chromium is not installed (Debian: apt-get install chromium; or set MCUDEPLOY_CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(f"{missing}; CI installs it (.ci/setup.sh), so the report tests must run there")
        pytest.skip(missing)
    return found


def open_in_chromium(html_path, tmp_path) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran, and every console message it logged."""
    profile = tmp_path / "chromium-profile"
    run = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                          html_path.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    return run.stdout, console
