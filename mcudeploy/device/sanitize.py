"""``run --sanitize`` on the host board: the generated C, the kernel library and the host runner built with
AddressSanitizer and UndefinedBehaviorSanitizer (gcc), a report turned into one sentence naming the operator.

The sanitizers stop at their first report (``-fno-sanitize-recover=all``) and abort (``abort_on_error=1``);
the build's mcud_sanitize.c (templates/) then writes the index of the operator that was running, which
``report_error`` maps to its node. The whole report is kept in a file the sentence names."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from mcudeploy.errors import MCUDeployError

FILES = ("mcud_sanitize.h", "mcud_sanitize.c")  # written beside model.c by write_project(..., sanitize=True)
# -g: reports with lines; the frame pointer for ASan's stacks. The kernels at -O1 (compiled once into the cache);
# model.c at -O0: its weights and views take GCC 12 40x longer at -O1 with UBSan (VWW's: 56 s against 1.4 s), and
# it only calls the kernels
CHECKS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
CFLAGS = ["-g", "-fno-omit-frame-pointer", *CHECKS]
ENV = {"ASAN_OPTIONS": "abort_on_error=1:detect_leaks=0",
       "UBSAN_OPTIONS": "abort_on_error=1:print_stacktrace=1"}
_OP = re.compile(r"^MCUD_SANITIZE_OP (-?\d+)$", re.M)
_FINDING = re.compile(r"(runtime error: .*|ERROR: AddressSanitizer: .*)")


def cflags(flags: Sequence[str], kernels: bool) -> list[str]:
    """The host board's flags for the sanitized build of the kernels (``kernels``) or of the model's own sources:
    its -O level replaced."""
    return [f for f in flags if not f.startswith("-O")] + ["-O1" if kernels else "-O0"] + CFLAGS


def is_report(stderr: str) -> bool:
    return _OP.search(stderr) is not None or _FINDING.search(stderr) is not None


def report_error(stderr: str, labels: Sequence[str], model: str) -> MCUDeployError:
    """One sentence from a sanitizer's report on stderr: what it found, in which operator (``labels``: the
    timed operators' "Op: name" in MCUD_OP_BEGIN order), and where the whole report is kept."""
    found = _FINDING.search(stderr)
    what = found.group(1).strip() if found else "a report"
    what = re.sub(r"^ERROR: AddressSanitizer: (\S+).*", r"AddressSanitizer: \1", what)
    what = re.sub(r"^runtime error: ", "UndefinedBehaviorSanitizer: ", what)
    where = _where(stderr, labels)
    kept = _keep(stderr)
    return MCUDeployError(f"the sanitized host build of {model} found {what.rstrip('.')} {where} (a bug in mcudeploy's "
                          f"generated C or kernels; the whole report: {kept})")


def _where(stderr: str, labels: Sequence[str]) -> str:
    hits = _OP.findall(stderr)
    if not hits:
        return "outside the model's operators"
    index = int(hits[-1])
    if index == -1:
        return "before the first operator"
    if index >= 0:
        return f"in operator {index} ({labels[index]})" if index < len(labels) else f"in operator {index}"
    done = -2 - index
    return f"after operator {done} ({labels[done]}), outside any operator" if done < len(labels) else \
        f"after operator {done}, outside any operator"


def _keep(stderr: str) -> Optional[Path]:
    with tempfile.NamedTemporaryFile("w", prefix="mcud-sanitize-", suffix=".txt", delete=False) as f:
        f.write(stderr)
    return Path(f.name)
