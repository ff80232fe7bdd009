"""Build the measurer firmware (and the model's generated C) for a Cortex-M or RISC-V board into an ELF.

``firmware_build_spec(board, project_dir)`` renders the firmware's generated files (main.c,
the per-operator timing header, the linker scripts) into ``project_dir/firmware`` and returns
every source, include directory and flag of the build. ``build_firmware`` compiles that list
directly with the board's cross compiler (its ``toolchain``: arm-none-eabi-gcc unless it names
another); the PlatformIO builder compiles exactly the same list. The board's ``arch`` picks the
runtime's start-up and system files and the linker script template (``ARCH``).
Objects of the kernel library and the runtime are cached by content and flags.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from mcudeploy import __version__, interrupts
from mcudeploy.boards import Board, Region, load_board
from mcudeploy.clocks import register_values
from mcudeploy.codegen.emit import BANNER, environment
from mcudeploy.device.elfsize import MemoryReport, check_fits, memory_report
from mcudeploy.device.host import BuildError, cache_dir
from mcudeploy.device.stack_bound import Bound, spec_bound, with_guard
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import write_atomic
from mcudeploy.plan import codec
from mcudeploy.resources import firmware_dir

log = logging.getLogger(__name__)

CC = "arm-none-eabi-gcc"  # the Arm boards' (boards.ARM_TOOLCHAIN); a board's own is board.toolchain.cc
CFLAGS = ["-std=c99", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
          "-ffunction-sections", "-fdata-sections"]
# each object's frames (.su) and call graph (.ci) beside it, for the worst-case stack (stack_bound.py)
# the call graph of every unit, with each function's frame (mcudeploy/device/stack_bound.py); -fno-ipa-icf: GCC's
# identical-code folding makes a function an alias of an identical one (the model.c of a split plan whose pieces share
# their constant views and parameters has such operators) and writes the call to the alias with no node for it
STACK_FLAGS = ["-fstack-usage", "-fcallgraph-info=su", "-fno-ipa-icf"]
LDFLAGS = ["-Wl,--gc-sections"]  # after the toolchain's own (its C library's specs, -nostartfiles)
LIBS = ["-lm"]
RUNTIME_COMMON = ("system.c", "crc32.c", "protocol.c", "measure.c", "uart.c", "link.c")


@dataclass(frozen=True)
class Arch:
    """What an instruction set brings to the firmware: its runtime files and its linker script template."""
    runtime: tuple[str, ...]  # firmware/runtime/*.c
    linker_script: str  # under templates/


ARCH = {
    "arm": Arch(("startup.c", "arch_arm.c"), "firmware/link.ld.j2"),
    "riscv": Arch(("startup_riscv.c", "arch_riscv.c"), "firmware/link_riscv.ld.j2"),
}
UNBOUNDED = 0x10000000  # region length of the sizing link: 256 MB, more than any board


def ram_region(board: Board) -> Region:
    """The region holding .data, .bss (the arena) and the stack: the board's first usable one."""
    for region in board.regions:
        if not region.excluded:
            return region
    raise MCUDeployError(f"board {board.name} has no usable memory region")


def uart_brr(board: Board, clock_hz: Optional[int] = None) -> tuple[int, str]:
    """The UART's baud-rate register when its kernel clock is ``clock_hz`` (default the board's uart.clock_hz)."""
    uart = board.uart
    hz = uart.clock_hz if clock_hz is None else clock_hz
    if not hz:
        return 0, "no clock given"
    if uart.lpuart:
        return round(256 * hz / uart.baud), f"256 * {hz} Hz / {uart.baud} baud (LPUART)"
    if uart.driver == "pl011":  # the divisor clock / (16 * baud) in 64ths: IBRD above the low six bits, FBRD in them
        return round(4 * hz / uart.baud), f"64 * {hz} Hz / (16 * {uart.baud} baud) (PL011 IBRD:FBRD)"
    if uart.driver == "sifive":  # baud = clock / (div + 1)
        return round(hz / uart.baud) - 1, f"{hz} Hz / {uart.baud} baud - 1 (SiFive div)"
    return round(hz / uart.baud), f"{hz} Hz / {uart.baud} baud"


def _reached(board: Board, tree) -> dict:
    """The core clock, the UART divisor and a summary of the clocks ``tree`` reaches."""
    brr, note = uart_brr(board, round(tree.bus_hz(tree.uart_bus)))
    summary = ", ".join(f"{k.upper()} {v / 1e6:g} MHz" for k, v in tree.frequencies().items())
    return {"core_hz": round(tree.core_hz), "uart_brr": brr, "uart_brr_note": note, "summary": summary}


