"""plan.json on disk: the one place that writes it and reads it back. A plan read here is JSON, an
object, and of the version this mcudeploy reads where it says (the "version" field, PLAN_VERSION:
raised when a field changes meaning), handed on as a PlanFile: where it was read and its fields as
a typed record (plan/typed.py: BoardPlan or SystemPlan, every field checked). Nothing else in
mcudeploy parses or dumps a plan.json."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Union

from mcudeploy.files import write_atomic
from mcudeploy.plan.typed import BoardPlan, PlanError, SystemPlan, decode_fields

PLAN_VERSION = 1
PLAN_FILE = "plan.json"


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
    plan: Union[BoardPlan, SystemPlan]  # its fields, typed and checked (plan/typed.py)

    @property
    def kind(self) -> str:
        """"system": a system's plan (stages/system_plan.py: its stages and pipeline); else "board"."""
        return "system" if isinstance(self.plan, SystemPlan) else "board"


def read_plan(path: Union[str, os.PathLike]) -> PlanFile:
    """The plan.json at ``path`` (a file), checked as ``decode`` does, its fields typed. An OSError
    (FileNotFoundError: the caller says what to do) passes through; text that is not UTF-8 is not valid JSON."""
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path} is not a plan.json: it is not valid JSON ({exc})") from None
    return PlanFile(path, typed_plan(decode(text, path), path))


def typed_plan(fields: Mapping[str, Any], where: Union[str, os.PathLike]) -> Union[BoardPlan, SystemPlan]:
    """plan.json's ``fields`` (read from ``where``) as the typed plan of a system (its stages and pipeline) or a board."""
    system = "system" in fields and "pipeline" in fields
    return decode_fields(SystemPlan if system else BoardPlan, fields, where)


def board_plan(plan: dict, where: str = "the plan") -> BoardPlan:
    """A board's plan made in memory (record.py's plan_dict) as read back from its plan.json."""
    return decode_fields(BoardPlan, as_written(plan), where)


def system_plan(plan: dict, where: str = "the system plan") -> SystemPlan:
    """A system's plan made in memory (stages/system_plan.py) as read back from its plan.json."""
    return decode_fields(SystemPlan, as_written(plan), where)
