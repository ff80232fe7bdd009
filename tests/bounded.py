"""Campaigns over many boards or models run a bounded size in CI and their full size on request.

``MCUDEPLOY_FULL_CAMPAIGNS=1`` runs every case; otherwise a case outside the CI size is skipped, saying so and how
to run it (benchmarks/README.md lists the full-size commands and their last figures). Which cases are in the CI size
is fixed by the test module (every board and every model still appears at least once), never by time or chance."""
from __future__ import annotations

import os

import pytest

FULL = os.environ.get("MCUDEPLOY_FULL_CAMPAIGNS", "") == "1"
REASON = "outside CI's bounded campaign: MCUDEPLOY_FULL_CAMPAIGNS=1 runs it"


def case(*values, id: str, in_ci: bool):
    """A pytest.param of ``values`` that CI's bounded size skips unless ``in_ci`` (or the full size is asked for)."""
    marks = () if in_ci or FULL else (pytest.mark.skip(reason=REASON),)
    return pytest.param(*values, id=id, marks=marks)
