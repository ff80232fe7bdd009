"""The fuzz target, what ``mcudeploy plan MODEL -b host --schedule rpo`` does (import, lower,
schedule, place, the summary), with greedy placement so a case is cheap; and the outcome of a case.

Outcomes: "ok"; "error: <its first words>" for an MCUDeployError whose message is one line (the
sentence a user reads); anything else is a failure to fix: "FAIL <type> at <file:line>" for any
other exception (it would reach the CLI's last resort as an internal error), "FAIL multi-line
message", "FAIL timeout", "FAIL crash" (the worker died: a signal, the memory limit).
Numeric warnings (an overflow, a NaN cast) are reported beside the outcome (``warned``).
"""
from __future__ import annotations

import re
import traceback
import warnings
from pathlib import Path
from typing import Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.plan import CompileOptions

_NAMES = re.compile(r"\b(node|tensor|input|output|initializer|constant|reads|writes|dequantizes|quantizes)( constant)? "
                    r"(?!\()(b'[^']*'|[^\s,]+)")
_NUMBERS = re.compile(r"-?\b\d[\d,.e+-]*")


def plan(path: Path) -> None:
    from mcudeploy.compile import compile_model
    from mcudeploy.report.text import summary

    compiled = compile_model(path, "host",
                             options=CompileOptions(schedule_method="rpo", placement_method="greedy",
                                                    schedule_time_limit=1.0, placement_time_limit=1.0))
    summary(compiled, detail=True)


def outcome(path: Path) -> str:
    try:
        plan(path)
    except MCUDeployError as exc:
        text = str(exc)
        if len(text.strip().splitlines()) != 1:
            return f"FAIL multi-line message: {text.strip().splitlines()[:1]}"
        return "error: " + error_kind(text, str(path))
    except Exception as exc:  # noqa: BLE001  (this is what the fuzzer looks for)
        return f"FAIL {type(exc).__name__} at {_where(exc)}"
    return "ok"


def warned(path: Path) -> tuple[str, Optional[str]]:
    """(outcome, the first numeric warning it raised, e.g. an overflow, else None): not a failure, but
    a hint at a value computed wrong without an error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        result = outcome(path)
    first = next((w for w in caught if issubclass(w.category, RuntimeWarning)), None)
    return result, (f"{first.filename.split('/')[-1]}:{first.lineno}: {first.message}" if first else None)


def error_kind(text: str, path: str) -> str:
    """The first words of an error with the model's path, names and numbers masked."""
    text = re.sub(r"^MODEL: [^\s,]+,", "MODEL: *,", text.replace(path, "MODEL"))
    text = _NUMBERS.sub("#", _NAMES.sub(r"\1\2 *", text))
    return " ".join(text.split()[:7])


def _where(exc: BaseException) -> str:
    """The innermost frame in mcudeploy (else the innermost frame) that raised `exc`."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/mcudeploy/" in f.filename] or frames
    f = ours[-1]
    return f"{f.filename.split('/mcudeploy/')[-1]}:{f.lineno} ({f.name})"
