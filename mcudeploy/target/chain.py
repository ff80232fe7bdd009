"""A system of emulated chips for real: every stage's firmware on its own QEMU, frames streamed.

Each stage's plan is built into a firmware for its chip's board (the measurer with the stage's
model) and started in its own emulator. Where the boards name link UARTs (``links``), the chips'
UARTs are joined: chip k's down link is a TCP server its QEMU opens, chip k+1's up link a client of
it (mcudeploy/device/qemu.py), and each firmware passes its boundary tensors on itself
(firmware/runtime/link.c), framed as a ``Link`` frame here: (stage, frame, tensor, length) and a
CRC-32, checked on arrival; the receiving chip asks for each tensor, and a frame that arrives damaged,
twice, late or not at all is thrown away and sent again (stop and wait, link.c's comment). The host loads the inputs of stage 0, sends every chip RUN_LINKED for
each frame as soon as that chip is done with the frame before (so stage k works on frame n while
stage k+1 works on frame n - 1, the QEMUs running at once) and reads the last stage's outputs; it
carries no tensor between chips. Where the boards have no links (or a stage reads a tensor made two
stages before), the host carries the frames over a ``Link`` object instead, beat by beat.

With ``ports`` (run -b SYSTEM --port ...), the chips are boards flashed with ``mcudeploy flash -b
SYSTEM`` (real ones, or the emulators flash left running with their links joined): each is checked to
run its stage's build, and the frames stream through them the same way.

A frame that fails its check is sent again (the host-carried ``Link`` does the same); one that stays
damaged LINK_TRIES times, or a link silent for its timeout, stops the stream with one sentence naming
the link, the stage and the frame, never a wrong output. The resends and the refused frames of every
link are counted and reported.

What is emulated and what is modelled: each stage's ticks are measured on its own chip (the ticks
of its RUN: the model's operators, not the link's waits), and the link's time comes from the system
file's bandwidth and latency, not from the sockets.
"""
from __future__ import annotations

import contextlib
import statistics
import struct
import tempfile
import threading
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from mcudeploy.codegen import write_project
from mcudeploy.device import qemu
from mcudeploy.device.build import model_id
from mcudeploy.device.host import on_host, run_compiled_on_host
from mcudeploy.target.linked_firmware import build_linked_firmware, unlinkable
from mcudeploy.device.runner import build_for_board, connect, model_name, run_on_board
from mcudeploy.device.session import Session
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.errors import MCUDeployError
from mcudeploy.stages.system_plan import SystemPlan, with_measured

MAGIC = b"\xa5\x5a"
HEADER = struct.Struct("<2sHIHI")  # magic, source stage, frame, tensor index, payload length
LINK_TIMEOUT_S = 5.0
LINK_TRIES = 16  # sends of one tensor before the link is given up (firmware/runtime/link.c's LINK_TRIES)
CHIP_LINK_TIMEOUT_S = 20.0  # joined UARTs: a chip waits this long for a byte (the stages before compute first)
CHIP_LINK_WAIT_S = 0.01  # joined UARTs: an unanswered link frame or want is said again after this (guest time)


def encode(stage: int, frame: int, tensor: int, payload: bytes) -> bytes:
    head = HEADER.pack(MAGIC, stage, frame, tensor, len(payload))
    return head + payload + struct.pack("<I", zlib.crc32(head[2:] + payload))