def clock_source(board: Board) -> str:
    """firmware/clock.c of ``board``: its clock tree applied (templates/firmware/clock.c.j2), or the reset clock kept."""
    tree = board.clock_tree
    brr, brr_note = uart_brr(board)
    values = {"banner": BANNER, "board": board.name, "core_hz": board.clock_hz, "uart_brr": brr,
              "uart_brr_note": brr_note, "tree": None, "boost": None, "icache": False, "dcache": False}
    if tree is not None:
        reset_brr, reset_note = uart_brr(board, tree.reset_hz)
        values.update(_reached(board, tree))
        if tree.vos0 is not None:
            values["boost"] = {**_reached(board, tree.vos0), "regs": register_values(tree.vos0), "rev_id": tree.rev_id}
        values.update(
            icache=tree.icache, dcache=tree.dcache, reset_brr=reset_brr, reset_brr_note=reset_note, regs=register_values(tree),
            tree={"summary": values["summary"],
                  "manual": tree.manual, "reset_hz": tree.reset_hz, "family": tree.family,
                  "sequence": "stm32f4" if tree.family == "stm32f7" else tree.family, "boost": tree.boost,
                  "prefetch": tree.prefetch, "flash_cache": tree.flash_cache, "voltage_scale": tree.voltage_scale})
    return environment().get_template("firmware/clock.c.j2").render(values)


def _check_firmware_board(board: Board) -> None:
    if not board.has_firmware:
        raise MCUDeployError(f"board {board.name} runs the generated C natively; it has no firmware")


def model_id(project_dir: Optional[Path]) -> int:
    """CRC-32 of the generated model.c (0 for the measurer alone); IDENTIFY reports it."""
    if project_dir is None or not (Path(project_dir) / "model.c").is_file():
        return 0
    return zlib.crc32((Path(project_dir) / "model.c").read_bytes()) or 1


def arena_sections(project_dir: Optional[Path]) -> dict[str, str]:
    """The linker sections ``compile --arena-section`` put the model's arenas in (plan.json "c"), by
    region ("" the first), so the firmware's linker script places them too."""
    if project_dir is None:
        return {}
    try:
        plan = codec.read_plan(Path(project_dir) / codec.PLAN_FILE).plan
    except (OSError, codec.PlanError):
        return {}
    return plan.arena_sections if isinstance(plan, codec.BoardPlan) else {}


def _context(board: Board, mid: int, has_model: bool, sections: Optional[dict] = None) -> dict:
    uart = board.uart
    brr, brr_note = uart_brr(board)
    ram = ram_region(board)
    sections = sections or {}
    init = reg_writes(uart.init)
    return {
        "banner": BANNER,
        "board": board.name,
        "core": board.core,
        "firmware_version": __version__,
        "model_id": f"0x{mid:08X}",
        "model_note": "CRC-32 of model.c" if has_model else "no model: the measurer alone",
        "uart_driver": uart.driver,
        "uart_base": f"0x{uart.base:08X}",
        "uart_brr": brr,
        "uart_brr_note": brr_note,
        "uart_irq": uart.irq,
        "timer_hz": board.timer.hz,
        "timer_counts_cycles": board.timer.driver == "dwt",
        "emulated": board.kind == "qemu",
        "init": init,
        "flash_origin": f"0x{board.flash_origin:08X}",
        "boot_origin": None if board.boot_origin is None else f"0x{board.boot_origin:08X}",
        "flash_bytes": board.flash_bytes,
        "ram_name": ram.name,
        "ram_origin": f"0x{ram.origin:08X}",
        "ram_bytes": ram.size,
        "stack_bytes": board.stack_bytes,
        "extra_regions": extra_regions(board, sections),
        "ram_section": ram.section,
        "arena_section": sections.get("") or sections.get(ram.name),
        "dual": None,  # two cores: the second stage, the ring (firmware_build_spec's dual)
        "link": None,  # a chip of a chain: its link ports and tensors (firmware_build_spec's link)
        "dma": None if board.dma_engine is None else {
            "driver": board.dma_engine.driver, "base": f"0x{board.dma_engine.base:08X}",
            "channels": board.dma_engine.channels},
    }


