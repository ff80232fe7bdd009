"""A register-level fake of the RCC, PWR and FLASH (and the U5's ICACHE) of each STM32 family with a clock tree, and a runner
that executes a board's generated start-up (firmware/clock.c) against it on the host.

The start-up reaches registers through MCUD_RD / MCUD_WR (firmware/runtime/mcud_clock.h); built with
-DMCUD_CLOCK_FAKE those call the functions this module installs through ctypes. The fake keeps the
registers, raises ready flags the way the chip does (or never, for the flags named in ``never``),
and after every write checks what the reference manual requires of the order: a PLL configured
only while it is off, the voltage scale and over-drive or boost in place and the flash wait states
raised before the clock they allow, and so on. The frequencies it reports are decoded from the
registers as written, independently of mcudeploy/clocks.py, which computed them from the board file.

    python -m tests.clock_fake     # every real board's start-up, with the frequencies it reached
"""
from __future__ import annotations

import ctypes
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mcudeploy.clocks import EPOD_MAX_HZ, LIMITS, MBOOST_DIVS, flash_setting
from mcudeploy.resources import firmware_dir

MHZ = 1_000_000
SPIN = 2000  # MCUD_CLOCK_SPIN of the host build: the bound the waits are held to, small to keep tests quick


def _bits(value: int, low: int, width: int) -> int:
    return (value >> low) & ((1 << width) - 1)


def _ahb(code: int) -> int:
    return 1 if code < 8 else (2, 4, 8, 16, 64, 128, 256, 512)[code - 8]


def _apb(code: int) -> int:
    return 1 if code < 4 else (2, 4, 8, 16)[code - 4]


@dataclass
class Fake:
    """One chip's clock registers. Subclasses give the reset values, the flags and the rules."""
    never: frozenset = frozenset()  # ready flags that never come ("pll", "hsi", "od", "vos", "switch", ...)
    regs: dict = field(default_factory=dict)
    log: list = field(default_factory=list)  # ("r" | "w", address, value)
    broken: list = field(default_factory=list)  # rules of the reference manual the start-up broke
    reads: int = 0
    family = ""

    def __post_init__(self):
        self.regs = dict(self.RESET)
        self.sws = 0  # the clock SYSCLK runs from, as the switch status shows it

    def read(self, addr: int) -> int:
        self.reads += 1
        value = self.status(addr, self.regs.get(addr, 0))
        self.log.append(("r", addr, value))
        return value

    def write(self, addr: int, value: int) -> None:
        old = self.regs.get(addr, 0)
        self.rules(addr, old, value)
        self.log.append(("w", addr, value))
        self.regs[addr] = value
        self.after(addr, old, value)
        self.check_running()

    def fail(self, why: str) -> None:
        if why not in self.broken:
            self.broken.append(why)

    def check_running(self) -> None:
        """Wherever the start-up is, the clock running must be one the flash and the regulator allow now."""
        f = self.frequencies()
        scale, boost = self.power()
        top = self.limits()["sysclk_max"].get((scale, boost))
        if top is None or f["core"] > top:
            self.fail(f"core at {f['core'] / MHZ:g} MHz with voltage scale {scale}{' boost' if boost else ''}")
        ws, delay = flash_setting(self.family, scale, f["hclk"])
        if self.wait_states() < ws or self.write_delay() < delay:
            self.fail(f"HCLK {f['hclk'] / MHZ:g} MHz with {self.wait_states()} flash wait states at scale {scale}")

    def write_delay(self) -> int:
        return 9  # only the H7 has one

    def limits(self) -> dict:
        """The family's limits (mcudeploy/clocks.py) at the voltage scale set now."""
        return LIMITS[self.family]

    def wait_states(self) -> int:
        return _bits(self.regs[self.FLASH_ACR], 0, 4)

    def after(self, addr, old, new):
        """The switch follows SW to the reset oscillator at once, to the PLL once it is locked; the PLL
        may not stop under the running clock. Every family has PLLON at bit 24 of RCC_CR."""
        if addr == self.RCC_CFGR:
            sw = new & self.SW_MASK
            pll_ready = self.regs[self.RCC_CR] & (1 << 24) and "pll" not in self.never
            if sw == 0 or (sw == self.SW_PLL and pll_ready and "switch" not in self.never):
                self.sws = sw
        if addr == self.RCC_CR and not new & (1 << 24) and self.sws == self.SW_PLL:
            self.fail("PLL turned off while SYSCLK ran from it")

    def writes_to(self, addr: int) -> list[int]:
        return [v for kind, a, v in self.log if kind == "w" and a == addr]


