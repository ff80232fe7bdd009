"""Fault campaigns over what mcudeploy keeps on disk and what a user hands it: state and plan files that cannot
be trusted, two writers on one output folder, writes that fail (a full disk, a read-only one), a tune killed
with SIGKILL at random moments, and `run --input` files of the wrong shape, type or number.

Each class injects its faults one by one into a copy of a clean case and counts, in ``Tally``:
injected; detected (refused, or for a tune state set aside); reported (one sentence naming the file, folder
or input); wrong (exit 0 with outputs or a plan other than the clean one's: must be 0); tracebacks (a
traceback or an internal error: must be 0); leftovers (processes still running after the case: must be 0).
A fault that changes nothing that matters (a random edit of a field no check reads) may end in exit 0; it
then counts as harmless, and its outputs must be the clean ones.

The CI tier (tests/faults/test_state_faults.py) runs every class a few times; benchmarks/fault_bench.py
--only state... runs them in full (20 or more each). The commands run in this process (mcudeploy.cli.main)
where that is faithful, and as child processes where the fault is the process's: a lock holder killed with
SIGKILL, a write limit (RLIMIT_FSIZE), a tune killed at random moments (tests/faults/host_tune.py).
"""
from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HOST_TUNE = Path(__file__).with_name("host_tune.py")
CLASSES = ("tune-state", "plan", "writers", "disk", "kill", "inputs")


@dataclass
class Tally:
    injected: int = 0
    detected: int = 0
    reported: int = 0
    harmless: int = 0
    wrong: int = 0
    tracebacks: int = 0
    leftovers: int = 0
    failures: list = field(default_factory=list)

    def fail(self, what: str, case: str, detail: str = "") -> None:
        self.failures.append(f"{what}: {case}: {detail.strip()[-400:]}")

    @property
    def ok(self) -> bool:
        return not (self.wrong or self.tracebacks or self.leftovers or self.failures)

    def row(self, name: str) -> str:
        return (f"| {name} | {self.injected} | {self.detected} | {self.reported} | {self.harmless} | {self.wrong} | "
                f"{self.tracebacks} | {self.leftovers} |")


HEADER = ("| class | injected | detected | reported | harmless (exit 0, right outputs) | wrong outputs with exit 0 | "
          "tracebacks | leftover processes |\n|---|---|---|---|---|---|---|---|")


def cli(args: list) -> tuple[int, str, str]:
    """mcudeploy's command in this process: (exit status, stdout, stderr)."""
    from mcudeploy.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


def one_sentence(err: str, names: str) -> bool:
    """stderr is one `mcudeploy: error:` line naming ``names``."""
    lines = [line for line in err.strip().splitlines() if line.startswith("mcudeploy: error:")]
    return len(lines) == 1 and names in lines[0]


def broken(err: str) -> bool:
    return "Traceback" in err or "internal error" in err


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ------------------------------------------------------------------ the clean case
@dataclass
class Clean:
    work: Path
    model: Path  # a small int8 MobileNetV2 block (tests/zoo.py)
    other: Path  # another model (the float one the int8 model was quantized from)
    folder: Path  # compile -o of the model for the host board
    inputs: Path  # one input as .npy
    outputs: dict  # the clean run's outputs of it


def clean_case(work: Path) -> Clean:
    import onnx
    import zoo

    work.mkdir(parents=True, exist_ok=True)
    model, other = work / "mnv2_32_int8.onnx", work / "mnv2_32_float.onnx"
    if not model.exists():
        floats, qdq, _ = zoo.mobilenetv2(work / "zoo", size=32, stages=((6, 8, 1, 1),), stem=8, classes=4)
        onnx.save(qdq, model)
        onnx.save(floats, other)
    folder = work / "clean"
    if (work / "y.npz").is_file():  # made before (by another pytest-xdist worker)
        return Clean(work, model, other, folder, work / "x.npy", dict(np.load(work / "y.npz")))
    rc, _, err = cli(["compile", model, "-b", "host", "-o", folder])
    assert rc == 0, err
    from mcudeploy import check
    from mcudeploy.frontend import import_model

    graph = import_model(model)
    (name,) = graph.model_inputs()
    x = check.random_inputs(graph, 1, seed=7)[0][name]
    np.save(work / "x.npy", x)
    rc, _, err = cli(["run", folder, "-b", "host", "--input", work / "x.npy", "-o", work / "y.npz"])
    assert rc == 0, err
    return Clean(work, model, other, folder, work / "x.npy", dict(np.load(work / "y.npz")))