def reg_writes(writes) -> list[dict]:
    """Register writes (boards.RegWrite) as main.c's board_init rows."""
    return [{"addr": f"0x{w.addr:08X}", "clear": f"0x{w.clear:08X}", "set": f"0x{w.set:08X}", "wait": f"0x{w.wait:08X}",
             "what": w.what.replace("*/", "* /")} for w in writes]


def extra_regions(board: Board, sections: Optional[dict] = None) -> list[dict]:
    """The board's other usable regions that name a linker section (where codegen puts their arenas),
    with the section --arena-section chose for the region's arena, if any ("arena_section")."""
    main = ram_region(board)
    out = []
    for r in board.regions:
        if r.excluded or r is main or not r.section:
            continue
        out.append({"name": r.name, "mem": "RAM_" + "".join(c if c.isalnum() else "_" for c in r.name).upper(),
                    "origin": f"0x{r.origin:08X}", "bytes": r.size, "section": r.section,
                    "arena_section": (sections or {}).get(r.name)})
    return out


STARTS = ("sse200",)  # the cores' start drivers firmware/runtime/cores.c has


def _cores(board: Board, project: Path, stop_core1: bool) -> Optional[dict]:
    """The templates' values for a plan on the chip's cores (firmware/cores.c.j2), or None for a plan on one."""
    found = re.search(r"#define MCUD_MODEL_CORES (\d+)", (project / "mcud_model.h").read_text())
    if found is None:
        return None
    count, cores = int(found.group(1)), board.cores
    if cores is None or cores.count != count:
        raise MCUDeployError(f"the plan in {project} runs one inference on {count} cores, but board {board.name} "
                             f"{'names no cores that share its memory' if cores is None else f'has {cores.count}'} "
                             f"(its board file's cores)")
    if cores.driver not in STARTS:
        raise MCUDeployError(f"board {board.name}'s cores are data for plans and estimates: the firmware starts a "
                             f"core only through {', '.join(STARTS)}, not {cores.driver}, so the plan on its cores is "
                             f"not built into firmware (compile writes its C; measure -b qemu-an521 --objective latency "
                             f"--estimate-for {board.name} estimates it)")
    return {"count": count, "driver": cores.driver, "base": f"0x{cores.base:08X}",
            "stack_words": board.stack_bytes // 4, "stall_ms": f"{cores.stall_timeout_ms:g}",
            "stall_ticks": round(cores.stall_timeout_ms * board.timer.hz / 1000.0), "core1_stops": int(stop_core1)}