class FakeF4(Fake):
    """STM32F446 (RM0390) and, with the F7 flag, STM32F746 (RM0385): the same RCC and PWR bits."""
    family = "stm32f4"
    SW_MASK, SW_PLL = 3, 2
    RCC_CR, RCC_PLLCFGR, RCC_CFGR, RCC_APB1ENR = 0x40023800, 0x40023804, 0x40023808, 0x40023840
    PWR_CR, PWR_CSR, FLASH_ACR = 0x40007000, 0x40007004, 0x40023C00
    RESET = {RCC_CR: 0x83, RCC_PLLCFGR: 0x24003010, RCC_CFGR: 0, RCC_APB1ENR: 0, PWR_CR: 0xC000, PWR_CSR: 0,
             FLASH_ACR: 0}

    def status(self, addr, value):
        cr = self.regs[self.RCC_CR]
        if addr == self.RCC_CR:
            value = value & ~((1 << 1) | (1 << 25))
            value |= (cr & 1 and "hsi" not in self.never) << 1
            value |= (bool(cr & (1 << 24)) and "pll" not in self.never) << 25
        elif addr == self.PWR_CSR:
            pcr = self.regs[self.PWR_CR]
            value = ((bool(cr & (1 << 24)) and "vos" not in self.never) << 14
                     | (bool(pcr & (1 << 16)) and "od" not in self.never) << 16
                     | (bool(pcr & (1 << 17)) and "od" not in self.never) << 17)
        elif addr == self.RCC_CFGR:
            value = (value & ~(3 << 2)) | self.sws << 2
        return value

    def rules(self, addr, old, new):
        pll_on = self.regs[self.RCC_CR] & (1 << 24)
        if addr in (self.PWR_CR, self.PWR_CSR) and not self.regs[self.RCC_APB1ENR] & (1 << 28):
            self.fail("PWR written before its clock (PWREN) was on")
        if addr == self.RCC_PLLCFGR and pll_on:
            self.fail("PLLCFGR written while the PLL was on")
        if addr == self.PWR_CR and (old ^ new) & (3 << 14) and pll_on:
            self.fail("voltage scale changed while the PLL was on")
        if addr == self.PWR_CR and new & ~old & (1 << 16) and not pll_on:
            self.fail("over-drive (ODEN) set before the PLL was on")
        if addr == self.PWR_CR and new & ~old & (1 << 17):
            if not self.status(self.PWR_CSR, 0) & (1 << 16):
                self.fail("ODSWEN set before ODRDY")
            if self.sws == 2:
                self.fail("ODSWEN set while SYSCLK ran from the PLL")


    def power(self):
        pcr = self.regs[self.PWR_CR]
        scale = {3: 1, 2: 2, 1: 3}.get(_bits(pcr, 14, 2), 3)
        return scale, bool(pcr & (1 << 17)) and "od" not in self.never

    def pll_hz(self) -> tuple[float, float, float]:
        """(input, VCO, P output) of the PLL as configured."""
        c = self.regs[self.RCC_PLLCFGR]
        src = 16 * MHZ  # PLLSRC 0: HSI (the start-up never picks HSE)
        vin = src / max(_bits(c, 0, 6), 1)
        vco = vin * _bits(c, 6, 9)
        return vin, vco, vco / (2 * (_bits(c, 16, 2) + 1))

    def frequencies(self) -> dict:
        sysclk = self.pll_hz()[2] if self.sws == 2 else 16 * MHZ
        cfgr = self.regs[self.RCC_CFGR]
        hclk = sysclk / _ahb(_bits(cfgr, 4, 4))
        return {"sysclk": sysclk, "core": sysclk, "hclk": hclk, "apb1": hclk / _apb(_bits(cfgr, 10, 3)),
                "apb2": hclk / _apb(_bits(cfgr, 13, 3))}

    def pll_ranges(self) -> dict:
        vin, vco, _ = self.pll_hz()
        return {"input": vin, "vco": vco}