def same_outputs(path: Path, clean: Clean) -> bool:
    got = dict(np.load(path))
    return got.keys() == clean.outputs.keys() and all(np.array_equal(got[k], clean.outputs[k]) for k in got)


# ------------------------------------------------------------------ damaged files (JSON)
def _leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from _leaves(v, path + (k,))
    else:
        yield path


def _set(data, path, value):
    for k in path[:-1]:
        data = data[k]
    data[path[-1]] = value


ODD_VALUES = ("x", -1, 0, 1 << 40, 2.5, None, True, [], {}, [1, 2], {"a": 1})


def damaged(raw: bytes, data: dict, kind: str, rng: random.Random, fields: dict) -> bytes:
    """``raw`` (whose JSON is ``data``) damaged one way: truncated, garbage, not an object, a random leaf
    changed (a value of another kind, or the same kind), or one of ``fields``' named edits."""
    if kind == "truncated":
        return raw[:rng.randrange(len(raw))]
    if kind == "garbage":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    if kind == "not an object":
        return json.dumps(rng.choice([[], [data], "plan", 42, None])).encode()
    data = json.loads(raw)
    if kind == "random leaf":
        leaves = list(_leaves(data))
        _set(data, rng.choice(leaves), rng.choice(ODD_VALUES))
    else:
        fields[kind](data, rng)
    return json.dumps(data, indent=1).encode()


# ------------------------------------------------------------------ tune-state.json
def _state_identity(clean: Clean) -> dict:
    from mcudeploy.search.state import model_digest

    return {"model": model_digest(clean.model), "board": "qemu-m4", "max_overhead": 0.05, "effort": 30.0}


def _clean_state(folder: Path, identity: dict) -> bytes:
    """A tune state as a tune leaves it midway: a baseline, candidates in every state, a kept scheme."""
    from mcudeploy.search.state import TuneState

    folder.mkdir(parents=True, exist_ok=True)
    state = TuneState(folder, identity)
    state.baseline = {"ticks": 391106, "arena_bytes": 15360}
    state.add_kernels(["k1", "k0", "k2"])
    state.record("a|2", arena=13312, estimate=401000.5, known_kernels=3)
    state.record("a|2", ticks=402000, status="within budget", round=1, known_after=3)
    state.record("b|4", status="invalid: a cut that does not apply")
    state.accepted = [{"axes": [["conv1", "d2"]], "pieces": 2, "halo": "keep"}]
    state.progress = {"rounds": 1, "candidates": 2, "timed": 1}
    state.save()
    return state.path.read_bytes()


STATE_EDITS = {
    "older version": lambda d, r: d["identity"].update(version=r.choice([0, 1, 2, 3, None, "4"])),
    "another model": lambda d, r: d["identity"].update(model="%016x" % r.getrandbits(64)),
    "another board": lambda d, r: d["identity"].update(board=r.choice(["qemu-m7", "qemu-m3", "nucleo-f446re"])),
    "other options": lambda d, r: d["identity"].update(**r.choice([{"max_overhead": 0.1}, {"effort": 1.0},
                                                                   {"fast_memory": "50%"}, {"int8_input": True},
                                                                   {"input_shapes": {"x": [1, 3, 64, 64]}}])),
    # with the checksum made again: what the checks of each field's kind alone must catch
    "wrong kind": lambda d, r: _resealed(d, lambda: _set(d, r.choice([
        ("baseline",), ("baseline", "ticks"), ("candidates", "a|2", "ticks"), ("candidates", "a|2"), ("accepted", 0),
        ("accepted", 0, "pieces"), ("progress", "rounds"), ("candidates",)]), r.choice(["x", [], 2.5, {"a": 1}, True]))),
}


def _resealed(data: dict, edit) -> None:
    from mcudeploy.search.state import checksum

    data.pop("sha256", None)
    edit()
    data["sha256"] = checksum(data)