def firmware_build_spec(board: Union[str, Board], project_dir: Union[str, os.PathLike, None],
                        dual: Optional[dict] = None, link: Optional[dict] = None, stop_core1: bool = False) -> dict:
    """Everything needed to build the firmware of ``project_dir`` (a `write_project` output) for ``board``.

    Writes ``project_dir/firmware/`` (main.c, mcud_measure.h, link.ld, link-sizing.ld and a copy of
    the runtime sources). A ``project_dir`` without model.c (or None, then a temporary folder is
    made) builds the measurer alone. Returns a dict with ``cc``, ``sources``, ``include_dirs``,
    ``library`` (the kernel library's folder and the one include folder it is compiled with; None without a
    model), ``cflags`` (for every source, CPU flags and ``-include mcud_measure.h`` included), ``ldflags``
    (without ``-T``), ``libs``, ``linker_script``, ``sizing_linker_script``, ``model_id``, and
    the board's ``flash_bytes``, ``sram_bytes`` and ``sram_region`` for the memory report.

    ``dual`` (a firmware of two cores, mcudeploy/target/dual_firmware.py): ``project_dir`` holds the first
    stage, ``dual["project1"]`` the second; ``dual["s0"]``, ``["s1"]`` and ``["dual"]`` fill the
    templates' two-core parts (firmware/dual.c.j2, firmware/dual_model.h.j2).

    ``link`` (a chip of a chain, mcudeploy/target/linked_firmware.py): its link ports and the inputs and
    outputs that cross them (firmware/runtime/link.c); the ports' register writes join the board's.

    A plan of one inference on the chip's cores (its mcud_model.h defines MCUD_MODEL_CORES; mcudeploy/cores) gets
    the board's ``cores`` start-up and barrier (firmware/cores.c.j2, runtime/cores.c); ``stop_core1`` (tests):
    core 1 stops instead of running its steps.
    """
    board = load_board(board) if isinstance(board, str) else board
    _check_firmware_board(board)
    project = Path(project_dir) if project_dir is not None else Path(tempfile.mkdtemp(prefix="mcud-measurer-"))
    project.mkdir(parents=True, exist_ok=True)
    fw = project / "firmware"
    runtime = fw / "runtime"
    if runtime.exists():
        shutil.rmtree(runtime)
    shutil.copytree(firmware_dir() / "runtime", runtime)
    has_model = (project / "model.c").is_file()
    env = environment()
    arch = ARCH[board.arch]
    values = _context(board, model_id(project), has_model, arena_sections(project) if has_model else None)
    cores = values["cores"] = _cores(board, project, stop_core1) if has_model else None
    if dual is not None:
        values.update(s0=dual["s0"], s1=dual["s1"], dual=dual["dual"], model_id=f"0x{dual['model_id']:08X}",
                      model_note="CRC-32 of both stages' model.c")
        write_atomic(fw / "mcud_model.h", env.get_template("firmware/dual_model.h.j2").render(values))
    if link is not None:
        values.update(link=link, init=values["init"] + link["init"])
    write_atomic(fw / "main.c", env.get_template("firmware/main.c.j2").render(values))
    write_atomic(fw / "clock.c", clock_source(board))
    write_atomic(fw / "mcud_measure.h", env.get_template("firmware/mcud_measure.h.j2").render(values))
    for name, sizing in (("link.ld", False), ("link-sizing.ld", True)):
        lengths = ({"flash_length": f"0x{UNBOUNDED:X}", "ram_length": f"0x{UNBOUNDED:X}",
                    "extra_length": f"0x{UNBOUNDED:X}"} if sizing else
                   {"flash_length": str(board.flash_bytes), "ram_length": str(values["ram_bytes"]), "extra_length": None})
        write_atomic(fw / name, env.get_template(arch.linker_script).render(**values, **lengths, sizing=sizing))
    sources = []
    include_dirs = [fw, runtime]
    if has_model:
        sources.append(project / "model.c")
        sources += sorted((project / "mcud" / "kernels").glob("*.c"))
        include_dirs += [project, project / "mcud" / "include"]
    else:
        stub = fw / "no_model"
        stub.mkdir(exist_ok=True)
        write_atomic(stub / "model.c", env.get_template("firmware/no_model.c.j2").render(values))
        write_atomic(stub / "mcud_model.h", env.get_template("firmware/no_model.h.j2").render(values))
        shutil.copy(firmware_dir() / "include" / "mcud_dma.h", stub)  # for a DMA engine's driver
        sources.append(stub / "model.c")
        include_dirs.append(stub)
    if dual is not None:
        sources.append(Path(dual["project1"]) / "model.c")
        include_dirs.append(Path(dual["project1"]))
    sources += [fw / "main.c", fw / "clock.c"]
    drivers = (f"uart_{board.uart.driver}.c", f"timer_{board.timer.driver}.c")  # the schema lists the drivers
    if board.dma_engine is not None:
        drivers += (f"dma_{board.dma_engine.driver}.c",)
    if dual is not None:
        drivers += ("dual.c",)
    if cores is not None:
        drivers += ("cores.c",)
    if board.boot_block:
        drivers += (f"boot_{board.boot_block}.c",)
    sources += [runtime / name for name in arch.runtime + RUNTIME_COMMON + drivers]
    cpu = list(board.cpu_flags)
    return {
        "board": board.name,
        "cc": board.toolchain.cc,
        "packages": board.toolchain.packages,  # the Debian packages of cc, named when it is missing
        "project_dir": str(project),
        "sources": [str(s) for s in sources],
        "include_dirs": [str(d) for d in include_dirs],
        # the kernel library sees its own headers only (no header of the model or the firmware), so its objects
        # are the same for every model of a board and are compiled once (_objects)
        "library": ({"dir": str(project / "mcud" / "kernels"), "include_dirs": [str(project / "mcud" / "include")]}
                    if has_model else None),
        "cflags": (cpu + list(board.toolchain.cflags) + CFLAGS + STACK_FLAGS + driver_defines(board)
                   + ["-include", str(fw / "mcud_measure.h")]),
        "ldflags": cpu + list(board.toolchain.ldflags) + LDFLAGS,
        "libs": list(LIBS),
        "linker_script": str(fw / "link.ld"),
        "sizing_linker_script": str(fw / "link-sizing.ld"),
        "model_id": dual["model_id"] if dual is not None else model_id(project),
        "flash_bytes": board.flash_bytes,
        "sram_bytes": values["ram_bytes"],
        "sram_region": values["ram_name"],
        "extra_regions": [(r["name"], r["section"], r["bytes"]) for r in values["extra_regions"]],
    }


