"""A tune whose board is simulated in the process (tests/search/test_tune.py's Timing: ticks from each
kernel's work, left in the timing cache as a board leaves them), run as `mcudeploy tune` runs one: the
output folder's lock, the resumable tune-state.json, then the C project and plan.json. The fault campaign
(tests/faults/campaign.py) kills it with SIGKILL at random moments and runs it again.

    python tests/faults/host_tune.py MODEL OUT CACHE [BUDGET]
"""
from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS.parent), str(TESTS / "search")]

from test_tune import EFFORT, Timing  # noqa: E402

from mcudeploy.files import output_lock, writing  # noqa: E402
from mcudeploy.search import TuneOptions, Tuner, write_result  # noqa: E402
from mcudeploy.simulate.timing_cache import TimingCache  # noqa: E402


def main(model: str, out: str, cache: str, budget: str = "150") -> int:
    timings = TimingCache("qemu-m4", Path(cache))
    with output_lock(out, "tune"):
        result = Tuner(model, "qemu-m4", out, measure=Timing(timings), cache=timings,
                       progress=lambda line: print(line, file=sys.stderr, flush=True),
                       options=TuneOptions(time_limit=600, budget=int(budget), effort=EFFORT)).run()
        with writing(out):
            write_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
