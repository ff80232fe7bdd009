"""Faults on the links between chips: a two-chip chain (qemu-m4x2, the residual test model) streams its frames
over the chips' joined UARTs through tests/device/linkproxy.py, which damages, drops, repeats or delays link frames
and the receiver's wants, or lets the link fall silent.

Each class injects its faults into chain runs (several per run, at random frames of the stream, resends counted)
until ``count`` have happened, and counts in state_campaign's ``Tally``: injected; detected (in a run that ended
bit for bit with the one-chip plan while its links resent or refused frames, or that stopped); reported (the run's
resends and refusals counted in its result, or one sentence naming the link, the stage and the frame);
harmless (a fault that needed no resend: a frame late by less than the resend wait); wrong (outputs other than the
one-chip plan's with no error: must be 0); tracebacks; leftovers (QEMUs still running after the run).

The CI tier is tests/device/test_chain.py (every kind once) and tests/faults/test_link_faults.py (a bounded
campaign); benchmarks/fault_bench.py --only links runs every class --count times.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "device"), str(TESTS / "faults")]

from board_campaign import qemus  # noqa: E402
from linkproxy import LinkProxy  # noqa: E402
from residual import SHAPE, residual_model  # noqa: E402
from state_campaign import Tally  # noqa: E402

from mcudeploy.errors import MCUDeployError  # noqa: E402

CLASSES = {  # class: (frame faults, want faults) to draw from
    "damaged": (("flip",), ("flip",)),
    "dropped": (("drop",), ("drop",)),
    "duplicated": (("duplicate",), ()),
    "late": (("late",), ()),
    "silent": (("silent",), ()),
}
FRAMES = 4  # samples streamed per run
PER_RUN = 4  # faults drawn per run (fewer may happen: a drawn frame index past the stream's end)
SILENT_TIMEOUT_S = 2.0  # the chips' link timeout where a link falls silent: the stop this class must end in
TIMEOUT_S = 10.0  # and where a resend mends the fault: a chip waits on its neighbour's host round trips too (2 s
# stopped a late-frame run on a loaded CI machine), and a fault mended never waits it out


def chain_plan():
    from mcudeploy.frontend import import_model
    from mcudeploy.compile import lower
    from mcudeploy.stages.system import load_system
    from mcudeploy.stages.system_plan import SystemOptions, compile_system

    return compile_system(lower(import_model(residual_model())), load_system("qemu-m4x2"), "residual",
                          SystemOptions(schedule_method="model"))


def campaign_links(name: str, count: int, rng: random.Random, plan=None, say=lambda line: None,
                   frames: int = FRAMES) -> Tally:
    from mcudeploy.target.chain import run_chain

    plan = plan or chain_plan()
    tally = Tally()
    kinds, want_kinds = CLASSES[name]
    per_frame = len(plan.staged.stages[1].receives)
    rs = np.random.default_rng(rng.randrange(1 << 30))
    samples = [{"x": rs.standard_normal(SHAPE).astype(np.float32)} for _ in range(frames)]
    runs = 0
    while tally.injected < count:
        n = 1 if name == "silent" else min(PER_RUN, count - tally.injected)
        spots = rng.sample(range(frames * per_frame), min(n, frames * per_frame))
        faults = {i: rng.choice(kinds) for i in spots}
        want_spots = rng.sample(range(frames * (per_frame + 1)), n // 2) if want_kinds else []
        wants = {i: rng.choice(want_kinds) for i in want_spots}
        relay = LinkProxy(faults, wants, late_s=rng.uniform(0.2, 1.0))
        case = f"{name} run {runs}: frames {faults}, wants {wants}"
        runs += 1
        error, run = None, None
        try:
            run = run_chain(plan, samples, relay=relay, timeout_s=SILENT_TIMEOUT_S if name == "silent" else TIMEOUT_S)
        except MCUDeployError as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 -- anything else is a failure of the campaign's subject
            tally.tracebacks += 1
            tally.fail("traceback", case, repr(exc))
        finally:
            relay.close()
        time.sleep(0.2)
        left = qemus(_self())
        tally.leftovers += len(left)
        tally.injected += relay.injected
        if run is not None:
            same = all(np.array_equal(g, w) for got, want in zip(run.outputs, run.one_chip_outputs)
                       for g, w in zip(got, want))
            if not same:
                tally.wrong += relay.injected or 1
                tally.fail("outputs other than the one-chip plan's, and no error", case)
            elif run.link_resent[0] + run.link_refused[0]:
                tally.detected += relay.injected
                tally.reported += relay.injected
            else:
                tally.harmless += relay.injected
        elif error is not None:
            tally.detected += relay.injected
            one = "\n" not in error and error.endswith("no outputs were written") and " at frame " in error
            names_link = "the link from stage 0" in error or "the link to stage 1" in error
            if one and names_link:
                tally.reported += relay.injected
            else:
                tally.fail("not one sentence naming the link, the stage and the frame", case, error)
            if name != "silent":
                tally.fail("a fault the link should have mended stopped the stream", case, error)
        say(f"  {case}: {'error: ' + error if error else 'resent %s, refused %s' % (run.link_resent, run.link_refused) if run else 'failed'}")
    return tally


def _self() -> int:
    import os

    return os.getpid()
