"""The firmware's worst-case stack, from GCC's own call graph (``-fcallgraph-info=su``).

Every source of a firmware is compiled with ``-fstack-usage -fcallgraph-info=su``: GCC writes, next to each
object, a ``.su`` file (each function's frame) and a ``.ci`` file (VCG text: each function of the unit with its
frame, "N bytes (static)" / "(dynamic)" / "(dynamic,bounded)", and its call edges). This module reads the
``.ci`` files, joins the units into one call graph by symbol name (a ``static`` function's node is named
"file:name", so two units' statics never meet) and takes the longest path:

1. the main stack: the deepest chain from each entry (``Reset_Handler`` on Arm, ``_start`` on RISC-V);
2. plus, since an interrupt can come on top of any frame, the deepest chain of the handlers that return
   (Arm: SysTick and the unused handlers) and the exception frame the core pushes for it (Cortex-M: 32 B, 104 B
   with the FP context; RISC-V: none, the trap saves nothing on the stack);
3. the fault handlers that restart the stack at its top (``mcud_fault_handler``, ``mcud_trap_entry``) are
   chains of their own that must fit alone.

The bound is checked against the board's ``stack_bytes`` with ``MARGIN`` to spare, before the link; its largest
frame sizes the guard below the stack (``guard_bytes``).

A function GCC cannot bound is refused in one sentence naming it: recursion, a ``dynamic`` frame (a VLA or
alloca: "dynamic,bounded" is a frame GCC bounded itself and counts as its size), and a call through a pointer
that ``INDIRECT`` does not resolve. The runtime calls through pointers on purpose (the streamed-input callback
of ``mcud_read_input``, the two-core ring's stage functions): ``INDIRECT`` gives their targets by file and name,
as data. Calls made in ``asm`` (a naked handler's ``b``) are not in GCC's graph: ``ASM_CALLS`` adds them, and a
call to an entry (a reset) starts the stack again rather than adding to it. A second core's entry
(``mcud_dual_core1_reset``, ``mcud_cores_core1_reset``) is a chain of its own, as the fault handlers are.

A function no unit defines is the C library's or libgcc's (memcpy, ``__aeabi_*``, soft float): its stack is
``LIBRARY`` of the toolchain, measured from the linked firmware (see ``library_frames``), and a library
function missing from the table is refused, so a new one is measured before it is trusted.
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from mcudeploy.errors import MCUDeployError

INDIRECT_NODE = "__indirect_call"
# the file of a caller (GCC may inline the static helper that makes the call) -> (file, name pattern) of every function
# it may call through a pointer: what the runtime's tables hold. kernels/stream.c: p->read is the model's
# <name>_read_input (model.c, or the firmware's main.c); runtime/dual.c: the two-core config of dual.c.j2 (rendered
# into main.c) holds its pack functions and each stage's <name>_run (model.c); runtime/cores.c: cores.c.j2's run_core
# (main.c), which calls the model's <name>_run_core.
INDIRECT: dict[str, tuple[tuple[str, str], ...]] = {
    "stream.c": (("model.c", r".+_read_input"), ("main.c", r".+_read_input")),
    "dual.c": (("main.c", r"pack_inputs|pack_sent|unpack|pack_outputs"), ("model.c", r".+_run")),
    "cores.c": (("main.c", r"run_core"),),
}
# caller -> callees a naked function reaches in asm (startup.c, startup_riscv.c)
ASM_CALLS = {"mcud_fault_handler": ("mcud_fault_report",), "mcud_trap_entry": ("mcud_fault_report",),
             "_start": ("mcud_reset",)}
ENTRIES = ("Reset_Handler", "_start")  # the main stack's first frame, by arch
# handlers that return to what they interrupted (startup.c: the weak aliases and the timer's tick)
HANDLERS = ("mcud_unused_handler", "SysTick_Handler")
# roots with a stack of their own, whose chain need only fit alone: the fault handlers restart the stack at its top,
# and a second core (runtime/dual.c, runtime/cores.c) has a stack of stack_bytes too (target/dual_firmware.py,
# firmware/cores.c.j2)
RESTARTING = ("mcud_fault_handler", "mcud_trap_entry", "mcud_dual_core1_reset", "mcud_cores_core1_reset")
EXCEPTION_FRAME = {"arm": 32, "arm-fp": 104, "riscv": 0}
MARGIN = 64  # bytes the stack keeps beyond the bound, for what GCC's graph does not see (asm's own pushes)

# Stack of the library functions a firmware calls, by toolchain and function, in bytes: the deepest of each
# function's own pushes and ``sub sp`` and those of the library functions it calls, read by ``library_frames``
# from `objdump -d` of a firmware linked with every library function its units call kept (-Wl,-u): the most over
# the multilibs of qemu-m3, -m4, -m7, -m55, -an521-core, -m0, pico, pico2, nano33ble, microbit, microbit-v2
# (arm-none-eabi-gcc 12.2.rel1, newlib: ARMv6-M's libgcc takes the most), qemu-rv32 and hifive1-revb
# (riscv64-unknown-elf-gcc 12.2, picolibc), rounded up to 8 bytes plus 8 spare. benchmarks/stack_allowance.py
# measures them again (after a toolchain update, or when a build names a library function missing here).
LIBRARY: dict[str, dict[str, int]] = {
    "arm-none-eabi-gcc": {
        "__aeabi_d2f": 40, "__aeabi_dadd": 56, "__aeabi_ddiv": 72, "__aeabi_dmul": 72, "__aeabi_f2d": 24,
        "__aeabi_f2iz": 8, "__aeabi_fadd": 32, "__aeabi_fcmpeq": 32, "__aeabi_fcmpge": 32, "__aeabi_fcmpgt": 32,
        "__aeabi_fcmple": 32, "__aeabi_fcmplt": 32, "__aeabi_fdiv": 40, "__aeabi_fmul": 40, "__aeabi_fsub": 32,
        "__aeabi_i2f": 24, "__aeabi_idiv": 16, "__aeabi_idivmod": 8, "__aeabi_l2f": 96, "__aeabi_ldivmod": 120,
        "__aeabi_lmul": 40, "__aeabi_ui2f": 24, "__aeabi_uidiv": 16, "__aeabi_uldivmod": 96, "__clzsi2": 8, "ceilf": 56,
        "cosf": 560, "erff": 104, "exp": 152, "expf": 88, "expm1f": 88, "floor": 96, "floorf": 56, "fmodf": 80,
        "logf": 96, "lrintf": 56, "lroundf": 16, "memcpy": 32, "memmove": 32, "memset": 32, "powf": 144, "rintf": 56,
        "sinf": 560, "sqrtf": 80, "strlen": 16, "tanhf": 104},
    "riscv64-unknown-elf-gcc": {
        "__adddf3": 40, "__addsf3": 24, "__clzsi2": 8, "__divdf3": 56, "__divdi3": 8, "__divsf3": 40, "__eqsf2": 8,
        "__extendsfdf2": 24, "__fixsfsi": 8, "__floatdisf": 40, "__floatsisf": 24, "__floatunsisf": 24, "__gesf2": 8,
        "__gtsf2": 8, "__lesf2": 8, "__ltsf2": 8, "__moddi3": 8, "__muldf3": 56, "__mulsf3": 40, "__nesf2": 8,
        "__subsf3": 24, "__truncdfsf2": 8, "__udivdi3": 8, "ceilf": 24, "cosf": 488, "erff": 72, "exp": 72, "expf": 72,
        "expm1f": 88, "floor": 40, "floorf": 24, "fmodf": 56, "logf": 72, "lrintf": 40, "lroundf": 8, "memcpy": 8,
        "memmove": 8, "memset": 8, "powf": 88, "rintf": 88, "sinf": 488, "sqrtf": 72, "strlen": 8, "tanhf": 104},
}


@dataclass(frozen=True)
class Function:
    name: str  # the node's title: "name", or "file:name" for a static function
    label: str  # the function's own name, for people
    frame: Optional[int]  # bytes; None: declared only (a library function, or another unit's)
    dynamic: bool = False  # an unbounded frame
    calls: tuple[str, ...] = ()
    file: str = ""  # the source's name (model.c), for INDIRECT


@dataclass(frozen=True)
class Bound:
    """The worst case of a firmware's stack, and the paths that make it."""
    bytes: int  # main chain + the deepest returning handler + the exception frame
    path: tuple[str, ...]  # the main stack's deepest chain, entry first
    handler_path: tuple[str, ...] = ()
    largest_frame: int = 0  # the largest single frame of every reachable function
    largest: str = ""
    exception_frame: int = 0
    library: tuple[str, ...] = field(default=())  # the library functions reached, counted from LIBRARY

    def path_text(self, top: int = 4) -> str:
        """"main -> mcud_model_run -> op_3 -> mcud_conv_s8_fast": the main path without its start-up frames."""
        path = list(self.path)
        if "main" in path:
            path = path[path.index("main"):]
        return " -> ".join(path if len(path) <= top else path[:1] + ["…"] + path[-(top - 1):])

    def as_dict(self) -> dict:
        return {"worst_case": self.bytes, "path": list(self.path), "handler_path": list(self.handler_path),
                "exception_frame": self.exception_frame, "largest_frame": self.largest_frame,
                "largest_frame_function": self.largest}