class FakeF7(FakeF4):
    family = "stm32f7"


@dataclass
class FakeH7(Fake):
    """STM32H743 (RM0433), of silicon revision ``rev_id`` (DBGMCU_IDCODE REV_ID): 0x2003 (V) has VOS0, reached
    by SYSCFG_PWRCR.ODEN over a ready VOS1; 0x1003 (Y) has not."""
    rev_id: int = 0x2003
    family = "stm32h7"
    RCC_APB4ENR, SYSCFG_PWRCR, DBGMCU_IDCODE = 0x580244F4, 0x5800042C, 0x5C001000
    SW_MASK, SW_PLL = 7, 3
    RCC_CR, RCC_CFGR, RCC_D1CFGR, RCC_D2CFGR, RCC_D3CFGR = 0x58024400, 0x58024410, 0x58024418, 0x5802441C, 0x58024420
    RCC_PLLCKSELR, RCC_PLLCFGR, RCC_PLL1DIVR = 0x58024428, 0x5802442C, 0x58024430
    PWR_CSR1, PWR_CR3, PWR_D3CR, FLASH_ACR = 0x58024804, 0x5802480C, 0x58024818, 0x52002000
    RESET = {RCC_CR: 0x25, RCC_CFGR: 0, RCC_D1CFGR: 0, RCC_D2CFGR: 0, RCC_D3CFGR: 0, RCC_PLLCKSELR: 0x02020200,
             RCC_PLLCFGR: 0x01FF0000, RCC_PLL1DIVR: 0x01010280, PWR_CSR1: 0, PWR_CR3: 0x46, PWR_D3CR: 0x4000,
             FLASH_ACR: 0x37, RCC_APB4ENR: 0, SYSCFG_PWRCR: 0}

    def __post_init__(self):
        super().__post_init__()
        self.vos1_ready = False  # VOSRDY read at VOS1 since the voltage scale was last written

    def oden(self) -> bool:
        return bool(self.regs[self.SYSCFG_PWRCR] & 1)

    def status(self, addr, value):
        cr = self.regs[self.RCC_CR]
        if addr == self.RCC_CR:
            value = value & ~((1 << 2) | (1 << 25))
            value |= (cr & 1 and "hsi" not in self.never) << 2
            value |= (bool(cr & (1 << 24)) and "pll" not in self.never) << 25
        elif addr == self.PWR_CSR1:
            value = (len(self.writes_to(self.PWR_CR3)) > 0 and "supply" not in self.never) << 13
        elif addr == self.PWR_D3CR:
            ready = "vos" not in self.never and not (self.oden() and "vos0" in self.never)
            value = (value & ~(1 << 13)) | ready << 13
            self.vos1_ready |= ready and _bits(value, 14, 2) == 3 and not self.oden()
        elif addr == self.DBGMCU_IDCODE:
            value = self.rev_id << 16 | 0x450
        elif addr == self.RCC_CFGR:
            value = (value & ~(7 << 3)) | self.sws << 3
        return value

    def rules(self, addr, old, new):
        pll_on = self.regs[self.RCC_CR] & (1 << 24)
        if addr in (self.RCC_PLLCKSELR, self.RCC_PLLCFGR, self.RCC_PLL1DIVR) and pll_on:
            self.fail("PLL1 configured while it was on")
        if addr == self.PWR_CR3 and self.writes_to(self.PWR_CR3):
            self.fail("the supply configuration (PWR_CR3) written twice: it is locked after the first write")
        if addr == self.PWR_D3CR and not self.writes_to(self.PWR_CR3):
            self.fail("voltage scale set before the supply configuration")
        if addr == self.PWR_D3CR:
            self.vos1_ready = False
        if addr == self.SYSCFG_PWRCR and new & ~old & 1:
            if not self.regs[self.RCC_APB4ENR] & (1 << 1):
                self.fail("SYSCFG_PWRCR written before the SYSCFG clock (SYSCFGEN) was on")
            if self.rev_id != 0x2003:
                self.fail(f"ODEN set on revision 0x{self.rev_id:04X}, which has no VOS0")
            if not self.vos1_ready:
                self.fail("ODEN set before VOS1 was ready")


    def power(self):
        scale = {3: 1, 2: 2, 1: 3}.get(_bits(self.regs[self.PWR_D3CR], 14, 2), 3)
        vos0 = scale == 1 and self.oden() and self.rev_id == 0x2003 and not self.never & {"vos", "vos0"}
        return (0 if vos0 else scale), False

    def limits(self):
        lim = LIMITS[self.family]
        return {**lim, **lim["vos0"]} if self.power()[0] == 0 else lim

    def write_delay(self):
        return _bits(self.regs[self.FLASH_ACR], 4, 2)

    def pll_ranges(self) -> dict:
        hsi = 64 * MHZ / (1 << _bits(self.regs[self.RCC_CR], 3, 2))
        vin = hsi / max(_bits(self.regs[self.RCC_PLLCKSELR], 4, 6), 1)
        return {"input": vin, "vco": vin * (_bits(self.regs[self.RCC_PLL1DIVR], 0, 9) + 1)}

    def frequencies(self) -> dict:
        hsi = 64 * MHZ / (1 << _bits(self.regs[self.RCC_CR], 3, 2))
        sysclk = hsi
        if self.sws == 3:
            sysclk = self.pll_ranges()["vco"] / (_bits(self.regs[self.RCC_PLL1DIVR], 9, 7) + 1)
        d1, d2, d3 = (self.regs[r] for r in (self.RCC_D1CFGR, self.RCC_D2CFGR, self.RCC_D3CFGR))
        core = sysclk / _ahb(_bits(d1, 8, 4))
        hclk = core / _ahb(_bits(d1, 0, 4))
        return {"sysclk": sysclk, "core": core, "hclk": hclk, "apb1": hclk / _apb(_bits(d2, 4, 3)),
                "apb2": hclk / _apb(_bits(d2, 8, 3)), "apb3": hclk / _apb(_bits(d1, 4, 3)),
                "apb4": hclk / _apb(_bits(d3, 4, 3))}


