"""``measure -b host``: per-operator times of the generated C built natively and run as a process.

The timing build (templates/mcud_timing.h.j2, main_timing.c.j2) runs the model once whole on the seeded
random input the boards are measured on, then each operator alone ``repeat`` times, as the measurer
firmware's RUN_OP does; a tick is a nanosecond of the computer's monotonic clock. Nothing goes into a timing
cache: a computer's times are not a board's, and a sanitized build's (``sanitize``) are the sanitizers'.
With ``sanitize``, a report of AddressSanitizer or UndefinedBehaviorSanitizer is one sentence naming the
operator (device/sanitize.py)."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from mcudeploy.codegen import write_project
from mcudeploy.device import host
from mcudeploy.device import sanitize as sanitizer
from mcudeploy.device.labels import model_name, op_labels
from mcudeploy.device.samples import sample_bytes
from mcudeploy.errors import MCUDeployError
from mcudeploy.samples import random_inputs

TIMER_HZ = 1_000_000_000  # CLOCK_MONOTONIC's nanoseconds
_LINE = re.compile(r"^MCUD_TIME (\d+) (\d+) (\d+) (\d+)$", re.M)


def time_on_host(compiled, repeat: int, sanitize: bool = False, workdir: Optional[Path] = None,
                 timeout: Optional[float] = None) -> list[tuple[int, int, int]]:
    """(least, total, most) nanoseconds of each operator model.c times, in MCUD_OP_BEGIN order, over
    ``repeat`` runs of it alone after one whole run."""
    with tempfile.TemporaryDirectory(prefix="mcud-host-time-") as tmp:
        project = write_project(compiled, Path(workdir or tmp), sanitize=sanitize, timing=True)
        exe = host.build(project, compiled.board, sanitize=sanitize, timing=True)
        return run_timed(exe, compiled, repeat, sanitize=sanitize, timeout=timeout)


def run_timed(exe: Path, compiled, repeat: int, sanitize: bool = False,
              timeout: Optional[float] = None) -> list[tuple[int, int, int]]:
    """The timing build ``exe`` of ``compiled`` (``host.build(..., timing=True)``) run on the seeded input."""
    labels, graph, name = op_labels(compiled), compiled.graph, model_name(compiled)
    sample = random_inputs(graph, 1, seed=0)[0]
    (exe.parent / "in.bin").write_bytes(b"".join(sample_bytes(graph, sample)))
    env = {**os.environ, **sanitizer.ENV} if sanitize else None
    try:
        proc = subprocess.run([str(exe), str(exe.parent / "in.bin"), str(repeat)], capture_output=True, text=True,
                              env=env, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MCUDeployError(f"the host timing build of {name} ran longer than {timeout:g} s") from None
    if proc.returncode != 0 and sanitize and sanitizer.is_report(proc.stderr):
        raise sanitizer.report_error(proc.stderr, labels, name)
    if proc.returncode != 0:
        raise MCUDeployError(f"the host timing build of {name} exited with status {proc.returncode}: "
                             f"{proc.stderr.strip() or 'no message'}")
    times = {int(m[0]): (int(m[1]), int(m[2]), int(m[3])) for m in _LINE.findall(proc.stdout)}
    if sorted(times) != list(range(len(labels))):
        raise MCUDeployError(f"the host timing build of {name} timed {len(times)} operators, not the plan's "
                             f"{len(labels)}")
    return [times[i] for i in range(len(labels))]
