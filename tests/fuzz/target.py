"""The fuzz target, what ``mcudeploy plan MODEL -b host --schedule rpo`` does (import, lower,
schedule, place, the summary), with greedy placement so a case is cheap; and the outcome of a case.

Outcomes: "ok"; "error: <its first words>" for an MCUDeployError whose message is one line (the
sentence a user reads); anything else is a failure to fix: "FAIL <type> at <file:line>" for any
other exception (it would reach the CLI's last resort as an internal error), "FAIL multi-line
message", "FAIL timeout", "FAIL crash" (the worker died: a signal, the memory limit).

With ``sanitize``, a case that plans is also built for the host with AddressSanitizer and
UndefinedBehaviorSanitizer and run on two random inputs (``run --sanitize -b host``): "ok" then means it
also ran clean; a sanitizer's report is "FAIL sanitizer: <what it found>", any other failure of the
build or the run "FAIL run: ..."; a one-line refusal at code generation, "error at run: <first words>".
Numeric warnings (an overflow, a NaN cast) are reported beside the outcome (``warned``).
"""
from __future__ import annotations

import contextlib
import re
import resource
import traceback
import warnings
from pathlib import Path
from typing import Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.plan import CompileOptions

_NAMES = re.compile(r"\b(node|tensor|input|output|initializer|constant|reads|writes|dequantizes|quantizes)( constant)? "
                    r"(?!\()(b'[^']*'|[^\s,]+)")
_NUMBERS = re.compile(r"-?\b\d[\d,.e+-]*")
# what run --sanitize's sentence says was found
_FOUND = re.compile(r"found (\w+Sanitizer: [^:(]+?)(?: in operator| before | after |:| \(|$)")


def plan(path: Path):
    from mcudeploy.compile import compile_model
    from mcudeploy.report.text import summary

    compiled = compile_model(path, "host",
                             options=CompileOptions(schedule_method="rpo", placement_method="greedy",
                                                    schedule_time_limit=1.0, placement_time_limit=1.0))
    summary(compiled, detail=True)
    return compiled


def run_sanitized(compiled) -> None:
    """The planned case built with the sanitizers and run on two random inputs (in sequence: a stateful
    model's state carried); a report raises as ``run --sanitize`` raises it."""
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.samples import random_inputs

    with unlimited_address_space():  # AddressSanitizer reserves terabytes of address space for its shadow
        run_compiled_on_host(compiled, random_inputs(compiled.graph, 2, seed=0), sanitize=True)


@contextlib.contextmanager
def unlimited_address_space():
    """The fuzz worker's soft limit on its address space (runner.py) lifted, for the processes started meanwhile."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def outcome(path: Path, sanitize: bool = False) -> str:
    try:
        compiled = plan(path)
    except MCUDeployError as exc:
        text = str(exc)
        if len(text.strip().splitlines()) != 1:
            return f"FAIL multi-line message: {text.strip().splitlines()[:1]}"
        return "error: " + error_kind(text, str(path))
    except Exception as exc:  # noqa: BLE001  (this is what the fuzzer looks for)
        return f"FAIL {type(exc).__name__} at {_where(exc)}"
    if not sanitize:
        return "ok"
    try:
        run_sanitized(compiled)
    except MCUDeployError as exc:
        text = str(exc).strip()
        if "sanitized host build" in text:
            found = _FOUND.search(text)
            return "FAIL sanitizer: " + (_NUMBERS.sub("#", found.group(1)).strip() if found else text[:80])
        if len(text.splitlines()) != 1 or "exited with status" in text:
            return f"FAIL run: {text.splitlines()[0][:120]}"
        return "error at run: " + error_kind(text, str(path))
    except Exception as exc:  # noqa: BLE001  (a build error of the generated C is a bug to fix)
        return f"FAIL run: {type(exc).__name__} at {_where(exc)}"
    return "ok"


def warned(path: Path, sanitize: bool = False) -> tuple[str, Optional[str]]:
    """(outcome, the first numeric warning it raised, e.g. an overflow, else None): not a failure, but
    a hint at a value computed wrong without an error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        result = outcome(path, sanitize)
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
