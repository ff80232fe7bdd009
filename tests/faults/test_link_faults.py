"""Faults on the links between two emulated chips (tests/faults/link_campaign.py) at CI size: every class once,
over a stream of two frames; benchmarks/fault_bench.py --only links runs them in full."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import link_campaign as campaign  # noqa: E402


@pytest.fixture(scope="module")
def plan():
    return campaign.chain_plan()


@pytest.mark.qemu
@pytest.mark.parametrize("name", list(campaign.CLASSES))
def test_a_link_fault_is_mended_or_stops_the_stream_in_one_sentence(need_qemu, plan, name):
    tally = campaign.campaign_links(name, 1, random.Random(f"ci-{name}"), plan, frames=2)
    assert tally.injected >= 1 and tally.ok, "\n".join(tally.failures)
    assert tally.detected + tally.harmless == tally.injected and tally.reported == tally.detected
    if name in ("damaged", "dropped", "duplicated", "silent"):  # each needs a resend, a refusal or a stop
        assert tally.detected == tally.injected