STATE_KINDS = ("truncated", "garbage", "not an object", *STATE_EDITS, "random leaf")


def campaign_tune_state(clean: Clean, count: int, rng: random.Random) -> Tally:
    """tune-state.json damaged ``count`` times per kind, then opened as a tune opens it (search/state.py): a
    damaged state is set aside as .bad-N (its bytes kept) and the tune starts afresh, saying which file and
    why; a state taken must be one whose every field is of its kind (a random leaf may change a count)."""
    from mcudeploy.errors import MCUDeployError
    from mcudeploy.search.state import TuneState

    tally, identity = Tally(), _state_identity(clean)
    raw = _clean_state(clean.work / "state-clean", identity)
    data = json.loads(raw)
    for kind in STATE_KINDS:
        for k in range(count):
            folder = clean.work / "states" / f"{kind.replace(' ', '-')}-{k}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            bad = damaged(raw, data, kind, rng, STATE_EDITS)
            (folder / "tune-state.json").write_bytes(bad)
            tally.injected += 1
            try:
                state = TuneState(folder, identity)
            except MCUDeployError as exc:
                tally.fail("refused instead of set aside", kind, str(exc))
                continue
            except Exception as exc:  # noqa: BLE001  (what the campaign looks for)
                tally.tracebacks += 1
                tally.fail("traceback", kind, repr(exc))
                continue
            if state.set_aside:
                aside = folder / "tune-state.json.bad-1"
                tally.detected += 1
                if (aside.is_file() and aside.read_bytes() == bad and not state.resumed and not state.candidates
                        and not (folder / "tune-state.json").exists()):
                    tally.reported += str(folder / "tune-state.json") in state.set_aside and "\n" not in state.set_aside
                else:
                    tally.fail("set aside wrongly", kind, state.set_aside)
            elif kind == "random leaf" and state.resumed:
                tally.harmless += 1  # a change the state's checks accept: every field still of its kind
            else:
                tally.wrong += 1
                tally.fail("taken", kind, bad[:200].decode(errors="replace"))
    return tally


# ------------------------------------------------------------------ plan.json (run DIR)
def _live_together(plan: dict, rng: random.Random):
    bufs = [b for b in plan["buffers"] if b["size"] > 0]
    pairs = [(a, b) for a in bufs for b in bufs if a is not b and a["first"] <= b["last"] and b["first"] <= a["last"]
             and a.get("region") == b.get("region") and a["offset"] != b["offset"]]
    return rng.choice(pairs)


def _overlap(plan: dict, rng: random.Random) -> None:
    a, b = _live_together(plan, rng)
    a["offset"] = b["offset"] + rng.randrange(0, max(1, b["size"]), plan["alignment"]) // plan["alignment"] * \
        plan["alignment"] if b["size"] > plan["alignment"] else b["offset"]


def _past_region(plan: dict, rng: random.Random) -> None:
    b = rng.choice([b for b in plan["buffers"] if b["size"] > 0])
    region = b.get("region") or plan["regions"][0]["name"]
    arena = next(r["arena_bytes"] for r in plan["regions"] if r["name"] == region)
    step = plan["alignment"]
    b["offset"] = (arena - b["size"] + step * rng.randrange(1, 64)) // step * step


def _arena_over_board(plan: dict, rng: random.Random) -> None:
    extra = (1 << 31) + plan["alignment"] * rng.randrange(1, 1000)
    plan["regions"][0]["arena_bytes"] += extra
    plan["arena_bytes"] += extra


def _another_model(plan: dict, rng: random.Random, other: Path) -> None:
    """Another digest, or another model's path and digest."""
    from mcudeploy.plan import model_sha256

    if rng.random() < 0.5:
        plan["model_sha256"] = "%064x" % rng.getrandbits(256)
    else:
        plan["model_path"], plan["model_sha256"] = str(other), model_sha256(other)


