"""What a tuning run has learnt, kept on disk so an interrupted run resumes where it stopped.

``DIR/tune-state.json`` holds the baseline, every scheme evaluated (its arena, its estimated and
measured ticks, and the verdict), the scheme accepted so far with the work spent up to it
(``progress``: rounds, candidates, timed plans; mcudeploy/search/budget.py), the signatures of the
kernels the run has timed in the order it timed them (``kernels``: the timings its estimates may
read; each timed scheme records how many of them were known after it, ``known_after``, so a resumed
run estimates from what the uninterrupted run knew at the same point) and how many kernels the board
measured for it. Device timings themselves live in the board's timing cache
(mcudeploy/simulate/timing_cache.py), keyed by kernel signature, so a resumed run asks the board
only for kernels it has never timed. The file is rewritten atomically after every change; a state
written for another model, board, overhead limit or compile effort, or by a version without these
fields, is ignored (the budget and the time limit only say where a search stops, so a state serves
any of them).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from mcudeploy.files import write_atomic, writing

STATE_FILE = "tune-state.json"
STATE_VERSION = 3  # 2: progress, kernels and kernels_measured (a resumed run counts its work as the first did);
# 3: kernels in the order they were timed


def model_digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


class TuneState:
    def __init__(self, folder: Path, identity: dict):
        self.path = Path(folder) / STATE_FILE
        self.identity = dict(identity, version=STATE_VERSION)
        self.baseline: Optional[dict] = None
        self.candidates: dict[str, dict] = {}
        self.accepted: list[dict] = []
        self.progress: dict = {}  # the work spent up to ``accepted`` (budget.Work fields)
        self.kernels: list[str] = []  # signatures of the kernels of every plan timed, in the order timed
        self.kernels_measured = 0
        self.resumed = False
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("identity") != self.identity:
            return
        self.baseline = data.get("baseline")
        self.candidates = dict(data.get("candidates") or {})
        self.accepted = list(data.get("accepted") or [])
        self.progress = dict(data.get("progress") or {})
        self.kernels = list(dict.fromkeys(data.get("kernels") or ()))
        self.kernels_measured = int(data.get("kernels_measured") or 0)
        self.resumed = True

    def save(self) -> None:
        """Write the state whole (a reader never sees half a file); a full disk is one sentence."""
        data = {"identity": self.identity, "baseline": self.baseline, "candidates": self.candidates,
                "accepted": self.accepted, "progress": self.progress, "kernels": self.kernels,
                "kernels_measured": self.kernels_measured}
        with writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(data, indent=1))

    def add_kernels(self, signatures) -> None:
        """``signatures`` join ``kernels`` (those new to it in sorted order: the same order in every run)."""
        known = set(self.kernels)
        new = sorted(set(signatures) - known)
        if new:
            self.kernels.extend(new)
            self.save()

    def record(self, key: str, **fields) -> dict:
        entry = self.candidates.setdefault(key, {})
        entry.update(fields)
        self.save()
        return entry
