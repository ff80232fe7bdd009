"""Run a compiled model on a Cortex-M board: build, refuse what does not fit, start QEMU or open
the serial port, then load inputs, run and read outputs and per-operator ticks (one session
for all samples)."""
from __future__ import annotations

import contextlib
import functools
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional, Sequence

import numpy as np

from mcudeploy.boards import Board
from mcudeploy.codegen import write_project
from mcudeploy.device import protocol as P
from mcudeploy.device import qemu
from mcudeploy.device.build import Firmware, build_firmware
from mcudeploy.device.labels import model_name, op_labels, timed_nodes  # noqa: F401  (their home before labels.py)
from mcudeploy.device.pool import BoardPool, Job
from mcudeploy.device.protocol import DeviceInfo
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.device.session import BoardFault, RunResult, Session, StackUse
from mcudeploy.device.transport import Transport
from mcudeploy.errors import MCUDeployError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BoardRun:
    outputs: list[list[np.ndarray]]  # per sample, per graph output
    runs: list[RunResult]            # per sample
    info: DeviceInfo
    firmware: Firmware
    op_labels: list[str]
    instructions_per_tick: Optional[float]  # emulated boards: guest instructions per tick
    stack: Optional[StackUse] = None  # the most of the stack the runs used (of every board of a pool), if told


def build_for_board(compiled, workdir: Path) -> Firmware:
    project = write_project(compiled, workdir)
    return build_firmware(compiled.board, project, model_name(compiled))


@contextlib.contextmanager
def connect(board: Board, firmware: Optional[Firmware], port: Optional[str] = None, timeout: Optional[float] = None,
            qmp: bool = False) -> Iterator[Session]:
    """A session with the board: QEMU started on ``firmware`` for an emulated board, else ``port``.

    For an emulated board the emulator is stopped cleanly at the end (EXIT, then its exit
    status is checked); an error while it runs names how QEMU ended, if it did.
    """
    if port is None and board.kind != "qemu":
        raise MCUDeployError(f"board {board.name} is real hardware: flash it (mcudeploy flash) and give its "
                             f"serial port with --port, e.g. --port /dev/ttyACM0")
    if port is not None:
        baud = board.uart.baud if board.uart else 115200
        with Transport.open(port, baud, connect_timeout=2.0) as transport:
            session = Session(transport, board.name, timeout=timeout, baud=baud)
            session.open(boot_wait=0.0)
            _check_model(session, firmware, board)
            try:
                yield session
            except BoardFault as exc:  # a real board reset itself after the fault its firmware noted
                if _stack_fault(exc):
                    raise MCUDeployError(_stack_overflowed(board)) from None
                raise
        return
    emulator = qemu.QemuBoard(board, firmware.elf, qmp=qmp)
    try:
        transport = emulator.start()
        session = Session(transport, board.name, timeout=timeout)
        session.open(boot_wait=5.0)
        _check_model(session, firmware, board)
        yield session
        _end_emulation(session, emulator)
    except MCUDeployError as exc:
        code = emulator.stop(timeout=0.5)
        if code == qemu.STACK_EXIT or _stack_fault(exc):  # the guard at the stack's bottom (firmware/runtime/startup.c)
            raise MCUDeployError(_stack_overflowed(board)) from None
        if code not in (None, 0) and code != -9:
            raise MCUDeployError(f"QEMU for board {board.name} ended with {emulator.exit_reason()} "
                                 f"(the host saw: {str(exc).rstrip('.')})") from None
        raise
    except BaseException:  # an interrupt: the emulator goes at once
        emulator.kill()
        raise
    finally:
        emulator.stop()
    if emulator.returncode not in (0, None):
        raise MCUDeployError(f"QEMU for board {board.name} ended with {emulator.exit_reason()}")


def _stack_fault(exc: Exception) -> bool:
    """Whether a board (a real one: it resets) restarted after its stack's guard faulted."""
    return isinstance(exc, BoardFault) and exc.boot.fault == P.FAULT_STACK


def _stack_overflowed(board: Board) -> str:
    return (f"the firmware's stack of {board.stack_bytes:,} B overflowed on board {board.name} (a push reached its "
            f"guarded bottom): give the board file a larger stack_bytes")


def _end_emulation(session: Session, emulator: "qemu.QemuBoard", wait: float = 5.0) -> None:
    """Ask the emulated board to exit. EXIT is the one request a resend cannot repeat (the emulator
    is gone after the first): when its answer is lost, QEMU's own exit status says how it ended."""
    try:
        session.exit(0)
        return
    except MCUDeployError as exc:
        failure = exc
    code = emulator.wait(wait)
    if code != 0:
        raise failure


def _check_model(session: Session, firmware: Optional[Firmware], board: Board) -> None:
    info = session.info
    if firmware is not None and info.model_id != firmware.model_id:
        raise MCUDeployError(f"board {board.name} runs another build (model id 0x{info.model_id:08X}, this one is "
                             f"0x{firmware.model_id:08X}); flash it first with mcudeploy flash")


