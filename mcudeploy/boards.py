"""Boards are data: ``boards/NAME.json``, checked once against ``boards/board.schema.json`` (which
documents every field) and turned into a ``Board``; every other module asks the Board, never the
file. A field that is missing or wrong is named in one sentence."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Optional

from mcudeploy.clocks import ClockTree, check_claims, parse_clock_tree
from mcudeploy.errors import MCUDeployError
from mcudeploy.resources import boards_dir
from mcudeploy.schema import problems

SCHEMA = "board.schema.json"
KINDS = ("host", "qemu", "hardware")
DEFAULT_STACK_BYTES = 8192


@dataclass(frozen=True)
class Region:
    name: str
    size: int
    origin: int = 0
    excluded: bool = False  # not usable for the arena (e.g. not modelled by the emulator)
    reserved: int = 0  # bytes kept from the arena beyond the stack
    section: Optional[str] = None  # the linker section that puts an arena here (regions after the first)
    dma: bool = True  # may hold the model's inputs and outputs
    speed: Optional["Speed"] = None  # a slow memory: what moving bytes to and from it costs; None: fast


@dataclass(frozen=True)
class Speed:
    """Copies between a slow region and the first region, in ticks of the board's timer."""

    read_bytes_per_tick: float  # slow -> first region
    write_bytes_per_tick: float  # first region -> slow
    latency_ticks: float  # per transfer
    modelled: bool  # a model (the emulator runs the memory at full speed), not a measurement

    def copy_ticks(self, nbytes: int, out: bool) -> float:
        """Ticks of one copy of ``nbytes`` out to this region (out) or back from it."""
        return self.latency_ticks + nbytes / (self.write_bytes_per_tick if out else self.read_bytes_per_tick)


@dataclass(frozen=True)
class RegWrite:
    """*addr = (*addr & ~clear) | set, done before the UART starts (clock enables, pins)."""
    addr: int
    clear: int
    set: int
    what: str = ""
    wait: int = 0  # then read until (*addr & wait) == wait (bounded): a reset released, an oscillator stable


@dataclass(frozen=True)
class Uart:
    driver: str  # firmware/runtime/uart_<driver>.c
    base: int
    baud: int
    clock_hz: int  # the UART's kernel clock (0: not known)
    lpuart: bool = False
    irq: int = -1  # the receive interrupt the measurer sleeps on between frames (-1: it polls)
    init: tuple[RegWrite, ...] = ()
    reg_shift: int = 2  # ns16550: log2 of the register spacing in bytes


@dataclass(frozen=True)
class LinkPort:
    """A UART to a neighbouring chip of a chain (the board's uart driver serves it)."""
    base: int
    irq: int = -1
    qemu_serial: int = -1  # emulated boards: QEMU's -serial index of this UART
    what: str = ""
    init: tuple[RegWrite, ...] = ()


@dataclass(frozen=True)
class Links:
    """The board's ports to the chips before (``up``) and after (``down``) it in a chain."""
    up: LinkPort
    down: LinkPort
    baud: int
    clock_hz: int = 0
    note: str = ""


@dataclass(frozen=True)
class Timer:
    driver: str  # firmware/runtime/timer_<driver>.c
    hz: int


@dataclass(frozen=True)
class DmaEngine:
    """A DMA engine the firmware copies with: firmware/runtime/dma_<driver>.c at ``base``."""
    driver: str
    base: int
    channels: int = 1
    reaches: tuple[str, ...] = ()  # the regions it copies between, at their origins (default: every region)


@dataclass(frozen=True)
class Cores:
    """The cores of one chip that share its memory, for one inference on all of them (mcudeploy/cores):
    firmware/runtime/cores.c starts the others with the ``driver``'s registers at ``base``; a core that
    does not reach a barrier within ``stall_timeout_ms`` is an error."""
    count: int
    driver: str
    base: int
    stall_timeout_ms: float = 1000.0


@dataclass(frozen=True)
class Qemu:
    machine: str
    icount_shift: int = 0
    extra_args: tuple[str, ...] = ()
    binary: str = "qemu-system-arm"
    package: str = "qemu-system-arm"  # the Debian package that installs binary


