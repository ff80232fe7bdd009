"""Boards that die in the middle of a tune (tests/faults/board_campaign.py) at CI size: one case of each kind, a board
of two lost and every board lost, with a small candidate budget; benchmarks/fault_bench.py --only boards runs more."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import board_campaign as campaign  # noqa: E402

MODEL = Path(__file__).resolve().parents[1] / "tone_kws" / "tone_kws-int8.tflite"


@pytest.mark.qemu
@pytest.mark.slow
def test_a_tune_that_loses_one_board_or_every_board_ends_with_the_undisturbed_plan(need_qemu, tmp_path, monkeypatch):
    monkeypatch.setattr(campaign, "KINDS", ("one of two", "every board"))
    tally = campaign.campaign_boards(MODEL, tmp_path, 2, random.Random("ci-boards"), budget=12,
                                     retries=2)
    assert tally.ok, "\n".join(tally.failures)
    assert tally.injected == 2 and tally.wrong == 0
    assert tally.detected + tally.harmless == tally.injected and tally.reported == tally.detected
    assert tally.detected >= 1  # the case that loses every board always stops and resumes