class Link:
    """The link from stage ``src`` to the next: frames in order, each checked when it is received; a frame
    that arrives damaged, twice or not at all is thrown away and sent again, as the chips' own links do.
    ``fault`` (tests): a function applied to every frame on the wire, each sending (corrupt it, return None
    to lose it, or a list of frames to send several)."""

    def __init__(self, src: int, timeout_s: float = LINK_TIMEOUT_S,
                 fault: Optional[Callable[[bytes], object]] = None):
        self.src, self.timeout_s, self.fault = src, timeout_s, fault
        self.wire: deque = deque()
        self.kept: dict[tuple[int, int], bytes] = {}  # sent and not yet taken: what a resend sends
        self.frames = 0
        self.bytes = 0
        self.resent = 0
        self.refused = 0

    def _put(self, frame: int, tensor: int) -> None:
        data = encode(self.src, frame, tensor, self.kept[frame, tensor])
        sent = data if self.fault is None else self.fault(data)
        self.wire.extend(sent if isinstance(sent, list) else [] if sent is None else [sent])

    def send(self, frame: int, tensor: int, payload: bytes) -> None:
        self.kept[frame, tensor] = bytes(payload)
        self._put(frame, tensor)
        self.frames += 1
        self.bytes += len(payload)

    def receive(self, frame: int, tensor: int, nbytes: int) -> bytes:
        where = f"the link from stage {self.src} to stage {self.src + 1}"
        due = f"frame {frame} tensor {tensor} ({nbytes} bytes)"
        tries = 1
        while True:
            if not self.wire:
                if (frame, tensor) not in self.kept:
                    raise MCUDeployError(f"{where} stalled: frame {frame} (tensor {tensor}) did not arrive within "
                                         f"{self.timeout_s:g} s; the stream stops")
                why = "delivered nothing"
            else:
                why, body = self._check(self.wire.popleft(), frame, tensor, nbytes)
                if why is None:
                    del self.kept[frame, tensor]
                    return body
                self.refused += 1
                if why == "again":
                    continue
                if (frame, tensor) not in self.kept:
                    raise MCUDeployError(f"{where} {why} where {due} was due; the stream stops")
            if tries >= LINK_TRIES:
                raise MCUDeployError(f"{where} {why} where {due} was due, {LINK_TRIES} times in a row; the stream "
                                     f"stops")
            tries += 1
            self.resent += 1
            self._put(frame, tensor)

    def _check(self, data: bytes, frame: int, tensor: int, nbytes: int) -> tuple[Optional[str], bytes]:
        """(None, payload) for the frame due; ("again", b"") for a whole copy of one already taken; else why not."""
        if len(data) >= HEADER.size + 4:
            magic, src, got_frame, got_tensor, n = HEADER.unpack_from(data)
            body = data[HEADER.size:-4]
            (crc,) = struct.unpack("<I", data[-4:])
            if magic == MAGIC and n == len(body) and crc == zlib.crc32(data[2:HEADER.size] + body):
                if (src, got_frame, got_tensor, n) == (self.src, frame, tensor, nbytes):
                    return None, body
                if src == self.src and (got_frame, got_tensor) < (frame, tensor):
                    return "again", b""
                return f"delivered frame {got_frame} tensor {got_tensor} ({n} bytes)", b""
        return "delivered a corrupt frame", b""


@dataclass(frozen=True)
class ChainRun:
    plan: SystemPlan  # with each stage's ticks as measured (the median over the frames)
    outputs: list  # per frame, the model's outputs
    stage_ticks: tuple[tuple[int, ...], ...]  # per stage, per frame
    one_chip_outputs: list
    one_chip_ticks: Optional[int]  # None: the one-chip plan ran as a host build (chips of real boards)
    link_frames: tuple[int, ...]  # per link, the frames sent over it
    host_bytes: int = 0  # boundary bytes the host carried between chips (0: the chips' UARTs are joined)
    joined: bool = False  # the chips passed their tensors over their own joined UARTs
    link_resent: tuple[int, ...] = ()  # per link, the tensors sent again
    link_refused: tuple[int, ...] = ()  # per link, the damaged or repeated frames thrown away


def _run_frame(session, graph, values: Mapping[str, np.ndarray], bulk: Path, offset: int):
    """One frame on one emulated chip: its inputs from a host file, RUN, its outputs read."""
    session.begin_run()
    for i, data in enumerate(sample_bytes(graph, {n: values[n] for n in graph.inputs})):
        with open(bulk, "r+b") as f:
            f.seek(offset)
            f.write(data)
        session.load_input_file(i, str(bulk.resolve()), offset, len(data))
        offset += len(data)
    result = session.run()
    raw = [session.read_output(i, graph[n].nbytes) for i, n in enumerate(graph.outputs)]
    return [output_array(graph, n, b) for n, b in zip(graph.outputs, raw)], result.total_ticks