PLAN_EDITS = {
    "older version": lambda d, r: d.update(version=r.choice([0, 2, None, "1"])),
    "missing field": lambda d, r: d.pop(r.choice(["order", "buffers", "tensors", "regions", "cuts", "model_path",
                                                  "arena_bytes", "version"])),
    "another board": lambda d, r: d.update(board=r.choice(["qemu-m4", "qemu-m7", "nucleo-f446re", "no-such-board"])),
    "another model": None,  # _another_model, given the clean case's other model
    "overlapping offsets": _overlap,
    "past its region": _past_region,
    "over the board": _arena_over_board,
    "misaligned offset": lambda d, r: r.choice([b for b in d["buffers"] if b["size"] > 0]).update(
        offset=r.choice([b for b in d["buffers"] if b["size"] > 0])["offset"] + r.randrange(1, d["alignment"])),
    "negative offset": lambda d, r: r.choice(d["buffers"]).update(offset=-d["alignment"] * r.randrange(1, 100)),
    "wrong kind": lambda d, r: _set(d, r.choice([("arena_bytes",), ("buffers", 0, "offset"), ("buffers", 0),
                                                 ("order", 0, "node"), ("regions", 0, "arena_bytes"), ("inputs", 0),
                                                 ("order",), ("placement",), ("buffers", 0, "size")]),
                                    r.choice(["x", [], 2.5, {"a": 1}, True, None])),
}
PLAN_KINDS = ("truncated", "garbage", "not an object", *PLAN_EDITS, "random leaf")


def campaign_plan(clean: Clean, count: int, rng: random.Random) -> Tally:
    """plan.json of a compile -o folder damaged ``count`` times per kind, then `run DIR -b host --input x -o y`:
    refused in one sentence naming plan.json before anything is built, or (a harmless random edit) the clean
    outputs."""
    tally = Tally()
    raw = (clean.folder / "plan.json").read_bytes()
    data = json.loads(raw)
    edits = {**PLAN_EDITS, "another model": lambda d, r: _another_model(d, r, clean.other)}
    for kind in PLAN_KINDS:
        for k in range(count):
            case = clean.work / "plans" / f"{kind.replace(' ', '-')}-{k}"
            shutil.rmtree(case, ignore_errors=True)
            shutil.copytree(clean.folder, case)
            (case / "plan.json").write_bytes(damaged(raw, data, kind, rng, edits))
            out = case / "y.npz"
            tally.injected += 1
            rc, stdout, err = cli(["run", case, "-b", "host", "--input", clean.inputs, "-o", out])
            _judge(tally, kind, rc, err, str(case), out, clean)
    return tally


def _judge(tally: Tally, kind: str, rc: int, err: str, names: str, out: Optional[Path], clean: Clean) -> None:
    if broken(err) or rc == 3:
        tally.tracebacks += 1
        tally.fail("traceback", kind, err)
    elif rc == 0:
        if out is not None and out.is_file() and same_outputs(out, clean):
            tally.harmless += 1
        else:
            tally.wrong += 1
            tally.fail("exit 0 with other outputs", kind, err)
    else:
        tally.detected += 1
        if one_sentence(err, names):
            tally.reported += 1
        else:
            tally.fail("not one sentence naming " + names, kind, err)


# ------------------------------------------------------------------ two writers
HOLDER = ("import sys, time\nfrom mcudeploy.files import output_lock\nwith output_lock(sys.argv[1], 'tune'):\n"
          "    print('held', flush=True)\n    time.sleep(600)\n")


