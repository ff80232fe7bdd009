"""The measurer firmware under QEMU: every emulated board serves the protocol, a model's outputs
equal the host board's bit for bit, ticks are reproducible and proportional to work, timings
are cached, and faults end in a retry or one sentence within the timeout."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from devmodels import matmul

from mcudeploy import check
from mcudeploy.boards import load_board
from mcudeploy.device import protocol as P
from mcudeploy.device import runner
from mcudeploy.device.build import ARCH, build_firmware
from mcudeploy.device.measure import measure_model
from mcudeploy.device.qemu import QemuBoard, instructions_per_tick
from mcudeploy.check.against_host import compare_with_host
from mcudeploy.device.runner import connect, run_on_board
from mcudeploy.device.samples import sample_bytes
from mcudeploy.device.session import Session
from mcudeploy.errors import MCUDeployError
from mcudeploy.compile import compile_model
from mcudeploy.simulate.timing_cache import TimingCache
from object_cache import fresh_cache

pytestmark = pytest.mark.qemu

EMULATED = ["qemu-m4", "qemu-m7", "qemu-m3", "qemu-stm32f4", "qemu-an505", "qemu-m0"]


@pytest.fixture(scope="module")
def measurer_alone(tmp_path_factory):
    """The measurer without a model, built once per board."""
    cache = {}

    def get(board: str):
        if board not in cache:
            cache[board] = build_firmware(board, tmp_path_factory.mktemp(board))
        return cache[board]
    return get


@pytest.mark.parametrize("board", EMULATED)
def test_every_emulated_board_serves_the_protocol(board, measurer_alone, need_qemu):
    b = load_board(board)
    fw = measurer_alone(board)
    with QemuBoard(b, fw.elf) as emulator:
        s = Session(emulator.start(), board)
        info = s.open(boot_wait=5.0)
        assert s.boots_seen == 1  # QEMU holds the guest until we connect: the BOOT frame is never lost
        assert (info.board, info.emulated, info.model_id, info.num_ops) == (board, True, 0, 0)
        assert info.timer_hz == b.timer.hz
        assert (info.core_hz, info.clock_status) == (b.clock_hz, P.CLOCK_RESET)  # no clock tree: the reset clock
        payload = np.random.default_rng(0).integers(0, 256, 2000, dtype=np.uint8).tobytes()
        assert s.echo(payload) == payload
        # a loop of 2 instructions per iteration: ticks are exact, and double with the work
        t1, t2, t3 = s.calibrate(100_000), s.calibrate(200_000), s.calibrate(300_000)
        assert abs((t3 - t2) - (t2 - t1)) <= 1  # linear: a fixed overhead of a few ticks at most
        assert t2 / t1 == pytest.approx(2.0, rel=1e-3)
        assert t1 * instructions_per_tick(b) == pytest.approx(200_000, rel=2e-3)
        assert s.calibrate(100_000) == t1
        s.exit(0)
        assert emulator.stop() == 0


@pytest.fixture(scope="module")
def int8_model(tmp_path_factory):
    import zoo

    work = tmp_path_factory.mktemp("zoo")
    _, qdq, _ = zoo.mlp(work)
    path = work / "mlp_int8.onnx"
    import onnx
    onnx.save(qdq, path)
    return path


def run_on_qemu_m4_and_check(path, count: int, workdir):
    """The model run on qemu-m4 on `count` random samples; its outputs equal the host board's and
    run --check's verdict passes. Returns (compiled, samples, result)."""
    compiled = compile_model(path, "qemu-m4")
    samples = check.random_inputs(compiled.graph, count, seed=3)
    result = run_on_board(compiled, samples, workdir=workdir / "p")
    same, lines = compare_with_host(compiled, result.outputs, samples)
    assert same, lines
    verdict = check.check_outputs(path, compiled, result.outputs, samples)
    assert verdict.ok, verdict.lines()
    return compiled, samples, result


def test_int8_model_equals_the_host_board_bit_for_bit(int8_model, tmp_path, need_qemu):
    compiled, samples, result = run_on_qemu_m4_and_check(int8_model, 4, tmp_path)
    assert len(result.runs) == 4 and len(result.runs[0].op_ticks) == len(result.op_labels) == result.info.num_ops
    assert all(t > 0 for t in result.runs[0].op_ticks)
    assert result.runs[0].total_ticks >= sum(result.runs[0].op_ticks)

    # the same through the UART (LOAD_INPUT in chunks, as on real hardware) instead of semihosting
    with connect(compiled.board, result.firmware) as s:
        graph = compiled.graph
        raw, run = s.infer(sample_bytes(graph, samples[1]), [graph[n].nbytes for n in graph.outputs])
    assert raw[0] == result.outputs[1][0].tobytes()
    assert run.op_ticks == result.runs[1].op_ticks


