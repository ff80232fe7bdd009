"""What a tuning run has learnt, kept on disk so an interrupted run resumes where it stopped.

``DIR/tune-state.json`` holds the baseline, every scheme evaluated (its arena, its estimated and
measured ticks, and the verdict), the scheme accepted so far with the work spent up to it
(``progress``: rounds, candidates, timed plans; mcudeploy/search/budget.py), the signatures of the
kernels the run has timed in the order it timed them (``kernels``: the timings its estimates may
read; each timed scheme records how many of them were known after it, ``known_after``, so a resumed
run estimates from what the uninterrupted run knew at the same point) and how many kernels the board
measured for it. Device timings themselves live in the board's timing cache
(mcudeploy/simulate/timing_cache.py), keyed by kernel signature, so a resumed run asks the board
only for kernels it has never timed. The file is rewritten atomically after every change (files.py:
a temporary name, fsync, rename), so a tune killed at any moment (kill -9 too) leaves the state of its
last change whole. A state that cannot be trusted (not JSON, truncated, of another version of this
file, written for another model, board, overhead limit, compile effort or plan option, not matching
its checksum, or with a field of the wrong kind) is set aside as ``tune-state.json.bad-N`` and the tune
starts afresh, saying which
file and why (``set_aside``); the budget and the time limit only say where a search stops, so a state
serves any of them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.files import write_atomic, writing
from mcudeploy.partition.cut import HALOS
from mcudeploy.search.budget import Work

STATE_FILE = "tune-state.json"
STATE_VERSION = 4  # 2: progress, kernels and kernels_measured (a resumed run counts its work as the first did);
# 3: kernels in the order they were timed; 4: "sha256", a checksum of the rest (an edited or damaged value is seen)


# what a candidate's entry holds (search/tune.py, search/timing.py), by kind
INT_FIELDS = ("arena", "ticks", "run_ticks", "known_kernels", "known_after", "round")
ENTRY_FIELDS = {*INT_FIELDS, "estimate", "status"}
WORK_FIELDS = {f.name for f in dataclasses.fields(Work)}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entry_ok(entry) -> bool:
    return (isinstance(entry, dict) and set(entry) <= ENTRY_FIELDS and all(_is_int(entry[k]) for k in INT_FIELDS
                                                                           if k in entry)
            and isinstance(entry.get("status", ""), str)
            and (entry.get("estimate") is None or isinstance(entry["estimate"], (int, float))))


def checksum(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _cut_ok(d) -> bool:
    """A cut as partition.cut_to_dict writes it (what cut_from_dict reads without coercing)."""
    return (isinstance(d, dict) and isinstance(d.get("axes"), list) and d["axes"]
            and all(isinstance(a, list) and len(a) == 2 and all(isinstance(x, str) for x in a) for a in d["axes"])
            and _is_int(d.get("pieces")) and d["pieces"] >= 2 and d.get("halo") in HALOS
            and (d.get("counts") is None or (isinstance(d["counts"], list) and len(d["counts"]) == len(d["axes"])
                                            and all(_is_int(c) and c >= 1 for c in d["counts"]))))


def _free_name(path: Path) -> Path:
    """``path``.bad-N for the first N from 1 that names no file."""
    n = 1
    while path.with_name(f"{path.name}.bad-{n}").exists():
        n += 1
    return path.with_name(f"{path.name}.bad-{n}")


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
        self.set_aside: Optional[str] = None  # why a state found was not trusted, and where it went
        self._load()

    def _load(self) -> None:
        try:
            text = self.path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # nothing there yet (a file where the folder will be is
            return                                        # told when the state is written, naming it)
        except OSError as exc:
            raise MCUDeployError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        why = self._untrusted(text)
        if why is None:
            return
        bad = _free_name(self.path)
        with writing(bad):
            self.path.rename(bad)
        self.set_aside = f"{self.path} {why}: set aside as {bad.name}; starting afresh"

    def _untrusted(self, text: bytes) -> Optional[str]:
        """Read the state in ``text``; None when it is taken, else why it cannot be (a clause)."""
        try:
            data = json.loads(text)
        except (UnicodeDecodeError, ValueError):
            return "is not valid JSON (truncated or damaged)"
        if not isinstance(data, dict) or not isinstance(data.get("identity"), dict):
            return "is not a tune state (no \"identity\" object)"
        found = data["identity"]
        if found.get("version") != STATE_VERSION:
            return (f"was written by another version of mcudeploy (state version {found.get('version')}, this one "
                    f"reads {STATE_VERSION})")
        differ = [k for k in sorted(set(found) | set(self.identity)) if found.get(k) != self.identity.get(k)]
        if differ:
            return "was written for another " + ", ".join(f"{k} ({found.get(k)}, not {self.identity.get(k)})"
                                                          for k in differ)
        if data.pop("sha256", None) != checksum(data):
            return "does not match its checksum (edited or damaged)"
        baseline, candidates, accepted = data.get("baseline"), data.get("candidates", {}), data.get("accepted", [])
        progress, kernels, measured = data.get("progress", {}), data.get("kernels", []), data.get("kernels_measured", 0)
        odd = next((name for name, ok in (
            ("baseline", baseline is None or (isinstance(baseline, dict) and _is_int(baseline.get("ticks"))
                                              and _is_int(baseline.get("arena_bytes")))),
            ("candidates", isinstance(candidates, dict) and all(_entry_ok(v) for v in candidates.values())),
            ("accepted", isinstance(accepted, list) and all(_cut_ok(c) for c in accepted)),
            ("progress", isinstance(progress, dict) and all(k in WORK_FIELDS and _is_int(v)
                                                            for k, v in progress.items())),
            ("kernels", isinstance(kernels, list) and all(isinstance(k, str) for k in kernels)),
            ("kernels_measured", _is_int(measured))) if not ok), None)
        if odd is not None:
            return f"has a field of the wrong kind ({odd})"
        kernels = list(dict.fromkeys(kernels))
        self.baseline, self.candidates, self.accepted, self.progress = baseline, candidates, accepted, progress
        self.kernels, self.kernels_measured = kernels, measured
        self.resumed = True
        return None

    def save(self) -> None:
        """Write the state whole (a reader never sees half a file); a full disk is one sentence."""
        data = {"identity": self.identity, "baseline": self.baseline, "candidates": self.candidates,
                "accepted": self.accepted, "progress": self.progress, "kernels": self.kernels,
                "kernels_measured": self.kernels_measured}
        data["sha256"] = checksum(data)
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
