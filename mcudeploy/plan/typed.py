"""plan.json's fields as typed, frozen records: checked when read (a field of the wrong kind, or a
required one missing, is refused in one sentence naming the file and the field), then read by
attribute. Optional fields are None (or empty) where a plan leaves them out; the objects other
modules own (the cuts, the swaps, the objective, the moves) stay plain mappings that those modules
read (partition.cut_from_dict, offload.swap.Offload.from_plan, objective.Objective.from_plan)."""
from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field
from typing import Any, Optional, Union

from mcudeploy.errors import MCUDeployError
from mcudeploy.plan.ident import plan_id


class PlanError(MCUDeployError):
    """A file that is not a plan.json this mcudeploy reads, in one sentence."""


@dataclass(frozen=True)
class Method:
    """"schedule" or "placement": how the order or the offsets were found (a bare method name in early plans)."""
    method: Optional[str] = None
    used: Optional[str] = None
    proven_optimal: Optional[bool] = None
    detail: Optional[str] = None
    peak_bytes: Optional[int] = None
    bound_bytes: Optional[int] = None
    effort_limit_s: Optional[float] = None
    effort_s: Optional[float] = None
    time_s: Optional[float] = None


@dataclass(frozen=True)
class Step:
    """One step of the order; copies (mcudeploy/offload) record what they copy and where."""
    node: str
    op: str
    step: Optional[int] = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    macs: Optional[int] = None
    kernel: Optional[bool] = None
    scratch: Optional[int] = None
    tile: Optional[int] = None  # blocks of the scratch's tile (offload.tile_convolutions), where more than one
    sram: Optional[int] = None  # bytes of constants copied to SRAM for this step (offload/sram.py)
    of: Optional[str] = None
    region: Optional[str] = None
    region_recorded: bool = field(default=False, metadata={"present": "region"})  # plans before copies' regions: no
    slot: Optional[int] = None
    ticks: Optional[float] = None
    modelled: Optional[float] = None
    recompute: Optional[str] = None


@dataclass(frozen=True)
class Region:
    name: str
    size: Optional[int] = None
    arena_bytes: Optional[int] = None


@dataclass(frozen=True)
class Buffer:
    """Bytes offset..offset+size of its region's arena over steps first..last; ``parts``: (offset in the
    buffer, size, first, last) where its size changes in place."""
    name: str
    offset: int
    size: int
    first: int
    last: int
    tensors: tuple[str, ...] = ()
    region: Optional[str] = None
    parts: tuple[tuple[int, int, int, int], ...] = ()


@dataclass(frozen=True)
class Tensor:
    name: str
    buffer: Optional[str] = None
    offset: Optional[int] = None
    shape: Optional[tuple[int, ...]] = None
    dtype: Optional[str] = None
    strides: Optional[tuple[int, ...]] = None
    state: bool = False


@dataclass(frozen=True)
class Port:
    """A model input or output; ``scale`` and ``zero_point`` where it is quantized per tensor."""
    name: str
    shape: Optional[tuple[int, ...]] = None
    dtype: Optional[str] = None
    scale: Union[float, tuple[float, ...], None] = None
    zero_point: Union[int, tuple[int, ...], None] = None


@dataclass(frozen=True)
class State:
    """A state kept between calls outside the arena (memory/state.py)."""
    name: str
    size: int
    next: Optional[str] = None
    shape: Optional[tuple[int, ...]] = None
    dtype: Optional[str] = None
    scale: Optional[float] = None
    zero_point: Optional[int] = None
    buffer: Optional[str] = None
    offset: Optional[int] = None
    tensors: tuple[str, ...] = ()
    in_place: bool = False


@dataclass(frozen=True)
class Latency:
    ticks: Optional[float] = None
    baseline_ticks: Optional[float] = None
    source: Optional[str] = None
    budget_ticks: Optional[float] = None
    run_ticks: Optional[float] = None
    baseline_run_ticks: Optional[float] = None


@dataclass(frozen=True)
class Split:
    """What tune's split saved."""
    arena_bytes_unsplit: Optional[int] = None
    arena_bytes: Optional[int] = None
    saved_bytes: Optional[int] = None
    ratio: Optional[float] = None


@dataclass(frozen=True)
class Section:
    section: str
    region: str = ""


@dataclass(frozen=True)
class CFields:
    """"c": how the C meets the firmware (plan/code_options.py's CodeOptions.as_plan)."""
    name: Optional[str] = None
    arena: str = "static"
    sections: tuple[Section, ...] = ()
    arduino: bool = False


