"""How the generated C meets the user's firmware: the model's name (the prefix of every exported
symbol), who owns the arena, the arena's linker sections, and which library layouts to write.

The options do not change the plan (order, offsets); they are recorded in plan.json ("c") so that
``mcudeploy run DIR`` regenerates the folder's C byte for byte.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from mcudeploy.errors import MCUDeployError

ARENA_MODES = ("static", "extern")
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
SECTION = re.compile(r"[A-Za-z0-9_.$]+\Z")
RESERVED = "mcud"  # the kernel library's namespace (mcud_conv_s8, mcud_view, MCUD_INLINE ...)


def default_name(model: str) -> str:
    """A C identifier from the model's file name: kws_dscnn_int8.onnx -> kws_dscnn_int8."""
    stem = Path(str(model)).name
    stem = stem[:-len(".onnx")] if stem.lower().endswith(".onnx") else stem
    name = re.sub(r"[^a-z0-9_]+", "_", stem.lower()).strip("_")
    name = re.sub(r"_+", "_", name)
    if not name:
        return "model"
    if not name[0].isalpha():
        name = "m_" + name
    if name.startswith(RESERVED):
        name = "m_" + name
    return name


@dataclass(frozen=True)
class CodeOptions:
    """``name``: None for the model's file name (default_name). ``arena``: "static" (an array in
    model.c) or "extern" (the caller hands the arena to every call). ``sections``: (region, linker
    section) pairs for the static arenas, region "" meaning the first. ``arduino``: also write an
    Arduino library (arduino/NAME/)."""

    name: Optional[str] = None
    arena: str = "static"
    sections: tuple[tuple[str, str], ...] = ()
    arduino: bool = False

    def __post_init__(self):
        if self.name is not None and not IDENTIFIER.match(self.name):
            raise MCUDeployError(f"--name {self.name!r} is not a C identifier (a letter, then letters, digits "
                                 f"or _)")
        if self.name is not None and self.name.lower().startswith(RESERVED):
            raise MCUDeployError(f"--name {self.name}: names starting with '{RESERVED}' belong to the kernel "
                                 f"library; choose another")
        if self.arena not in ARENA_MODES:
            raise MCUDeployError(f"--arena {self.arena!r} is not one of {', '.join(ARENA_MODES)}")
        for region, section in self.sections:
            if not SECTION.match(section):
                raise MCUDeployError(f"--arena-section {section!r} is not a linker section name (letters, "
                                     f"digits, '.', '_' or '$')")
        if self.sections and self.arena == "extern":
            raise MCUDeployError("--arena-section applies to the static arena: with --arena extern the firmware "
                                 "defines the arena and places it")

    @classmethod
    def parse(cls, name: Optional[str] = None, arena: str = "static", sections: Sequence[str] = (),
              arduino: bool = False) -> "CodeOptions":
        """From the command line: each section is SECTION (the first region's arena) or REGION=SECTION."""
        pairs = []
        for item in sections:
            region, _, section = item.rpartition("=")
            pairs.append((region, section))
        regions = [r for r, _ in pairs]
        if len(set(regions)) != len(regions):
            raise MCUDeployError("--arena-section names one region twice")
        return cls(name, arena, tuple(pairs), arduino)

    def c_name(self, model: str) -> str:
        return self.name or default_name(model)

    def section(self, region: Optional[str], first: bool) -> Optional[str]:
        """The section asked for a region's arena (the first region answers to "" too), else None."""
        for r, s in self.sections:
            if (r == "" and first) or (r and r == region):
                return s
        return None

    def check_regions(self, regions: Sequence[str]) -> None:
        for region, _ in self.sections:
            if region and region not in regions:
                raise MCUDeployError(f"--arena-section {region}=...: the plan has no arena in region {region} "
                                     f"(it uses {', '.join(regions)})")

    def as_plan(self, model: str) -> dict:
        """plan.json's "c": the name as resolved, so a folder keeps its symbols wherever the model moves."""
        return {"name": self.c_name(model), "arena": self.arena,
                "sections": [{"region": r, "section": s} for r, s in self.sections], "arduino": self.arduino}