_NODE = re.compile(r'node:\s*\{\s*title:\s*"([^"]*)"\s*label:\s*"([^"]*)"')
_EDGE = re.compile(r'edge:\s*\{\s*sourcename:\s*"([^"]*)"\s*targetname:\s*"([^"]*)"')
_FRAME = re.compile(r"(\d+) bytes \(([a-z,]+)\)")


def parse_ci(text: str) -> dict[str, Function]:
    """The functions of one ``.ci`` file (GCC's -fcallgraph-info=su), by node title."""
    nodes: dict[str, Function] = {}
    calls: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = _NODE.search(line)
        if m:
            title, label = m.groups()
            size = _FRAME.search(label)
            name = label.split("\\n")[0] if size else title  # a declaration: its symbol (memcpy, not __builtin_memcpy)
            frame = int(size.group(1)) if size else None
            dynamic = bool(size) and size.group(2) == "dynamic"
            where = label.split("\\n")[1].split(":")[0] if "\\n" in label else ""
            old = nodes.get(title)
            if old is None or old.frame is None:
                nodes[title] = Function(title, name, frame, dynamic, (), Path(where).name)
            continue
        m = _EDGE.search(line)
        if m:
            calls.setdefault(m.group(1), []).append(m.group(2))
    return {t: dataclasses.replace(f, calls=tuple(dict.fromkeys(calls.get(t, ())))) for t, f in nodes.items()}