@dataclass(frozen=True)
class BoardPlan:
    """One board's plan.json (plan/record.py's plan_dict; tune adds "split" and "tune")."""
    model: str
    board: str
    arena_bytes: int
    lower_bound_bytes: int
    order: tuple[Step, ...]
    buffers: tuple[Buffer, ...]
    version: Optional[int] = None
    model_path: Optional[str] = None
    model_sha256: Optional[str] = None
    placement: Union[Method, str, None] = None
    schedule: Union[Method, str, None] = None
    alignment: Optional[int] = None
    regions: tuple[Region, ...] = ()
    sharing: Optional[tuple[str, ...]] = None
    tensors: tuple[Tensor, ...] = ()
    int8_input: bool = False
    stream_input: bool = False
    inputs: tuple[Port, ...] = ()
    outputs: tuple[Port, ...] = ()
    state_bytes: Optional[int] = None
    states: tuple[State, ...] = ()
    weights_bytes: Optional[int] = None
    macs: Optional[int] = None
    scheme: tuple[Any, ...] = ()
    cuts: tuple[Mapping, ...] = ()
    latency: Optional[Latency] = None
    objective: Optional[Mapping] = None
    cores: Optional[Mapping] = None  # one inference on several cores: {"count", "core", "phase"} per step (mcudeploy/cores)
    moves: tuple[Mapping, ...] = ()
    offload: Optional[Mapping] = None
    c: Optional[CFields] = None
    split: Optional[Split] = None
    tune: Optional[Mapping] = None
    # the object as read, for the plan's id (taken over the fields as written) and ``has`` only
    written: Mapping = field(default_factory=dict, repr=False, compare=False, metadata={"whole": True})

    @property
    def plan_id(self) -> str:
        """The id the generated header carries (plan/ident.py), of the fields as written."""
        return plan_id(self.written)

    @property
    def arena_sections(self) -> dict[str, str]:
        """The linker sections ``compile --arena-section`` put the arenas in ("c"), by region ("" the first)."""
        return {s.region: s.section for s in (self.c.sections if self.c else ())}

    def has(self, key: str) -> bool:
        """Whether plan.json has the field ``key`` (plans written before it lack it)."""
        return key in self.written


@dataclass(frozen=True)
class Topology:
    kind: str
    dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class Stage:
    """A system's stage: its operators on one core of one chip, what it sends to the next, and its own plan."""
    stage: int
    chip: int
    core: str
    board: str
    operators: tuple[str, ...]
    arena_bytes: int
    flash_bytes: int
    ticks: float
    ticks_source: str
    compute_s: float
    link_s: float
    sent_bytes: int
    link: Optional[str] = None
    receives: tuple[str, ...] = ()
    sends: tuple[str, ...] = ()
    plan: Optional[BoardPlan] = None


@dataclass(frozen=True)
class Link:
    tensor: str
    src: int = field(metadata={"key": "from"})
    dst: int = field(metadata={"key": "to"})
    bytes: int


@dataclass(frozen=True)
class Pipeline:
    throughput_ratio: float
    bottleneck_stage: int
    link_share: float
    bottleneck_s: float
    one_core_s: float
    one_core_board: str
    source: str
    links: str
    objective: str
    method: str
    one_core_ticks: Optional[float] = None
    note: str = ""


@dataclass(frozen=True)
class SystemPlan:
    """A system's plan.json (stages/system_plan.py's system_plan_dict)."""
    model: str
    system: str
    topology: Topology
    stages: tuple[Stage, ...]
    pipeline: Pipeline
    links: tuple[Link, ...] = ()
    version: Optional[int] = None


KINDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", Mapping: "an object"}


def decode_fields(cls, value: Any, where: Union[str, os.PathLike], name: str = ""):
    """``value`` (plan.json's object, or one inside it at ``name``) as a ``cls``, every field checked."""
    if not isinstance(value, Mapping):
        raise PlanError(f"{where} is not a valid plan: {_named(name)} is not an object")
    hints = typing.get_type_hints(cls)
    given = {}
    for f in dataclasses.fields(cls):
        key = f.metadata.get("key", f.name)
        if f.metadata.get("whole"):
            given[f.name] = value
        elif "present" in f.metadata:
            given[f.name] = f.metadata["present"] in value
        elif key in value:
            given[f.name] = _value(hints[f.name], value[key], where, f"{name}.{key}" if name else key)
        elif f.default is MISSING and f.default_factory is MISSING:
            raise PlanError(f"{where} is not a plan.json: {'it' if not name else name} has no \"{key}\" field")
    return cls(**given)


def _named(name: str) -> str:
    return f"\"{name}\"" if name else "it"


def _value(hint, value: Any, where, name: str):
    """``value`` as ``hint`` says (lists become tuples, objects records), else PlanError naming ``name``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        return _value(next((k for k in kinds if _fits(k, value)), kinds[-1]), value, where, name)
    if origin is tuple:
        if not isinstance(value, list) or (Ellipsis not in args and len(value) != len(args)):
            raise PlanError(f"{where} is not a valid plan: \"{name}\" is not a list"
                            + (f" of {len(args)}" if Ellipsis not in args else ""))
        kinds = [args[0]] * len(value) if Ellipsis in args else args
        return tuple(_value(k, v, where, f"{name}[{i}]") for i, (k, v) in enumerate(zip(kinds, value)))
    if dataclasses.is_dataclass(hint):
        return decode_fields(hint, value, where, name)
    if not _fits(hint, value):
        raise PlanError(f"{where} is not a valid plan: \"{name}\" is not {KINDS[hint]}")
    return value


def _fits(hint, value: Any) -> bool:
    """Whether ``value`` is JSON of the kind ``hint`` reads (an object for a record, a list for a tuple; a bool
    is no number)."""
    if hint is Any:
        return True
    if dataclasses.is_dataclass(hint) or hint is Mapping:
        return isinstance(value, Mapping)
    if typing.get_origin(hint) is tuple:
        return isinstance(value, list)
    return isinstance(value, (int, float) if hint is float else hint) and (hint is bool or not isinstance(value, bool))