@dataclass(frozen=True)
class Toolchain:
    """The firmware's cross compiler: the GCC driver, the Debian packages that install it, its link flags."""
    cc: str
    packages: str
    cflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()


ARM_TOOLCHAIN = Toolchain("arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi", (),
                          ("-nostartfiles", "--specs=nano.specs"))


@dataclass(frozen=True)
class Upload:
    protocol: str
    protocols: tuple[str, ...]
    openocd_target: str = ""
    port: str = ""
    uf2_family: int = 0  # not 0: flash also writes firmware.uf2 (this UF2 family ID) for the board's boot drive
    uf2_drive: str = ""  # the name of that drive
    jlink_device: str = ""  # JLinkExe's -device


@dataclass(frozen=True)
class HostBuild:
    cc: str
    cflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()


@dataclass(frozen=True)
class FlashData:
    """How the core reads constants (the weights) from flash, for the cycle estimate: the flash's read width
    and the data cache that keeps what was read, from the reference manual ``source`` names."""
    read_bytes: int
    cache_lines: int
    line_bytes: int
    source: str
    wait_states: Optional[int] = None  # a board without a clock_tree: the flash wait states at its reset clock


@dataclass(frozen=True)
class Xip:
    """Code and constants read in place from a serial flash, for the cycle estimate (board.schema.json's ``xip``):
    the instruction cache in front of the code, and the cost of a read over the serial interface, in serial
    clocks of ``sck_cycles`` core cycles each, from the sources ``source`` names."""
    icache_sets: int
    icache_ways: int
    line_bytes: int
    sck_cycles: int  # as the firmware runs the interface: the estimate
    fastest_sck_cycles: int  # at its fastest setting: the range's low end
    command_sck: int  # a read command before its data
    byte_sck: int  # a byte of data
    source: str
    assumed: str  # what the figures take for granted, unchecked: printed with every estimate
    unified: bool = False  # the weights go through the cache too (the RP2040's XIP cache); False: no cache for them
    merge: bool = True  # an access at the byte after the previous one's last continues the open read
    frame_bytes: int = 0  # the range's high end: a read command for every frame of this many bytes (0: per access)

    @property
    def icache_bytes(self) -> int:
        return self.icache_sets * self.icache_ways * self.line_bytes


MVE_CPUS = ("cortex-m55", "cortex-m85")  # -mcpu names whose default has Helium (the M-profile vector extension)


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    kind: str
    core: str
    alignment: int
    regions: tuple[Region, ...]
    flash_bytes: int
    clock_hz: int = 0
    family: str = ""
    mcu: str = ""
    vendor: str = ""
    url: str = ""
    cpu_flags: tuple[str, ...] = ()
    flash_origin: int = 0
    stack_bytes: int = 0  # reserved in the first usable region (firmware boards: 8192 unless given)
    uart: Optional[Uart] = None
    timer: Optional[Timer] = None
    qemu: Optional[Qemu] = None
    upload: Optional[Upload] = None
    platformio_board: str = ""  # the board's name in PlatformIO's own platform (real boards)
    build: Optional[HostBuild] = None
    alias_of: Optional[str] = None
    dma_engine: Optional[DmaEngine] = None  # None: mcud_dma_copy_start copies with memcpy
    clock_tree: Optional[ClockTree] = None  # None: the firmware runs at the reset clock
    links: Optional[Links] = None  # None: the board cannot be a chip of a chain with links of its own
    boot_origin: Optional[int] = None  # the vector table's address when not flash_origin (an ITCM the core boots from)
    flash_data: Optional[FlashData] = None  # None: the estimate charges reads of weights from flash as SRAM's
    xip: Optional[Xip] = None  # code and weights read in place from a serial flash (the estimate's cost of them)
    core_timings: str = ""  # the estimate's timings (estimate/cores.py) where core names only an instruction set
    arch: str = "arm"  # the runtime's start-up and system files, the linker script (board.schema.json's arch)
    toolchain: Toolchain = ARM_TOOLCHAIN
    silicon: bool = True  # False: built from the data sheet, not yet run on the chip
    datasheet: str = ""
    notes: tuple[str, ...] = ()
    boot_block: str = ""  # firmware/runtime/boot_<boot_block>.c, right after the vector table ("" none)
    cores: Optional[Cores] = None  # None: one core runs the firmware (others, if any, wait)

    @property
    def sram_bytes(self) -> int:
        """Every RAM region's bytes together: only for PlatformIO's manifest, whose size check adds up the RAM
        sections of all regions; each region is checked on its own by mcudeploy's fit check and the linker."""
        return sum(r.size for r in self.regions if not r.excluded)

    @property
    def has_firmware(self) -> bool:
        return self.kind in ("qemu", "hardware")

    @property
    def data_cache_on(self) -> bool:
        """Whether the firmware runs with a data cache in front of the weights in flash: its clock tree turns on the
        flash accelerator's (an STM32's ART, DCEN; the STM32U5's ICACHE, which serves data reads on the code bus too)
        or the core's (the Cortex-M7's L1); at the reset clock (no tree)
        every cache is off."""
        tree = self.clock_tree.claimed if self.clock_tree else None
        return bool(tree and (tree.flash_cache or tree.dcache))

    @property
    def features(self) -> frozenset:
        """What the firmware's kernels take a path of their own for on this core, as the C compiler sees it from
        the board's -mcpu: "mve" where it defines __ARM_FEATURE_MVE (firmware/include/mcud_dsp.h's
        MCUD_HAVE_MVE: a Cortex-M55 or M85 without "+nomve"). The host and boards without a -mcpu: none."""
        cpu = next((f[len("-mcpu="):] for f in self.cpu_flags if f.startswith("-mcpu=")), "")
        name, _, extensions = cpu.partition("+")
        mve = name in MVE_CPUS and "nomve" not in extensions.split("+")
        return frozenset({"mve"} if mve else ())