class FakeL4(Fake):
    """STM32L4R5 (RM0432)."""
    family = "stm32l4"
    SW_MASK, SW_PLL = 3, 3
    RCC_CR, RCC_CFGR, RCC_PLLCFGR, RCC_APB1ENR1 = 0x40021000, 0x40021008, 0x4002100C, 0x40021058
    PWR_CR1, PWR_SR2, PWR_CR5, FLASH_ACR = 0x40007000, 0x40007014, 0x40007080, 0x40022000
    RESET = {RCC_CR: 0x63, RCC_CFGR: 0, RCC_PLLCFGR: 0x1000, RCC_APB1ENR1: 0, PWR_CR1: 0x200, PWR_SR2: 0,
             PWR_CR5: 0x100, FLASH_ACR: 0x600}

    def status(self, addr, value):
        cr = self.regs[self.RCC_CR]
        if addr == self.RCC_CR:
            value = value & ~((1 << 10) | (1 << 25))
            value |= (bool(cr & (1 << 8)) and "hsi" not in self.never) << 10
            value |= (bool(cr & (1 << 24)) and "pll" not in self.never) << 25
        elif addr == self.PWR_SR2:
            value = ("vos" in self.never) << 10  # VOSF stays up when the regulator never settles
        elif addr == self.RCC_CFGR:
            value = (value & ~(3 << 2)) | self.sws << 2
        return value

    def rules(self, addr, old, new):
        if addr in (self.PWR_CR1, self.PWR_CR5) and not self.regs[self.RCC_APB1ENR1] & (1 << 28):
            self.fail("PWR written before its clock (PWREN) was on")
        if addr == self.RCC_PLLCFGR and self.regs[self.RCC_CR] & (1 << 24):
            self.fail("PLLCFGR written while the PLL was on")
        if addr == self.RCC_CFGR and new & 3 == 3 and self.sws != 3:
            vin, vco = self.pll_ranges().values()
            sysclk = vco / (2 * (_bits(self.regs[self.RCC_PLLCFGR], 25, 2) + 1))
            if sysclk > 80 * MHZ and _ahb(_bits(new, 4, 4)) < 2:
                self.fail("switched to a SYSCLK above 80 MHz without HCLK halved first")


    def power(self):
        return _bits(self.regs[self.PWR_CR1], 9, 2), not self.regs[self.PWR_CR5] & (1 << 8)

    def pll_ranges(self) -> dict:
        c = self.regs[self.RCC_PLLCFGR]
        src = {1: 4 * MHZ, 2: 16 * MHZ}.get(_bits(c, 0, 2), 0)
        vin = src / (_bits(c, 4, 4) + 1)
        return {"input": vin, "vco": vin * _bits(c, 8, 7)}

    def frequencies(self) -> dict:
        sysclk = 4 * MHZ  # MSI range 6 after reset
        if self.sws == 3:
            sysclk = self.pll_ranges()["vco"] / (2 * (_bits(self.regs[self.RCC_PLLCFGR], 25, 2) + 1))
        cfgr = self.regs[self.RCC_CFGR]
        hclk = sysclk / _ahb(_bits(cfgr, 4, 4))
        return {"sysclk": sysclk, "core": sysclk, "hclk": hclk, "apb1": hclk / _apb(_bits(cfgr, 8, 3)),
                "apb2": hclk / _apb(_bits(cfgr, 11, 3))}


