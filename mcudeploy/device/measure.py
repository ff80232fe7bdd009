"""``mcudeploy measure``: per-operator ticks on a board, through the timing cache.

Each operator is timed alone (RUN_OP, ``repeat`` times, after one full RUN on a seeded random
input so its operands hold realistic values); its figure is the least ticks of one repetition.
Operators whose kernel signature is already in the board's timing cache are not measured
again, and when all are cached the board is not touched at all.

The kernels to time go in chunks of CHUNK, each timed after a full run of its own: what a kernel
reads is what the kernels before it left in the arena, and some kernels' instruction counts depend
on their data, so a chunk holds the same kernels, after the same run, however many boards there
are. With a pool of boards (mcudeploy/device/pool.py) the chunks go to whichever board is free.
"""
from __future__ import annotations

import functools
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from mcudeploy import interrupts
from mcudeploy.device import qemu
from mcudeploy.device.elfsize import MemoryReport
from mcudeploy.device.pool import BoardPool, Job, PoolBoard
from mcudeploy.device.runner import build_for_board, connect, model_name, op_labels, timed_nodes
from mcudeploy.device.samples import sample_bytes
from mcudeploy.device.session import StackUse
from mcudeploy.estimate.cycles import Target, estimate_cycles, estimate_range, milliseconds
from mcudeploy.errors import MCUDeployError
from mcudeploy.ops import registry
from mcudeploy.samples import random_inputs
from mcudeploy.simulate.simulate import work
from mcudeploy.simulate.timing_cache import TimingCache, kernel_signature, operator_key

log = logging.getLogger(__name__)
CHUNK = 8  # kernels timed after one full run (a QEMU start and a run per chunk: about 0.2 s)


@dataclass(frozen=True)
class OpTime:
    index: int
    label: str
    kernel: str
    signature: str
    ticks: int       # least ticks of one repetition
    mean: float
    max: int
    repeat: int
    cached: bool
    step: int = -1   # its place in the plan's order (plan.json "order"), which also holds the views that run no code
    node: str = ""

    def as_dict(self, ipt: Optional[float], estimate: Optional["Estimate"] = None) -> dict:
        d = {"index": self.index, "step": self.step, "node": self.node, "name": self.label, "kernel": self.kernel,
             "signature": self.signature,
             "ticks": self.ticks, "mean_ticks": self.mean, "max_ticks": self.max, "repeat": self.repeat,
             "cached": self.cached}
        if ipt is not None:
            d["instructions"] = round(self.ticks * ipt)
        if estimate is not None:
            d.update(estimate.op_dict(self.index))
        return d


@dataclass(frozen=True)
class Estimate:
    """Cycles a real board would take, from the instruction classes one traced emulated run executed."""
    target: Target
    cycles: tuple[float, ...]  # per timed operator
    instructions: tuple[int, ...]  # the traced run's, per timed operator
    flash: tuple[tuple[int, int], ...] = ()  # per timed operator: data reads of flash and the misses that waited
    spread: tuple[float, float] = (0.0, 0.0)  # the whole run's least and most cycles (estimate_range): its error
    serial: tuple[tuple[int, int, int, int], ...] = ()  # per timed operator, on a board with an xip: reads of
    # constants, fills of the instruction cache, serial read commands, bytes read over the serial interface

    NOTE = ("an estimate: the instructions of one traced run under QEMU weighted by the core's published "
            "timings and the board's flash wait states (mcudeploy/estimate/cores.py), not a measurement")

    def op_dict(self, index: int) -> dict:
        c = self.cycles[index]
        d = {"estimated_cycles": round(c), "estimated_ms": round(milliseconds(c, self.target), 4),
             "traced_instructions": self.instructions[index]}
        if self.flash:
            d["flash_reads"], d["flash_misses"] = self.flash[index]
        if self.serial:
            d["flash_reads"], d["icache_fills"], d["spi_commands"], d["spi_bytes"] = self.serial[index]
        return d

    def spread_note(self) -> str:
        """What the range is taken over."""
        if self.target.xip is not None:
            x = self.target.xip
            each = (f"every {x.frame_bytes} B of a line fill" if x.frame_bytes else "every line fill") if x.unified \
                else "every access"
            return (f"over the timings' published ranges, and the serial flash at its fastest clock "
                    f"({x.fastest_sck_cycles} core cycles a serial clock) or with {each} a read command of "
                    f"its own (mcudeploy/estimate/cores.py RANGES, the board file's xip)")
        return ("over the timings' published ranges and the flash cache hitting always or never "
                "(mcudeploy/estimate/cores.py RANGES)")

    def unvalidated(self) -> str:
        """Said of an estimate for a board that has not run mcudeploy's firmware; "" for one that has."""
        if self.target.silicon:
            return ""
        return (f"unvalidated: board {self.target.board} has not run on silicon (its board file says so), so no "
                f"measurement on it checks this estimate")

    def total(self) -> float:
        return sum(self.cycles)

    def range_ms(self) -> tuple[float, float]:
        return milliseconds(self.spread[0], self.target), milliseconds(self.spread[1], self.target)

    def as_dict(self) -> dict:
        return {"for": self.target.board, "core": self.target.core, "clock_hz": self.target.clock_hz,
                "flash_wait_states": self.target.wait_states, "estimated_cycles": round(self.total()),
                "estimated_ms": round(milliseconds(self.total(), self.target), 4),
                "range_cycles": [round(c) for c in self.spread],
                "range_ms": [round(m, 4) for m in self.range_ms()], "note": self.NOTE,
                "silicon": self.target.silicon, **({"unvalidated": self.unvalidated()} if self.unvalidated() else {})}


