"""A system of emulated chips run for real (mcudeploy/target/chain.py): the link's frames are checked
on arrival, a corrupt or missing frame stops the stream in one sentence, and under QEMU the stages'
outputs equal the one-chip plan's bit for bit, each stage's ticks measured on its own chip."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.compile import lower
from mcudeploy.target.chain import Link, run_chain
from mcudeploy.stages.system import load_system
from mcudeploy.stages.system_plan import SystemOptions, compile_system
from linkproxy import LinkProxy
from residual import SHAPE, residual_model


def test_a_frame_crosses_the_link_intact():
    link = Link(0)
    link.send(3, 1, b"abc" * 100)
    assert link.receive(3, 1, 300) == b"abc" * 100 and link.frames == 1


def flip(data: bytes) -> bytes:
    return data[:20] + bytes([data[20] ^ 0x10]) + data[21:]


class Once:
    """A fault on the first ``times`` sendings of a frame only: the resends after them pass."""

    def __init__(self, fault, times: int = 1):
        self.fault, self.left = fault, times

    def __call__(self, data: bytes):
        if self.left <= 0:
            return data
        self.left -= 1
        return self.fault(data)


@pytest.mark.parametrize("fault", [flip, lambda data: data[:-1], lambda data: None, lambda data: [data, data]])
def test_a_damaged_lost_or_repeated_frame_is_sent_again_and_counted(fault):
    link = Link(0, fault=Once(fault, 3))
    link.send(0, 0, bytes(range(64)))
    link.send(0, 1, bytes(range(8)))
    assert link.receive(0, 0, 64) == bytes(range(64)) and link.receive(0, 1, 8) == bytes(range(8))
    assert link.resent + link.refused >= 1 and not link.kept


@pytest.mark.parametrize("fault, sentence", [
    (flip, "the link from stage 0 to stage 1 delivered a corrupt frame where frame 0 tensor 0 (64 bytes) was due, "
           "16 times in a row; the stream stops"),
    (lambda data: data[:-1], "delivered a corrupt frame"),
    (lambda data: None, "the link from stage 0 to stage 1 delivered nothing where frame 0 tensor 0 (64 bytes) was due, "
                        "16 times in a row"),
])
def test_a_frame_damaged_every_time_stops_the_stream(fault, sentence):
    link = Link(0, fault=fault)
    link.send(0, 0, bytes(range(64)))
    with pytest.raises(MCUDeployError) as err:
        link.receive(0, 0, 64)
    assert sentence in str(err.value) and "\n" not in str(err.value)
    assert link.resent == 15


def test_a_frame_never_sent_stalls_the_link():
    with pytest.raises(MCUDeployError, match="stage 0 to stage 1 stalled: frame 0 .tensor 0. did not arrive"):
        Link(0).receive(0, 0, 64)


def test_a_frame_out_of_order_is_refused():
    link = Link(1)
    link.send(1, 0, b"x" * 8)
    with pytest.raises(MCUDeployError, match="delivered frame 1 tensor 0 .* where frame 0 tensor 0"):
        link.receive(0, 0, 8)


@pytest.mark.qemu
def test_two_emulated_chips_stream_bit_for_bit_and_a_corrupt_frame_stops(need_qemu):
    graph = lower(import_model(residual_model()))
    plan = compile_system(graph, load_system("qemu-m4x2"), "residual", SystemOptions(schedule_method="model"))
    rng = np.random.default_rng(5)
    samples = [{"x": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(3)]
    run = run_chain(plan, samples)
    for got, want in zip(run.outputs, run.one_chip_outputs):
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert run.link_frames[0] == 3 * len(plan.staged.stages[1].receives)
    assert all(t.source == "measured" and t.ticks > 0 for t in run.plan.times)
    assert run.plan.one_chip_ticks == run.one_chip_ticks > max(t.ticks for t in run.plan.times)
    with pytest.raises(MCUDeployError, match="corrupt frame where frame 0"):
        run_chain(plan, samples[:1], faults={0: flip})


@pytest.mark.qemu
def test_joined_chips_pass_their_tensors_without_the_host_and_a_damaged_link_is_mended(need_qemu):
    """The chips' UARTs joined through a relay that passes the frames as they are, or damages, drops, repeats or
    drops some of them and of the wants: bit for bit with the host carrying nothing, the resends counted."""
    graph = lower(import_model(residual_model()))
    plan = compile_system(graph, load_system("qemu-m4x2"), "residual", SystemOptions(schedule_method="model"))
    rng = np.random.default_rng(7)
    samples = [{"x": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(3)]
    per_frame = len(plan.staged.stages[1].receives)
    for faults, want_faults in (({}, {}), ({0: "flip", 2: "drop", 3: "duplicate"}, {1: "flip", 4: "drop"})):
        relay = LinkProxy(faults, want_faults, late_s=0.5)
        try:
            run = run_chain(plan, samples, relay=relay)
        finally:
            relay.close()
        assert run.joined and run.host_bytes == 0 and run.link_frames[0] == 3 * per_frame
        for got, want in zip(run.outputs, run.one_chip_outputs):
            assert all(np.array_equal(g, w) for g, w in zip(got, want))
        assert relay.injected == len(faults) + len(want_faults)
        if faults:
            assert run.link_resent[0] + run.link_refused[0] >= 1, (run.link_resent, run.link_refused)
    # late frames and a link fallen silent: tests/faults/test_link_faults.py


def test_a_chip_of_a_chain_gets_its_link_uarts_at_the_serial_indices_its_board_names(tmp_path, monkeypatch):
    from mcudeploy.boards import load_board
    from mcudeploy.device import qemu

    monkeypatch.setattr(qemu, "qemu_binary", lambda board: "qemu-system-arm")
    board = load_board("qemu-m4")
    cmd = qemu.command_line(board, tmp_path / "fw.elf", 4000, up_port=4001, down_port=4002)
    serials = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-serial"]
    assert serials[0].startswith("tcp:127.0.0.1:4000,server=on,wait=on")
    assert serials[board.links.up.qemu_serial] == "chardev:up" and serials[board.links.down.qemu_serial] == "chardev:down"
    chardevs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-chardev"]
    assert "port=4001" in chardevs[0] and "server" not in chardevs[0]  # up: a client of the chip before
    assert "port=4002" in chardevs[1] and "server=on,wait=off" in chardevs[1]  # down: listens, does not hold the guest
    first = qemu.command_line(board, tmp_path / "fw.elf", 4000, down_port=4002)
    assert [first[i + 1] for i, a in enumerate(first) if a == "-serial"][board.links.up.qemu_serial] == "null"
    with pytest.raises(MCUDeployError, match="names no QEMU serial port for its down link"):
        qemu.command_line(load_board("qemu-m3"), tmp_path / "fw.elf", 4000, down_port=4002)
