"""Measured kernel timings, cached on disk per board and kernel signature.

A kernel signature names what decides a kernel's time: the C function, its parameter
struct (arrays by content digest), the shape, strides and dtype of every view and where it
lives (flash, or which SRAM region), which views share a buffer and how far apart (a Concat input its
producer wrote into the output is skipped, an in-place output may take another route), plus a
digest of the kernel library's sources. Two operators with the same
signature run the same instructions, so one measurement serves both, across models and runs;
an edited kernel gets new signatures.

The device session writes here, the simulator reads, the search asks both. Files live in
``$MCUDEPLOY_CACHE/timings/<board>.json`` (default ``~/.cache/mcudeploy``); a write takes the
file's lock, merges with what is on disk and replaces the file atomically, so parallel runs (two
tunes on two boards of one kind) neither lose entries nor leave a half-written file.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from mcudeploy.files import locked, write_atomic, writing
from mcudeploy.ir import Graph, Node, row_major
from mcudeploy.ops import registry
from mcudeploy.ops.base import Array, Struct
from mcudeploy.resources import firmware_dir

CACHE_VERSION = 2  # 2: model.c calls each kernel from a function of its own (timings changed)


def cache_root() -> Path:
    return Path(os.environ.get("MCUDEPLOY_CACHE", Path.home() / ".cache" / "mcudeploy"))


@functools.lru_cache(maxsize=None)
def _library_digest(folder: str) -> str:
    h = hashlib.sha256()
    root = Path(folder)
    for sub in ("include", "kernels"):
        for p in sorted((root / sub).glob("*")):
            if p.is_file():
                h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def library_digest() -> str:
    """Digest of the kernel library (firmware/include, firmware/kernels)."""
    return _library_digest(str(firmware_dir()))


def operator_key(model: str, node: Node) -> str:
    """Which operator of which model a timing is of, a piece or the whole (a piece's original's
    name), with this kernel library: the simulator fits a piece's fixed cost over the timings of
    its own operator only (simulate.py, rule 0), never over other shapes of the same kernel."""
    key = [model, node.original, library_digest()]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]


def _plain(value):
    if isinstance(value, Array):
        data = np.ascontiguousarray(np.asarray(value.values))
        return {"array": value.ctype, "n": int(data.size), "sha": hashlib.sha256(data.tobytes()).hexdigest()[:16]}
    if isinstance(value, Struct):
        return {"struct": value.ctype, "fields": [[k, _plain(v)] for k, v in value.fields]}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(np.float32(value)).hex()
    return str(value)


def kernel_signature(graph: Graph, node: Node, lifetimes=None, placement=None, call=None) -> Optional[str]:
    """The signature of the kernel call that runs ``node``; None when it runs no kernel.

    With the plan's ``lifetimes`` (memory/lifetimes.py) a view's strides are those of its slot
    in a shared buffer, and an operator whose work is done by sharing has no kernel; with its
    ``placement`` each view also names its memory region (regions differ in speed on a board).
    ``call``: the node's kernel call, where the caller made it already.
    """
    op = registry.get(node.op)
    if op.view or (lifetimes is not None and node.name in lifetimes.elided):
        return None
    call = call if call is not None else op.kernel(graph, node)
    slots = lifetimes.slots if lifetimes is not None else {}
    views, seen = [], []  # seen: (view index, buffer, byte offset) of the views in the plan's buffers
    for name in call.views:
        if not name:
            views.append(None)
            continue
        t = graph[name]
        slot = slots.get(name)
        region = None
        if placement is not None and not t.is_const and lifetimes is not None:
            region = placement.regions.get(lifetimes.buffer_of.get(name))
        view = {"dtype": t.dtype, "shape": list(t.shape),
                "strides": list(slot.strides) if slot is not None else list(row_major(t.shape)),
                "flash": t.is_const, "region": region}
        if slot is not None:
            shared = next(([j, slot.offset - offset] for j, buffer, offset in seen if buffer == slot.buffer), None)
            if shared is not None:
                view["shares"] = shared  # an earlier view in the same buffer, and bytes from its first
            seen.append((len(views), slot.buffer, slot.offset))
        views.append(view)
    key = {"fn": call.fn, "views": views, "params": _plain(call.params) if call.params is not None else None,
           "library": library_digest()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


class CacheView:
    """Timings read the way the simulator reads them: signature -> {"ticks": int, "timer_hz": int,
    ...}. A TimingCache is one with a file behind it; TimingCache.view gives some of its entries
    alone, so that a search estimates only from the timings it took itself, not from whatever else
    is on disk."""

    def __init__(self, entries: Mapping[str, dict]):
        self._entries = dict(entries)

    def get(self, signature: str) -> Optional[dict]:
        return self._entries.get(signature)

    def __contains__(self, signature: str) -> bool:
        return signature in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> dict:
        """A copy of every entry (signature -> entry), e.g. for the simulator's estimates."""
        return dict(self._entries)


class TimingCache(CacheView):
    """Timings of one board, in the cache folder (whatever the writer stores per signature). The
    boards of a pool (mcudeploy/device/pool.py) put into one TimingCache from threads of their own."""

    _lock = threading.Lock()  # the file lock is per process; this one orders the threads of one

    def __init__(self, board: str, root: Optional[Path] = None):
        self.board = board
        self.path = Path(root or cache_root()) / "timings" / f"{board}.json"
        super().__init__(self._load())

    def _load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or data.get("board") != self.board \
                or not isinstance(data.get("timings", {}), dict):
            return {}  # a cache another version wrote, or a damaged one: its kernels are timed again
        return dict(data.get("timings", {}))

    def view(self, signatures) -> CacheView:
        """The entries of these signatures only, read-only (what one tuning run has timed)."""
        return CacheView({k: v for k, v in self._entries.items() if k in signatures})

    def put(self, entries: Mapping[str, dict]) -> None:
        """Add timings and write the file (merged with any written meanwhile, under the file's lock);
        a file that cannot be written (a full disk) is said in one sentence naming it."""
        with self._lock, writing(self.path), locked(self.path):
            merged = self._load()
            merged.update(entries)
            self._entries = merged
            write_atomic(self.path, json.dumps({"version": CACHE_VERSION, "board": self.board, "timings": merged},
                                               indent=1, sort_keys=True))

