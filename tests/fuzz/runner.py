"""Run fuzz cases in worker processes, each case under a time limit and the worker under a memory
limit, and count the outcomes.

Case ``i`` of seed ``s`` is drawn from ``random.Random(f"{s}:{i}")`` alone (which seed model, which
mutations), so any case can be made again by its index: ``case(seeds, s, i)``. A worker that
overruns the time limit is killed and counted as "FAIL timeout"; one that dies (a signal) as
"FAIL crash"; both are replaced.

A seed is (name, bytes) for an ONNX model, (name, bytes, "tflite") for a .tflite: the format picks the
mutators (fuzz.mutate, fuzz.mutate_tflite) and the case file's suffix; ONNX cases draw exactly as
before, so their indices still name the same cases.
"""
from __future__ import annotations

import multiprocessing
import os
import random
import resource
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Optional

from fuzz import mutate, mutate_tflite
from fuzz.target import warned

MEMORY_HEADROOM = 3 << 30  # bytes a worker may allocate beyond what it holds at start


@dataclass
class Result:
    cases: int
    seconds: float
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[int]] = field(default_factory=dict)  # outcome -> the first case indices
    slowest: tuple[float, int] = (0.0, -1)  # seconds and index of the slowest case that finished
    warnings: dict[str, list[int]] = field(default_factory=dict)  # numeric warning -> the first case indices

    @property
    def failures(self) -> dict[str, list[int]]:
        return {k: v for k, v in self.examples.items() if k.startswith("FAIL")}

    def failure_lines(self, again: str) -> str:
        """Each failure with its count and first cases, and ``again``: how to make a case again."""
        return "\n".join(f"{self.counts[kind]} x {kind}: cases {indices} ({again})"
                         for kind, indices in self.failures.items())


MUTANTS = {"onnx": mutate.mutant, "tflite": mutate_tflite.mutant}
SUFFIX = {"onnx": ".onnx", "tflite": ".tflite"}


def seed_format(seed: tuple) -> str:
    """"onnx" or "tflite": a seed's third element, "onnx" where it has none."""
    return seed[2] if len(seed) > 2 else "onnx"


def case(seeds: list[tuple], seed: int, index: int) -> tuple[str, bytes, list[str]]:
    """(seed model's name, the mutated model, what was done to it) of case `index`."""
    rng = random.Random(f"{seed}:{index}")
    chosen = seeds[rng.randrange(len(seeds))]
    data, done = MUTANTS[seed_format(chosen)](chosen[1], rng)
    return chosen[0], data, done


def case_suffix(seeds: list[tuple], seed: int, index: int) -> str:
    """The file suffix of case `index` (its seed's format)."""
    return SUFFIX[seed_format(seeds[random.Random(f"{seed}:{index}").randrange(len(seeds))])]


def _serve(conn, seeds, seed: int, folder: str, sanitize: bool) -> None:
    with open("/proc/self/status") as f:
        vm = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    if vm:  # the soft limit only: a sanitized run lifts it for its process (fuzz.target.unlimited_address_space)
        resource.setrlimit(resource.RLIMIT_AS, (vm + MEMORY_HEADROOM, resource.getrlimit(resource.RLIMIT_AS)[1]))
    while True:
        index = conn.recv()
        if index is None:
            return
        began = time.monotonic()
        path = Path(folder) / f"case-{os.getpid()}{case_suffix(seeds, seed, index)}"
        path.write_bytes(case(seeds, seed, index)[1])
        conn.send((*warned(path, sanitize), time.monotonic() - began))
        path.unlink()


class _Worker:
    def __init__(self, ctx, seeds, seed: int, folder: str, sanitize: bool):
        self.ctx, self.args = ctx, (seeds, seed, folder, sanitize)
        self.index: Optional[int] = None
        self.since = 0.0
        self._start()

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_serve, args=(child, *self.args), daemon=True)
        self.proc.start()
        child.close()

    def give(self, index: int) -> None:
        self.index, self.since = index, time.monotonic()
        self.conn.send(index)

    def restart(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.conn.close()
        self._start()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


def fuzz(seeds: list[tuple], count: int, seed: int = 0, start: int = 0, jobs: int = 1,
         timeout: float = 10.0, keep: int = 5, progress: Optional[Callable[[int, Result], None]] = None,
         sanitize: bool = False) -> Result:
    """Cases start .. start+count-1 of `seed`, on `jobs` workers; `keep` example indices per outcome.
    ``sanitize``: each case that plans is also run sanitized (fuzz.target), the sanitized kernel library built
    first, here, so that no case's time includes it."""
    ctx = multiprocessing.get_context("fork")
    if sanitize:
        _sanitized_library(seeds)
    result = Result(count, 0.0)
    todo = iter(range(start, start + count))
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcud-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        workers = [_Worker(ctx, seeds, seed, tmp, sanitize) for _ in range(max(jobs, 1))]
        busy = []
        for w in workers:
            index = next(todo, None)
            if index is not None:
                w.give(index)
                busy.append(w)
        done = 0
        while busy:
            ready = wait([w.conn for w in busy], timeout=0.5)
            for w in list(busy):
                if w.conn in ready:
                    try:
                        what, warning, seconds = w.conn.recv()
                        result.slowest = max(result.slowest, (seconds, w.index))
                        if warning and len(result.warnings.setdefault(warning, [])) < keep:
                            result.warnings[warning].append(w.index)
                    except (EOFError, OSError):
                        w.proc.join()
                        what = f"FAIL crash (exit {w.proc.exitcode})"
                        w.restart()
                elif time.monotonic() - w.since > timeout:
                    what = "FAIL timeout"
                    w.restart()
                else:
                    continue
                result.counts[what] += 1
                examples = result.examples.setdefault(what, [])
                if len(examples) < keep:
                    examples.append(w.index)
                done += 1
                if progress:
                    progress(done, result)
                index = next(todo, None)
                if index is None:
                    busy.remove(w)
                else:
                    w.give(index)
        for w in workers:
            w.stop()
    result.seconds = time.monotonic() - began
    return result


def _sanitized_library(seeds: list[tuple]) -> None:
    """The host's sanitized kernel library compiled into the cache, by a sanitized run of the first seed."""
    from fuzz.target import plan, run_sanitized

    with tempfile.TemporaryDirectory(prefix="mcud-fuzz-seed-") as tmp:
        path = Path(tmp) / f"seed{SUFFIX[seed_format(seeds[0])]}"
        path.write_bytes(seeds[0][1])
        run_sanitized(plan(path))
