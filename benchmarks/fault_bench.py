"""Fault campaigns at full size: every frame, both directions, every kind of fault, over a KWS
run, a KWS measure, a flash's start-up and a short tune on qemu-m4, with the session's real
timeouts. Prints, per command, the faults tried, right results, clear errors (by their first
words) and failures; exits 1 if any fault ended in other numbers without an error, a hang, a
traceback or an error of several lines.

    python benchmarks/fault_bench.py [--only run,measure,flash,tune] [--stride N] [--tune-stride N]

The CI tier (tests/device/test_fault_campaign.py) runs the same campaigns bounded, with short
timeouts. Needs qemu-system-arm, arm-none-eabi-gcc and the KWS model (../shared/models).

The campaigns over files and processes (tests/faults/state_campaign.py: damaged tune-state.json and
plan.json, two writers on one folder, failing writes, a tune killed with SIGKILL, wrong --input files)
are --only tune-state,plan,writers,disk,kill,inputs (or --only state for all six), each kind of fault
--count times (default 20); they print one table row per class (benchmarks/README.md). Their CI tier is
tests/faults/test_state_faults.py. They need gcc only.

The campaigns of round two over chains and pools of boards: --only links (tests/faults/link_campaign.py: link
frames and wants between two emulated chips damaged, dropped, repeated, late, or a link fallen silent; or one of
damaged,dropped,duplicated,late,silent) and --only boards (tests/faults/board_campaign.py: a QEMU of a `tune
--boards 2` killed with SIGKILL, one of them or every one, against an undisturbed `--boards 1` tune; --boards-model
and --boards-budget choose the tune). Both --count times per class; CI tiers: tests/device/test_chain.py,
tests/faults/test_link_faults.py, tests/faults/test_board_faults.py.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "device"), str(ROOT / "tests" / "faults")]

from campaign import built_once, clean, compiled_once, our_emulators, run_faults, short_tune  # noqa: E402
from faultline import Tally, plan  # noqa: E402
import board_campaign  # noqa: E402
import link_campaign  # noqa: E402
import state_campaign  # noqa: E402
from shared_models import MODELS  # noqa: E402

from mcudeploy.boards import load_board  # noqa: E402
from mcudeploy.check import random_inputs  # noqa: E402
from mcudeploy.device import emulator, runner, session  # noqa: E402
from mcudeploy.device.measure import measure_model  # noqa: E402
from mcudeploy.compile import compile_model  # noqa: E402
from mcudeploy.simulate.timing_cache import TimingCache  # noqa: E402

DELAY_PAST_TIMEOUT = 1.5  # a delayed frame arrives this many answer timeouts late


def commands(work: Path):
    kws = compile_model(MODELS / "onnx" / "kws_dscnn_int8.onnx", "qemu-m4")
    samples = random_inputs(kws.graph, 2, seed=3)
    caches = iter(range(1_000_000))
    board = load_board("qemu-m4")

    def run():
        return [tuple(o.tobytes() for o in outs) for outs in runner.run_on_board(kws, samples).outputs]

    def measure():
        cache = TimingCache("qemu-m4", work / f"cache{next(caches)}")
        return [o.ticks for o in measure_model(kws, repeat=2, cache=cache).ops]

    def flash():
        elf = runner.build_for_board(kws, work / "flash").elf
        emu = emulator.start_emulator(board, elf, lifetime=120)
        try:
            return emu.board
        finally:
            emulator.stop_emulator(board.name, port=emu.port)

    def tune_model() -> Path:
        import onnx
        from zoo import mobilenetv2

        _, qdq, _ = mobilenetv2(work / "zoo", size=32, stages=((6, 8, 1, 1),), stem=8, classes=4)
        path = work / "mnv2_32_int8.onnx"
        onnx.save(qdq, path)
        return path

    return {"run": run, "measure": measure, "flash": flash, "tune": lambda: short_tune(tune_model(), work / "tune")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="run,measure,flash,tune",
                   help="commands to run the serial-line campaigns over (run, measure, flash, tune), the file and "
                        "process campaigns (tune-state, plan, writers, disk, kill, inputs; state: all six), the link "
                        "campaigns (damaged, dropped, duplicated, late, silent; links: all five) and boards")
    p.add_argument("--stride", type=int, default=1, help="every N-th frame (default every frame)")
    p.add_argument("--tune-stride", type=int, default=1, help="every N-th frame of the tune")
    p.add_argument("-v", "--verbose", action="store_true", help="print each fault and its time")
    p.add_argument("--count", type=int, default=20,
                   help="faults of each kind in the file, process, link and board campaigns")
    p.add_argument("--boards-model", type=Path, default=ROOT / "tests" / "tone_kws" / "tone_kws-int8.tflite",
                   help="the model the boards campaign tunes")
    p.add_argument("--boards-budget", type=int, default=40, help="the boards campaign's tune budget (candidates)")
    args = p.parse_args(argv)
    names = args.only.split(",")
    if "state" in names:
        names = [n for n in names if n != "state"] + [n for n in state_campaign.CLASSES if n not in names]
    if "links" in names:
        names = [n for n in names if n != "links"] + [n for n in link_campaign.CLASSES if n not in names]
    mine = [n for n in names if n in state_campaign.CLASSES]
    links = [n for n in names if n in link_campaign.CLASSES]
    serial = [n for n in names if n not in state_campaign.CLASSES and n not in link_campaign.CLASSES and n != "boards"]
    failures = 0
    if mine:
        failures += state_classes(mine, args.count)
    if links or "boards" in names:
        failures += round_two(links, "boards" in names, args)
    if serial:
        failures += serial_classes(serial, args)
    print("PASS: no fault gave other numbers without an error, a hang or a traceback" if not failures
          else f"FAIL: {failures} failure(s)")
    return 1 if failures else 0


def state_classes(names, count: int) -> int:
    """The file and process campaigns: a table row per class, then every failure."""
    failures = 0
    with tempfile.TemporaryDirectory(prefix="fault-bench-state-") as tmp:
        print(state_campaign.HEADER, flush=True)
        tallies = state_campaign.run_classes(Path(tmp), names, count, say=lambda line: print(line, flush=True))
    for name, tally in tallies.items():
        for f in tally.failures:
            print(f"  FAILURE {name}: {f}")
        failures += (not tally.ok) * max(1, len(tally.failures))
    return failures


def round_two(links, boards: bool, args) -> int:
    """The link and board campaigns: a table row per class (state_campaign's columns), then every failure."""
    import random

    tallies = {}
    print(state_campaign.HEADER, flush=True)
    say = (lambda line: print(line, flush=True)) if args.verbose else (lambda line: None)
    plan = link_campaign.chain_plan() if links else None
    for name in links:
        start = time.monotonic()
        tallies[name] = link_campaign.campaign_links(name, args.count, random.Random(f"bench-{name}"), plan, say=say)
        print(f"{tallies[name].row('link ' + name)} ({time.monotonic() - start:.0f} s)", flush=True)
    if boards:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="fault-bench-boards-") as tmp:
            tallies["boards"] = board_campaign.campaign_boards(args.boards_model, Path(tmp), args.count,
                                                               random.Random("bench-boards"), args.boards_budget)
        print(f"{tallies['boards'].row('boards (tune --boards 2)')} ({time.monotonic() - start:.0f} s)", flush=True)
    failures = 0
    for name, tally in tallies.items():
        for f in tally.failures:
            print(f"  FAILURE {name}: {f}")
        failures += (not tally.ok) * max(1, len(tally.failures))
    return failures


