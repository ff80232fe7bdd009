"""plan.json on disk: the one place that writes it and reads it back. A plan read here is JSON, an
object, and of the version this mcudeploy reads where it says (the "version" field, PLAN_VERSION:
raised when a field changes meaning), handed on as a PlanFile: whose plan it is (one board's or a
system's), where it was read, the C sections it asked for, and its fields, of which a reader asks
those it needs through ``PlanFile.require``, which names the one missing. Nothing else in mcudeploy
parses or dumps a plan.json."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Union

from mcudeploy.errors import MCUDeployError
from mcudeploy.files import write_atomic

PLAN_VERSION = 1
PLAN_FILE = "plan.json"


class PlanError(MCUDeployError):
    """A file that is not a plan.json this mcudeploy reads, in one sentence."""


def plan_path(path: Union[str, os.PathLike]) -> Path:
    """``path``'s plan.json: the file itself, or the one in that folder."""
    p = Path(path)
    return p / PLAN_FILE if p.is_dir() else p


def encode(plan: dict, end: str = "\n") -> str:
    """The text of plan.json (one space of indent, as every writer has always written it)."""
    return json.dumps(plan, indent=1) + end


def write_plan(path: Union[str, os.PathLike], plan: dict, end: str = "\n") -> Path:
    """Write ``plan`` to ``path`` whole (under a temporary name, then renamed); return the path."""
    write_atomic(Path(path), encode(plan, end))
    return Path(path)


def as_written(plan: dict) -> dict:
    """``plan`` as it reads back from plan.json (tuples become lists, keys strings)."""
    return json.loads(json.dumps(plan))


def decode(text: str, where: Union[str, os.PathLike]) -> dict:
    """The plan in ``text`` (read from ``where``), checked: JSON, an object, the version this mcudeploy reads."""
    try:
        plan = json.loads(text)
    except ValueError as exc:
        raise PlanError(f"{where} is not a plan.json: it is not valid JSON ({exc})") from None
    if not isinstance(plan, dict):
        raise PlanError(f"{where} is not a plan.json: it holds no JSON object")
    if "version" in plan and plan["version"] != PLAN_VERSION:
        raise PlanError(f"{where} was written by another version of mcudeploy (plan version "
                        f"{plan.get('version')}, this one reads {PLAN_VERSION}): compile or tune the model again")
    return plan


@dataclass(frozen=True)
class PlanFile:
    """A plan.json read back and checked by ``read_plan``."""

    path: Path  # where it was read
    fields: Mapping[str, Any]  # the JSON object, as written (record.py's plan_dict, or a system's)

    @property
    def kind(self) -> str:
        """"system": a system's plan (stages/system_plan.py: its stages and pipeline); else "board"."""
        return "system" if "system" in self.fields and "pipeline" in self.fields else "board"

    @property
    def arena_sections(self) -> dict[str, str]:
        """The linker sections ``compile --arena-section`` put the arenas in ("c"), by region ("" the first)."""
        c = self.fields.get("c")
        return {s["region"]: s["section"] for s in (c or {}).get("sections", [])}

    def require(self, keys: Iterable[str]) -> None:
        """Refuse the plan unless it has every field of ``keys``, naming the first missing."""
        require(self.fields, self.path, keys)


def read_plan(path: Union[str, os.PathLike]) -> PlanFile:
    """The plan.json at ``path`` (a file), checked as ``decode`` does. An OSError (FileNotFoundError: the
    caller says what to do) passes through; text that is not UTF-8 is not valid JSON."""
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path} is not a plan.json: it is not valid JSON ({exc})") from None
    return PlanFile(path, decode(text, path))


def require(plan: dict, where: Union[str, os.PathLike], keys: Iterable[str]) -> None:
    """Refuse ``plan`` unless it has every field of ``keys``, naming the first missing."""
    for key in keys:
        if key not in plan:
            raise PlanError(f"{where} is not a plan.json: it has no \"{key}\" field")
