"""A real board's clock tree (``clock_tree`` in boards/NAME.json): checked against its chip family's
limits from the reference manual, its frequencies derived, and its register values prepared for the
start-up template (templates/firmware/clock_<family>.c.j2).

The limits below are the reference manuals' (VDD 2.7-3.6 V, as on every Nucleo board): their flash
wait-state tables, PLL and voltage-scaling sections, for RM0390 (STM32F446), RM0385 (STM32F74x),
RM0433 (STM32H743, rev Y and V), RM0455 (STM32H7A3), RM0432 (STM32L4+) and RM0456 (STM32U575). Where a family has
two lines with registers and limits of their own (the STM32H7: RM0433 and RM0455), the board's clock_tree names the
second's manual and the limits are that line's: ``ClockTree.family`` is then the line (``stm32h7a3``). A field that
breaks a limit is refused in one sentence naming the board and the field.

The RM0455 and RM0456 figures were not read from the manuals themselves: they are as ST's public sources give them
(the stm32h7a3xxq.h and stm32u575xx.h device headers, the STM32H7 and STM32U5 HAL and LL drivers) and, for RM0455's
flash and bus tables, as the stm32h7xx-hal crate cites them (RM0455 Table 15); each entry says which.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from mcudeploy.errors import MCUDeployError

MHZ = 1_000_000
AHB_DIVS = (1, 2, 4, 8, 16, 64, 128, 256, 512)
APB_DIVS = (1, 2, 4, 8, 16)

# Per family: the reference manual the limits are from, the oscillators a PLL may take, the PLL's ranges,
# the largest SYSCLK per voltage setting, the bus limits, and the flash: (largest HCLK in Hz, wait states,
# write delay) rows.
_F4_WS = tuple((30 * MHZ * (n + 1), n, 0) for n in range(16))
_F7_WS = tuple((min(30 * MHZ * (n + 1), 216 * MHZ), n, 0) for n in range(16))
_F4 = {  # F446: PLL input 1-2 MHz, VCO 100-432 MHz, PLLP out <= 180 MHz
    "manual": "RM0390", "reset": ("hsi", 16 * MHZ), "sources": {"hsi": 16 * MHZ},
    "m": (2, 63), "n": (50, 432), "p": (2, 4, 6, 8), "q": (2, 15), "r": (2, 7),
    "pll_in": (1 * MHZ, 2 * MHZ), "vco": (100 * MHZ, 432 * MHZ),
    "sysclk_max": {(1, True): 180 * MHZ, (1, False): 168 * MHZ, (2, True): 168 * MHZ,
                   (2, False): 144 * MHZ, (3, False): 120 * MHZ},
    "hclk_max": 180 * MHZ, "apb_max": {"apb1": 45 * MHZ, "apb2": 90 * MHZ},
    "wait_states": {1: _F4_WS, 2: _F4_WS, 3: _F4_WS},
}
LIMITS = {
    "stm32f4": _F4,
    "stm32f7": {**_F4,  # F746: the F4's PLL; SYSCLK 216 MHz with over-drive, APB1 54, APB2 108
                "manual": "RM0385",
                "sysclk_max": {(1, True): 216 * MHZ, (1, False): 180 * MHZ, (2, True): 180 * MHZ,
                               (2, False): 168 * MHZ, (3, False): 144 * MHZ},
                "hclk_max": 216 * MHZ, "apb_max": {"apb1": 54 * MHZ, "apb2": 108 * MHZ},
                "wait_states": {1: _F7_WS, 2: _F7_WS, 3: _F7_WS}},
    "stm32h7": {  # H743: ref clock 1-16 MHz, wide VCO 192-836 MHz (960 on rev V only)
        "manual": "RM0433", "reset": ("hsi", 64 * MHZ), "sources": {"hsi": 64 * MHZ},
        "m": (1, 63), "n": (4, 512), "p": tuple(range(2, 129, 2)), "q": (1, 128), "r": (1, 128),
        "pll_in": (1 * MHZ, 16 * MHZ), "vco": (192 * MHZ, 836 * MHZ),
        "sysclk_max": {(1, False): 400 * MHZ, (2, False): 300 * MHZ, (3, False): 200 * MHZ},
        "hclk_max": 200 * MHZ, "apb_max": {"apb1": 100 * MHZ, "apb2": 100 * MHZ, "apb3": 100 * MHZ,
                                          "apb4": 100 * MHZ},
        "wait_states": {
            1: ((70 * MHZ, 0, 0), (140 * MHZ, 1, 1), (185 * MHZ, 2, 1), (210 * MHZ, 2, 2), (225 * MHZ, 3, 2)),
            2: ((55 * MHZ, 0, 0), (110 * MHZ, 1, 1), (165 * MHZ, 2, 1), (220 * MHZ, 2, 2), (225 * MHZ, 3, 2)),
            3: ((45 * MHZ, 0, 0), (90 * MHZ, 1, 1), (135 * MHZ, 2, 1), (180 * MHZ, 2, 2), (225 * MHZ, 3, 2)),
            0: ((70 * MHZ, 0, 0), (140 * MHZ, 1, 1), (185 * MHZ, 2, 1), (210 * MHZ, 2, 2), (225 * MHZ, 3, 2),
                (240 * MHZ, 4, 2)),
        },
        # VOS0 (SYSCFG_PWRCR.ODEN over VOS1), revision V silicon only: VCO to 960 MHz, 480/240/120 MHz
        "vos0": {"rev_ids": (0x2003,), "vco": (192 * MHZ, 960 * MHZ), "sysclk_max": {(0, False): 480 * MHZ},
                 "hclk_max": 240 * MHZ, "apb_max": {bus: 120 * MHZ for bus in ("apb1", "apb2", "apb3", "apb4")}},
    },
    "stm32h7a3": {  # RM0455 (H7A3/B3/B0), family stm32h7
        "manual": "RM0455", "family": "stm32h7", "reset": ("hsi", 64 * MHZ), "sources": {"hsi": 64 * MHZ},
        # DIVM1 1-63, DIVN1 4-512 and even DIVP1 as on RM0433 (stm32h7xx_hal_rcc.h); the wide VCO (PLL1VCOSEL 0)
        # 128-560 MHz from a 2-16 MHz reference (the stm32h7xx-hal crate's rm0455 VCO limits)
        "m": (1, 63), "n": (4, 512), "p": tuple(range(2, 129, 2)), "q": (1, 128), "r": (1, 128),
        "pll_in": (2 * MHZ, 16 * MHZ), "vco": (128 * MHZ, 560 * MHZ),
        # CPU = AHB per VOS, APB half (the crate's rm0455 table); VOS0 is a plain PWR_SRDCR code, no ODEN
        "sysclk_max": {(0, False): 280 * MHZ, (1, False): 225 * MHZ, (2, False): 160 * MHZ, (3, False): 88 * MHZ},
        "hclk_max": 280 * MHZ, "apb_max": {bus: 140 * MHZ for bus in ("apb1", "apb2", "apb3", "apb4")},
        # RM0455 Table 15 (as the crate gives it): (top ACLK, LATENCY, WRHIGHFREQ) per VOS
        "wait_states": {
            0: ((42 * MHZ, 0, 0), (84 * MHZ, 1, 0), (126 * MHZ, 2, 1), (168 * MHZ, 3, 1), (210 * MHZ, 4, 2),
                (252 * MHZ, 5, 2), (280 * MHZ, 6, 3)),
            1: ((38 * MHZ, 0, 0), (76 * MHZ, 1, 0), (114 * MHZ, 2, 1), (152 * MHZ, 3, 1), (190 * MHZ, 4, 2),
                (225 * MHZ, 5, 2)),
            2: ((34 * MHZ, 0, 0), (68 * MHZ, 1, 0), (102 * MHZ, 2, 1), (136 * MHZ, 3, 1), (160 * MHZ, 4, 2)),
            3: ((22 * MHZ, 0, 0), (44 * MHZ, 1, 0), (66 * MHZ, 2, 1), (88 * MHZ, 3, 1)),
        },
    },
    "stm32l4": {  # L4R5: PLL input 2.66-16 MHz, VCO 64-344 MHz, 120 MHz only in range 1 boost
        "manual": "RM0432", "reset": ("msi", 4 * MHZ), "sources": {"hsi": 16 * MHZ},
        "m": (1, 16), "n": (8, 127), "p": tuple(range(2, 32)), "q": (2, 4, 6, 8), "r": (2, 4, 6, 8),
        "pll_in": (2_660_000, 16 * MHZ), "vco": (64 * MHZ, 344 * MHZ),
        "sysclk_max": {(1, True): 120 * MHZ, (1, False): 80 * MHZ, (2, False): 26 * MHZ},
        "hclk_max": 120 * MHZ, "apb_max": {"apb1": 120 * MHZ, "apb2": 120 * MHZ},
        "wait_states": {1: tuple((20 * MHZ * (n + 1), n, 0) for n in range(6)),
                        2: ((8 * MHZ, 0, 0), (16 * MHZ, 1, 0), (26 * MHZ, 2, 0))},
    },
    "stm32u5": {  # RM0456 (U575): SYSCLK from PLL1's R output
        "manual": "RM0456", "reset": ("msis", 4 * MHZ), "sources": {"msis": 4 * MHZ, "hsi": 16 * MHZ},
        # PLL1M 1-16, PLL1N 4-512, PLL1P/Q 1-128, PLL1R 1 or even (stm32u5xx_hal_rcc.h); PLL1 input 4-16 MHz
        # (stm32u5xx_ll_utils.c UTILS_PLLVCO_INPUT_MIN/MAX); VCO 128-544 MHz in ranges 1 and 2 (stm32u5xx_hal_rcc.h)
        "m": (1, 16), "n": (4, 512), "p": (1, 128), "q": (1, 128), "r": (1,) + tuple(range(2, 129, 2)),
        "pll_in": (4 * MHZ, 16 * MHZ), "vco": (128 * MHZ, 544 * MHZ),
        # per range (stm32u5xx_ll_utils.c UTILS_MAX_FREQUENCY_SCALEx); ranges 1 and 2 with the EPOD booster,
        # which the HAL turns on with them (HAL_PWREx_ControlVoltageScaling)
        "sysclk_max": {(1, True): 160 * MHZ, (2, True): 110 * MHZ, (3, False): 55 * MHZ, (4, False): 25 * MHZ},
        "hclk_max": 160 * MHZ, "apb_max": {"apb1": 160 * MHZ, "apb2": 160 * MHZ, "apb3": 160 * MHZ},
        # stm32u5xx_ll_utils.c UTILS_SCALEx_LATENCYy_FREQ (its SCALE1-4: ranges 1-4)
        "wait_states": {
            1: tuple((32 * MHZ * (n + 1), n, 0) for n in range(5)),
            2: ((25 * MHZ, 0, 0), (50 * MHZ, 1, 0), (75 * MHZ, 2, 0), (100 * MHZ, 3, 0), (110 * MHZ, 4, 0)),
            3: ((12_500_000, 0, 0), (25 * MHZ, 1, 0), (37_500_000, 2, 0), (50 * MHZ, 3, 0), (55 * MHZ, 4, 0)),
            4: ((8 * MHZ, 0, 0), (16 * MHZ, 1, 0), (24 * MHZ, 2, 0), (25 * MHZ, 3, 0)),
        },
    },
}
MBOOST_DIVS = (1, 2, 4, 6, 8, 10, 12, 14, 16)  # U5 PLL1MBOOST codes 0-8 (stm32u5xx_hal_rcc.h RCC_PLLMBOOST_DIVx)
EPOD_MAX_HZ = 16 * MHZ  # the EPOD booster's input, PLL1's source / PLL1MBOOST: kept within the PLL input's 16 MHz


@dataclass(frozen=True)
class ClockTree:
    family: str          # the key of LIMITS: the board's family, or its chip line (stm32h7a3)
    source: str          # the PLL's input oscillator
    source_hz: int
    m: int
    n: int
    p: int
    q: int
    r: int
    cpu_div: int         # H7 D1CPRE (1 elsewhere)
    ahb_div: int
    apb_divs: tuple[tuple[str, int], ...]  # (bus, divider), e.g. (("apb1", 4), ("apb2", 2))
    voltage_scale: int   # F4/F7/H7: VOS scale; L4, U5: range
    boost: bool          # F4/F7 over-drive, L4 range 1 boost mode, U5 EPOD booster
    flash_wait_states: int
    flash_write_delay: int  # H7 WRHIGHFREQ
    prefetch: bool
    flash_cache: bool    # F4/L4 ICEN+DCEN, F7 ART accelerator, U5 ICACHE
    icache: bool         # Cortex-M7 L1 caches
    dcache: bool
    uart_bus: str
    reset_hz: int        # the reset clock: core, buses and the UART after a fallback
    vos0: Optional["ClockTree"] = None  # H7: the faster tree revision V silicon runs at VOS0
    rev_id: int = 0      # H7: the DBGMCU_IDCODE REV_ID that selects ``vos0``

    @property
    def claimed(self) -> "ClockTree":
        """The tree whose clocks the board file claims: the VOS0 one when there is one."""
        return self.vos0 or self

    @property
    def manual(self) -> str:
        """The family's reference manual, where the limits it was checked against are."""
        return LIMITS[self.family]["manual"]

    @property
    def pll_in_hz(self) -> float:
        return self.source_hz / self.m

    @property
    def vco_hz(self) -> float:
        return self.pll_in_hz * self.n

    @property
    def sysclk_hz(self) -> float:
        # F4/F7/H7 take SYSCLK from the PLL's P output, the L4 and U5 from its R output
        return self.vco_hz / (self.r if self.family in ("stm32l4", "stm32u5") else self.p)

    @property
    def core_hz(self) -> float:
        return self.sysclk_hz / self.cpu_div

    @property
    def hclk_hz(self) -> float:
        return self.core_hz / self.ahb_div

    def bus_hz(self, bus: str) -> float:
        return self.hclk_hz / dict(self.apb_divs)[bus]

    def frequencies(self) -> dict[str, int]:
        out = {"sysclk": self.sysclk_hz, "core": self.core_hz, "hclk": self.hclk_hz}
        out.update({bus: self.bus_hz(bus) for bus, _ in self.apb_divs})
        return {k: round(v) for k, v in out.items()}


