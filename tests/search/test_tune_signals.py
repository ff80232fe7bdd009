"""SIGINT at six moments of a tune, each resumed: every interrupted run ends at once (within PROMPT seconds: moments, on a loaded machine) with no
emulator left, and a resumed run asks the board for no kernel timing and no whole run that an
earlier run had recorded (the timing cache and tune-state.json are what was measured)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
from signals import PROMPT, interrupt, left_running, start, tagged_env  # noqa: E402

pytestmark = pytest.mark.qemu

MOMENTS = (1.0, 2.5, 4.5, 7.5, 11.0, 16.0)  # ten until stop 50 (114 s of CI)
TIMED = re.compile(r"board qemu-m4: timing op \d+ \(signature (\w+)\)")
WHOLE = re.compile(r"board qemu-m4: one whole run of (.+)$", re.M)


def measured(cache: Path, out: Path) -> tuple[set, set]:
    """(kernel signatures in the timing cache, schemes with a whole run in the tune state)."""
    try:
        sigs = set(json.loads((cache / "timings" / "qemu-m4.json").read_text())["timings"])
    except (OSError, ValueError, KeyError):
        sigs = set()
    try:
        runs = {k for k, v in json.loads((out / "tune-state.json").read_text())["candidates"].items()
                if "run_ticks" in v}
    except (OSError, ValueError, KeyError):
        runs = set()
    return sigs, runs


def test_sigint_at_six_moments_of_a_tune_then_resume(small_mobilenet, tmp_path, need_qemu):
    cache, out = tmp_path / "cache", tmp_path / "out"
    env, tag = tagged_env(cache)
    args = ["-v", "tune", str(small_mobilenet), "-b", "qemu-m4", "--time-limit", "30", "-o", str(out)]
    interrupted = 0
    for after in MOMENTS:
        known_sigs, known_runs = measured(cache, out)
        ended = interrupt(start(args, env), after)
        assert not set(TIMED.findall(ended.stderr)) & known_sigs, "a kernel was timed twice"
        assert not set(WHOLE.findall(ended.stderr)) & known_runs, "a plan was run twice"
        assert not left_running(tag)
        if ended.returncode == 0:
            continue  # it finished before this moment came
        assert ended.returncode == 130, ended.stderr[-2000:]
        assert ended.seconds_after_signal < PROMPT
        assert "Traceback" not in ended.stderr and "interrupted" in ended.stderr.strip().splitlines()[-1]
        interrupted += 1
    assert interrupted >= 4
    known_sigs, known_runs = measured(cache, out)
    done = interrupt(start(args, env), 600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not set(TIMED.findall(done.stderr)) & known_sigs and not set(WHOLE.findall(done.stderr)) & known_runs
    assert (out / "plan.json").is_file()