@dataclass(frozen=True)
class Measurement:
    model: str
    board: str
    timer_hz: int
    instructions_per_tick: Optional[float]
    ops: list[OpTime]
    device_used: bool
    memory: Optional[MemoryReport] = None
    estimate: Optional[Estimate] = None
    clock: str = ""  # the board's core clock as IDENTIFY gave it (and a fallback), when the board was used
    stack: Optional[StackUse] = None  # the most stack a timing board used (READ_STACK), when a board was used
    source: str = ""  # where the ticks come from and what one is, when not a board's (the host's)

    @property
    def total_ticks(self) -> int:
        return sum(o.ticks for o in self.ops)

    def as_dict(self) -> dict:
        ipt = self.instructions_per_tick
        d = {"model": self.model, "board": self.board, "timer_hz": self.timer_hz, "total_ticks": self.total_ticks,
             "device_used": self.device_used, "ops": [o.as_dict(ipt, self.estimate) for o in self.ops]}
        if ipt is not None:
            d["instructions_per_tick"] = ipt
            d["total_instructions"] = round(self.total_ticks * ipt)
        if self.memory is not None:
            d["memory"] = self.memory.as_dict()
        if self.estimate is not None:
            d["estimate"] = self.estimate.as_dict()
            d["estimated_cycles"], d["estimated_ms"] = d["estimate"]["estimated_cycles"], d["estimate"]["estimated_ms"]
        if self.clock:
            d["clock"] = self.clock
        if self.stack is not None:
            d["stack"] = {"size": self.stack.size, "used": self.stack.used, "worst_case": self.worst_case}
        return d

    @property
    def worst_case(self) -> Optional[int]:
        """The firmware's worst-case stack as its build computed it (stack_bound.py), when a firmware was built."""
        return None if self.memory is None else self.memory.stack_worst

    def lines(self) -> list[str]:
        ipt, est = self.instructions_per_tick, self.estimate
        head = f"{'#':>3}  {'operator':<48} {'kernel':<22} {'ticks':>12} {'~instructions' if ipt else 'us':>14}"
        out = [head + (f" {'est. cycles':>13} {'est. ms':>9}" if est else "")]

        def estimated(cycles: float) -> str:
            return f" {cycles:>13,.0f} {milliseconds(cycles, est.target):>9.3f}" if est else ""

        for o in self.ops:
            extra = f"{o.ticks * ipt:>14,.0f}" if ipt else f"{o.ticks * 1e6 / self.timer_hz:>14,.1f}"
            mark = "  (cached)" if o.cached else ""
            out.append(f"{o.index:>3}  {o.label[:48]:<48} {o.kernel[:22]:<22} {o.ticks:>12,}{extra}"
                       f"{estimated(est.cycles[o.index]) if est else ''}{mark}")
        total = self.total_ticks
        extra = f"{total * ipt:>14,.0f}" if ipt else f"{total * 1e6 / self.timer_hz:>14,.1f}"
        out.append(f"{'':>3}  {'total':<48} {'':<22} {total:>12,}{extra}{estimated(est.total()) if est else ''}")
        source = "measured on the board" if self.device_used else "all from the timing cache (board not used)"
        unit = (f"1 tick = {ipt:g} guest instructions under QEMU -icount" if ipt else
                f"1 tick = 1 cycle at {self.timer_hz:,} Hz")
        out.append(f"{self.board}: {self.source or f'{source}; {unit}'}" + (f"; {self.clock}" if self.clock else ""))
        if self.stack is not None:
            worst = "" if self.worst_case is None else f"; the worst case of its call graph {self.worst_case:,} B"
            out.append(f"{self.stack.describe()} (the full run and the kernels timed){worst}")
        if est:
            lo, hi = est.range_ms()
            out.append(f"estimated for {est.target.describe()}: {milliseconds(est.total(), est.target):.3f} ms, "
                       f"between {lo:.3f} and {hi:.3f} ms {est.spread_note()}; {est.NOTE}"
                       + (f"; {est.unvalidated()}" if est.unvalidated() else ""))
        return out


