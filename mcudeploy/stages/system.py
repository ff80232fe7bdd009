"""Systems of several cores and chips, as data: ``boards/systems/NAME.json``, checked once against
``boards/system.schema.json`` and turned into a ``System``; a field that is wrong is named in one
sentence.

A system names its chips (each an existing board file, with one core or several that share it),
the link between neighbouring chips and the one between cores of a chip (kind, bandwidth,
per-transfer latency, whether the figures are modelled), and the topology: a chain, or a 2-D
mesh. ``System.units`` lists the cores in the order stages are placed on them: along the chain, or
in snake order over the mesh's rows (left to right, then right to left), so consecutive stages
always sit on the same chip or on neighbouring chips; the cores of one chip come one after another.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from mcudeploy.boards import Board, load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.resources import boards_dir
from mcudeploy.schema import problems

SCHEMA = "system.schema.json"
FOLDER = "systems"


@dataclass(frozen=True)
class LinkSpec:
    kind: str  # spi, uart, shared-memory
    bits_per_s: float
    latency_us: float
    modelled: bool

    def seconds(self, nbytes: int) -> float:
        """Time to hand ``nbytes`` over in one transfer (no transfer, no time)."""
        return 0.0 if nbytes <= 0 else self.latency_us * 1e-6 + nbytes * 8.0 / self.bits_per_s


@dataclass(frozen=True)
class Unit:
    """One core that runs a stage: its chip (index in the file), its name and the board it compiles for.
    ``sharing``: how many cores of its chip compile for the same board (they share its memory; 1 where
    the board is already one core's share, the chip's ``per_core``)."""

    chip: int
    core: str
    board: Board
    sharing: int = 1

    @property
    def label(self) -> str:
        return f"chip {self.chip} {self.core}"


@dataclass(frozen=True)
class ChipFirmware:
    """One firmware for all the cores of a chip (mcudeploy/target/dual_firmware.py): the board it is built for,
    how core 0 starts core 1 (``start_driver`` at ``start_base``), and the ring in ``ring_region``
    of ``slots`` frames, a wait on the other core longer than ``stall_timeout_ms`` being a stall."""

    board: Board
    start_driver: str
    start_base: int
    ring_region: str
    slots: int
    stall_timeout_ms: float


@dataclass(frozen=True)
class System:
    name: str
    description: str
    units: tuple[Unit, ...]  # in placement order
    link: Optional[LinkSpec]  # between neighbouring chips
    core_link: Optional[LinkSpec]  # between cores of one chip
    topology: str  # chain or mesh
    dims: tuple[int, ...] = ()
    note: str = ""
    firmware: tuple[Optional[ChipFirmware], ...] = ()  # per chip (file order): one firmware for its cores, if any

    def chip_firmware(self, chip: int) -> Optional[ChipFirmware]:
        return self.firmware[chip] if chip < len(self.firmware) else None

    @property
    def chips(self) -> int:
        return len({u.chip for u in self.units})

    def link_after(self, k: int) -> LinkSpec:
        """The link from unit k to unit k+1 (its neighbour: placement makes it so)."""
        same_chip = self.units[k].chip == self.units[k + 1].chip
        return self.core_link if same_chip else self.link

    @property
    def modelled_links(self) -> bool:
        return any(l is not None and l.modelled for l in (self.link, self.core_link))


def systems_dir() -> Path:
    return boards_dir() / FOLDER


def system_names(directory: Optional[Path] = None) -> list[str]:
    return sorted(p.stem for p in (directory or systems_dir()).glob("*.json"))


def is_system(name: str, directory: Optional[Path] = None) -> bool:
    return bool(name) and "/" not in name and ((directory or systems_dir()) / f"{name}.json").is_file()


@lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads((boards_dir() / SCHEMA).read_text())


def _link(data: Optional[dict]) -> Optional[LinkSpec]:
    if data is None:
        return None
    return LinkSpec(data["kind"], float(data["bits_per_s"]), float(data["latency_us"]), bool(data["modelled"]))


def snake(dims: tuple[int, int]) -> list[int]:
    """Row-major chip indices of a rows x cols mesh in snake order: each next one a neighbour."""
    rows, cols = dims
    return [r * cols + (c if r % 2 == 0 else cols - 1 - c) for r in range(rows) for c in range(cols)]


def load_system(name: str, directory: Optional[Path] = None) -> System:
    directory = directory or systems_dir()
    path = directory / f"{name}.json"
    if not is_system(name, directory):
        raise MCUDeployError(f"unknown system '{name}'; known systems: {', '.join(system_names(directory))}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise MCUDeployError(f"system file {path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    found = problems(data, _schema())
    if found:
        raise MCUDeployError(f"system file {path}: {found[0]}")
    if data["name"] != path.stem:
        raise MCUDeployError(f"system file {path} names the system '{data['name']}' (the file name must match)")
    chips, topo = data["chips"], data["topology"]
    dims = tuple(topo.get("dims", ()))
    if topo["kind"] == "mesh":
        if len(dims) != 2 or dims[0] * dims[1] != len(chips):
            raise MCUDeployError(f"system file {path}: a mesh needs 'topology.dims' of two numbers whose product is "
                                 f"its {len(chips)} chips, not {list(dims)}")
        order = snake(dims)
    elif dims:
        raise MCUDeployError(f"system file {path}: a chain has no 'topology.dims'")
    else:
        order = list(range(len(chips)))
    if len(chips) > 1 and "link" not in data:
        raise MCUDeployError(f"system file {path}: a system of {len(chips)} chips needs 'link' between them")
    units = []
    for i in order:
        chip = chips[i]
        cores = chip.get("cores", ["core0"])
        boards = chip.get("boards", [chip["board"]] * len(cores))
        if len(boards) != len(cores):
            raise MCUDeployError(f"system file {path}: chip {i} names {len(cores)} core(s) but {len(boards)} board(s)")
        if len(cores) > 1 and "core_link" not in data:
            raise MCUDeployError(f"system file {path}: chip {i} has {len(cores)} cores and needs 'core_link'")
        for core, board in zip(cores, boards):
            try:
                loaded = load_board(board)
            except MCUDeployError:
                raise MCUDeployError(f"system file {path}: chip {i} names the board '{board}', which is not a known "
                                     f"board (see mcudeploy boards)") from None
            units.append(Unit(i, core, loaded, 1 if chip.get("per_core") else boards.count(board)))
    firmware = tuple(_firmware(path, i, chip) for i, chip in enumerate(chips))
    return System(data["name"], data["description"], tuple(units), _link(data.get("link")),
                  _link(data.get("core_link")), topo["kind"], dims, data.get("note", ""), firmware)


def _firmware(path: Path, index: int, chip: dict) -> Optional[ChipFirmware]:
    data = chip.get("firmware")
    if data is None:
        return None
    try:
        board = load_board(data["board"])
    except MCUDeployError:
        raise MCUDeployError(f"system file {path}: chip {index}'s firmware names the board '{data['board']}', which is "
                             f"not a known board (see mcudeploy boards)") from None
    ring = data["ring"]
    if ring["region"] not in {r.name for r in board.regions}:
        raise MCUDeployError(f"system file {path}: chip {index}'s ring is in region '{ring['region']}', which board "
                             f"{board.name} does not have")
    if len(chip.get("cores", ())) != 2:
        raise MCUDeployError(f"system file {path}: chip {index} has a firmware for its cores, which needs two cores")
    return ChipFirmware(board, data["start"]["driver"], int(data["start"]["base"], 16), ring["region"],
                        int(ring["slots"]), float(ring["stall_timeout_ms"]))


def all_systems(directory: Optional[Path] = None) -> list[System]:
    return [load_system(n, directory) for n in system_names(directory)]