def driver_defines(board: Board) -> list[str]:
    """The -D flags a driver takes from the board's data: the ns16550's register spacing."""
    if board.uart is not None and board.uart.driver == "ns16550":
        return [f"-DMCUD_UART_REG_SHIFT={board.uart.reg_shift}"]
    return []


# --------------------------------------------------------------------------- direct build


@dataclass(frozen=True)
class Firmware:
    elf: Path
    report: MemoryReport
    model_id: int
    spec: dict
    stack: Optional[Bound] = None  # the worst case of its stack (stack_bound.py), None when GCC wrote no call graph


def _digest_flags(flags: list[str]) -> list[str]:
    """Flags with file paths replaced by their contents' digest, so a cache key survives a new folder."""
    out = []
    for f in flags:
        p = Path(f)
        out.append(hashlib.sha256(p.read_bytes()).hexdigest() if f.startswith("/") and p.is_file() else f)
    return out


def _headers_digest(include_dirs: list[str]) -> str:
    h = hashlib.sha256()
    for d in include_dirs:
        for p in sorted(Path(d).glob("*.h")):
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


class _Compilers:
    """The compiler processes of one build, started and stopped under one lock: once ``stop()`` ran,
    every compiler started is killed and no worker thread starts another (a worker that had taken
    its job before the stop would otherwise compile on while the build waits for it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set = set()
        self._stopped = False

    def compile(self, cc: str, cflags: list[str], incs: list[str], source: Path, obj: Path) -> bool:
        """Whether ``obj`` was compiled (False: the build was stopped first, ``obj`` is not to be used)."""
        with self._lock:
            if self._stopped:
                return False
            proc = subprocess.Popen([cc, *cflags, *incs, "-c", str(source), "-o", str(obj)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            self._running.add(proc)
        try:
            _, err = proc.communicate()
        finally:
            with self._lock:
                self._running.discard(proc)
        if self._stopped:
            obj.unlink(missing_ok=True)  # killed half way
            return False
        if proc.returncode != 0:
            raise BuildError(f"{cc} failed on {source.name}:\n{err[-4000:]}")
        return True

    def stop(self) -> None:
        """Kill each compiler with its own children: the driver's cc1 and as would otherwise compile on,
        holding the pipe the driver's error output is read from."""
        with self._lock:
            self._stopped = True
            for proc in self._running:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)


def _objects(spec: dict) -> list[Path]:
    """The objects of ``spec``'s sources, every one from the cache, keyed by the source, the flags and the headers
    the source can see. The kernel library's include path is its own headers only (spec["library"]), so a new model
    reuses them: keyed by every header of the firmware, the model's own among them, each model compiled the whole
    library again (6 s a firmware on two cores). The model's own units (model.c, main.c) are cached too, so a plan
    built again skips its costliest compile; the cache is not pruned (each model built adds its objects)."""
    cc, cflags = spec["cc"], spec["cflags"]
    digest = _digest_flags(cflags)
    everything = ([f"-I{d}" for d in spec["include_dirs"]],
                  "\0".join([cc, *digest, _headers_digest(spec["include_dirs"])]))
    library = spec.get("library")
    own = (([f"-I{d}" for d in library["include_dirs"]],
            "\0".join([cc, *digest, _headers_digest(library["include_dirs"])])) if library else None)
    cache = cache_dir() / "arm-objects"
    cache.mkdir(parents=True, exist_ok=True)
    jobs, objs = [], []
    for src in map(Path, spec["sources"]):
        incs, key_base = own if own and src.parent == Path(library["dir"]) else everything
        if src.name in ("model.c", "main.c"):  # a quoted #include looks in the source's own folder first (a
            key_base += "\0" + _headers_digest([str(src.parent)])  # two-core firmware's stages have one each)
        key = hashlib.sha256((key_base + "\0" + src.name).encode() + src.read_bytes()).hexdigest()[:24]
        obj = cache / f"{src.stem}-{key}.o"
        objs.append(obj)
        if not (obj.exists() and obj.with_suffix(".ci").exists()):
            jobs.append((src, obj, incs))

    compilers = _Compilers()

    def run(job):
        src, obj, incs = job
        target = obj.with_suffix(f".{os.getpid()}.tmp")
        if compilers.compile(cc, cflags, incs, src, target):
            for aux in (".su", ".ci"):  # GCC names them after the output: x.<pid>.tmp -> x.<pid>.ci
                tmp = target.with_suffix(aux)
                if tmp.exists():
                    os.replace(tmp, obj.with_suffix(aux))
            os.replace(target, obj)

    # Signals are deferred here and honoured at check(), between waits: a KeyboardInterrupt raised inside wait()
    # while it held a future's lock left the lock held, and the pool's shutdown then waited for ever on a worker
    # that wanted it (seen once in CI, reproduced by a SIGINT 2.7 s into `measure` on a loaded machine).
    with interrupts.deferred():
        pool = ThreadPoolExecutor(max_workers=max(os.cpu_count() or 1, 2))
        futures = [pool.submit(run, job) for job in jobs]
        try:
            while wait_futures(futures, timeout=0.05).not_done:
                interrupts.check()  # a signal (deferred here or by the caller) ends the build
            for f in futures:
                f.result()
        except BaseException:  # an interrupt or a failed compile: the other compilers stop at once
            for f in futures:
                f.cancel()
            compilers.stop()
            raise
        finally:
            pool.shutdown(wait=True)
    return objs


