"""timings.json: what ``mcudeploy measure`` timed, kept beside the plan.json it measured so that
``mcudeploy report`` shows it.

``measure DIR`` (a folder compile -o or tune -o wrote) and ``measure MODEL -b BOARD -o DIR`` write it,
whole (a temporary name, then a rename): the per-operator ticks (each operator with its step in the
plan's order), the estimated cycles and milliseconds where ``--estimate-for`` was given, and the
firmware's memory use read from the ELF of its build (flash: code, constants, initial data; SRAM:
the arena, stack, statics; each other region's arena). It names the plan it timed by its id (the
generated header's NAME_plan_id()): a report shows the timings of that plan only, and says so when
the folder holds another plan's.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from mcudeploy import __version__
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import write_atomic
from mcudeploy.plan.typed import BoardPlan

TIMINGS_FILE = "timings.json"
FORMAT = "mcudeploy timings"
VERSION = 1
MEMORY_FIELDS = ("flash_used", "flash_bytes", "text", "rodata", "data", "sram_used", "sram_bytes", "sram_region",
                 "arena", "stack", "statics")


def timings_dict(measured: dict, plan: BoardPlan) -> dict:
    """timings.json of ``measured`` (Measurement.as_dict(), with "memory") for ``plan`` (the plan.json measured)."""
    if not isinstance(measured.get("memory"), dict):
        raise ValueError("timings.json needs the firmware's memory use (Measurement.memory or firmware_memory)")
    return {"format": FORMAT, "version": VERSION, "mcudeploy": __version__, "plan_id": plan.plan_id, **measured}


def write_timings(folder: Path, measured: dict, plan: BoardPlan) -> Path:
    return write_atomic(Path(folder) / TIMINGS_FILE, json.dumps(timings_dict(measured, plan), indent=1) + "\n")


@dataclass(frozen=True)
class OpTiming:
    step: int
    kernel: str
    ticks: int
    cached: bool
    estimated_ms: Optional[float]


@dataclass(frozen=True)
class Timings:
    """A timings.json read and checked against the plan beside it."""
    path: Path
    board: str
    total_ticks: int
    timer_hz: int
    instructions_per_tick: Optional[float]
    device_used: bool
    clock: str
    ops: tuple[OpTiming, ...]
    memory: dict
    estimate: Optional[dict]  # {"for", "core", "clock_hz", "estimated_ms", "note", ...}

    def unit(self) -> str:
        """What one tick is."""
        if self.instructions_per_tick:
            return f"1 tick = {self.instructions_per_tick:g} guest instructions under QEMU -icount, not cycles"
        return f"1 tick = 1 cycle at {self.timer_hz:,} Hz"


KINDS = {int: "a whole number", str: "a string", list: "a list", dict: "an object"}


def _field(path: Path, data: dict, key: str, kind: type, where: str = "") -> Any:
    """data[key] when it is of ``kind`` (a bool is no number), else one sentence naming the file and the field."""
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise MCUDeployError(f"{path} is not a timings file mcudeploy can read: {where}\"{key}\" is missing or not "
                             f"{KINDS[kind]} (run mcudeploy measure again)")
    return value


def read_timings(plan_path: Path, plan: BoardPlan) -> tuple[Optional[Timings], str]:
    """The timings.json beside ``plan_path`` (a plan.json) if it times ``plan``, and a sentence saying why none is
    shown where there is one of another plan ("" otherwise). A file that is not a timings file is refused in one
    sentence naming it."""
    path = Path(plan_path).parent / TIMINGS_FILE
    if not path.is_file():
        return None, ""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MCUDeployError(f"{path} is not a timings file mcudeploy can read: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise MCUDeployError(f"{path} is not a timings file mcudeploy can read: it has no \"format\": \"{FORMAT}\"")
    version = _field(path, data, "version", int)
    if version > VERSION:
        raise MCUDeployError(f"{path} is a timings file of version {version}, written by a newer mcudeploy "
                             f"({data.get('mcudeploy', '?')}); this one reads version {VERSION}")
    timed, this = data.get("plan_id"), plan.plan_id
    if timed != this:
        return None, (f"{path} times another plan ({timed}) than {plan_path} ({this}): its timings are not shown "
                      f"(run mcudeploy measure {Path(plan_path).parent} to time this one)")
    steps = len(plan.order)
    ops = []
    for k, op in enumerate(_field(path, data, "ops", list)):
        where = f"operator {k}: "
        if not isinstance(op, dict):
            raise MCUDeployError(f"{path} is not a timings file mcudeploy can read: operator {k} is not an object")
        step = _field(path, op, "step", int, where)
        if not 0 <= step < steps or op.get("node") != plan.order[step].node:
            raise MCUDeployError(f"{path} does not match {plan_path}: its operator {k} is not step {step} of the plan")
        ms = op.get("estimated_ms")
        ops.append(OpTiming(step, str(op.get("kernel", "")), _field(path, op, "ticks", int, where),
                            bool(op.get("cached")), float(ms) if isinstance(ms, (int, float)) else None))
    memory = _field(path, data, "memory", dict)
    for key in MEMORY_FIELDS:
        _field(path, memory, key, str if key == "sram_region" else int, "memory: ")
    ipt = data.get("instructions_per_tick")
    estimate = data.get("estimate") if isinstance(data.get("estimate"), dict) else None
    return Timings(path, str(data.get("board", plan.board)), _field(path, data, "total_ticks", int),
                   _field(path, data, "timer_hz", int), float(ipt) if isinstance(ipt, (int, float)) else None,
                   bool(data.get("device_used")), str(data.get("clock") or ""), tuple(ops), memory, estimate), ""


def timings_view(timings: Optional[Timings], note: str = "") -> dict:
    """What the report shows of the timings: per step its ticks and estimated ms, the totals, and the memory
    use read from the firmware's ELF; {"measured": False, "note": ...} without timings."""
    if timings is None:
        return {"measured": False, "note": note}
    by_step = {o.step: {"ticks": o.ticks, "ms": o.estimated_ms, "kernel": o.kernel, "cached": o.cached}
               for o in timings.ops}
    m = timings.memory
    estimate = timings.estimate
    return {
        "measured": True, "note": note, "file": timings.path.name, "board": timings.board,
        "total_ticks": timings.total_ticks, "unit": timings.unit(), "clock": timings.clock,
        "source": "measured on the board" if timings.device_used else "from the board's timing cache",
        "by_step": by_step, "timed": len(timings.ops),
        "estimate": None if estimate is None else {
            "board": str(estimate.get("for", "?")), "ms": estimate.get("estimated_ms"),
            "cycles": estimate.get("estimated_cycles"), "clock_hz": estimate.get("clock_hz"),
            "core": estimate.get("core"), "note": str(estimate.get("note", ""))},
        "memory": {k: m[k] for k in MEMORY_FIELDS} | {
            "extra_regions": [r for r in m.get("extra_regions") or [] if isinstance(r, dict)]},
    }
