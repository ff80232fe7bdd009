"""What a tuning run has learnt, kept on disk so an interrupted run resumes where it stopped.

``DIR/tune-state.json`` holds the baseline, every scheme evaluated (its arena, its estimated and
measured ticks, and the verdict) and the scheme accepted so far. Device timings themselves live
in the board's timing cache (mcudeploy/simulate/timing_cache.py), keyed by kernel signature, so a
resumed run asks the board only for kernels it has never timed. The file is rewritten atomically
after every change; a state written for another model, board or overhead limit is ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional

STATE_FILE = "tune-state.json"
STATE_VERSION = 1


def model_digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


class TuneState:
    def __init__(self, folder: Path, identity: dict):
        self.path = Path(folder) / STATE_FILE
        self.identity = dict(identity, version=STATE_VERSION)
        self.baseline: Optional[dict] = None
        self.candidates: dict[str, dict] = {}
        self.accepted: list[dict] = []
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
        self.resumed = True

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"identity": self.identity, "baseline": self.baseline, "candidates": self.candidates,
                "accepted": self.accepted}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tune-state-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, self.path)

    def record(self, key: str, **fields) -> dict:
        entry = self.candidates.setdefault(key, {})
        entry.update(fields)
        self.save()
        return entry
