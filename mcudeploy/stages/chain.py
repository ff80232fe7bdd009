"""A system of emulated chips for real: every stage's firmware on its own QEMU, frames streamed.

Each stage's plan is built into a firmware for its chip's board (the measurer with the stage's
model) and started in its own emulator. The host orchestrates: at pipeline beat t, stage k runs
frame t - k (so stage k works on frame n while stage k+1 works on frame n - 1); what a stage sends
is read from its chip and handed to the next over a ``Link``: framed (stage, frame, tensor, length),
with a CRC-32, and checked on arrival. A frame that fails its check or does not arrive within the
link's timeout stops the stream with one sentence, never a wrong output.

What is emulated and what is modelled: the emulators run one after another on this machine's
instruction clock, so each stage's ticks are measured on its own chip alone (the ticks of its RUN),
and the link's time comes from the system file's bandwidth and latency, not from the sockets.
The UARTs of the QEMUs are not joined to each other: the host carries the frames between them.
"""
from __future__ import annotations

import contextlib
import statistics
import struct
import tempfile
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from mcudeploy.device.runner import build_for_board, connect, run_on_board
from mcudeploy.device.samples import output_array, sample_bytes
from mcudeploy.errors import MCUDeployError
from mcudeploy.stages.system_plan import SystemPlan, with_measured

MAGIC = b"\xa5\x5a"
HEADER = struct.Struct("<2sHIHI")  # magic, source stage, frame, tensor index, payload length
LINK_TIMEOUT_S = 5.0


def encode(stage: int, frame: int, tensor: int, payload: bytes) -> bytes:
    head = HEADER.pack(MAGIC, stage, frame, tensor, len(payload))
    return head + payload + struct.pack("<I", zlib.crc32(head[2:] + payload))


class Link:
    """The link from stage ``src`` to the next: frames in order, each checked when it is received.
    ``fault`` (tests): a function applied to every frame on the wire (corrupt it, or return None to lose it)."""

    def __init__(self, src: int, timeout_s: float = LINK_TIMEOUT_S,
                 fault: Optional[Callable[[bytes], Optional[bytes]]] = None):
        self.src, self.timeout_s, self.fault = src, timeout_s, fault
        self.wire: deque = deque()
        self.frames = 0
        self.bytes = 0

    def send(self, frame: int, tensor: int, payload: bytes) -> None:
        data = encode(self.src, frame, tensor, payload)
        if self.fault is not None:
            data = self.fault(data)
        if data is not None:
            self.wire.append(data)
        self.frames += 1
        self.bytes += len(payload)

    def receive(self, frame: int, tensor: int, nbytes: int) -> bytes:
        where = f"the link from stage {self.src} to stage {self.src + 1}"
        if not self.wire:
            raise MCUDeployError(f"{where} stalled: frame {frame} (tensor {tensor}) did not arrive within "
                                 f"{self.timeout_s:g} s; the stream stops")
        data = self.wire.popleft()
        bad = len(data) < HEADER.size + 4
        if not bad:
            magic, src, got_frame, got_tensor, n = HEADER.unpack_from(data)
            body = data[HEADER.size:-4]
            (crc,) = struct.unpack("<I", data[-4:])
            bad = (magic != MAGIC or n != len(body) or crc != zlib.crc32(data[2:HEADER.size] + body))
        if bad:
            raise MCUDeployError(f"{where} delivered a corrupt frame where frame {frame} (tensor {tensor}) was due "
                                 f"(its header or CRC-32 does not match); the stream stops")
        if (src, got_frame, got_tensor, n) != (self.src, frame, tensor, nbytes):
            raise MCUDeployError(f"{where} delivered frame {got_frame} tensor {got_tensor} ({n} bytes) where frame "
                                 f"{frame} tensor {tensor} ({nbytes} bytes) was due; the stream stops")
        return body


@dataclass(frozen=True)
class ChainRun:
    plan: SystemPlan  # with each stage's ticks as measured (the median over the frames)
    outputs: list  # per frame, the model's outputs
    stage_ticks: tuple[tuple[int, ...], ...]  # per stage, per frame
    one_chip_outputs: list
    one_chip_ticks: int
    link_frames: tuple[int, ...]


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
              faults: Optional[Mapping[int, Callable[[bytes], Optional[bytes]]]] = None) -> ChainRun:
    """Stream ``samples`` through the stages, each on its own emulator (see the module's docstring);
    the one-chip plan runs on one emulator of the first stage's board for the comparison."""
    stages = plan.staged.stages
    if any(s.compiled.board.kind != "qemu" for s in stages):
        raise MCUDeployError(f"{plan.system.name} is not a system of emulated chips")
    faults = faults or {}
    links = [Link(k, fault=faults.get(k)) for k in range(len(stages) - 1)]
    with tempfile.TemporaryDirectory(prefix="mcud-chain-") as tmp, contextlib.ExitStack() as stack:
        root = Path(workdir or tmp)
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
    one = run_on_board(plan.one_chip, samples)
    one_ticks = int(statistics.median(r.total_ticks for r in one.runs))
    measured = {k: int(statistics.median(t)) for k, t in enumerate(ticks)}
    return ChainRun(with_measured(plan, measured, one_ticks), [[f[o] for o in plan.outputs] for f in frames],
                    tuple(tuple(t) for t in ticks), one.outputs, one_ticks, tuple(l.frames for l in links))