def run_chain(plan: SystemPlan, samples: Sequence[Mapping[str, np.ndarray]], workdir: Optional[Path] = None,
              faults: Optional[Mapping[int, Callable[[bytes], Optional[bytes]]]] = None,
              relay: Optional[Callable[[int, int], int]] = None, timeout_s: float = CHIP_LINK_TIMEOUT_S,
              ports: Sequence[str] = (), wait_s: float = CHIP_LINK_WAIT_S) -> ChainRun:
    """Stream ``samples`` through the stages, each on its own emulator (see the module's docstring),
    or with ``ports`` (one per stage, first to last) on chips already flashed with ``mcudeploy flash
    -b SYSTEM`` (real boards, or the emulators flash started), whose UARTs are joined; the one-chip
    plan runs on one emulator of the first stage's board for the comparison (on chips of real boards:
    as a host build, the same C). ``faults`` (tests) forces the host-carried links and changes their
    frames; ``relay`` (tests) is given (k, the port of chip k's down link) and returns the port chip
    k+1 connects to (a proxy in between). Joined chips give a link up after ``timeout_s`` of silence and
    say a frame or a want again after ``wait_s`` without an answer (the chips' time)."""
    stages = plan.staged.stages
    real = sorted({s.compiled.board.name for s in stages if s.compiled.board.kind != "qemu"})
    if ports and len(ports) != len(stages):
        raise MCUDeployError(f"{plan.system.name} streams over {len(stages)} stage(s): give one --port per stage, "
                             f"first to last, not {len(ports)}")
    if real and not ports:
        raise MCUDeployError(f"{plan.system.name} needs its boards ({', '.join(real)}) flashed with `mcudeploy flash "
                             f"-b {plan.system.name}` and each on a port: give --port once per stage, first to last")
    why = unlinkable(stages)
    if ports and why is not None:
        raise MCUDeployError(f"the chips of {plan.system.name} cannot pass their tensors to each other ({why}), "
                             f"so they cannot stream through their ports")
    joined = not faults and why is None
    with tempfile.TemporaryDirectory(prefix="mcud-chain-") as tmp:
        root = Path(workdir or tmp)
        if joined:
            frames, ticks, counts = _stream_joined(plan, samples, root, relay, timeout_s, ports, wait_s)
            links: list = []
        else:
            links = [Link(k, fault=(faults or {}).get(k)) for k in range(len(stages) - 1)]
            frames, ticks = _stream_carried(plan, samples, root, links)
            counts = [(l.resent, l.refused) for l in links]
        if real:
            one_outputs = run_compiled_on_host(on_host(plan.one_chip), samples, root / "one-chip")
            one_ticks = None
    if not real:
        one = run_on_board(plan.one_chip, samples)
        one_outputs, one_ticks = one.outputs, int(statistics.median(r.total_ticks for r in one.runs))
    measured = {k: int(statistics.median(t)) for k, t in enumerate(ticks)}
    link_frames = (tuple(len(samples) * len(s.receives) for s in stages[1:]) if joined
                   else tuple(l.frames for l in links))
    return ChainRun(with_measured(plan, measured, one_ticks), [[f[o] for o in plan.outputs] for f in frames],
                    tuple(tuple(t) for t in ticks), one_outputs, one_ticks, link_frames,
                    sum(l.bytes for l in links), joined, tuple(c[0] for c in counts), tuple(c[1] for c in counts))


def _stream_carried(plan: SystemPlan, samples, root: Path, links: list) -> tuple[list, list]:
    """The host carries every boundary tensor over ``links``, beat by beat: at beat t stage k runs frame t - k."""
    stages = plan.staged.stages
    with contextlib.ExitStack() as stack:
        sessions, bulks = [], []
        for s in stages:
            firmware = build_for_board(s.compiled, root / f"stage{s.index}")
            sessions.append(stack.enter_context(connect(s.compiled.board, firmware)))
            bulk = root / f"stage{s.index}-inputs.bin"
            g = s.compiled.graph
            bulk.write_bytes(bytes(len(samples) * sum(g[n].nbytes for n in g.inputs)))
            bulks.append(bulk)
        frames = [dict(x) for x in samples]
        ticks = [[0] * len(samples) for _ in stages]
        offsets = [0] * len(stages)
        for beat in range(len(samples) + len(stages) - 1):
            for k in reversed(range(len(stages))):  # the later stage takes the frame sent at the last beat
                n = beat - k
                if not 0 <= n < len(samples):
                    continue
                g = stages[k].compiled.graph
                if k > 0:
                    for t, name in enumerate(stages[k].receives):
                        body = links[k - 1].receive(n, t, g[name].nbytes)
                        frames[n][name] = output_array(g, name, body)
                outs, ticks[k][n] = _run_frame(sessions[k], g, frames[n], bulks[k], offsets[k])
                offsets[k] += sum(g[x].nbytes for x in g.inputs)
                frames[n].update(zip(g.outputs, outs))
                if k + 1 < len(stages):
                    for t, name in enumerate(stages[k + 1].receives):
                        links[k].send(n, t, np.ascontiguousarray(frames[n][name]).tobytes())
    return frames, ticks


def _start_chips(plan: SystemPlan, root: Path, relay, emulators: list) -> list[Session]:
    """Every chip's firmware built and its QEMU started, first to last: a chip's up link connects to
    the down link of the chip before (or to what ``relay`` puts between them)."""
    stages = plan.staged.stages
    sessions, up = [], None
    for k, s in enumerate(stages):
        board = s.compiled.board
        firmware = build_linked_firmware(stages, k, root / f"stage{k}", model_name(plan.one_chip))
        emulator = qemu.QemuBoard(board, firmware.elf, up_port=up, down=k + 1 < len(stages))
        emulators.append(emulator)
        session = Session(emulator.start(), board.name)
        session.open(boot_wait=5.0)
        if session.info.model_id != firmware.model_id:
            raise MCUDeployError(f"the chip of stage {k} runs another build than the one just made")
        sessions.append(session)
        up = emulator.down_port if relay is None or emulator.down_port is None else relay(k, emulator.down_port)
    return sessions


