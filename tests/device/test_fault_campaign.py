"""Faults on the serial line, one at a time, over whole commands on qemu-m4: every frame of a
flash's start-up, every other frame of a KWS run and every sixth of a KWS measure (the frame
turning with the kind of fault, so every frame meets three kinds in a run and one in a measure),
in both directions, with each kind of fault (faultline.KINDS), and one mid-conversation frame per
kind of a short tune, the kinds taking the two directions in turn. The outcome must be
the clean result or one sentence of error: never other numbers with exit 0, a hang or a traceback.

The session's timeouts are shortened here (0.3 s instead of 1 s) so the campaign fits in CI;
benchmarks/fault_bench.py runs every frame of each campaign with the real timeouts and prints
the figures.
"""
from __future__ import annotations

import pytest
from campaign import built_once, clean, compiled_once, our_emulators, run_faults, short_tune
from faultline import KINDS, plan
from shared_models import MODELS, need_models

from mcudeploy.boards import load_board
from mcudeploy.check import random_inputs
from mcudeploy.device import emulator, runner, session
from mcudeploy.device.measure import measure_model
from mcudeploy.compile import compile_model
from mcudeploy.simulate.timing_cache import TimingCache

TIMEOUT = 0.3
DELAY = 0.8  # past the answer timeout (0.3 s plus the wire time of the longest frame)


@pytest.fixture
def short_timeouts(monkeypatch, need_qemu, tmp_path):
    monkeypatch.setattr(session, "DEFAULT_TIMEOUT", TIMEOUT)
    monkeypatch.setattr(session, "GAP", TIMEOUT)
    with built_once(tmp_path / "builds"):
        yield


@pytest.fixture(scope="module")
def kws():
    need_models()
    return compile_model(MODELS / "onnx" / "kws_dscnn_int8.onnx", "qemu-m4")


def check(tally, faults, what):
    assert tally.tried == len(faults)
    assert not tally.failures, f"{tally.line(what)}:\n" + "\n".join(tally.failures)
    assert tally.right > 0 and not our_emulators()


def test_every_fault_of_a_run(kws, short_timeouts):
    samples = random_inputs(kws.graph, 2, seed=3)

    def run():
        return [tuple(o.tobytes() for o in outs) for outs in runner.run_on_board(kws, samples).outputs]

    expected, counts, seconds = clean(run)
    assert counts["request"] >= 10 and counts["reply"] >= 12  # two samples: loads, RUN (ACK), ticks, outputs
    faults = plan(counts, stride=2, delay=DELAY)  # every frame meets three of the six kinds
    check(run_faults(run, expected, faults, bound=seconds + 15), faults, "run")


def test_every_fault_of_a_measure(kws, short_timeouts, tmp_path):
    caches = iter(range(10_000))

    def measure():
        cache = TimingCache("qemu-m4", tmp_path / f"cache{next(caches)}")
        return [o.ticks for o in measure_model(kws, repeat=2, cache=cache).ops]

    expected, counts, seconds = clean(measure)
    faults = plan(counts, stride=len(KINDS), delay=DELAY)  # every frame meets one kind
    check(run_faults(measure, expected, faults, bound=seconds + 15), faults, "measure")


def test_every_fault_of_a_flash(kws, short_timeouts, tmp_path):
    board = load_board("qemu-m4")
    elf = runner.build_for_board(kws, tmp_path / "p").elf

    def flash():
        emu = emulator.start_emulator(board, elf, lifetime=60)
        try:
            return emu.board
        finally:
            emulator.stop_emulator(board.name, port=emu.port)

    expected, counts, seconds = clean(flash)
    faults = plan(counts, delay=DELAY)
    check(run_faults(flash, expected, faults, bound=seconds + 15), faults, "flash")


def test_faults_in_a_short_tune(short_timeouts, tmp_path):
    from zoo import mobilenetv2

    import onnx

    _, qdq, _ = mobilenetv2(tmp_path / "zoo", size=32, stages=((6, 8, 1, 1),), stem=8, classes=4)
    model = tmp_path / "mnv2_32_int8.onnx"
    onnx.save(qdq, model)
    tune = short_tune(model, tmp_path / "tune")
    with compiled_once():
        expected, counts, seconds = clean(tune)
        assert expected[0], "the short tune finds a cut"
        every = plan(counts, delay=DELAY)
        # one mid-conversation frame per kind, the kinds taking the two directions in turn (CI's bound: one per kind
        # and direction took 217 s at stop 50; benchmarks/fault_bench.py runs the whole campaign)
        middle = [f for f in every if f.index == counts[f.direction] // 2]
        directions = sorted({f.direction for f in middle})
        faults = [f for f in middle if f.direction == directions[KINDS.index(f.kind) % len(directions)]]
        assert {f.kind for f in faults} == set(KINDS) and {f.direction for f in faults} == set(directions)
        check(run_faults(tune, expected, faults, bound=seconds + 30), faults, "tune")