def _fail(board: str, field: str, why: str) -> MCUDeployError:  # field: below clock_tree
    return MCUDeployError(f"board {board}: field 'clock_tree.{field}' {why}")


def parse_clock_tree(board: str, family: str, data: Optional[dict]) -> Optional[ClockTree]:
    """The board file's ``clock_tree`` (already checked against the schema) as a ClockTree, refused in
    one sentence naming the board and the field when the chip cannot run it."""
    if data is None:
        return None
    families = sorted({lim.get("family", key) for key, lim in LIMITS.items()})
    if family not in families:
        raise MCUDeployError(f"board {board}: a clock_tree is known for the families {', '.join(families)}, "
                             f"not '{family}'")
    manual = data.get("manual", LIMITS.get(family, {}).get("manual"))
    lines = [key for key, lim in LIMITS.items() if lim.get("family", key) == family and lim["manual"] == manual]
    if not lines:
        raise _fail(board, "manual", f"is {manual}; the {family} lines known are "
                                     f"{', '.join(lim['manual'] for k, lim in LIMITS.items() if lim.get('family', k) == family)}")
    family = lines[0]
    lim = LIMITS[family]
    pll = data["pll"]
    buses = tuple(sorted((k, int(v)) for k, v in data["apb_divs"].items()))
    if sorted(b for b, _ in buses) != sorted(lim["apb_max"]):
        raise _fail(board, "apb_divs", f"names the buses {', '.join(b for b, _ in buses)}; the {family} has "
                                       f"{', '.join(sorted(lim['apb_max']))}")
    tree = ClockTree(family, data["source"], int(data.get("source_hz", lim["sources"].get(data["source"], 0))),
                     int(pll["m"]), int(pll["n"]), int(pll["p"]), int(pll.get("q", 2)), int(pll.get("r", 2)),
                     int(data.get("cpu_div", 1)), int(data["ahb_div"]), buses, int(data["voltage_scale"]),
                     bool(data.get("boost", False)), int(data["flash_wait_states"]),
                     int(data.get("flash_write_delay", 0)), bool(data.get("prefetch", False)),
                     bool(data.get("flash_cache", False)), bool(data.get("icache", False)),
                     bool(data.get("dcache", False)), data["uart_bus"], int(data["reset_hz"]))
    _check(board, tree, lim)
    if "vos0" in data:
        tree = replace(tree, vos0=_vos0(board, tree, lim, data["vos0"]), rev_id=int(data["vos0"]["rev_id"], 16))
    return tree