def instructions_per_tick(board: Board, timer_hz: Optional[int] = None) -> float:
    """Guest instructions per timer tick of an emulated board under QEMU -icount (1e9 / hz / 2^shift)."""
    hz = timer_hz or board.timer.hz
    return 1e9 / hz / (1 << board.qemu.icount_shift)


def _cores(entry) -> Optional[Cores]:
    if entry is None:
        return None
    return Cores(int(entry["count"]), entry["driver"], _int(entry["base"]), float(entry.get("stall_timeout_ms", 1000)))


def _int(value) -> int:
    return value if isinstance(value, int) else int(str(value), 0)


@lru_cache(maxsize=1)
def _schema() -> dict:
    path = boards_dir() / SCHEMA
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise MCUDeployError(f"the board schema {path} cannot be read ({exc})") from None


def _load_file(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise MCUDeployError(f"board file {path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if isinstance(data, dict) and "alias_of" in data:
        extra = sorted(set(data) - {"alias_of", "description"})
        if extra or not isinstance(data["alias_of"], str):
            raise MCUDeployError(f"board file {path} is an alias: it holds alias_of and description only")
        return data
    found = problems(data, _schema())
    if found:
        raise MCUDeployError(f"board file {path}: {found[0]}")
    if path.stem != data["name"]:
        raise MCUDeployError(f"board file {path} names the board '{data['name']}' (the file name must match)")
    names = [r["name"] for r in data["regions"]]
    if len(set(names)) != len(names):
        raise MCUDeployError(f"board file {path}: two memory regions share a name")
    _check_arch(path, data)
    unknown = [r for r in (data.get("dma_engine") or {}).get("reaches", ()) if r not in names]
    if unknown:
        raise MCUDeployError(f"board file {path}: field 'dma_engine.reaches' names '{unknown[0]}', which is not one of "
                             f"the board's regions ({', '.join(names)})")
    return data


def _check_arch(path: Path, data: dict) -> None:
    """A board of another instruction set than Arm's names its compiler, and polls its UART (the firmware routes
    no interrupt through a RISC-V PLIC)."""
    arch = data.get("arch", "arm")
    if arch == "arm" or data.get("kind") == "host":
        return
    if "toolchain" not in data:
        raise MCUDeployError(f"board file {path}: arch '{arch}' needs a field 'toolchain' (the Arm compiler is the "
                             f"default)")
    if int((data.get("uart") or {}).get("irq", -1)) >= 0:
        raise MCUDeployError(f"board file {path}: field 'uart.irq' must be -1 on a board of arch '{arch}' (its "
                             f"firmware polls the UART)")


def _board(data: dict) -> Board:
    uart = timer = qemu = upload = build = None
    if "uart" in data:
        u = data["uart"]
        uart = Uart(u["driver"], _int(u["base"]), int(u["baud"]), int(u.get("clock_hz", data.get("clock_hz", 0))),
                    bool(u.get("lpuart", False)), int(u.get("irq", -1)), _writes(u.get("init", ())),
                    int(u.get("reg_shift", 2)))
    links = None
    if "links" in data:
        ln = data["links"]
        links = Links(*(LinkPort(_int(ln[r]["base"]), int(ln[r].get("irq", -1)), int(ln[r].get("qemu_serial", -1)),
                                 ln[r].get("what", ""), _writes(ln[r].get("init", ()))) for r in ("up", "down")),
                      int(ln["baud"]), int(ln.get("clock_hz", 0)), ln.get("note", ""))
    if "timer" in data:
        timer = Timer(data["timer"]["driver"], int(data["timer"]["hz"]))
    dma = None
    if "dma_engine" in data:
        d = data["dma_engine"]
        dma = DmaEngine(d["driver"], _int(d["base"]), int(d.get("channels", 1)),
                        tuple(d.get("reaches", [r["name"] for r in data["regions"]])))
    if "qemu" in data:
        q = data["qemu"]
        qemu = Qemu(q["machine"], int(q.get("icount_shift", 0)), tuple(q.get("extra_args", ())),
                    q.get("binary", "qemu-system-arm"), q.get("package", "qemu-system-arm"))
    if "upload" in data:
        up = data["upload"]
        upload = Upload(up["protocol"], tuple(up.get("protocols", (up["protocol"],))), up.get("openocd_target", ""),
                        up.get("port", ""), int(up.get("uf2_family", "0"), 16), up.get("uf2_drive", ""),
                        up.get("jlink_device", ""))
    if "build" in data:
        b = data["build"]
        build = HostBuild(b["cc"], tuple(b.get("cflags", ())), tuple(b.get("ldflags", ())))
    tree = parse_clock_tree(data["name"], data.get("family", ""), data.get("clock_tree"))
    if tree is not None:
        check_claims(data["name"], tree, int(data.get("clock_hz", 0)), uart.clock_hz if uart else 0,
                     (timer.driver, timer.hz) if timer else None)
    regions = tuple(Region(r["name"], int(r["size"]), _int(r.get("origin", 0)), bool(r.get("excluded", False)),
                           int(r.get("reserved", 0)), r.get("section"), bool(r.get("dma", True)), _speed(r.get("speed")))
                    for r in data["regions"])
    return Board(data["name"], data["description"], data["kind"], data["core"], int(data["alignment"]), regions,
                 int(data["flash_bytes"]), int(data.get("clock_hz", 0)), data.get("family", ""), data.get("mcu", ""),
                 data.get("vendor", ""), data.get("url", ""), tuple(data.get("cpu_flags", ())),
                 _int(data.get("flash_origin", 0)), int(data.get("stack_bytes", _default_stack(data["kind"]))), uart, timer,
                 qemu, upload, (data.get("platformio") or {}).get("board", ""), build, dma_engine=dma,
                 clock_tree=tree, links=links,
                 boot_origin=_int(data["boot_origin"]) if "boot_origin" in data else None,
                 flash_data=_flash_data(data["name"], data.get("flash_data"), tree is not None),
                 xip=_xip(data["name"], data.get("xip")), core_timings=data.get("core_timings", ""),
                 arch=data.get("arch", "arm"), toolchain=_toolchain(data.get("toolchain")),
                 silicon=bool(data.get("silicon", True)), datasheet=data.get("datasheet", ""),
                 notes=tuple(data.get("notes", ())), boot_block=data.get("boot_block", ""),
                 cores=_cores(data.get("cores")))


def _toolchain(data: Optional[dict]) -> Toolchain:
    if data is None:
        return ARM_TOOLCHAIN
    return Toolchain(data["cc"], data["packages"], tuple(data.get("cflags", ())), tuple(data.get("ldflags", ())))


def _flash_data(board: str, data: Optional[dict], has_tree: bool) -> Optional[FlashData]:
    if data is None:
        return None
    ws = data.get("wait_states")
    f = FlashData(int(data["read_bytes"]), int(data["cache_lines"]), int(data["line_bytes"]), data["source"],
                  None if ws is None else int(ws))
    if f.line_bytes & (f.line_bytes - 1) or f.line_bytes % f.read_bytes:
        raise MCUDeployError(f"board {board}: flash_data.line_bytes ({f.line_bytes}) must be a power of two and a "
                             f"multiple of read_bytes ({f.read_bytes})")
    if has_tree and f.wait_states is not None:
        raise MCUDeployError(f"board {board}: flash_data.wait_states is for a board at its reset clock; this board's "
                             f"clock_tree sets its flash wait states (clock_tree.flash_wait_states)")
    return f


def _xip(board: str, data: Optional[dict]) -> Optional[Xip]:
    if data is None:
        return None
    line, ways, size = int(data["line_bytes"]), int(data["icache_ways"]), int(data["icache_bytes"])
    sets = size // (line * ways)
    if line & (line - 1) or sets < 1 or sets & (sets - 1) or sets * line * ways != size:
        raise MCUDeployError(f"board {board}: xip.icache_bytes ({size}) must be a power of two of sets of "
                             f"xip.icache_ways ({ways}) lines of xip.line_bytes ({line}), itself a power of two")
    x = Xip(sets, ways, line, int(data["sck_cycles"]), int(data["fastest_sck_cycles"]), int(data["command_sck"]),
            int(data["byte_sck"]), data["source"], data["assumed"], bool(data.get("unified", False)),
            bool(data.get("merge", True)), int(data.get("frame_bytes", 0)))
    if x.frame_bytes and (x.line_bytes % x.frame_bytes or not x.unified):
        raise MCUDeployError(f"board {board}: xip.frame_bytes ({x.frame_bytes}) must divide xip.line_bytes "
                             f"({x.line_bytes}) and be given with xip.unified")
    if x.fastest_sck_cycles > x.sck_cycles:
        raise MCUDeployError(f"board {board}: xip.fastest_sck_cycles ({x.fastest_sck_cycles}) is more than "
                             f"xip.sck_cycles ({x.sck_cycles}): the fastest setting cannot be slower")
    return x


def _writes(items) -> tuple[RegWrite, ...]:
    return tuple(RegWrite(_int(w["reg"]), _int(w.get("clear", 0)), _int(w.get("set", 0)), w.get("what", ""),
                           _int(w.get("wait", 0))) for w in items)


def _speed(data: Optional[dict]) -> Optional[Speed]:
    if data is None:
        return None
    return Speed(float(data["read_bytes_per_tick"]), float(data["write_bytes_per_tick"]), float(data["latency_ticks"]),
                 bool(data["modelled"]))


def _default_stack(kind: str) -> int:
    """A firmware's stack when the file gives none; the host's program has a stack of its own."""
    return 0 if kind == "host" else DEFAULT_STACK_BYTES


def board_names(directory: Optional[Path] = None) -> list[str]:
    directory = directory or boards_dir()
    return sorted(p.stem for p in directory.glob("*.json") if not p.name.endswith(".schema.json"))


def load_board(name: str, directory: Optional[Path] = None) -> Board:
    directory = directory or boards_dir()
    path = directory / f"{name}.json"
    if name.endswith(".schema") or not path.is_file():
        systems = sorted(p.stem for p in (directory / "systems").glob("*.json"))  # stages/system.py's folder
        also = f"; systems of several cores or chips: {', '.join(systems)}" if systems else ""
        raise MCUDeployError(f"unknown board '{name}'; known boards: {', '.join(board_names(directory))}{also}")
    data = _load_file(path)
    if "alias_of" in data:
        target = load_board(data["alias_of"], directory)
        return replace(target, alias_of=target.name, name=name)
    return _board(data)


def all_boards(directory: Optional[Path] = None) -> list[Board]:
    return [load_board(n, directory) for n in board_names(directory)]
