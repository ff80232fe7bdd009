"""A system of emulated chips run for real (mcudeploy/stages/chain.py): the link's frames are checked
on arrival, a corrupt or missing frame stops the stream in one sentence, and under QEMU the stages'
outputs equal the one-chip plan's bit for bit, each stage's ticks measured on its own chip."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.pipeline import lower
from mcudeploy.stages.chain import Link, run_chain
from mcudeploy.stages.system import load_system
from mcudeploy.stages.system_plan import compile_system
from linkproxy import LinkProxy
from residual import SHAPE, residual_model


def test_a_frame_crosses_the_link_intact():
    link = Link(0)
    link.send(3, 1, b"abc" * 100)
    assert link.receive(3, 1, 300) == b"abc" * 100 and link.frames == 1


def flip(data: bytes) -> bytes:
    return data[:20] + bytes([data[20] ^ 0x10]) + data[21:]


@pytest.mark.parametrize("fault, sentence", [
    (flip, "the link from stage 0 to stage 1 delivered a corrupt frame where frame 0 (tensor 0) was due"),
    (lambda data: data[:-1], "delivered a corrupt frame"),
    (lambda data: None, "the link from stage 0 to stage 1 stalled: frame 0 (tensor 0) did not arrive"),
])
def test_a_corrupt_or_lost_frame_stops_the_stream(fault, sentence):
    link = Link(0, fault=fault)
    link.send(0, 0, bytes(range(64)))
    with pytest.raises(MCUDeployError) as err:
        link.receive(0, 0, 64)
    assert sentence in str(err.value) and str(err.value).endswith("the stream stops")


def test_a_frame_out_of_order_is_refused():
    link = Link(1)
    link.send(1, 0, b"x" * 8)
    with pytest.raises(MCUDeployError, match="delivered frame 1 tensor 0 .* where frame 0 tensor 0"):
        link.receive(0, 0, 8)


@pytest.mark.qemu
def test_two_emulated_chips_stream_bit_for_bit_and_a_corrupt_frame_stops(need_qemu):
    graph = lower(import_model(residual_model()))
    plan = compile_system(graph, load_system("qemu-m4x2"), "residual", schedule_method="model")
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
def test_joined_chips_pass_their_tensors_without_the_host_and_a_damaged_link_stops_the_stream(need_qemu):
    """The chips' UARTs joined through a relay that passes the frames as they are, flips a bit of one,
    or drops one: bit for bit with the host carrying nothing, else one sentence naming stage and frame."""
    graph = lower(import_model(residual_model()))
    plan = compile_system(graph, load_system("qemu-m4x2"), "residual", schedule_method="model")
    rng = np.random.default_rng(7)
    samples = [{"x": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(3)]
    relay = LinkProxy("none")
    try:
        run = run_chain(plan, samples, relay=relay)
    finally:
        relay.close()
    assert run.joined and run.host_bytes == 0
    assert relay.frames == 3 * len(plan.staged.stages[1].receives) == run.link_frames[0]
    for got, want in zip(run.outputs, run.one_chip_outputs):
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    for fault, cause in (("flip", "its CRC-32 does not match"), ("drop", "no link frame arrived")):
        relay = LinkProxy(fault)
        try:
            with pytest.raises(MCUDeployError) as err:
                run_chain(plan, samples[:1], relay=relay, timeout_s=1.0)
        finally:
            relay.close()
        message = str(err.value)
        assert message.startswith("stage 1 (chip 1 of qemu-m4x2) stopped the stream at frame 0: ") and cause in message
        assert "\n" not in message and message.endswith("no outputs were written")


def test_a_chip_of_a_chain_gets_its_link_uarts_at_the_serial_indices_its_board_names(tmp_path, monkeypatch):
    from mcudeploy.boards import load_board
    from mcudeploy.device import qemu

    monkeypatch.setattr(qemu, "qemu_binary", lambda: "qemu-system-arm")
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
