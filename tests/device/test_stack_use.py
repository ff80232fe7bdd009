"""The firmware's stack use after a run (READ_STACK): run_on_board keeps the most any board of the run used, and a
run whose paint is gone to the bottom of the stack (an overflow, likely) stops with one sentence naming the board."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mcudeploy.compile import compile_graph
from mcudeploy.device import runner
from mcudeploy.device.session import StackUse
from mcudeploy.errors import MCUDeployError

from graph_builder import GraphBuilder


def _run(monkeypatch, stack):
    g = GraphBuilder()
    g.op("Relu", [g.input("x", (1, 4))], "y")
    compiled = compile_graph(g.graph("y"), "qemu-m4", name="tiny")  # a small model: only its board matters here
    monkeypatch.setattr(runner, "build_for_board", lambda compiled, folder: None)
    monkeypatch.setattr(runner, "_run_samples", lambda *a, **k: ([], [], _Info(), stack))
    return runner.run_on_board(compiled, [])


class _Info:
    timer_hz = 1_000_000


def test_the_stack_use_of_a_run_is_kept(monkeypatch):
    run = _run(monkeypatch, StackUse(4096, 1720))
    assert run.stack == StackUse(4096, 1720) and run.stack.describe() == "stack: at most 1,720 of 4,096 B used"


def test_a_stack_used_to_the_bottom_is_one_sentence(monkeypatch):
    with pytest.raises(MCUDeployError) as err:
        _run(monkeypatch, StackUse(4096, 4096))
    text = str(err.value)
    assert "qemu-m4" in text and "4,096 B" in text and "stack_bytes" in text and "\n" not in text


def test_firmware_without_read_stack_tells_nothing(monkeypatch):
    assert _run(monkeypatch, None).stack is None


MODEL = Path(__file__).resolve().parents[1] / "keras_corpus" / "dscnn_gap-int8.tflite"


def _run_with_stack(board: str, stack: int, folder: Path):
    """(compiled, the run, its samples) of MODEL on ``board`` with a stack of ``stack`` bytes."""
    from mcudeploy import check
    from mcudeploy.boards import load_board
    from mcudeploy.compile import compile_model

    compiled = compile_model(str(MODEL), dataclasses.replace(load_board(board), stack_bytes=stack))
    samples = check.random_inputs(compiled.graph, 1, seed=2)
    return compiled, runner.run_on_board(compiled, samples, workdir=folder / str(stack), timeout=60), samples


@pytest.fixture(scope="module")
def stack_run(tmp_path_factory):
    """The run of MODEL on a board with 4,096 B of stack (its firmware's bound and the stack it used), once per board
    for the tests below."""
    runs: dict = {}

    def of(board: str):
        if board not in runs:
            runs[board] = _run_with_stack(board, 4096, tmp_path_factory.mktemp(board))[1]
        return runs[board]
    return of


@pytest.fixture
def stack_used(stack_run):
    return lambda board: stack_run(board).stack.used


@pytest.fixture
def unchecked(monkeypatch):
    """Firmware built without the bound's check, to reach the guard at run time with a stack below the bound."""
    from mcudeploy.device import stack_bound
    monkeypatch.setattr(stack_bound, "check_stack", lambda *a, **k: None)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m55"])
def test_the_worst_case_is_at_least_the_stack_used(need_qemu, board, stack_run):
    """The bound of the firmware's call graph (mcudeploy/device/stack_bound.py) against the paint READ_STACK reads;
    the board matrix (test_board_matrix.py) checks the same for every shared int8 model on its boards."""
    run = stack_run(board)
    assert run.firmware.stack.bytes >= run.stack.used, (run.firmware.stack, run.stack)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m55"])
def test_a_stack_too_small_by_a_little_stops_with_one_sentence(tmp_path, need_qemu, board, stack_run, monkeypatch):
    """A stack 64 bytes short of what the model uses is refused by the build from the bound, before anything runs.
    Built anyway (the check off), it stops at the stack's guarded bottom (firmware/runtime/startup.c: an MPU region
    on the ARMv7-M qemu-m4, the stack limit register MSPLIM on the ARMv8.1-M qemu-m55) at the first push into the
    guard with QEMU's exit status 4, which the host says in one sentence naming the board and the stack, where it
    wrote over the memory below the stack before (KWS with 1,664 B on qemu-m4 hung); one with room to spare runs,
    its answer the host's."""
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device import stack_bound

    run = stack_run(board)
    used, bound = run.stack.used, run.firmware.stack
    assert 256 < used < 4096 - 512
    with pytest.raises(MCUDeployError) as err:
        _run_with_stack(board, used - 64, tmp_path / "refused")
    assert str(err.value) == (f"the firmware's worst-case stack is {bound.bytes:,} B ({bound.path_text()}), more than "
                              f"board {board}'s stack of {used - 64:,} B: give the board file a larger stack_bytes")
    monkeypatch.setattr(stack_bound, "check_stack", lambda *a, **k: None)
    with pytest.raises(MCUDeployError) as err:
        _run_with_stack(board, used - 64, tmp_path)
    assert str(err.value) == (f"the firmware's stack of {used - 64:,} B overflowed on board {board} (a push reached "
                              "its guarded bottom): give the board file a larger stack_bytes")
    compiled, spare, samples = _run_with_stack(board, used + 128, tmp_path)  # the guard is below stack_bytes, not in it
    assert spare.stack.used <= used + 128
    same, lines = compare_with_host(compiled, spare.outputs, samples)
    assert same, lines


@pytest.mark.qemu
def test_a_real_board_reset_by_its_stack_guard_says_so_after_it_restarts(tmp_path, need_qemu, monkeypatch,
                                                                          stack_used, unchecked):
    """A real board resets on a fault where QEMU exits: the fault handler notes the fault in RAM the reset keeps
    (.noinit), the next BOOT reports it, and the host says the emulator's sentence. Played on qemu-m4 with the
    firmware built as for hardware (SYSRESETREQ restarts the machine; QEMU's reset leaves the RAM alone). Without the
    note the host could only say the board restarted (checked: the BOOT then carries fault 0)."""
    from mcudeploy.device import build

    used = stack_used("qemu-m4")
    context = build._context
    monkeypatch.setattr(build, "_context", lambda *a, **k: {**context(*a, **k), "emulated": False})
    with pytest.raises(MCUDeployError) as err:
        _run_with_stack("qemu-m4", used - 64, tmp_path)
    assert str(err.value) == (f"the firmware's stack of {used - 64:,} B overflowed on board qemu-m4 (a push reached "
                              "its guarded bottom): give the board file a larger stack_bytes")