def _stale(entry: dict, board) -> bool:
    """A real board's timing taken at another clock (before its clock tree, or after a fallback) is timed again."""
    return board.kind == "hardware" and int(entry.get("timer_hz", 0)) != board.timer.hz


def timed_ops(compiled) -> list[tuple[int, object, str, str]]:
    """(index, node, label, kernel fn) of every operator model.c times, in MCUD_OP_BEGIN order."""
    nodes, labels = timed_nodes(compiled), op_labels(compiled)
    elided = compiled.lifetimes.elided
    return [(i, n, labels[i], "-" if n.name in elided else registry.get(n.op).kernel(compiled.graph, n).fn)
            for i, n in enumerate(nodes)]


def _time_chunk(compiled, firmware, chunk: list, ops: list, repeat: int, timeout: Optional[float], cache: TimingCache,
                on: PoolBoard) -> tuple[str, Optional[StackUse]]:
    """Time the kernels of ``chunk`` ((signature, operator index), ...) on one board of the pool, after
    one full run on the seeded input, and put each in ``cache`` as it comes (a kernel another board
    put there meanwhile, e.g. before it was lost, is not timed again, unless taken at another clock).
    Returns a real board's clock line from IDENTIFY ("" for an emulated one) and the most stack the board
    used since it started (READ_STACK; None from a firmware without the command)."""
    board, graph = compiled.board, compiled.graph
    if on.flash is not None:
        on.flash(firmware)
    with connect(board, firmware, on.port, timeout) as session:
        hz = session.info.timer_hz
        clock = session.info.clock_line() if board.kind == "hardware" else ""
        sample = random_inputs(graph, 1, seed=0)[0]
        session.begin_run()
        for k, data in enumerate(sample_bytes(graph, sample)):
            session.load_input(k, data)
        session.run()
        ipt = qemu.instructions_per_tick(board, hz) if board.kind == "qemu" else None
        for sig, i in chunk:
            if sig in cache and not _stale(cache.get(sig), board):
                continue
            log.info("board %s: timing op %d (signature %s) on %s", board.name, i, sig, on.label)
            with interrupts.deferred():  # a timing the board gave is recorded before a signal ends the run
                t = session.run_op(i, repeat)
                macs, nbytes = work(graph, ops[i][1])  # what the simulator fits its estimates on
                cache.put({sig: {"ticks": t.min, "mean": t.mean, "max": t.max, "repeat": repeat, "timer_hz": hz,
                                 "instructions_per_tick": ipt, "kernel": ops[i][3], "model": model_name(compiled),
                                 "macs": macs, "bytes": nbytes,
                                 "operator": operator_key(model_name(compiled), ops[i][1])}})
            log.info("op %d: %d ticks (min of %d)", i, t.min, repeat)
        stack = session.read_stack()
    return clock, stack


def firmware_memory(compiled) -> MemoryReport:
    """The memory use of the firmware that measures ``compiled``, from the ELF of its build (measure_model
    builds none when every kernel is in the timing cache)."""
    with tempfile.TemporaryDirectory(prefix="mcud-measure-") as tmp:
        return build_for_board(compiled, Path(tmp)).report


