"""Fault campaigns over whole commands: every fault of faultline.plan, one at a time, against
what the command gives on a clean line. Shared by tests/device/test_fault_campaign.py (bounded)
and benchmarks/fault_bench.py (every frame, the session's real timeouts).

An outcome is right (the clean result), a clear error (an MCUDeployError of one sentence), or
a failure: other results without an error, an error of several lines, any other exception (a
traceback for the user), or a command still running ``bound`` seconds after it began (a hang).
"""
from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

from faultline import Fault, Tally, inject

from mcudeploy.errors import MCUDeployError


@contextlib.contextmanager
def built_once(workdir: Path):
    """Each plan's firmware is built once for the whole campaign (a build never touches the serial
    line, and it is most of a short command's time): runner.build_for_board is memoized."""
    from mcudeploy.device import measure, runner

    real = runner.build_for_board
    built: dict[int, tuple[object, object]] = {}

    def build(compiled, _workdir=None):
        if id(compiled) not in built:  # the plan is kept in the memo, so its id is not reused
            built[id(compiled)] = (compiled, real(compiled, workdir / f"fw{len(built)}"))
        return built[id(compiled)][1]

    runner.build_for_board = measure.build_for_board = build
    try:
        yield
    finally:
        runner.build_for_board = measure.build_for_board = real


@contextlib.contextmanager
def compiled_once():
    """Each scheme a tune tries is compiled once for the whole campaign (compiling never touches the
    serial line): search.tune.compile_scheme is memoized by scheme and settings."""
    from mcudeploy.search import tune

    real = tune.compile_scheme
    memo: dict = {}

    def compile_scheme(lowered, scheme, board, name, *options, **kw):
        key = (repr(tuple(scheme)), repr(options), tuple(sorted(kw.items())))  # options: a frozen CompileOptions
        if key not in memo:
            memo[key] = real(lowered, scheme, board, name, *options, **kw)
        return memo[key]

    tune.compile_scheme = compile_scheme
    try:
        yield
    finally:
        tune.compile_scheme = real


EFFORT = 0.3  # effort seconds of the short tune's schedules and placements: the serial line is what is tested, and
# at the default 5 the final plans' exact placements took 76 of the clean tune's 120 s


def short_tune(model: Path, workdir: Path) -> Callable[[], tuple]:
    """A tune small enough to end by itself, long before its time limit (so a fault that costs
    seconds changes nothing in what it finds): (scheme, arena, summed ticks, whole-run ticks).
    Every call starts from nothing: a fresh output folder and timing cache."""
    from mcudeploy.search import TuneOptions, Tuner, space
    from mcudeploy.simulate.timing_cache import TimingCache

    calls = iter(range(1_000_000))

    def tune():
        k = next(calls)
        result = Tuner(model, "qemu-m4", workdir / f"out{k}", progress=lambda m: None,
                       cache=TimingCache("qemu-m4", workdir / f"cache{k}"),
                       options=TuneOptions(time_limit=3600, pieces=(2,), top_segments=1, sweep=1,
                                           effort=EFFORT)).run()
        best = result.best
        return space.scheme_key(best.scheme), best.arena, best.ticks, best.run_ticks

    return tune


class Hang(BaseException):
    """Raised in the command by the campaign's alarm: it ran past its bound."""


@contextlib.contextmanager
def _alarm(seconds: float):
    def ring(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def clean(action: Callable[[], object]) -> tuple[object, dict, float]:
    """The command on a clean line: (its result, frames per direction, seconds)."""
    start = time.monotonic()
    with inject(None) as counts:
        result = action()
    return result, dict(counts), time.monotonic() - start


def run_faults(action: Callable[[], object], expected, faults: Iterable[Fault], bound: float,
               tally: Optional[Tally] = None, progress: Callable[[str], None] = lambda m: None) -> Tally:
    tally = tally or Tally()
    for fault in faults:
        start = time.monotonic()
        try:
            with _alarm(bound), inject(fault):
                result = action()
        except Hang:
            tally.failures.append(f"{fault}: still running after {bound:g} s")
        except MCUDeployError as exc:
            text = str(exc)
            if "\n" in text or not text.strip():
                tally.failures.append(f"{fault}: an error of several lines: {text[:300]!r}")
            else:
                tally.errors += 1
                first = " ".join(text.split()[:5])
                tally.error_kinds[first] = tally.error_kinds.get(first, 0) + 1
                tally.error_faults.append(f"{fault}: {text}")
        except Exception as exc:  # noqa: BLE001 - any other exception is what the user would see as a traceback
            tally.failures.append(f"{fault}: {type(exc).__name__}: {exc}")
        else:
            if result == expected:
                tally.right += 1
            else:
                tally.failures.append(f"{fault}: other results without an error")
        progress(f"{fault}: {time.monotonic() - start:.1f} s")
    return tally


def our_emulators() -> list[int]:
    """QEMU processes this process started that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"qemu-system-arm" in cmd and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(int(entry.name))
    return found
