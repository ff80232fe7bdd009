"""Reads of constants (the weights, literal pools) from flash in a traced run, priced for a real board.

QEMU has no wait states, so the trace charges a load from flash as a load from SRAM. A TCG plugin
(firmware/qemu/flash_reads.c, built here with the host's C compiler and kept in the cache) watches every
data read of the emulated board's flash while an operator runs and passes it through the target board's
data cache (its ``flash_data``: the flash accelerator's data cache on an STM32F4/L4, the Cortex-M7's L1
data cache): each miss waits the board's flash wait states. Two geometries of the same capacity are
counted, since a reference manual gives a line's size but not whether a miss waits for the whole line:

- ``flash_misses``: lines of ``line_bytes``, each miss waiting once (the word asked for comes first and
  the rest of the line streams in behind it): the estimate;
- ``flash_misses_words``: lines of ``read_bytes``, each flash read of a miss waiting on its own: the
  range's high end.

The cache is modelled fully associative with least-recently-used replacement and holding flash data only
(on an M7, activations in SRAM share the L1 cache with the weights: there the estimate is optimistic).

A board that runs its code in place from a serial flash (its ``xip``: the HiFive1) has the plugin fetch every block
run through the board's instruction cache and pass each line fill and each read of a constant over the flash's
serial interface, which continues an open read at the next byte and sends a command otherwise (XIP_KEYS: the line
fills, the commands, the bytes moved; cycles.py prices them). The Pico's RP2040 has one cache for code and weights
(``unified``: a read of a constant goes through it too) and sends a command for every access (``merge`` false).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from mcudeploy.boards import Board, FlashData, Xip
from mcudeploy.errors import MCUDeployError
from mcudeploy.resources import firmware_dir
from mcudeploy.simulate.timing_cache import cache_root

SOURCE = Path("qemu") / "flash_reads.c"
KEYS = ("flash_reads", "flash_misses", "flash_misses_words")
XIP_KEYS = ("icache_fills", "spi_commands", "spi_bytes")


@dataclass(frozen=True)
class FlashCaches:
    """The target board's data cache, as the plugin counts it: (lines, bytes) of the estimate's geometry
    and of the high end's (lines 0: no cache, every read misses)."""
    line: tuple[int, int]
    word: tuple[int, int]

    @classmethod
    def of(cls, data: FlashData, cache_on: bool) -> "FlashCaches":
        capacity = data.cache_lines * data.line_bytes if cache_on else 0
        return cls((capacity // data.line_bytes, data.line_bytes), (capacity // data.read_bytes, data.read_bytes))


def plugin(name: Path = SOURCE) -> Path:
    """A plugin's shared object (firmware/``name``; default this module's), built from its source on first use
    (kept by the source's digest)."""
    source = firmware_dir() / name
    text = source.read_bytes()
    target = cache_root() / "qemu-plugins" / f"{source.stem}-{hashlib.sha256(text).hexdigest()[:16]}.so"
    if target.exists():
        return target
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise MCUDeployError(f"the QEMU plugin {source.name} needs the host's C compiler (cc or gcc), which is not "
                             f"on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / target.name
        proc = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(built),
                               str(source)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise MCUDeployError(f"the QEMU plugin {source} did not compile: {proc.stderr.strip()[-300:]}")
        os.replace(built, target)  # whole or not at all: a second process may build the same file
    return target


def qemu_args(emulated: Board, caches: Optional[FlashCaches], begin: int, end: int, out: Path,
              xip: Optional[Xip] = None) -> tuple[str, ...]:
    """QEMU's arguments that load the plugin for a run of ``emulated``'s firmware, writing to ``out``: the data
    caches of ``caches``, the instruction cache and serial reads of ``xip``."""
    lo, hi = emulated.flash_origin, emulated.flash_origin + emulated.flash_bytes
    args = [f"lo={lo:#x}", f"hi={hi:#x}", f"begin={begin:#x}", f"end={end:#x}"]
    if caches is not None:
        args += [f"cache={caches.line[0]}:{caches.line[1]}", f"cache={caches.word[0]}:{caches.word[1]}"]
    if xip is not None:
        args.append(f"icache={xip.icache_sets}:{xip.icache_ways}:{xip.line_bytes}")
        args += ["unified=1"] if xip.unified else []
        args += [] if xip.merge else ["merge=0"]
    return ("-plugin", ",".join([str(plugin()), *args, f"out={out}"]))


def keys(caches: Optional[FlashCaches], xip: Optional[Xip] = None) -> tuple[str, ...]:
    """The figures of a span the plugin writes, in its order, for qemu_args(caches=..., xip=...)."""
    return ("flash_reads",) + (KEYS[1:] if caches is not None else ()) + (XIP_KEYS if xip is not None else ())


def read_counts(out: Path, spans: int, names: tuple[str, ...] = KEYS) -> list[Counter]:
    """The plugin's figures per operator span, as Counters of ``names`` (keys()); refused unless there are
    ``spans``."""
    try:
        rows = [line.split() for line in out.read_text().splitlines() if line.strip()]
    except OSError as exc:
        raise MCUDeployError(f"the QEMU plugin wrote no flash-read counts ({exc.strerror}: {out})") from None
    if len(rows) != spans or any(len(r) != len(names) for r in rows):
        raise MCUDeployError(f"the QEMU plugin counted flash reads for {len(rows)} operator runs, the trace {spans}")
    return [Counter(dict(zip(names, map(int, r)))) for r in rows]


def merge(spans: Sequence[Counter], counts: Optional[Sequence[Counter]]) -> list[Counter]:
    """Each span's instruction classes with its flash reads added (unchanged when nothing was counted)."""
    if counts is None:
        return list(spans)
    return [s + c for s, c in zip(spans, counts)]