def run_on_board(compiled, samples: Sequence[Mapping[str, np.ndarray]], port: Optional[str] = None,
                 workdir: Optional[Path] = None, timeout: Optional[float] = None, flash=None,
                 pool: Optional[BoardPool] = None, on_sample: Optional[Callable[[], None]] = None,
                 reset_every: Optional[int] = None) -> BoardRun:
    """Build the model's firmware for ``compiled.board`` and run every sample in one session (``flash``:
    how the board behind ``port`` is given the firmware first, a farm place's, device/farm.py). With a
    ``pool`` of several boards the samples are cut into as many consecutive runs, one per board at once
    (device/pool.py), and their results put back in the samples' order; a stateful model's run in order on
    one board, from its initial state (the first RUN resets it; ``reset_every``: every reset_every-th RUN, so that
    the samples are sequences of that length). ``on_sample`` is called after each sample (from the pool's threads),
    for a progress bar."""
    board = compiled.board
    with tempfile.TemporaryDirectory(prefix="mcud-board-") as tmp:
        folder = Path(workdir or tmp)
        firmware = build_for_board(compiled, folder)
        if pool is None:
            done = [_run_samples(compiled, firmware, samples, port, timeout, folder / "inputs.bin", flash, on_sample,
                                 reset_every)]
        else:  # a stateful model's samples are one sequence: one board runs them all
            parts = 1 if compiled.graph.states else max(1, min(pool.size, len(samples)))
            cuts = [len(samples) * k // parts for k in range(parts + 1)]
            done = pool.map([Job(f"{cuts[k + 1] - cuts[k]} sample(s) of {model_name(compiled)}",
                                 functools.partial(_run_part, compiled, firmware, samples[cuts[k]:cuts[k + 1]], timeout,
                                                   folder / f"inputs-{k}.bin", on_sample, reset_every))
                             for k in range(parts)])
    outputs = [o for part in done for o in part[0]]
    runs = [r for part in done for r in part[1]]
    info = done[0][2]
    ipt = qemu.instructions_per_tick(board, info.timer_hz) if board.kind == "qemu" else None
    told = [part[3] for part in done if part[3] is not None]
    stack = max(told, key=lambda s: s.used) if told else None
    if stack is not None and stack.overflowed:
        raise MCUDeployError(f"board {board.name}: the model used all {stack.size:,} B of the firmware's stack, which "
                             f"likely overflowed into the memory below it (give the board file a larger stack_bytes)")
    return BoardRun(outputs, runs, info, firmware, op_labels(compiled), ipt, stack)


def _run_part(compiled, firmware: Firmware, samples, timeout, bulk: Path, on_sample, reset_every, on) -> tuple:
    return _run_samples(compiled, firmware, samples, on.port, timeout, bulk, on.flash, on_sample, reset_every)


def _run_samples(compiled, firmware: Firmware, samples, port: Optional[str], timeout: Optional[float], bulk: Path,
                 flash=None, on_sample: Optional[Callable[[], None]] = None,
                 reset_every: Optional[int] = None) -> tuple:
    """(outputs, runs, the board's info, its stack's use or None) of ``samples`` in one session on the board behind
    ``port`` (None: an emulator of its own); ``bulk``: where a local emulator reads the inputs from."""
    graph, board = compiled.graph, compiled.board
    if flash is not None:
        flash(firmware)
    out_bytes = [graph[n].nbytes for n in graph.model_outputs()]
    outputs, runs = [], []
    with connect(board, firmware, port, timeout) as session:
        info = session.info
        expected = tuple(graph[n].nbytes for n in graph.model_inputs())
        if info.input_bytes != expected:
            raise MCUDeployError(f"board {board.name} reports inputs of {list(info.input_bytes)} bytes, "
                                 f"the model has {list(expected)}")
        # QEMU started here reads the inputs from a host file (semihosting): its UART model moves
        # one byte per main-loop turn, which made a 110 KB input take seconds
        local = info.emulated and port is None
        if local:
            bulk.write_bytes(b"".join(b for sample in samples for b in sample_bytes(graph, sample)))
        offset = 0
        for k, sample in enumerate(samples):
            data = sample_bytes(graph, sample)
            reset = bool(graph.states) and k % (reset_every or len(samples)) == 0
            if local:
                session.begin_run()
                for i, b in enumerate(data):
                    session.load_input_file(i, str(bulk.resolve()), offset, len(b))
                    offset += len(b)
                result = session.run(reset=reset)
                raw = [session.read_output(i, n) for i, n in enumerate(out_bytes)]
            else:
                raw, result = session.infer(data, out_bytes, reset=reset)
            outputs.append([output_array(graph, n, b) for b, n in zip(raw, graph.model_outputs())])
            runs.append(result)
            log.info("sample %d: %d ticks", k, result.total_ticks)
            if on_sample is not None:
                on_sample()
        stack = session.read_stack()
    return outputs, runs, info, stack


def ticks_lines(run: BoardRun) -> list[str]:
    """The per-operator ticks of the first sample, and the spread of the total over all samples."""
    if not run.runs:
        return []
    ipt = run.instructions_per_tick
    first = run.runs[0]
    head = "~instructions" if ipt else "us"
    lines = [f"{'#':>3}  {'operator':<56} {'ticks':>12} {head:>14}"]
    hz = run.info.timer_hz

    def extra(ticks: int) -> str:
        return f"{ticks * ipt:>14,.0f}" if ipt else f"{ticks * 1e6 / hz:>14,.1f}"

    for i, ticks in enumerate(first.op_ticks):
        label = run.op_labels[i] if i < len(run.op_labels) else f"op {i}"
        lines.append(f"{i:>3}  {label[:56]:<56} {ticks:>12,}{extra(ticks)}")
    lines.append(f"{'':>3}  {'total (sample 0)':<56} {first.total_ticks:>12,}{extra(first.total_ticks)}")
    totals = [r.total_ticks for r in run.runs]
    unit = f"1 tick = {ipt:g} guest instructions (QEMU -icount)" if ipt else f"1 tick = 1 cycle at {hz:,} Hz"
    lines.append(f"total ticks over {len(totals)} sample(s): {min(totals):,} .. {max(totals):,}; {unit}")
    if run.stack is not None:
        bound = run.firmware.stack if run.firmware is not None else None
        lines.append(run.stack.describe() + ("" if bound is None else f"; the worst case of its call graph "
                                             f"{bound.bytes:,} B ({bound.path_text()})"))
    return lines
