"""Boards that die in the middle of a tune: a pool of emulated boards (``tune --boards 2``) loses one of its QEMUs
to SIGKILL at a random moment, or every one of them.

Each case starts from an empty timing cache, so every kernel is timed on the boards, as a first tune is, and kills
the emulator of a job drawn at random among those an undisturbed tune starts (each job of a pool of emulated boards
starts its own), a random moment after it started. One board lost: the tune must warn in one line that the board stopped answering, give its work to the other and end (exit 0)
with the plan an undisturbed ``--boards 1`` tune gives. Every board lost: the tune must stop in one sentence, keep
its resumable state, and the same command run again must end with that plan. No QEMU of the case may be left
running. Counted in state_campaign's ``Tally``: a kill that lands after the boards' last job changes nothing and
counts as harmless (its plan must still be the reference's).

The CI tier (tests/faults/test_board_faults.py) runs one case of each kind with a small candidate budget;
benchmarks/fault_bench.py --only boards runs --count of them.
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from object_cache import fresh_cache
from state_campaign import Tally, broken, env, one_sentence, tune_identity

QEMU = "qemu-system-arm"
KINDS = ("one of two", "one of two", "one of two", "every board")


def qemus(root: int) -> list[int]:
    """The QEMU processes descended from process ``root`` (a tune's emulated boards). One file a process
    (/proc/PID/stat: its command, which the kernel cuts to 15 characters, and its parent): the campaign
    scans every few milliseconds, beside the tune it watches."""
    parent, name = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                head, tail = stat.rsplit(")", 1)
                name[int(entry.name)] = head.split("(", 1)[1]
                parent[int(entry.name)] = int(tail.split()[1])
    found = []
    for pid, command in name.items():
        if QEMU.startswith(command):
            up = pid
            while up in parent and up not in (root, 0, 1):
                up = parent[up]
            if up == root:
                found.append(pid)
    return found


EFFORT = 0.25  # the tunes' compile effort: the boards' deaths are what is tested, not the solvers (at the default 5,
# a short tune of a small MobileNetV2 spent 76 of its 120 s in its final plans' exact placements)


def _tune(model: Path, out: Path, cache: Path, boards: int, budget: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "mcudeploy", "tune", str(model), "-b", "qemu-m4", "--boards", str(boards),
           "--budget", str(budget), "--effort", str(EFFORT), "-o", str(out)]
    return subprocess.Popen(cmd, env=dict(env(), MCUDEPLOY_CACHE=str(fresh_cache(cache))),
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"), start_new_session=True)


def _reap(p: subprocess.Popen) -> int:
    """Processes of ``p``'s group still running once it ended (killed, and counted as left over)."""
    left = qemus(p.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    return len(left)


def reference(model: Path, work: Path, budget: int) -> tuple[dict, int, float]:
    """The undisturbed ``--boards 1`` tune's plan, how many emulators its jobs started, and the shortest time
    one of them was seen alive (the window a kill must land in)."""
    p = _tune(model, work / "ref", work / "ref-cache", 1, budget, work / "ref.log")
    seen: dict[int, list[float]] = {}
    while p.poll() is None:
        now = time.monotonic()
        for pid in qemus(p.pid):
            seen.setdefault(pid, [now, now])[1] = now
        time.sleep(0.01)
    if p.returncode != 0:
        raise RuntimeError(f"the undisturbed tune failed: {(work / 'ref.log').read_text()[-800:]}")
    return tune_identity(work / "ref"), len(seen), min((last - first for first, last in seen.values()), default=0.0)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a process that ended and was not yet reaped still takes a signal, to no effect)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _kill_at(p: subprocess.Popen, launch: int, rng: random.Random, window: float) -> list[int]:
    """Waits for the ``launch``-th emulator ``p`` starts (counted from 0), lets it work a random moment
    (up to 0.3 s, and within ``window``, the shortest life of an emulator of the undisturbed tune), and kills
    it with SIGKILL; the pids killed (none if ``p`` ended first). An emulator that ended before its moment (a
    loaded machine sees it late) hands the kill to the next one started, with half the wait."""
    seen: list[int] = []
    wait = min(0.3, window)
    while p.poll() is None:
        seen += [pid for pid in qemus(p.pid) if pid not in seen]
        if len(seen) > launch:
            time.sleep(rng.uniform(0.0, wait))
            victim = seen[launch]
            if _alive(victim):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, signal.SIGKILL)
                    return [victim]
            launch, wait = len(seen), wait / 2
        time.sleep(0.005)
    return []


def campaign_boards(model: Path, work: Path, count: int, rng: random.Random, budget: int = 150,
                    retries: int = 0) -> Tally:
    """``count`` cases; a case whose kill did not land (the tune ended first) is run again, up to ``retries`` times
    in all, so that a loaded machine still injects what was asked."""
    tally = Tally()
    work.mkdir(parents=True, exist_ok=True)
    want, launches, window = reference(model, work, budget)
    kinds = [KINDS[k % len(KINDS)] for k in range(count)]
    case = -1
    while kinds:
        case += 1
        kind = kinds.pop(0)
        out, cache, log = work / f"out{case}", work / f"cache{case}", work / f"case{case}.log"
        name = f"case {case} ({kind})"
        p = _tune(model, out, cache, 2, budget, log)
        victims = _kill_at(p, rng.randrange(max(1, launches)), rng, window)
        landed = bool(victims) and p.poll() is None
        while kind == "every board" and victims and p.poll() is None:  # and each board started after it
            for pid in qemus(p.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        rc = p.wait()
        time.sleep(0.1)
        tally.leftovers += _reap(p)
        text = log.read_text()
        if broken(text):
            tally.tracebacks += 1
            tally.fail("traceback", name, text)
            continue
        if not landed:
            if retries > 0:
                retries -= 1
                kinds.insert(0, kind)
            continue
        tally.injected += 1
        warned = [line for line in text.splitlines() if "stopped answering" in line]
        if rc == 0:
            if tune_identity(out) != want:
                tally.wrong += 1
                tally.fail("another plan than the undisturbed --boards 1 tune's", name, text)
            elif warned:
                tally.detected += 1
                tally.reported += all(line.startswith("warning: ") or "warning: " in line for line in warned)
            else:
                tally.harmless += 1  # the board died after its last job: nothing was lost
            continue
        if kind != "every board" or not one_sentence(text, "stopped answering"):
            tally.fail(f"exit {rc} without one sentence saying every board stopped answering", name, text)
            continue
        tally.detected += 1
        tally.reported += 1
        again = _tune(model, out, cache, 2, budget, work / f"case{case}-again.log")  # resumes from tune-state.json
        rc = again.wait()
        tally.leftovers += _reap(again)
        text = (work / f"case{case}-again.log").read_text()
        if rc != 0 or broken(text):
            tally.fail("the tune run again after every board was lost failed", name, text)
        elif tune_identity(out) != want:
            tally.wrong += 1
            tally.fail("the resumed tune ended with another plan than the undisturbed one's", name, text)
    return tally