@dataclass
class FakeH7A3(FakeH7):
    """STM32H7A3 (RM0455) on a board wired for the direct SMPS supply (NUCLEO-H7A3ZI-Q): the H743's RCC and FLASH
    layout (CDCFGR1/CDCFGR2/SRDCFGR where the H743 has D1CFGR/D2CFGR/D3CFGR), PWR_SRDCR where the H743 has PWR_D3CR,
    whose VOS codes run the other way (11 is VOS0) and need no ODEN. The supply byte of PWR_CR3 is written once and
    must be the direct SMPS supply; a voltage scale applies only once VOSRDY (or ACTVOSRDY) has been read after it was
    written. PWR_SRDCR's reset value 0x4000 (VOS code 01: VOS2 by RM0455's codes) is ST's SVD's for the RM0455 chips."""
    family = "stm32h7a3"
    PWR_SRDCR = 0x58024818  # PWR_D3CR's address
    SCALES = {3: 0, 2: 1, 1: 2, 0: 3}  # PWR_SRDCR.VOS code -> VOS
    RESET = {**FakeH7.RESET, FakeH7.PWR_CR3: 0x06, PWR_SRDCR: 0x4000, FakeH7.FLASH_ACR: 0x13}

    def __post_init__(self):
        super().__post_init__()
        self.scale = self.SCALES[_bits(self.RESET[self.PWR_SRDCR], 14, 2)]  # the scale the regulator is at

    def status(self, addr, value):
        if addr == self.PWR_CSR1:  # ACTVOSRDY: the supply ready and the voltage scale last written applied
            supply = self.writes_to(self.PWR_CR3)
            ok = supply != [] and supply[0] & 0x3F == 0x04 and "supply" not in self.never
            if self.writes_to(self.PWR_SRDCR):
                ok = ok and "vos" not in self.never
                if ok:
                    self.scale = self.SCALES[_bits(self.regs[self.PWR_SRDCR], 14, 2)]
            return (ok << 13) | self.scale_code() << 14
        if addr == self.PWR_SRDCR:
            ready = "vos" not in self.never
            if ready:
                self.scale = self.SCALES[_bits(value, 14, 2)]
            return (value & ~(1 << 13)) | ready << 13
        if addr == self.DBGMCU_IDCODE:
            return 0x10030480  # REV_ID 0x1003 (not read by this start-up), DEV_ID 0x480
        return super().status(addr, value)

    def scale_code(self) -> int:
        return {v: k for k, v in self.SCALES.items()}[self.scale]

    def rules(self, addr, old, new):
        pll_on = self.regs[self.RCC_CR] & (1 << 24)
        if addr in (self.RCC_PLLCKSELR, self.RCC_PLLCFGR, self.RCC_PLL1DIVR) and pll_on:
            self.fail("PLL1 configured while it was on")
        if addr == self.PWR_CR3:
            if self.writes_to(self.PWR_CR3):
                self.fail("the supply configuration (PWR_CR3) written twice: it is locked after the first write")
            if new & 0x3F != 0x04:
                self.fail(f"PWR_CR3 supply byte 0x{new & 0x3F:02X}: the board is wired for the direct SMPS supply "
                          f"(SMPSEN alone, 0x04)")
        if addr == self.PWR_SRDCR and not self.status(self.PWR_CSR1, 0) & (1 << 13):
            self.fail("voltage scale set before the supply configuration was ready (ACTVOSRDY)")
        if addr in (self.SYSCFG_PWRCR, self.RCC_APB4ENR):
            self.fail("SYSCFG_PWRCR / ODEN touched: RM0455 reaches VOS0 through PWR_SRDCR alone")

    def power(self):
        return self.scale, False

    def limits(self):
        return LIMITS[self.family]

    def pll_ranges(self) -> dict:
        ranges = super().pll_ranges()
        if _bits(self.regs[self.RCC_PLLCFGR], 1, 1):
            self.fail("PLL1 on the medium VCO (PLL1VCOSEL 1), whose range the limits do not hold")
        return ranges