def _open_chips(plan: SystemPlan, root: Path, ports: Sequence[str], stack: contextlib.ExitStack) -> list[Session]:
    """A session with each flashed chip on its port, first to last, each checked to run its stage's
    model (the model id of the stage's generated C, which flash built with the chip's links)."""
    sessions = []
    for k, (s, port) in enumerate(zip(plan.staged.stages, ports)):
        expected = model_id(write_project(s.compiled, root / f"stage{k}"))
        session = stack.enter_context(connect(s.compiled.board, None, port))
        if session.info.model_id != expected:
            raise MCUDeployError(f"the chip on {port} runs another build than stage {k} of {plan.model} (model id "
                                 f"0x{session.info.model_id:08X}, stage {k}'s is 0x{expected:08X}): flash the chips "
                                 f"first with `mcudeploy flash MODEL -b {plan.system.name}`")
        sessions.append(session)
    return sessions


def _stream_joined(plan: SystemPlan, samples, root: Path, relay, timeout_s: float,
                   ports: Sequence[str] = (), wait_s: float = CHIP_LINK_WAIT_S) -> tuple[list, list, list]:
    """The chips pass their tensors on themselves; the host runs one thread per chip, which sends the
    chip RUN_LINKED for frame n once it is done with frame n - 1 and the chip before has been sent
    frame n (stage 0: once its inputs are loaded); the last chip's outputs are read after each run.
    Also, per link, the tensors its sender sent again and the frames its receiver refused."""
    stages = plan.staged.stages
    count, last = len(samples), len(stages) - 1
    frames = [dict(x) for x in samples]
    ticks = [[0] * count for _ in stages]
    resent, refused = [0] * len(stages), [0] * len(stages)  # per chip: on its down link, from its up link
    sent = [[threading.Event() for _ in range(count)] for _ in stages]
    failures: list[tuple[int, int, str]] = []
    stop = threading.Event()
    emulators: list = []

    def work(k: int, session: Session) -> None:
        g = stages[k].compiled.graph
        bulk, offset = root / f"stage{k}-inputs.bin", 0
        local = [n for n in g.inputs if n not in stages[k].receives]  # what the host gives this chip
        if local:
            bulk.write_bytes(b"".join(b for f in frames for b in sample_bytes(g, {n: f[n] for n in local})))
        for n in range(count):
            if k > 0:
                while not sent[k - 1][n].wait(0.05):
                    if stop.is_set():
                        return
            if stop.is_set():
                return
            try:
                session.begin_run()
                for name in local:
                    size = g[name].nbytes
                    session.load_input_file(list(g.inputs).index(name), str(bulk.resolve()), offset, size)
                    offset += size
                sent[k][n].set()
                ticks[k][n], again, thrown = session.run_linked(n, int(timeout_s * 1000), int(wait_s * 1e6))
                resent[k] += again
                refused[k] += thrown
                if k == last:
                    raw = [session.read_output(i, g[o].nbytes) for i, o in enumerate(g.outputs)]
                    frames[n].update((o, output_array(g, o, b)) for o, b in zip(g.outputs, raw))
            except Exception as exc:  # noqa: BLE001 -- the first failure stops the stream, in one sentence
                if not stop.is_set():
                    failures.append((k, n, str(exc)))
                    stop.set()
                return

    stack = contextlib.ExitStack()
    try:
        sessions = _open_chips(plan, root, ports, stack) if ports else _start_chips(plan, root, relay, emulators)
        threads = [threading.Thread(target=work, args=(k, s), daemon=True) for k, s in enumerate(sessions)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads) and not stop.is_set():
            stop.wait(0.05)
        if failures:
            for emulator in emulators:  # the others may wait on a link that will not come
                emulator.kill()
            k, n, why = failures[0]
            why = why.rstrip(".").replace("the up link", f"the link from stage {k - 1}").replace(
                "the down link", f"the link to stage {k + 1}")
            raise MCUDeployError(f"stage {k} (chip {k} of {plan.system.name}) stopped the stream at frame {n}: "
                                 f"{why}; no outputs were written")
        for t in threads:
            t.join()
        for session, emulator in zip(sessions, emulators):
            session.exit(0)
            if emulator.wait(5.0) != 0:
                raise MCUDeployError(f"QEMU for stage {emulators.index(emulator)} ended with {emulator.exit_reason()}")
    finally:
        for emulator in emulators:
            emulator.kill()
            emulator.stop(timeout=0.0)
        stack.close()  # flashed chips keep running their firmware: only their ports are closed
    return frames, ticks, [(resent[k], refused[k + 1]) for k in range(len(stages) - 1)]