def campaign_writers(clean: Clean, count: int, rng: random.Random) -> Tally:
    """Another mcudeploy holds the output folder (a process in the lock, as a tune holds it): compile -o into it
    is refused in one sentence naming the folder and the holder's pid; the holder is killed with SIGKILL at a
    random moment and the same compile then goes through (the lock died with it). Every other case, two
    compiles started within half a second into one folder: one refused, or (harmless) one after the other,
    never both writing."""
    tally = Tally()
    for k in range(count):
        folder = clean.work / "writers" / f"case-{k}"
        shutil.rmtree(folder, ignore_errors=True)
        tally.injected += 1
        if k % 2 == 0:
            holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], env=env(), stdout=subprocess.PIPE,
                                      text=True)
            try:
                assert holder.stdout.readline().strip() == "held"
                rc, _, err = cli(["compile", clean.model, "-b", "host", "-o", folder])
                refused = rc == 1 and one_sentence(err, str(folder)) and f"pid {holder.pid}" in err
                time.sleep(rng.random() * 0.5)
            finally:
                holder.send_signal(signal.SIGKILL)
                holder.wait()
            tally.leftovers += alive(holder.pid)
            _judge_refusal(tally, "held folder", rc, err, refused, folder)
            rc, _, err = cli(["compile", clean.model, "-b", "host", "-o", folder])
            if rc != 0 or broken(err):
                tally.fail("not free after the holder was killed", "held folder", err)
            continue
        cmd = [sys.executable, "-m", "mcudeploy", "compile", str(clean.model), "-b", "host", "-o", str(folder)]
        first = subprocess.Popen(cmd, env=env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        time.sleep(rng.random() * 0.5)
        second = subprocess.Popen(cmd, env=env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        errs = [p.communicate()[1] for p in (first, second)]
        rcs = [first.returncode, second.returncode]
        tally.leftovers += alive(first.pid) + alive(second.pid)
        if any(broken(e) for e in errs):
            tally.tracebacks += 1
            tally.fail("traceback", "two compiles", "\n".join(errs))
        elif sorted(rcs) == [0, 1]:
            err = errs[rcs.index(1)]
            _judge_refusal(tally, "two compiles", 1, err, one_sentence(err, str(folder)), folder)
        elif rcs == [0, 0]:
            tally.harmless += 1  # the first had finished before the second took the lock
        else:
            tally.fail("both failed", "two compiles", "\n".join(errs))
        if 0 in rcs and not _folder_complete(folder, clean):
            tally.wrong += 1
            tally.fail("folder not the clean compile's", "two compiles", "")
    return tally


def _judge_refusal(tally: Tally, kind: str, rc: int, err: str, reported: bool, folder: Path) -> None:
    if broken(err):
        tally.tracebacks += 1
        tally.fail("traceback", kind, err)
    elif rc == 1:
        tally.detected += 1
        tally.reported += reported
        if not reported:
            tally.fail("refusal does not name the folder (and pid)", kind, err)
    else:
        tally.wrong += 1
        tally.fail("not refused", kind, err)


def _folder_complete(folder: Path, clean: Clean) -> bool:
    """The folder holds exactly the clean compile's C, and a plan.json of the same plan (its id; the times it
    records differ from run to run)."""
    from mcudeploy.plan import plan_id

    for path in clean.folder.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            twin = folder / path.relative_to(clean.folder)
            if not twin.is_file():
                return False
            if path.name == "plan.json":
                try:
                    if plan_id(json.loads(twin.read_text())) != plan_id(json.loads(path.read_text())):
                        return False
                except ValueError:
                    return False
            elif twin.read_bytes() != path.read_bytes():
                return False
    return True


# ------------------------------------------------------------------ failing writes
def _limit(nbytes: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return apply


ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EIO)


PAGE = 4096  # tmpfs counts its size in pages


@contextlib.contextmanager
def small_disk(where: Path):
    """A tmpfs mounted at ``where`` (yields its remount function: ``remount("size=N")``, ``remount("ro")``), or
    None where this process may not mount one (not root, or no CAP_SYS_ADMIN in a container)."""
    where.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)],
                      capture_output=True).returncode != 0:
        yield None
        return

    def remount(options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True, capture_output=True)

    try:
        yield remount
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def disks_available(work: Path) -> bool:
    with small_disk(work / "probe-mount") as remount:
        return remount is not None


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _disk_case(clean: Clean, k: int, rng: random.Random, full: bool) -> Optional[tuple]:
    """compile -o over an earlier compile on a real tmpfs: ``full`` leaves it fewer free pages than the largest file
    the compile writes (some write fails with ENOSPC), else it is remounted read-only (every write fails with
    EROFS). (exit status, stderr, kind, the folder, whether it changed, whether it holds a plan.json, whether it is the
    clean compile whole), or None where no tmpfs can be had."""
    largest = max(p.stat().st_size for p in clean.folder.rglob("*") if p.is_file())
    mnt = clean.work / "disk" / f"mnt-{k}"
    with small_disk(mnt) as remount:
        if remount is None:
            return None
        folder = mnt / "out"
        shutil.copytree(clean.folder, folder)
        (folder / "model.c").write_text("/* an earlier compile */\n")
        before = _snapshot(folder)
        if full:
            used = shutil.disk_usage(mnt).used
            free = rng.randrange(0, -(-largest // PAGE)) * PAGE  # fewer pages than the largest file takes
            remount(f"size={used + free}")
            kind = f"a full tmpfs ({free // PAGE} free pages)"
        else:
            remount("ro")
            kind = "a read-only tmpfs"
        cmd = [sys.executable, "-m", "mcudeploy", "compile", str(clean.model), "-b", "host", "-o", str(folder)]
        p = subprocess.run(cmd, env=env(), capture_output=True, text=True)
        after = _snapshot(folder)
        return p.returncode, p.stderr, kind, folder, before != after, "plan.json" in after, _folder_complete(folder, clean)


def campaign_disk(clean: Clean, count: int, rng: random.Random) -> Tally:
    """compile -o over a complete earlier compile, with writes failing part way. Four kinds in turn: on a real
    tmpfs left with fewer free pages than the largest file (ENOSPC), on a real tmpfs remounted read-only (EROFS;
    where this process may not mount, these two are replaced by the next two); in a child process whose files
    may not grow past a random size below the largest file it writes (RLIMIT_FSIZE: EFBIG, as a full disk
    stops a write); and in this process with the k-th fsync failing with ENOSPC, EROFS, EACCES, EDQUOT or EIO.
    One sentence naming the file, exit 1, and no plan.json (the completion marker) unless the folder is the
    clean compile whole; a read-only folder is left as it was."""
    tally = Tally()
    largest = max(p.stat().st_size for p in clean.folder.rglob("*") if p.is_file())
    real_disks = disks_available(clean.work / "disk")
    for k in range(count):
        folder = clean.work / "disk" / f"case-{k}"
        variant = k % 4 if real_disks else 2 + k % 2
        if variant < 2:
            rc, err, kind, folder, changed, marked, whole = _disk_case(clean, k, rng, full=variant == 0)
            tally.injected += 1
            if broken(err):
                tally.tracebacks += 1
                tally.fail("traceback", kind, err)
            elif rc == 0 and whole:
                tally.harmless += 1  # the old files the compile replaced freed enough pages
            elif rc == 0 or (marked and changed and not whole):
                tally.wrong += 1
                tally.fail("a folder claimed complete that is not", kind, err)
            elif variant == 1 and changed:
                tally.wrong += 1
                tally.fail("a read-only folder changed", kind, err)
            else:
                tally.detected += 1
                if one_sentence(err, str(folder)):
                    tally.reported += 1
                else:
                    tally.fail("not one sentence naming the folder or its file", kind, err)
            continue
            complete = "plan.json" in files["after"] and files["after"] != files["before"]
            if rc == 0 or (complete and files["after"]["plan.json"] != files["before"]["plan.json"]
                           and files["after"].get("model.c") != (clean.folder / "model.c").read_bytes()):
                tally.wrong += 1
                tally.fail("a failed write on a real disk ended in exit 0 or a folder claimed complete that is not",
                           kind, err)
            elif variant == 1 and files["after"] != files["before"]:
                tally.wrong += 1
                tally.fail("a read-only folder changed", kind, err)
            else:
                tally.detected += 1
                if one_sentence(err, "cannot write " + str(folder)) or (variant == 1 and one_sentence(err, str(folder))):
                    tally.reported += 1
                else:
                    tally.fail("not one sentence naming the file", kind, err)
            continue
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(clean.folder, folder)
        (folder / "model.c").write_text("/* an earlier compile */\n")  # the old folder differs from the new one
        if variant == 2:
            cmd = [sys.executable, "-m", "mcudeploy", "compile", str(clean.model), "-b", "host", "-o", str(folder)]
            p = subprocess.run(cmd, env=env(), capture_output=True, text=True,
                               preexec_fn=_limit(rng.randrange(largest)))
            rc, err = p.returncode, p.stderr
            kind = "file size limit"
            tally.injected += 1  # below the largest file: some write fails
        else:
            calls, fail_at = [0], rng.randrange(1, 8)  # a compile for the host fsyncs 8 files, plan.json last
            code = rng.choice(ERRNOS)
            real = os.fsync

            def fsync(fd):  # the k-th file's (a folder's fsync may fail unheeded: files.sync_folder)
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return real(fd)
                calls[0] += 1
                if calls[0] == fail_at:
                    raise OSError(code, os.strerror(code))
                return real(fd)

            with mock.patch("mcudeploy.files.os.fsync", fsync):
                rc, _, err = cli(["compile", clean.model, "-b", "host", "-o", folder])
            kind = f"fsync {errno.errorcode[code]}"
            if calls[0] < fail_at:  # fewer files than the fault's number: nothing was injected
                if rc != 0 or not _folder_complete(folder, clean):
                    tally.fail("a compile without a fault failed", kind, err)
                continue
            tally.injected += 1
        complete = (folder / "plan.json").exists()
        if broken(err):
            tally.tracebacks += 1
            tally.fail("traceback", kind, err)
        elif rc == 0 or complete:
            if complete and _folder_complete(folder, clean):
                tally.harmless += rc == 0
                if rc != 0:  # the write that failed came after plan.json (a folder fsync): the folder is whole
                    tally.detected += 1
                    tally.reported += one_sentence(err, str(folder))
            else:
                tally.wrong += 1
                tally.fail("a folder claimed complete that is not", kind, err)
        else:
            tally.detected += 1
            if one_sentence(err, "cannot write " + str(folder)):
                tally.reported += 1
            else:
                tally.fail("not one sentence naming the file", kind, err)
    return tally


# ------------------------------------------------------------------ kill -9 of a tune
def tune_identity(folder: Path) -> dict:
    """What a tune decides: the plan's id, arena, scheme and latencies, and the C."""
    from mcudeploy.plan import plan_id

    plan = json.loads((folder / "plan.json").read_text())
    return {"plan_id": plan_id(plan), "arena_bytes": plan["arena_bytes"], "scheme": plan["scheme"],
            "latency": plan["latency"], "model.c": (folder / "model.c").read_bytes()}


def _tune(model: Path, out: Path, cache: Path, budget: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HOST_TUNE), str(model), str(out), str(cache), str(budget)],
                            env=env(), stdout=subprocess.DEVNULL, stderr=open(log, "w"), start_new_session=True)