def parse_su(text: str) -> dict[str, tuple[int, str]]:
    """(bytes, qualifier) of every function of one ``.su`` file (-fstack-usage), by name."""
    out = {}
    for line in text.splitlines():
        parts = line.rsplit("\t", 2)
        if len(parts) == 3:
            out[parts[0].rsplit(":", 1)[-1]] = (int(parts[1]), parts[2].strip())
    return out


def call_graph(units: Iterable[dict[str, Function]]) -> dict[str, Function]:
    """One graph of every unit's functions: a defined function wins over another unit's declaration of it."""
    graph: dict[str, Function] = {}
    for unit in units:
        for title, f in unit.items():
            if f.frame is not None or title not in graph:
                graph[title] = f
    return graph


def _resolve(graph: dict[str, Function], f: Function) -> tuple[str, ...]:
    """``f``'s callees, its pointer calls resolved (INDIRECT) and its asm calls added (ASM_CALLS)."""
    out = []
    for callee in f.calls + ASM_CALLS.get(f.label, ()):
        if callee in ENTRIES:  # a restart (arch_riscv.c's mcud_sys_reset jumps to _start): the stack starts again
            continue
        if callee != INDIRECT_NODE:
            known = graph.get(callee)
            if known is None or known.frame is None:  # a weak definition is titled "file:name": every one counts
                weak = [t for t, g in graph.items() if g.label == callee and g.frame is not None]
                out += weak or [callee]
            else:
                out.append(callee)
            continue
        targets = INDIRECT.get(f.file)
        if targets is None:
            raise MCUDeployError(f"function {f.label} calls through a pointer the firmware's call graph cannot "
                                 f"resolve, so its worst-case stack is unknown (mcudeploy/device/stack_bound.py "
                                 f"INDIRECT names the targets of the calls it knows)")
        out += sorted(t for t, g in graph.items() if g.frame is not None and g.label != f.label
                      and any(g.file == file and re.fullmatch(name, g.label) for file, name in targets))
    return tuple(out)


def deepest(graph: dict[str, Function], root: str, library: dict[str, int]) -> tuple[int, tuple[str, ...], set]:
    """(bytes, path of labels, library functions reached) of the deepest chain from ``root``; refuses recursion,
    a dynamic frame, an unresolved pointer call and a library function ``library`` does not know."""
    memo: dict[str, tuple[int, tuple[str, ...]]] = {}
    reached: set = set()
    on_path: list[str] = []

    def visit(title: str) -> tuple[int, tuple[str, ...]]:
        if title in memo:
            return memo[title]
        f = graph.get(title)
        if f is None or f.frame is None:
            name = f.label if f else title
            if name not in library:
                raise MCUDeployError(f"function {name} has no known stack: no unit of the firmware defines it and "
                                     f"the toolchain's library allowance (stack_bound.LIBRARY) does not list it")
            reached.add(name)
            memo[title] = (library[name], (name,))
            return memo[title]
        if f.dynamic:
            raise MCUDeployError(f"function {f.label} has a dynamic stack frame (a variable-length array or alloca), "
                                 f"so the firmware's worst-case stack is unknown")
        if title in on_path:
            cycle = [graph[t].label for t in on_path[on_path.index(title):]] + [f.label]
            raise MCUDeployError(f"function {f.label} is recursive ({' -> '.join(cycle)}), so the firmware's "
                                 f"worst-case stack is unknown")
        on_path.append(title)
        best = (0, ())
        for callee in _resolve(graph, f):
            best = max(best, visit(callee), key=lambda b: b[0])
        on_path.pop()
        memo[title] = (f.frame + best[0], (f.label,) + best[1])
        return memo[title]

    total, path = visit(root)
    return total, path, reached