def _vos0(board: str, tree: ClockTree, lim: dict, data: dict) -> ClockTree:
    """The VOS0 tree of ``clock_tree.vos0``: the base tree with its PLL factors and flash setting replaced."""
    if "vos0" not in lim:
        raise _fail(board, "vos0", f"is for the STM32H7's VOS0; the {tree.family} has none")
    rev = int(data["rev_id"], 16)
    if rev not in lim["vos0"]["rev_ids"]:
        raise _fail(board, "vos0.rev_id", f"is 0x{rev:04X}; VOS0 exists on revision "
                                          f"{', '.join(f'0x{r:04X}' for r in lim['vos0']['rev_ids'])} only")
    pll = data.get("pll", {})
    fast = replace(tree, n=int(pll.get("n", tree.n)), p=int(pll.get("p", tree.p)), voltage_scale=0,
                   flash_wait_states=int(data["flash_wait_states"]), flash_write_delay=int(data["flash_write_delay"]))
    _check(board, fast, {**lim, **lim["vos0"]}, "vos0.")
    return fast


def _check(board: str, t: ClockTree, lim: dict, where: str = "") -> None:
    def fail(field: str, why: str) -> MCUDeployError:
        return _fail(board, where + field, why)

    if t.source not in lim["sources"]:
        raise fail("source", f"is '{t.source}'; the {t.family} PLL takes {', '.join(lim['sources'])}")
    fixed = lim["sources"][t.source]
    if t.source_hz != fixed:
        raise fail("source_hz", f"is {t.source_hz} Hz, but the {t.source.upper()} oscillator runs at {fixed} Hz")
    if t.reset_hz != lim["reset"][1]:
        raise fail("reset_hz", f"is {t.reset_hz} Hz; the {t.family} starts at {lim['reset'][1]} Hz "
                                       f"({lim['reset'][0].upper()})")
    for name in ("m", "n", "p", "q", "r"):
        allowed, value = lim[name], getattr(t, name)
        ok = allowed[0] <= value <= allowed[1] if len(allowed) == 2 else value in allowed
        if not ok:
            shown = f"{allowed[0]}..{allowed[1]}" if len(allowed) == 2 else ", ".join(map(str, allowed[:8]))
            raise fail(f"pll.{name}", f"is {value}, outside what the {t.family} PLL allows ({shown})")
    for what, value, (low, high) in (("input (source / m)", t.pll_in_hz, lim["pll_in"]),
                                     ("VCO (source / m * n)", t.vco_hz, lim["vco"])):
        if not low <= value <= high:
            raise fail("pll", f"puts the PLL {what} at {value / MHZ:g} MHz, outside the reference "
                                      f"manual's {low / MHZ:g}-{high / MHZ:g} MHz")
    if t.ahb_div not in AHB_DIVS or t.cpu_div not in AHB_DIVS:
        raise fail("ahb_div", f"is {t.ahb_div}; the AHB prescaler divides by {AHB_DIVS}")
    bad = [bus for bus, d in t.apb_divs if d not in APB_DIVS]
    if bad:
        raise fail(f"apb_divs.{bad[0]}", f"is not one of the APB prescaler's {APB_DIVS}")
    key = (t.voltage_scale, t.boost)
    if key not in lim["sysclk_max"]:
        raise fail("voltage_scale", f"is {t.voltage_scale}{' with boost' if t.boost else ''}, "
                                            f"which the {t.family} does not offer")
    if t.core_hz > lim["sysclk_max"][key]:
        raise fail("pll", f"gives a {t.core_hz / MHZ:g} MHz core clock, above the "
                                  f"{lim['sysclk_max'][key] / MHZ:g} MHz of voltage scale {t.voltage_scale}"
                                  f"{' with boost' if t.boost else ''}")
    if t.hclk_hz > lim["hclk_max"]:
        raise fail("ahb_div", f"gives HCLK {t.hclk_hz / MHZ:g} MHz, above the {lim['hclk_max'] / MHZ:g} MHz allowed")
    for bus, _ in t.apb_divs:
        if t.bus_hz(bus) > lim["apb_max"][bus]:
            raise fail(f"apb_divs.{bus}", f"gives {bus.upper()} {t.bus_hz(bus) / MHZ:g} MHz, above its "
                                                  f"{lim['apb_max'][bus] / MHZ:g} MHz")
    ws, delay = flash_setting(t.family, t.voltage_scale, t.hclk_hz)
    if t.flash_wait_states < ws:
        raise fail("flash_wait_states", f"is {t.flash_wait_states}, too few for HCLK {t.hclk_hz / MHZ:g} MHz "
                                                f"at voltage scale {t.voltage_scale} (the reference manual asks {ws})")
    if t.flash_write_delay < delay:
        raise fail("flash_write_delay", f"is {t.flash_write_delay}, too short for HCLK {t.hclk_hz / MHZ:g} "
                                                f"MHz (the reference manual asks {delay})")
    if t.uart_bus not in dict(t.apb_divs):
        raise fail("uart_bus", f"is '{t.uart_bus}', not one of the buses {', '.join(dict(t.apb_divs))}")