def campaign_kill(clean: Clean, count: int, rng: random.Random, budget: int = 12) -> Tally:
    """A tune (tests/faults/host_tune.py: the board simulated in the process) killed with SIGKILL ``count`` times
    at random moments, each time started again with the same command until one finishes: every tune must end
    with the plan an uninterrupted tune gives, no state ever found damaged (set aside), every plan.json seen
    whole, and no process of the tune's left. A tune that finishes before its kill comes ends a chain (its plan
    is compared) and the next chain starts from an empty folder; only kills that landed count as injected."""
    tally = Tally()
    base = clean.work / "kill"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    started = time.monotonic()
    ref = _tune(clean.model, base / "ref", base / "ref-cache", budget, base / "ref.log")
    if ref.wait() != 0:
        tally.fail("the uninterrupted tune failed", "reference", (base / "ref.log").read_text())
        return tally
    seconds = time.monotonic() - started
    want = tune_identity(base / "ref")
    chain, runs, killed_in_chain = 0, 0, 0
    while True:
        out, cache = base / f"out{chain}", base / f"cache{chain}"
        log = base / f"run{runs}.log"
        p = _tune(clean.model, out, cache, budget, log)
        kill = tally.injected < count
        if kill:
            time.sleep(rng.uniform(0.2, seconds))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        rc = p.wait()
        runs += 1
        time.sleep(0.1)
        tally.leftovers += _group_alive(p.pid)
        text = log.read_text()
        case = f"chain {chain} run {runs}"
        if broken(text):
            tally.tracebacks += 1
            tally.fail("traceback", case, text)
        if "set aside" in text:
            tally.wrong += 1
            tally.fail("a state damaged by the kill", case, text)
        if (out / "plan.json").exists():
            try:
                json.loads((out / "plan.json").read_text())
            except ValueError:
                tally.wrong += 1
                tally.fail("a half-written plan.json", case, "")
        if rc == -signal.SIGKILL:
            tally.injected += 1
            killed_in_chain += 1
            continue
        if rc != 0:
            tally.fail("a tune failed", case, text)
            break
        left = sorted(p.name for p in out.glob(".*.tmp"))
        if left:  # a finished tune leaves none of the temporaries its killed runs left
            tally.fail("temporaries left", case, " ".join(left))
        if tune_identity(out) != want:
            tally.wrong += killed_in_chain or 1
            tally.fail("another plan than the uninterrupted tune's", case, "")
        else:  # every kill of the chain was resumed from, to the uninterrupted plan
            tally.detected += killed_in_chain
            tally.reported += killed_in_chain  # nothing to say but "resuming from" (absent where no state was saved)
        if not kill:
            break
        chain, killed_in_chain = chain + 1, 0
    return tally


