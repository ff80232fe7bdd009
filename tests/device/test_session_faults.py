"""Fault injection through a fake board: every fault ends in a retry that succeeds or in one
sentence, within the timeout; never a hang."""
from __future__ import annotations

import struct
import time

import pytest
from fakes import NBYTES, OP_TICKS, FakeDevice

from mcudeploy.device import protocol as P
from mcudeploy.device.session import BoardFault, NoAnswer, Session
from mcudeploy.errors import MCUDeployError


def session(device: FakeDevice, timeout: float = 1.0, retries: int = 3) -> Session:
    s = Session(device, device.board, timeout=timeout, run_timeout=timeout, retries=retries, gap=0.2)
    s.open()
    return s


def one_sentence(text: str) -> bool:
    return "\n" not in text and text.count(". ") == 0


def test_happy_path():
    dev = FakeDevice()
    s = session(dev)
    assert s.info.board == "fake-board" and s.info.num_ops == 2 and s.info.input_bytes == (NBYTES,)
    outs, result = s.infer([bytes(range(NBYTES))], [NBYTES])
    assert outs == [bytes(range(1, NBYTES + 1))]
    assert result.total_ticks == sum(OP_TICKS) and result.op_ticks == OP_TICKS
    t = s.run_op(1, repeat=4)
    assert (t.total, t.min, t.max, t.mean) == (800, 200, 200, 200)


@pytest.mark.parametrize("fault", ["corrupt_replies", "truncate_replies", "corrupt_requests", "truncate_requests"])
def test_damaged_frames_are_resent(fault):
    dev = FakeDevice()
    s = session(dev)
    setattr(dev, fault, 2)
    outs, result = s.infer([bytes(NBYTES)], [NBYTES])
    assert outs == [bytes([1] * NBYTES)] and result.op_ticks == OP_TICKS
    assert getattr(dev, fault) == 0  # both faults were met, and survived
    if fault.endswith("replies"):
        assert dev.seen.count(P.Command.LOAD_INPUT) == 3  # acted on three times: two replies were lost


def test_persistent_damage_is_one_sentence_after_the_retries():
    dev = FakeDevice()
    s = session(dev, retries=2)
    s.begin_run()
    s.load_input(0, bytes(NBYTES))
    dev.corrupt_replies = 100
    start = time.monotonic()
    with pytest.raises(MCUDeployError) as err:
        s.run()
    assert time.monotonic() - start < 1.0
    assert "fake-board answered RUN only with damaged frames after 3 attempt(s)" in str(err.value)
    assert dev.runs == 1  # the resent RUNs were answered from the first run's result
    assert one_sentence(str(err.value))


def test_a_silent_board_is_one_sentence_within_the_timeout():
    dev = FakeDevice()
    s = session(dev, timeout=0.3, retries=2)
    dev.silent = True
    start = time.monotonic()
    first = s._first_answer(P.encode(P.Frame(P.Command.IDENTIFY, 1)))
    with pytest.raises(MCUDeployError, match=rf"^board fake-board did not answer IDENTIFY \(3 attempts, waiting "
                                             rf"{first:.2g} s at first, {first * 4:.2g} s at last\)$"):
        s.identify()
    assert time.monotonic() - start < (1 + 2 + 4) * first + 0.3  # each silence doubles the next wait


def test_a_reset_mid_run_is_detected():
    dev = FakeDevice()
    s = session(dev)
    s.begin_run()
    s.load_input(0, bytes(NBYTES))
    dev.reset_on = {P.Command.RUN}
    with pytest.raises(MCUDeployError, match="board fake-board restarted while handling RUN") as err:
        s.run()
    assert one_sentence(str(err.value))


@pytest.mark.parametrize("fault, says", [
    ((P.FAULT_STACK, 0x10, 0x20001FE0), "its stack overflowed (a push reached its guarded bottom)"),
    ((P.FAULT_CPU, 0x8200, 0x40000000), "it took a CPU fault (CFSR 0x00008200, fault address 0x40000000)"),
    ((P.FAULT_CPU, 0x20000, 0), "it took a CPU fault (CFSR 0x00020000)"),
])
def test_a_reset_after_a_fault_says_the_fault_and_is_no_lost_board(fault, says):
    """A real board resets after a fault (firmware/runtime/startup.c notes it in RAM the reset keeps): its BOOT says
    which, and the session says it; BoardFault is not NoAnswer, so a pool does not give the work to another board."""
    dev = FakeDevice()
    s = session(dev)
    s.begin_run()
    s.load_input(0, bytes(NBYTES))
    dev.reset_on = {P.Command.RUN}
    dev.fault = struct.pack("<BII", *fault)
    with pytest.raises(BoardFault) as err:
        s.run()
    assert str(err.value) == f"board fake-board restarted while handling RUN: {says}, so its state is lost"
    assert not isinstance(err.value, NoAnswer) and err.value.boot.fault == fault[0]