def _link(spec: dict, objs: list[Path], script: str, elf: Path) -> subprocess.CompletedProcess:
    cmd = [spec["cc"], *spec["ldflags"], "-T", script, *map(str, objs), *spec["libs"], "-o", str(elf),
           f"-Wl,-Map={elf.with_suffix('.map')}"]
    return subprocess.run(cmd, capture_output=True, text=True)


def check_compiler(board: Board) -> None:
    """Refuse, in one sentence naming the board and the packages to install, a board whose compiler is missing."""
    cc = board.toolchain.cc
    if shutil.which(cc) is None:
        raise MCUDeployError(f"board {board.name} needs the cross compiler {cc}, which is not installed "
                             f"(apt-get install {board.toolchain.packages})")


def build_firmware(board: Union[str, Board], project_dir: Union[str, os.PathLike, None],
                   model_name: str = "(measurer alone)", dual: Optional[dict] = None,
                   link: Optional[dict] = None, stop_core1: bool = False) -> Firmware:
    """Compile and link ``project_dir`` for ``board``; refuse a firmware larger than the board.

    The memory check comes from the ELF itself: when the firmware does not fit, it is linked
    once more against unbounded regions only to measure how far over it is.
    """
    board = load_board(board) if isinstance(board, str) else board
    check_compiler(board)
    spec = firmware_build_spec(board, project_dir, dual, link, stop_core1)
    build_dir = Path(spec["project_dir"]) / "firmware" / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    objs = _objects(spec)
    stack = worst_case_stack(board, spec, objs)
    spec = with_guard(spec, stack, board.core)
    elf = build_dir / "firmware.elf"
    proc = _link(spec, objs, spec["linker_script"], elf)
    if proc.returncode != 0:
        if "overflowed" not in proc.stderr and "will not fit" not in proc.stderr:
            raise BuildError(f"linking the firmware for {board.name} failed:\n{proc.stderr[-4000:]}")
        sizing = build_dir / "firmware-sizing.elf"
        proc2 = _link(spec, objs, spec["sizing_linker_script"], sizing)
        if proc2.returncode != 0:
            raise BuildError(f"linking the firmware for {board.name} failed:\n{proc2.stderr[-4000:]}")
        report = memory_report(sizing, spec["flash_bytes"], spec["sram_bytes"], spec["sram_region"],
                               spec["extra_regions"], stack)
        check_fits(report, model_name, board.name)
        raise BuildError(f"the linker refused the firmware for {board.name} though it fits:\n{proc.stderr[-4000:]}")
    report = memory_report(elf, spec["flash_bytes"], spec["sram_bytes"], spec["sram_region"], spec["extra_regions"],
                           stack)
    check_fits(report, model_name, board.name)
    log.info("built %s: %s", elf, "; ".join(report.lines()))
    return Firmware(elf, report, spec["model_id"], spec, stack)


def worst_case_stack(board: Board, spec: dict, objs: list[Path]) -> Bound:
    """The bound of the firmware's stack from its objects' call graphs; refuses, before the link, a stack the bound
    and its margin do not fit (stack_bound.check_stack)."""
    ci = [o.with_suffix(".ci") for o in objs]
    missing = [c.name for c in ci if not c.exists()]
    if missing:
        raise BuildError(f"{spec['cc']} wrote no call graph ({missing[0]}): the firmware's worst-case stack needs "
                         f"GCC 10 or later (-fcallgraph-info)")
    return spec_bound(spec, ci, board)