class FakeU5(Fake):
    """STM32U575 (RM0456), registers at the non-secure aliases. The flags: "hsi", "vos", "boost", "pll", "switch",
    "icache" (the ICACHE's invalidation after reset never ends). A voltage range applies once VOSRDY, and with the
    booster BOOSTRDY, has been read after it was written (the booster comes a read after the regulator); the EPOD booster takes PLL1's source through PLL1MBOOST, set
    before BOOSTEN, and ranges 1 and 2 need it."""
    family = "stm32u5"
    SW_MASK, SW_PLL = 3, 3
    RCC_CR, RCC_CFGR1, RCC_CFGR2, RCC_CFGR3 = 0x46020C00, 0x46020C1C, 0x46020C20, 0x46020C24
    RCC_PLL1CFGR, RCC_PLL1DIVR, RCC_AHB3ENR = 0x46020C28, 0x46020C34, 0x46020C94
    PWR_VOSR, FLASH_ACR, ICACHE_CR, ICACHE_SR = 0x4602080C, 0x40022000, 0x40030400, 0x40030404
    RCC_CFGR = RCC_CFGR1  # Fake.after follows SW here
    RANGES = {3: 1, 2: 2, 1: 3, 0: 4}  # PWR_VOSR.VOS code -> range
    RESET = {RCC_CR: 0x35, RCC_CFGR1: 0, RCC_CFGR2: 0, RCC_CFGR3: 0, RCC_PLL1CFGR: 0, RCC_PLL1DIVR: 0x01010280,
             RCC_AHB3ENR: 0, PWR_VOSR: 0x8000, FLASH_ACR: 0, ICACHE_CR: 0x4, ICACHE_SR: 0}

    def __post_init__(self):
        super().__post_init__()
        self.range, self.boosted = 4, False  # what the regulator gives now
        self.boost_reads = 0  # reads of PWR_VOSR since BOOSTEN was set: the booster is ready from the second on

    def status(self, addr, value):
        cr = self.regs[self.RCC_CR]
        if addr == self.RCC_CR:
            value = value & ~((1 << 2) | (1 << 10) | (1 << 25))
            value |= (cr & 1) << 2  # MSISRDY: MSIS runs from reset
            value |= (bool(cr & (1 << 8)) and "hsi" not in self.never) << 10
            value |= (bool(cr & (1 << 24)) and "pll" not in self.never) << 25
        elif addr == self.PWR_VOSR:
            vos_ready = "vos" not in self.never
            boost_ready = bool(value & (1 << 18)) and "boost" not in self.never and self.boost_reads > 0
            self.boost_reads += bool(value & (1 << 18))
            value = (value & ~(3 << 14)) | vos_ready << 15 | boost_ready << 14
            if vos_ready and (boost_ready or not value & (1 << 18)):
                self.range, self.boosted = self.RANGES[_bits(value, 16, 2)], boost_ready
        elif addr == self.RCC_CFGR1:
            value = (value & ~(3 << 2)) | self.sws << 2
        elif addr == self.ICACHE_SR:
            value = int("icache" in self.never)  # BUSYF
        return value

    def rules(self, addr, old, new):
        pll_on = self.regs[self.RCC_CR] & (1 << 24)
        vosr = self.regs[self.PWR_VOSR]
        if addr == self.PWR_VOSR and not self.regs[self.RCC_AHB3ENR] & (1 << 2):
            self.fail("PWR written before its clock (PWREN) was on")
        if addr in (self.RCC_PLL1CFGR, self.RCC_PLL1DIVR) and pll_on:
            self.fail("PLL1 configured while it was on")
        if addr == self.RCC_PLL1CFGR and vosr & (1 << 18) and (old ^ new) & (3 | 0xF << 12):
            self.fail("PLL1SRC or PLL1MBOOST changed while the EPOD booster was on")
        if addr == self.PWR_VOSR and new & ~old & (1 << 18):
            self.boost_reads = 0
        if addr == self.PWR_VOSR and new & (1 << 18):
            cfg = self.regs[self.RCC_PLL1CFGR]
            src = {1: 4 * MHZ, 2: 16 * MHZ}.get(_bits(cfg, 0, 2), 0)
            epod = src / MBOOST_DIVS[min(_bits(cfg, 12, 4), 8)]
            if not 0 < epod <= EPOD_MAX_HZ:
                self.fail(f"EPOD booster on with its input at {epod / MHZ:g} MHz (PLL1SRC and PLL1MBOOST first)")
        if addr == self.PWR_VOSR and self.RANGES[_bits(new, 16, 2)] <= 2 and not new & (1 << 18):
            self.fail("voltage range 1 or 2 without the EPOD booster (BOOSTEN)")
        if addr == self.ICACHE_CR and new & ~old & 1 and "icache" in self.never:
            self.fail("ICACHE enabled while it was busy invalidating (BUSYF)")

    def power(self):
        return self.range, self.boosted and self.range <= 2

    def pll_hz(self) -> tuple[float, float, float]:
        """(input, VCO, R output) of PLL1 as configured."""
        cfg, div = self.regs[self.RCC_PLL1CFGR], self.regs[self.RCC_PLL1DIVR]
        src = {1: 4 * MHZ, 2: 16 * MHZ}.get(_bits(cfg, 0, 2), 0)
        vin = src / (_bits(cfg, 8, 4) + 1)
        vco = vin * (_bits(div, 0, 9) + 1)
        return vin, vco, vco / (_bits(div, 24, 7) + 1)

    def pll_ranges(self) -> dict:
        vin, vco, _ = self.pll_hz()
        rge = _bits(self.regs[self.RCC_PLL1CFGR], 2, 2)
        if not (rge == 0 and vin <= 8 * MHZ or rge == 3 and vin >= 8 * MHZ):
            self.fail(f"PLL1RGE {rge} for a {vin / MHZ:g} MHz input")
        return {"input": vin, "vco": vco}

    def frequencies(self) -> dict:
        sysclk = {0: 4 * MHZ, 1: 16 * MHZ, 3: self.pll_hz()[2]}[self.sws]  # MSIS at its 4 MHz reset range
        c2, c3 = self.regs[self.RCC_CFGR2], self.regs[self.RCC_CFGR3]
        hclk = sysclk / _ahb(_bits(c2, 0, 4))
        return {"sysclk": sysclk, "core": sysclk, "hclk": hclk, "apb1": hclk / _apb(_bits(c2, 4, 3)),
                "apb2": hclk / _apb(_bits(c2, 8, 3)), "apb3": hclk / _apb(_bits(c3, 4, 3))}

    def icache_on(self) -> bool:
        return bool(self.regs[self.ICACHE_CR] & 1)


