"""Boards are data: ``boards/*.json``, checked here so a missing field is named, not guessed."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.resources import boards_dir

REQUIRED = {"name": str, "description": str, "kind": str, "core": str, "alignment": int, "regions": list,
            "flash_bytes": int}
KINDS = ("host", "qemu", "hardware")


@dataclass(frozen=True)
class Region:
    name: str
    size: int
    origin: int = 0
    excluded: bool = False  # not usable for the arena (e.g. not modelled by the emulator)


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    kind: str
    core: str
    alignment: int
    regions: tuple[Region, ...]
    flash_bytes: int
    data: dict  # the whole file, for the parts only some layers read (build, serial, qemu, platformio)
    alias_of: Optional[str] = None

    @property
    def sram_bytes(self) -> int:
        return sum(r.size for r in self.regions if not r.excluded)


def _load_file(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise MCUDeployError(f"board file {path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if "alias_of" in data:
        return data
    for key, kind in REQUIRED.items():
        if key not in data:
            raise MCUDeployError(f"board file {path} lacks the required field '{key}'")
        if not isinstance(data[key], kind):
            raise MCUDeployError(f"board file {path}: field '{key}' should be a {kind.__name__}")
    if data["kind"] not in KINDS:
        raise MCUDeployError(f"board file {path}: kind '{data['kind']}' is not one of {', '.join(KINDS)}")
    if path.stem != data["name"]:
        raise MCUDeployError(f"board file {path} names the board '{data['name']}' (the file name must match)")
    for r in data["regions"]:
        if not isinstance(r, dict) or "name" not in r or "size" not in r:
            raise MCUDeployError(f"board file {path}: every memory region needs a 'name' and a 'size'")
    return data


def board_names(directory: Optional[Path] = None) -> list[str]:
    directory = directory or boards_dir()
    return sorted(p.stem for p in directory.glob("*.json"))


def load_board(name: str, directory: Optional[Path] = None) -> Board:
    directory = directory or boards_dir()
    path = directory / f"{name}.json"
    if not path.is_file():
        raise MCUDeployError(f"unknown board '{name}'; known boards: {', '.join(board_names(directory))}")
    data = _load_file(path)
    if "alias_of" in data:
        target = load_board(data["alias_of"], directory)
        return Board(**{**target.__dict__, "alias_of": target.name, "name": name})
    regions = tuple(Region(r["name"], int(r["size"]), int(r.get("origin", 0)), bool(r.get("excluded", False)))
                    for r in data["regions"])
    return Board(data["name"], data["description"], data["kind"], data["core"], data["alignment"], regions,
                 data["flash_bytes"], data)


def all_boards(directory: Optional[Path] = None) -> list[Board]:
    return [load_board(n, directory) for n in board_names(directory)]