def measure_model(compiled, port: Optional[str] = None, repeat: int = 5, workdir: Optional[Path] = None,
                  timeout: Optional[float] = None, cache: Optional[TimingCache] = None,
                  pool: Optional[BoardPool] = None, estimate_for: Optional[Target] = None,
                  sanitize: bool = False) -> Measurement:
    """Per-operator ticks (cached per kernel; the missing ones timed on the boards of ``pool``); with
    ``estimate_for``, on an emulated board, also the cycles and milliseconds that real board would take,
    estimated from a traced run (mcudeploy/estimate). On the host board, every operator timed by the host's
    timing build (device/host_measure.py), none cached; ``sanitize``: that build with AddressSanitizer and
    UndefinedBehaviorSanitizer, a report raised as one sentence naming the operator."""
    if repeat < 1:
        raise MCUDeployError(f"--repeat must be 1 or more, not {repeat}")
    board, graph = compiled.board, compiled.graph
    if sanitize and board.kind != "host":
        raise MCUDeployError(f"--sanitize builds the generated C for this computer: {model_name(compiled)} is "
                             f"planned for {board.name}, not for the host board")
    if board.kind == "host":  # an estimate_for target is an emulated board's (estimate.cycles.target_for)
        return _measure_on_host(compiled, repeat, sanitize, workdir, timeout)
    cache = TimingCache(board.name) if cache is None else cache
    ops = [(i, node, label, fn, kernel_signature(graph, node, compiled.lifetimes, compiled.placement))
           for i, node, label, fn in timed_ops(compiled)]
    missing: dict[str, int] = {}
    for i, _, _, _, sig in ops:
        if sig is not None and sig not in missing and (sig not in cache or _stale(cache.get(sig), board)):
            missing[sig] = i
    memory, clock, stack = None, "", None
    if missing:
        pool = pool or BoardPool.of(board, 1, [port] if port else [])
        order = list(missing.items())
        chunks = [order[k:k + CHUNK] for k in range(0, len(order), CHUNK)]
        with tempfile.TemporaryDirectory(prefix="mcud-measure-") as tmp:
            firmware = build_for_board(compiled, Path(workdir or tmp))
            memory = firmware.report
            jobs = [Job(f"timing {len(chunk)} kernel(s) of {model_name(compiled)}",
                        functools.partial(_time_chunk, compiled, firmware, chunk, ops, repeat, timeout, cache))
                    for chunk in chunks]
            answers = pool.map(jobs)
            clock = next((c for c, _ in answers if c), "")
            stacks = [s for _, s in answers if s is not None]
            stack = max(stacks, key=lambda s: (s.overflowed, s.used)) if stacks else None
    rows = []
    steps = {n.name: k for k, n in enumerate(compiled.order)}
    for i, node, label, fn, sig in ops:
        if sig is None:  # its work is done by sharing memory: no kernel runs
            rows.append(OpTime(i, label, fn, "", 0, 0.0, 0, 0, False, steps[node.name], node.name))
            continue
        e = cache.get(sig)
        rows.append(OpTime(i, label, fn, sig, int(e["ticks"]), float(e["mean"]), int(e["max"]), int(e["repeat"]),
                           sig not in missing, steps[node.name], node.name))
    first = next((cache.get(sig) for *_, sig in ops if sig is not None), None)
    hz = int(first["timer_hz"]) if first else board.timer.hz
    ipt = qemu.instructions_per_tick(board, hz) if board.kind == "qemu" else None
    estimate = None
    if estimate_for is not None:
        from mcudeploy.device.traced import trace_model
        spans = trace_model(compiled, timeout=timeout, target=estimate_for)
        flash = tuple((c["flash_reads"], c["flash_misses"]) for c in spans) if estimate_for.caches else ()
        serial = tuple((c["flash_reads"], c["icache_fills"], c["spi_commands"], c["spi_bytes"]) for c in spans) \
            if estimate_for.xip else ()
        ranges = [estimate_range(c, estimate_for) for c in spans]
        estimate = Estimate(estimate_for, tuple(estimate_cycles(c, estimate_for) for c in spans),
                            tuple(c["instructions"] for c in spans), flash,
                            (sum(r[0] for r in ranges), sum(r[1] for r in ranges)), serial)
    return Measurement(model_name(compiled), board.name, hz, ipt, rows, bool(missing), memory, estimate, clock, stack)


def _measure_on_host(compiled, repeat: int, sanitize: bool, workdir: Optional[Path],
                     timeout: Optional[float]) -> Measurement:
    """Every operator timed by the host's timing build, in nanoseconds; nothing cached."""
    from mcudeploy.device.host_measure import TIMER_HZ, time_on_host

    times = time_on_host(compiled, repeat, sanitize=sanitize, workdir=workdir, timeout=timeout)
    steps = {n.name: k for k, n in enumerate(compiled.order)}
    rows = []
    for (i, node, label, fn), (least, total, most) in zip(timed_ops(compiled), times):
        sig = kernel_signature(compiled.graph, node, compiled.lifetimes, compiled.placement) or ""
        rows.append(OpTime(i, label, fn, sig, least, total / repeat, most, repeat, False, steps[node.name], node.name))
    source = ("measured on this computer, not cached (a computer's times are not a board's); 1 tick = 1 ns of its "
              "monotonic clock")
    if sanitize:
        source += ("; built with AddressSanitizer and UndefinedBehaviorSanitizer: no report, and these times are "
                   "the sanitizers' as much as the model's")
    return Measurement(model_name(compiled), compiled.board.name, TIMER_HZ, None, rows, True, source=source)