FAKES = {"stm32f4": FakeF4, "stm32f7": FakeF7, "stm32h7": FakeH7, "stm32h7a3": FakeH7A3, "stm32l4": FakeL4,
         "stm32u5": FakeU5}


class State(ctypes.Structure):  # mcud_clock_state
    _fields_ = [("core_hz", ctypes.c_uint32), ("uart_brr", ctypes.c_uint32), ("status", ctypes.c_uint32),
                ("note", ctypes.c_char_p)]


READ = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)
WRITE = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32)


def build_startup(board, directory: Path) -> Path:
    """The board's generated firmware/clock.c as a host shared library, registers going to the fake."""
    from mcudeploy.device.build import clock_source
    src = directory / f"clock-{board.name}.c"
    src.write_text(clock_source(board))
    lib = directory / f"clock-{board.name}.so"
    cmd = ["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-DMCUD_CLOCK_FAKE",
           f"-DMCUD_CLOCK_SPIN={SPIN}u", f"-I{firmware_dir() / 'runtime'}", str(src), "-o", str(lib)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return lib


@dataclass
class Result:
    fake: Fake
    state: dict


def run_startup(lib: Path, fake: Fake) -> Result:
    """Run mcud_clock_init of ``lib`` against ``fake``; the state it returned and the fake it left."""
    dll = ctypes.CDLL(str(lib))
    read, write = READ(fake.read), WRITE(fake.write)
    ctypes.c_void_p.in_dll(dll, "mcud_fake_read").value = ctypes.cast(read, ctypes.c_void_p).value
    ctypes.c_void_p.in_dll(dll, "mcud_fake_write").value = ctypes.cast(write, ctypes.c_void_p).value
    state = State()
    dll.mcud_clock_init(ctypes.byref(state))
    return Result(fake, {"core_hz": state.core_hz, "uart_brr": state.uart_brr, "status": state.status,
                         "note": (state.note or b"").decode()})


def baud_of(board, brr: int, clock_hz: float) -> float:
    """The baud rate a UART of ``board`` makes of ``brr`` counting in ``clock_hz``."""
    return 256 * clock_hz / brr if board.uart.lpuart else clock_hz / brr


def main() -> None:
    from mcudeploy.boards import all_boards
    with tempfile.TemporaryDirectory() as tmp:
        for board in all_boards():
            if board.clock_tree is None or board.alias_of:
                continue
            r = run_startup(build_startup(board, Path(tmp)), FAKES[board.clock_tree.family]())
            f = r.fake.frequencies()
            baud = baud_of(board, r.state["uart_brr"], f[board.clock_tree.uart_bus])
            print(f"{board.name:<15} " + "  ".join(f"{k} {v / MHZ:g} MHz" for k, v in f.items())
                  + f"  | UART BRR {r.state['uart_brr']} -> {baud:,.0f} baud | {len(r.fake.log)} accesses"
                  + (f" | BROKEN: {r.fake.broken}" if r.fake.broken else ""))


if __name__ == "__main__":
    main()