def serial_classes(names, args) -> int:
    """The serial-line campaigns over the commands ``names``: their lines, then every failure."""
    delay = DELAY_PAST_TIMEOUT * (session.DEFAULT_TIMEOUT + 0.2)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="fault-bench-") as tmp:
        work = Path(tmp)
        cmds = commands(work)
        with built_once(work / "builds"), compiled_once():
            for name in names:
                action = cmds[name]() if name == "tune" else cmds[name]
                start = time.monotonic()
                expected, counts, seconds = clean(action)
                faults = plan(counts, stride=args.tune_stride if name == "tune" else args.stride, delay=delay)
                print(f"{name}: a clean {name} carries {counts.get('request', 0)} requests and "
                      f"{counts.get('reply', 0)} replies ({seconds:.1f} s); {len(faults)} faults to try", flush=True)
                tally = run_faults(action, expected, faults, bound=seconds + 60, tally=Tally(),
                                   progress=(lambda m: print("  " + m, flush=True)) if args.verbose else (lambda m: None))
                print(tally.line(name) + f" ({time.monotonic() - start:.0f} s)")
                for words, n in sorted(tally.error_kinds.items(), key=lambda kv: -kv[1]):
                    print(f"  {n:>5}  {words} ...")
                for f in tally.error_faults:
                    print(f"  error   {f}")
                for f in tally.failures:
                    print(f"  FAILURE {f}")
                failures += len(tally.failures)
                left = our_emulators()
                if left:
                    print(f"  FAILURE: emulators left running: {left}")
                    failures += 1
    return failures


if __name__ == "__main__":
    sys.exit(main())