def flash_setting(family: str, scale: int, hclk_hz: float) -> tuple[int, int]:
    """(least wait states, least write delay) the flash of ``family`` needs at ``hclk_hz`` and voltage ``scale``;
    (99, 99) when no setting is fast enough."""
    for top, ws, delay in LIMITS[family]["wait_states"].get(scale, ()):
        if hclk_hz <= top:
            return ws, delay
    return 99, 99


def check_claims(board: str, tree: ClockTree, clock_hz: int, uart_hz: int, timer: Optional[tuple[str, int]]) -> None:
    """The board file's other figures (clock_hz, uart.clock_hz, a cycle counter's hz) must be the tree's (its
    VOS0 tree's when it has one: a board on older silicon reports its real clock in IDENTIFY)."""
    tree = tree.claimed
    claims = [("clock_hz", clock_hz, tree.core_hz), ("uart.clock_hz", uart_hz, tree.bus_hz(tree.uart_bus))]
    if timer is not None and timer[0] == "dwt":
        claims.append(("timer.hz", timer[1], tree.core_hz))
    for field, said, derived in claims:
        if said != round(derived):
            raise MCUDeployError(f"board {board}: field '{field}' says {said} Hz but its clock_tree gives "
                                 f"{round(derived)} Hz")


def _ahb_code(div: int) -> int:
    return 0 if div == 1 else 0x8 + AHB_DIVS.index(div) - 1