def _group_alive(pgid: int) -> int:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return 0
    os.killpg(pgid, signal.SIGKILL)
    return 1


# ------------------------------------------------------------------ run --input
def _bad_input(x: np.ndarray, kind: str, path: Path, rng: random.Random) -> Path:
    if kind == "wrong shape":
        shape = list(x.shape)
        i = rng.randrange(len(shape))
        shape[i] += rng.choice([-1, 1, 2]) if shape[i] > 1 else 1
        if rng.random() < 0.3:
            shape = shape[1:] if rng.random() < 0.5 else [2] + shape
        np.save(path, np.zeros(shape, x.dtype))
    elif kind == "wrong type":
        np.save(path, rng.choice([x.astype(np.complex64), x.astype(str), np.zeros(x.shape, "datetime64[s]"),
                                  np.zeros(x.shape, [("a", "f4")])]))
    elif kind == "too many arrays":
        np.savez(path.with_suffix(".npz"), **{"x": x, f"extra{rng.randrange(9)}": x})
        return path.with_suffix(".npz")
    elif kind == "none named as the input":
        np.savez(path.with_suffix(".npz"), **{f"in{rng.randrange(9)}": x})
        return path.with_suffix(".npz")
    elif kind == "damaged file":
        buf = io.BytesIO()
        np.save(buf, x)
        raw = buf.getvalue()
        path.write_bytes(rng.choice([raw[:rng.randrange(len(raw))], bytes(rng.randrange(256) for _ in range(64)),
                                     b"PK\x03\x04" + raw[:100]]))
    elif kind == "pickled objects":
        np.save(path, np.array([x, None], dtype=object), allow_pickle=True)
    return path