def bound(graph: dict[str, Function], library: dict[str, int], exception_frame: int) -> Bound:
    """The worst case of ``graph``'s stack: the main chain, the deepest returning handler on it and the exception
    frame; a restarting handler's own chain counts when it is deeper than that sum."""
    by_label = {f.label: t for t, f in graph.items() if f.frame is not None}
    entries = [by_label[e] for e in ENTRIES if e in by_label]
    if not entries:
        raise MCUDeployError(f"the firmware's call graph has no entry point ({' or '.join(ENTRIES)})")
    main, main_path, reached = max((deepest(graph, e, library) for e in entries), key=lambda d: d[0])
    handler, handler_path = 0, ()
    for h in HANDLERS:
        if h in by_label:
            n, p, r = deepest(graph, by_label[h], library)
            reached |= r
            if n > handler:
                handler, handler_path = n, p
    total = main + handler + exception_frame if handler_path else main
    for h in RESTARTING:
        if h in by_label:
            n, p, r = deepest(graph, by_label[h], library)
            reached |= r
            total = max(total, n)
    on_paths = set(main_path) | set(handler_path) | _reachable(graph, entries)
    frames = [(f.frame, f.label) for t, f in graph.items() if f.frame is not None and f.label in on_paths]
    largest, largest_name = max(frames + [(library[n], n) for n in reached], default=(0, ""))
    return Bound(total, main_path, handler_path, largest, largest_name, exception_frame if handler_path else 0,
                 tuple(sorted(reached)))


def _reachable(graph: dict[str, Function], roots: list[str]) -> set:
    """The labels of every defined function reachable from ``roots``."""
    seen, todo = set(), list(roots)
    while todo:
        t = todo.pop()
        if t in seen or t not in graph or graph[t].frame is None:
            continue
        seen.add(t)
        todo += _resolve(graph, graph[t])
    return {graph[t].label for t in seen}


def firmware_bound(ci_files: Iterable[Path], toolchain: str, fp_context: bool, arch: str = "arm") -> Bound:
    """The bound of a firmware whose objects' ``.ci`` files are ``ci_files``."""
    graph = call_graph(parse_ci(Path(p).read_text()) for p in ci_files)
    frame = EXCEPTION_FRAME["arm-fp" if arch == "arm" and fp_context else arch]
    return bound(graph, LIBRARY.get(toolchain, {}), frame)


# Cores whose stack limit register (MSPLIM) catches a frame of any size: their guard stays the smallest
MSPLIM_CORES = ("cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85")
# ARMv6-M cores without an MPU (the nRF51's Cortex-M0): nothing enforces a guard there, so it stays the smallest and
# the stack is only as safe as the bound the build checks
NO_MPU_CORES = ("cortex-m0", "cortex-m0plus", "cortex-m1")
SMALLEST_GUARD = 32  # bytes: ARMv7-M's smallest MPU region (and a PMP NAPOT region's, with room to spare)


def guard_bytes(found: Bound, core: str) -> int:
    """The guard below the stack (link.ld's __mcud_stack_guard_bytes): a power of two, at least the largest frame and
    the exception frame, since an MPU or PMP region catches a frame only if it opens inside it; the smallest where
    MSPLIM catches any."""
    if core in MSPLIM_CORES or core in NO_MPU_CORES:
        return SMALLEST_GUARD
    need = max(SMALLEST_GUARD, found.largest_frame, found.exception_frame)
    return 1 << (need - 1).bit_length()


def spec_bound(spec: dict, ci_files: Iterable[Path], board) -> Bound:
    """The bound of the firmware a build spec (build.firmware_build_spec) compiled into ``ci_files``, checked against
    ``board``'s stack before the link (check_stack): the direct build and PlatformIO's share it."""
    fp = any(f in ("-mfloat-abi=hard", "-mfloat-abi=softfp") for f in spec["cflags"])
    found = firmware_bound(ci_files, spec["cc"], fp, board.arch)
    check_stack(found, board.stack_bytes, board.name)
    return found


