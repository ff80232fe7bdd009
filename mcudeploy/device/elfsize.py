"""Real memory use of a firmware, read from its ELF's section headers and symbol table.

SRAM  = .data + .bss + .stack   (the arena is the ``mcud_arena`` object inside .bss;
                                 "statics" are the rest of .data and .bss)
extra regions: the sections the board file names for them (an arena ``mcud_arena_<region>``)
flash = every other allocated section (vectors, code, constants, weights) + .data's initial values

The section names are those of templates/firmware/link.ld.j2.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from mcudeploy.errors import MCUDeployError

SHT_SYMTAB = 2
SHT_NOBITS = 8
SHF_ALLOC = 2
ARENA_SYMBOL = "mcud_arena"
RAM_SECTIONS = (".data", ".bss", ".stack")


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    flags: int
    addr: int
    size: int
    offset: int
    link: int
    entsize: int


@dataclass(frozen=True)
class MemoryReport:
    text: int          # vectors and code, in flash
    rodata: int        # constants and weights, in flash
    data: int          # initialised statics: in SRAM, their initial values in flash
    bss: int           # zeroed statics, the arena among them
    stack: int
    arena: int
    flash_bytes: int   # capacity
    sram_bytes: int    # capacity of the region the firmware's RAM lives in
    sram_region: str
    extra: tuple = ()  # (region, bytes used, bytes available) of every other region in use
    stack_worst: Optional[int] = None  # the worst case of the stack's use (stack_bound.py), when computed

    @property
    def flash_used(self) -> int:
        return self.text + self.rodata + self.data

    @property
    def sram_used(self) -> int:
        return self.data + self.bss + self.stack

    @property
    def statics(self) -> int:
        return self.data + self.bss - self.arena

    def lines(self) -> list[str]:
        extra = [f"SRAM  {used:>10,} of {size:,} bytes ({used / size:.1%}, region {name}): arena"
                 for name, used, size in self.extra]
        return [
            f"SRAM  {self.sram_used:>10,} of {self.sram_bytes:,} bytes ({self.sram_used / self.sram_bytes:.1%}, "
            f"region {self.sram_region}): arena {self.arena:,}, stack {self.stack:,}{self._worst()}, statics {self.statics:,}",
        ] + extra + [
            f"flash {self.flash_used:>10,} of {self.flash_bytes:,} bytes ({self.flash_used / self.flash_bytes:.1%}): "
            f"code {self.text:,}, constants and weights {self.rodata:,}, initial data {self.data:,}",
        ]

    def _worst(self) -> str:
        return "" if self.stack_worst is None else f" (worst case {self.stack_worst:,})"

    def as_dict(self) -> dict:
        return {"stack_worst_case": self.stack_worst,"sram_used": self.sram_used, "sram_bytes": self.sram_bytes, "sram_region": self.sram_region,
                "arena": self.arena, "stack": self.stack, "statics": self.statics,
                "flash_used": self.flash_used, "flash_bytes": self.flash_bytes,
                "text": self.text, "rodata": self.rodata, "data": self.data, "bss": self.bss,
                "extra_regions": [{"region": n, "used": u, "bytes": b} for n, u, b in self.extra]}


def read_sections(path: Path) -> tuple[list[Section], bytes]:
    raw = Path(path).read_bytes()
    if raw[:4] != b"\x7fELF" or raw[4] != 1 or raw[5] != 1:
        raise MCUDeployError(f"{path} is not a 32-bit little-endian ELF file")
    shoff, = struct.unpack_from("<I", raw, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", raw, 0x2E)
    headers = [struct.unpack_from("<IIIIIIIIII", raw, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]
    strtab = raw[names[4]:names[4] + names[5]]

    def name_at(off: int, table: bytes) -> str:
        return table[off:table.index(b"\0", off)].decode()

    sections = [Section(name_at(h[0], strtab), h[1], h[2], h[3], h[5], h[4], h[6], h[9]) for h in headers]
    return sections, raw


def symbol_sizes(sections: list[Section], raw: bytes, prefix: str) -> dict[str, int]:
    """Total size of the symbols whose name starts with ``prefix``, by the name of their section."""
    totals: dict[str, int] = {}
    for sec in sections:
        if sec.type != SHT_SYMTAB:
            continue
        strsec = sections[sec.link]
        strtab = raw[strsec.offset:strsec.offset + strsec.size]
        for off in range(sec.offset, sec.offset + sec.size, sec.entsize or 16):
            name_off, _value, size, _info, _other, shndx = struct.unpack_from("<IIIBBH", raw, off)
            if not name_off or not 0 < shndx < len(sections):
                continue
            if strtab[name_off:strtab.index(b"\0", name_off)].decode().startswith(prefix):
                where = sections[shndx].name
                totals[where] = totals.get(where, 0) + size
    return totals


def memory_report(elf: Path, flash_bytes: int, sram_bytes: int, sram_region: str = "sram",
                  extra_regions=(), stack=None) -> MemoryReport:
    """``extra_regions``: (region name, output section, bytes) of the board's other regions in use; ``stack``: the
    firmware's worst-case stack (stack_bound.Bound), if computed."""
    sections, raw = read_sections(elf)
    sizes = {".text": 0, ".rodata": 0, ".data": 0, ".bss": 0, ".stack": 0}
    by_section = {section: name for name, section, _ in extra_regions}
    extra_used = {name: 0 for name, _, _ in extra_regions}
    for sec in sections:
        if not sec.flags & SHF_ALLOC or sec.size == 0:
            continue
        if sec.name in by_section:
            extra_used[by_section[sec.name]] += sec.size
        elif sec.name in RAM_SECTIONS:
            sizes[sec.name] += sec.size
        elif sec.type == SHT_NOBITS:
            sizes[".bss"] += sec.size
        elif sec.name.startswith((".rodata", ".ARM")):
            sizes[".rodata"] += sec.size
        else:
            sizes[".text"] += sec.size
    extra = tuple((name, extra_used[name], size) for name, _, size in extra_regions)
    arena = sum(n for where, n in symbol_sizes(sections, raw, ARENA_SYMBOL).items() if where not in by_section)
    return MemoryReport(sizes[".text"], sizes[".rodata"], sizes[".data"], sizes[".bss"], sizes[".stack"],
                        arena, flash_bytes, sram_bytes, sram_region, extra,
                        None if stack is None else stack.bytes)


def check_fits(report: MemoryReport, model: str, board: str) -> None:
    """Refuse, in one sentence, a firmware larger than the board."""
    if report.sram_used > report.sram_bytes:
        raise MCUDeployError(f"model {model} needs {report.sram_used:,} bytes of SRAM, board {board} has "
                             f"{report.sram_bytes:,} (over by {report.sram_used - report.sram_bytes:,} bytes)")
    for name, used, size in report.extra:
        if used > size:
            raise MCUDeployError(f"model {model} needs {used:,} bytes of region {name}, board {board} has "
                                 f"{size:,} (over by {used - size:,} bytes)")
    if report.flash_used > report.flash_bytes:
        raise MCUDeployError(f"model {model} needs {report.flash_used:,} bytes of flash, board {board} has "
                             f"{report.flash_bytes:,} (over by {report.flash_used - report.flash_bytes:,} bytes)")