def test_a_boot_frame_without_a_fault_or_cut_short_is_a_restart_of_unknown_cause():
    assert P.parse_boot(bytes([P.VERSION]) + P.pack_string("b")) == P.Boot(P.VERSION, "b")
    assert P.parse_boot(bytes([P.VERSION]) + P.pack_string("b") + bytes(9)).fault_text() == ""
    with pytest.raises(P.FrameError, match="BOOT frame of 0 bytes is malformed"):
        P.parse_boot(b"")


def test_stale_replies_are_skipped():
    dev = FakeDevice()
    s = session(dev)
    dev.stale_before_reply = 3
    assert s.echo(b"ping") == b"ping"
    assert s.run_op(0).min == OP_TICKS[0]


def test_a_refusal_is_reported_not_retried():
    dev = FakeDevice()
    s = session(dev)
    with pytest.raises(MCUDeployError, match="board fake-board refused CALIBRATE: unknown command"):
        s.calibrate(10)
    assert dev.seen.count(P.Command.CALIBRATE) == 1


def test_a_lost_run_reply_is_answered_from_the_result_not_run_again():
    """The worst fault of old: the host resent RUN after its reply was lost, the device ran again over
    inputs the first run had overwritten, and the host took other outputs with exit 0."""
    for fault in ("corrupt_replies", "truncate_replies", "drop_replies"):
        dev = FakeDevice()
        s = session(dev, timeout=0.2)
        s.begin_run()
        s.load_input(0, bytes(range(NBYTES)))
        setattr(dev, fault, 1)
        result = s.run()
        assert dev.runs == 1 and result.op_ticks == OP_TICKS, fault
        assert s.read_output(0, NBYTES) == bytes(range(1, NBYTES + 1)), fault


def test_a_lost_request_is_sent_again():
    dev = FakeDevice()
    s = session(dev, timeout=0.2)
    dev.drop_requests = 2
    outs, _ = s.infer([bytes(range(NBYTES))], [NBYTES])
    assert outs == [bytes(range(1, NBYTES + 1))] and dev.drop_requests == 0


def test_a_run_without_its_inputs_and_outputs_of_another_run_are_refused():
    dev = FakeDevice()
    s = session(dev)
    s.begin_run()
    with pytest.raises(MCUDeployError, match="refused RUN: RUN before every input of this run id was loaded"):
        s.run()
    s.infer([bytes(NBYTES)], [NBYTES])
    s.run_op(0)  # writes into the arena: the run's outputs are gone
    with pytest.raises(MCUDeployError, match="refused READ_OUTPUT"):
        s.read_output(0, NBYTES)
    first = s.run_id
    s.begin_run()
    s.load_input(0, bytes(NBYTES))
    s.run_id = first  # a request of an earlier run that arrives late
    with pytest.raises(MCUDeployError, match="refused RUN"):
        s.run()


def test_a_board_frozen_after_starting_a_run_is_named_after_its_learnt_patience(monkeypatch):
    """The first RUN may take up to run_timeout; once one has finished, a later RUN that the board
    acknowledges and never finishes ends after PATIENCE_FACTOR times the longest so far (here at
    the floor), long before run_timeout."""
    from mcudeploy.device import session as S
    monkeypatch.setattr(S, "PATIENCE_FLOOR", 0.5)
    dev = FakeDevice()
    s = Session(dev, dev.board, timeout=0.2, run_timeout=300.0, gap=0.2)
    s.open()
    s.infer([bytes(NBYTES)], [NBYTES])
    dev.freeze_after_ack = True
    t0 = time.monotonic()
    with pytest.raises(MCUDeployError) as err:
        s.infer([bytes(NBYTES)], [NBYTES])
    assert time.monotonic() - t0 < 10
    text = str(err.value)
    assert "started RUN but gave no result within 0.5 s" in text and "times the longest" in text
    assert one_sentence(text)


def test_read_stack_answers_its_use_none_from_older_firmware_and_one_sentence_when_malformed():
    """READ_STACK: the stack's size and the most used; firmware without the command answers UNKNOWN_COMMAND (None);
    a reply of the wrong length is one sentence naming the board."""
    dev = FakeDevice()
    s = session(dev)
    assert s.read_stack() is None
    dev.stack = struct.pack("<II", 4096, 1720)
    use = s.read_stack()
    assert (use.size, use.used, use.overflowed) == (4096, 1720, False) and "1,720 of 4,096 B" in use.describe()
    dev.stack = struct.pack("<II", 4096, 4096)
    assert s.read_stack().overflowed and "overflowed" in s.read_stack().describe()
    dev.stack = b"\x00\x10\x00"
    with pytest.raises(MCUDeployError) as err:
        s.read_stack()
    assert "fake-board" in str(err.value) and "READ_STACK" in str(err.value) and one_sentence(str(err.value))