INPUT_KINDS = ("wrong shape", "wrong type", "too many arrays", "none named as the input", "damaged file",
               "pickled objects")


def campaign_inputs(clean: Clean, count: int, rng: random.Random) -> Tally:
    """`run DIR --input F` with F of the wrong shape, type or number of arrays, damaged or pickled: one sentence
    naming the file (and the input with its expected type and shape where it has one), exit 1."""
    tally = Tally()
    x = np.load(clean.inputs)
    from mcudeploy.frontend import import_model

    (name,) = import_model(clean.model).model_inputs()
    (clean.work / "inputs").mkdir(exist_ok=True)
    for kind in INPUT_KINDS:
        for k in range(count):
            path = _bad_input(x, kind, clean.work / "inputs" / f"{kind.replace(' ', '-')}-{k}.npy", rng)
            tally.injected += 1
            rc, _, err = cli(["run", clean.folder, "-b", "host", "--input", path, "-o",
                              clean.work / "inputs" / "y.npz"])
            _judge(tally, kind, rc, err, str(path), None, clean)
            if kind in ("wrong shape", "wrong type", "none named as the input", "too many arrays") and rc == 1 \
                    and name not in err:
                tally.reported -= 1
                tally.fail("does not name the input", kind, err)
    return tally


CAMPAIGNS: dict[str, Callable] = {"tune-state": campaign_tune_state, "plan": campaign_plan,
                                  "writers": campaign_writers, "disk": campaign_disk, "kill": campaign_kill,
                                  "inputs": campaign_inputs}


def run_classes(work: Path, names, count: int, seed: int = 0, say=print) -> dict[str, Tally]:
    clean = clean_case(work)
    tallies = {}
    for name in names:
        start = time.monotonic()
        tallies[name] = CAMPAIGNS[name](clean, count, random.Random(f"{seed}-{name}"))
        say(f"{tallies[name].row(name)} ({time.monotonic() - start:.0f} s)")
    return tallies