@pytest.mark.parametrize("kind", ["float", "int8"])
def test_transformer_encoder_on_qemu_m4_equals_the_host_board(kind, tmp_path, need_qemu):
    """The zoo's 2-layer transformer encoder (LayerNormalization, Gelu, batched MatMul, Softmax) on
    qemu-m4: outputs equal to the host board's (float within 1e-5), and run --check's verdict passes."""
    import onnx
    import zoo

    float_model, qdq, _ = zoo.transformer(tmp_path / "zoo")
    path = tmp_path / f"transformer_{kind}.onnx"
    onnx.save(qdq if kind == "int8" else float_model, path)
    _, _, result = run_on_qemu_m4_and_check(path, 2, tmp_path)
    assert len(result.runs) == 2 and len(result.runs[0].op_ticks) == len(result.op_labels) == result.info.num_ops
    assert {"LayerNormalization", "Gelu", "Softmax"} <= {label.split(":")[0] for label in result.op_labels}


def test_measure_is_reproducible_cached_and_proportional_to_work(tmp_path, need_qemu, monkeypatch):
    small = compile_model(matmul(tmp_path / "m8.onnx", 8), "qemu-m4")
    large = compile_model(matmul(tmp_path / "m16.onnx", 16), "qemu-m4")
    first = measure_model(small, repeat=3, cache=TimingCache("qemu-m4", tmp_path / "c1"))
    second = measure_model(small, repeat=3, cache=TimingCache("qemu-m4", tmp_path / "c2"))
    assert first.device_used and second.device_used
    assert [o.ticks for o in first.ops] == [o.ticks for o in second.ops]  # two QEMU sessions, same ticks
    assert all(o.ticks == o.max for o in first.ops)  # and the same on every repetition

    # twice the rows, twice the multiply-adds: twice the ticks of the MatMul kernel
    double = measure_model(large, repeat=3, cache=TimingCache("qemu-m4", tmp_path / "c1"))
    mm_small = next(o for o in first.ops if o.label.startswith("MatMul"))
    mm_large = next(o for o in double.ops if o.label.startswith("MatMul"))
    assert mm_large.ticks / mm_small.ticks == pytest.approx(2.0, rel=0.02)
    assert mm_large.signature != mm_small.signature

    # a second measure of the same kernels does not touch the board
    monkeypatch.setattr(runner, "build_for_board", lambda *a, **k: pytest.fail("rebuilt although cached"))
    monkeypatch.setattr(QemuBoard, "start", lambda *a, **k: pytest.fail("the board was used although cached"))
    again = measure_model(small, repeat=3, cache=TimingCache("qemu-m4", tmp_path / "c1"))
    assert not again.device_used and all(o.cached for o in again.ops)
    assert [o.ticks for o in again.ops] == [o.ticks for o in first.ops]
    d = again.as_dict()
    assert d["total_ticks"] == sum(o.ticks for o in first.ops) and d["instructions_per_tick"] == 40.0


# --------------------------------------------------------------------------- faults, against QEMU


@pytest.fixture
def m4_session(tmp_path, need_qemu):
    compiled = compile_model(matmul(tmp_path / "m.onnx", 64, k=256, n=128), "qemu-m4")
    fw = runner.build_for_board(compiled, tmp_path / "p")
    emulator = QemuBoard(compiled.board, fw.elf, qmp=True)
    s = Session(emulator.start(), "qemu-m4", timeout=2.0, run_timeout=2.0, gap=0.5)
    s.open(boot_wait=5.0)
    yield s, emulator
    emulator.kill()
    emulator.stop()


def raw_exchange(s: Session, data: bytes, wait: float = 3.0) -> P.Frame:
    s.transport.write(data)
    frame = s.reader.read(s.transport, time.monotonic() + wait)
    assert frame is not None
    return frame


def test_the_firmware_rejects_damaged_frames_and_keeps_serving(m4_session):
    s, _ = m4_session
    raw = bytearray(P.encode(P.Frame(P.Command.ECHO, 41, b"payload")))
    raw[9] ^= 0x10
    reply = raw_exchange(s, bytes(raw))
    assert reply.command == P.Command.ERROR and P.parse_error(reply.payload) == (P.ErrorCode.BAD_CRC, "bad checksum")
    # a frame that stops half-way: the firmware drops it after its frame timeout and says so
    reply = raw_exchange(s, P.encode(P.Frame(P.Command.ECHO, 42, b"x" * 100))[:40])
    assert reply.command == P.Command.ERROR and P.parse_error(reply.payload)[0] == P.ErrorCode.TRUNCATED
    big = bytearray(P.encode(P.Frame(P.Command.ECHO, 43, b"")))
    big[6:8] = (P.MAX_PAYLOAD + 1).to_bytes(2, "little")
    reply = raw_exchange(s, bytes(big))
    assert P.parse_error(reply.payload)[0] == P.ErrorCode.TOO_LONG
    assert s.echo(b"still serving") == b"still serving"