def with_guard(spec: dict, found: Bound, core: str) -> dict:
    """``spec`` linking the guard below the stack at guard_bytes: on top of the board's stack_bytes rather than out of
    it, so the board's figure stays the usable stack the bound was checked against. The stack sits at the bottom of
    RAM (link.ld): the region's origin aligns the guard without padding, and past the guard an overflow leaves RAM
    instead of reaching the arena."""
    flag = "-Wl,--defsym=__mcud_stack_guard_bytes="
    kept = [f for f in spec["ldflags"] if not f.startswith(flag)]
    return {**spec, "ldflags": kept + [f"{flag}{guard_bytes(found, core)}"]}


def check_stack(found: Bound, stack_bytes: int, board: str, margin: int = MARGIN) -> None:
    """Refuse, in one sentence giving both figures and the deepest path, a stack smaller than the bound and margin."""
    if found.bytes + margin > stack_bytes:
        over = "more than" if found.bytes > stack_bytes else f"with its margin of {margin} B more than"
        raise MCUDeployError(f"the firmware's worst-case stack is {found.bytes:,} B ({found.path_text()}), {over} "
                             f"board {board}'s stack of {stack_bytes:,} B: give the board file a larger stack_bytes")


# --------------------------------------------------------------------------- measuring the library's stack

_PUSH = re.compile(r"\b(push|stmdb\s+sp!,|vpush)\s*\{([^}]*)\}")
_SUB_SP = re.compile(r"\bsub(?:\.w|w)?\s+sp,\s*(?:sp,\s*)?#(\d+)")
_RV_ADDI = re.compile(r"\badd(?:i)?\s+sp,\s*sp,\s*-(\d+)")  # objdump prints c.addi16sp as "add sp,sp,-N"
_CALL = re.compile(r"\s(?:bl|blx|b|b\.w|jal|jalr|j|call|tail)\s+(?:[a-z0-9]+,)?[0-9a-f]+\s+<([^>+]+)>")


def _registers(regs: str) -> int:
    n = 0
    for part in regs.split(","):
        part = part.strip()
        m = re.fullmatch(r"([a-z]+)(\d+)-[a-z]+(\d+)", part)
        if m:
            width = 8 if m.group(1) == "d" else 4
            n += (int(m.group(3)) - int(m.group(2)) + 1) * width
        elif part:
            n += 8 if part.startswith("d") else 4
    return n


def library_frames(elf: Path, objdump: str, names: Iterable[str]) -> dict[str, int]:
    """The stack of each of ``names`` in the linked ``elf``: the sum of its pushes and ``sub sp``/``addi sp, -N``
    (a function that pushes twice counts both), plus the deepest library function it calls; how LIBRARY was
    measured (benchmarks/stack_allowance.py prints it for a firmware)."""
    text = subprocess.run([objdump, "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    symbols = subprocess.run([objdump, "-t", str(elf)], capture_output=True, text=True, check=True).stdout
    own: dict[str, int] = {}
    calls: dict[str, set] = {}
    at: dict[int, str] = {}  # address -> the name objdump labels it with (one of its aliases)
    current = None
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]+) <([^>]+)>:", line)
        if m:
            current = m.group(2)
            at[int(m.group(1), 16)] = current
            own[current], calls[current] = 0, set()
            continue
        if current is None:
            continue
        p = _PUSH.search(line)
        if p:
            own[current] += _registers(p.group(2))
        s = _SUB_SP.search(line) or _RV_ADDI.search(line)
        if s:
            own[current] += int(s.group(1))
        c = _CALL.search(line)
        if c and c.group(1) != current:
            calls[current].add(c.group(1))
    alias: dict[str, str] = {}  # an alias (__aeabi_fadd, cosf) -> the name objdump gave its address
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) >= 2 and re.fullmatch(r"[0-9a-f]{8,16}", parts[0]):
            addr = int(parts[0], 16) & ~1  # a Thumb function's address has its low bit set
            if addr in at:
                alias[parts[-1]] = at[addr]
    memo: dict[str, int] = {}

    def depth(name: str, seen: tuple = ()) -> int:
        name = alias.get(name, name)
        if name in memo:
            return memo[name]
        if name in seen or name not in own:
            return 0
        memo[name] = own[name] + max((depth(c, seen + (name,)) for c in calls[name]), default=0)
        return memo[name]
    return {n: depth(n) for n in names if alias.get(n, n) in own}
