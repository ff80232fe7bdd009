"""The operators mcudeploy runs, per model format and type: what `mcudeploy ops` lists.

The types come from the conformance suites (mcudeploy/data/ops.json, written by
``python -m tests.conformance.ops_table --write`` and kept exact by tests/test_ops_cli.py): a type is listed
where a conformance case of the operator at that type passes. The operators come from the code: every TFLite
builtin with a handler and every ONNX op type with a declaration is listed, those no case covers yet as such.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mcudeploy.errors import MCUDeployError

FORMATS = ("tflite", "onnx")
OPS_JSON = Path(__file__).resolve().parents[1] / "data" / "ops.json"


@dataclass(frozen=True)
class Supported:
    """One operator of a format: the types mcudeploy runs it at, and for TFLite the types TensorFlow Lite Micro
    runs it at in the same cases (empty for ONNX)."""

    format: str
    name: str
    types: tuple[str, ...]
    reference: tuple[str, ...] = ()
    covered: bool = True  # a conformance case holds it


@lru_cache(maxsize=None)
def _data() -> dict:
    try:
        data = json.loads(OPS_JSON.read_text())
    except (OSError, ValueError) as exc:
        raise MCUDeployError(f"mcudeploy is installed without a readable {OPS_JSON.name} ({exc})") from exc
    for fmt in FORMATS:
        if not isinstance(data.get(fmt), dict):
            raise MCUDeployError(f"{OPS_JSON} has no {fmt} table")
    return data


def _handled(fmt: str) -> list[str]:
    """The operators the code takes: TFLite builtins with a handler, ONNX op types with a declaration."""
    if fmt == "tflite":
        from mcudeploy.frontend.tflite import HANDLERS  # the package registers every family's handlers

        return sorted(HANDLERS)
    from mcudeploy.ops import registry

    return registry.onnx_types()


def supported(fmt: str, dtype: str | None = None) -> list[Supported]:
    """Every operator of ``fmt`` mcudeploy takes, by name; with ``dtype``, those that run at it ("int16";
    "int8" also matches ONNX's "int8 (QDQ)")."""
    if fmt not in FORMATS:
        raise MCUDeployError(f"no format {fmt!r}; the formats are {', '.join(FORMATS)}")
    table = _data()[fmt]
    rows = []
    for name in sorted(set(_handled(fmt)) | {n for n, e in table.items() if e["types"]}):
        entry = table.get(name, {})
        rows.append(Supported(fmt, name, tuple(entry.get("types", ())), tuple(entry.get("tflm", ())),
                              name in table))
    if dtype is not None:
        rows = [r for r in rows if any(t.split(" ")[0] == dtype for t in r.types)]
    return rows


def lines(fmt: str, dtype: str | None = None) -> list[str]:
    """``mcudeploy ops``: one line an operator, its types (and TensorFlow Lite Micro's where they differ)."""
    rows = supported(fmt, dtype)
    if not rows:
        return [f"no {fmt} operator runs at {dtype}"]
    width = max(len(r.name) for r in rows)
    out = []
    for r in rows:
        text = ", ".join(r.types) if r.types else ("no passing conformance case" if r.covered else
                                                  "no conformance case yet")
        if r.reference and set(r.reference) != set(r.types):
            text += f"  (TensorFlow Lite Micro: {', '.join(r.reference)})"
        out.append(f"{r.name:<{width}}  {text}")
    return out