class Flaky:
    """A link that damages the first copy of every request (one flipped bit)."""

    def __init__(self, inner):
        self.inner, self.sent, self.writes = inner, set(), 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        if data not in self.sent:
            self.sent.add(data)
            data = data[:-1] + bytes([data[-1] ^ 0x80])
        self.inner.write(data)

    def read(self, n, timeout):
        return self.inner.read(n, timeout)

    def discard_input(self):
        return self.inner.discard_input()


def test_requests_damaged_on_the_way_are_resent(m4_session):
    s, _ = m4_session
    link = Flaky(s.transport)
    flaky = Session(link, "qemu-m4", timeout=2.0)
    info = flaky.identify()
    _, result = flaky.infer([bytes(n) for n in info.input_bytes], info.output_bytes)
    assert info.num_ops >= 1 and len(result.op_ticks) == info.num_ops and result.total_ticks > 0
    assert link.writes == 2 * len(link.sent)  # every request was damaged once, answered BAD_CRC, and resent


def test_a_board_that_stops_answering_is_one_sentence_within_the_timeout(m4_session):
    s, emulator = m4_session
    s.timeout = 0.5
    first = s._first_answer(P.encode(P.Frame(P.Command.IDENTIFY, 1)))
    os.kill(emulator.proc.pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        with pytest.raises(MCUDeployError, match=rf"^board qemu-m4 did not answer IDENTIFY \(4 attempts, waiting "
                                                 rf"{first:.2g} s at first, {first * 8:.2g} s at last\)$"):
            s.identify()
        assert time.monotonic() - start < (1 + 2 + 4 + 8) * first + 1.0  # each silence doubles the next wait
    finally:
        os.kill(emulator.proc.pid, signal.SIGCONT)


def test_a_reset_in_the_middle_of_a_run_is_detected(m4_session):
    s, emulator = m4_session
    s.run_timeout = 30.0
    timer = threading.Timer(0.3, emulator.system_reset)  # the run below takes seconds
    timer.start()
    start = time.monotonic()
    with pytest.raises(MCUDeployError, match="^board qemu-m4 restarted while handling RUN_OP"):
        s.run_op(0, repeat=200)
    timer.join()
    assert time.monotonic() - start < 30.0
    assert s.open().board == "qemu-m4"  # and the board serves again after its restart


def test_cli_run_check_and_measure_on_qemu(int8_model, tmp_path, need_qemu):
    env = {**os.environ, "MCUDEPLOY_CACHE": str(fresh_cache(tmp_path / "cache"))}
    run = subprocess.run([sys.executable, "-m", "mcudeploy", "run", str(int8_model), "-b", "qemu-m4", "--check",
                          "--samples", "3"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr + run.stdout
    assert "SAME as the host board on 3 input(s)" in run.stdout and "PASS on 3 input(s)" in run.stdout
    assert "~instructions" in run.stdout and "SRAM" in run.stdout
    cmd = [sys.executable, "-m", "mcudeploy", "measure", str(int8_model), "-b", "qemu-m4", "--json", "--repeat", "2"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env)
    second = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    import json
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["device_used"] and not b["device_used"]
    assert [o["ticks"] for o in a["ops"]] == [o["ticks"] for o in b["ops"]]


@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m0"])  # the ARMv6-M fault handler branches through a register
def test_a_firmware_crash_ends_qemu_with_its_status_named(board, tmp_path, need_qemu):
    """A fault in the firmware ends QEMU through semihosting (status 3): one sentence, no hang."""
    from types import SimpleNamespace

    from mcudeploy.device.build import firmware_build_spec

    spec = firmware_build_spec(board, tmp_path / "p")
    crash = tmp_path / "crash.c"
    crash.write_text('#include "mcud_fw.h"\n\nstatic const mcud_fw_config config = {.emulated = 1u};\n\n'
                     'int main(void)\n{\n    mcud_sys_init(&config);\n    __asm__ volatile("udf #0");\n'
                     '    return 0;\n}\n')
    runtime = tmp_path / "p" / "firmware" / "runtime"
    elf = tmp_path / "crash.elf"
    subprocess.run([spec["cc"], *spec["cflags"], *[f"-I{d}" for d in spec["include_dirs"]], str(crash),
                    *(str(runtime / f) for f in ARCH[load_board(board).arch].runtime), str(runtime / "system.c"),
                    *spec["ldflags"], "-T",
                    spec["linker_script"], *spec["libs"], "-o", str(elf)], check=True)
    start = time.monotonic()
    with pytest.raises(MCUDeployError) as err:
        with connect(load_board(board), SimpleNamespace(elf=elf, model_id=0), timeout=2.0):
            pass
    assert str(err.value).startswith(f"QEMU for board {board} ended with exit status 3 (the firmware took a fault")
    assert "\n" not in str(err.value) and time.monotonic() - start < 15