def _apb_code(div: int) -> int:
    return 0 if div == 1 else 0x4 + APB_DIVS.index(div) - 1


def register_values(tree: ClockTree) -> dict:
    """Field values of the registers the start-up writes, by name, for clock_<family>.c.j2 (all as ints)."""
    t, divs = tree, dict(tree.apb_divs)
    v = {"ahb_code": _ahb_code(t.ahb_div), "cpu_code": _ahb_code(t.cpu_div),
         "apb_codes": {bus: _apb_code(d) for bus, d in divs.items()}, "m": t.m, "n": t.n, "p": t.p, "q": t.q,
         "r": t.r, "wait_states": t.flash_wait_states, "write_delay": t.flash_write_delay}
    if t.family in ("stm32h7", "stm32h7a3"):
        rge = 0 if t.pll_in_hz < 2 * MHZ else 1 if t.pll_in_hz < 4 * MHZ else 2 if t.pll_in_hz < 8 * MHZ else 3
        v["pll_range"] = rge
        if t.family == "stm32h7":
            v["vos_code"] = {0: 3, 1: 3, 2: 2, 3: 1}[t.voltage_scale]  # VOS0 is VOS1 with ODEN
        else:
            v["vos_code"] = {0: 3, 1: 2, 2: 1, 3: 0}[t.voltage_scale]  # RM0455's PWR_SRDCR codes: 11 is VOS0
    elif t.family == "stm32u5":
        v["pll_source"] = {"msis": 1, "hsi": 2}[t.source]
        v["pll_range"] = 0 if t.pll_in_hz <= 8 * MHZ else 3  # PLL1RGE: 00 4-8 MHz, 11 8-16 MHz
        v["mboost_code"] = next(i for i, d in enumerate(MBOOST_DIVS) if t.source_hz / d <= EPOD_MAX_HZ)
        v["vos_code"] = {1: 3, 2: 2, 3: 1, 4: 0}[t.voltage_scale]
    elif t.family == "stm32l4":
        v["pll_source"] = {"msi": 1, "hsi": 2, "hse": 3}[t.source]
        v["r_code"] = t.r // 2 - 1
        v["q_code"] = t.q // 2 - 1
    else:
        v["vos_code"] = {1: 3, 2: 2, 3: 1}[t.voltage_scale]
        v["p_code"] = t.p // 2 - 1
    return v
