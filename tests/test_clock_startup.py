"""Each real board's generated start-up, compiled for the host and run against a register-level fake of its
chip's RCC, PWR and FLASH (tests/clock_fake.py): the order the reference manual asks for, the frequencies the
board file claims, the UART's divisor, and a bounded fall-back to the reset clock when a ready flag never comes."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcudeploy.boards import all_boards, load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.resources import boards_dir
from tests.clock_fake import FAKES, SPIN, FakeF4, FakeH7, FakeH7A3, FakeU5, baud_of, build_startup, run_startup

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs the host's gcc")

BOARDS = [b for b in all_boards() if b.clock_tree is not None and not b.alias_of]
FLAGS = {"stm32f4": ("hsi", "pll", "od", "vos", "switch"), "stm32f7": ("hsi", "pll", "od", "vos", "switch"),
         "stm32h7": ("supply", "vos", "vos0", "hsi", "pll", "switch"), "stm32l4": ("hsi", "vos", "pll", "switch"),
         "stm32h7a3": ("supply", "vos", "hsi", "pll", "switch"), "stm32u5": ("vos", "boost", "pll", "switch", "icache")}
SCB_CCR, SCB_ICIALLU, SCB_DCISW = 0xE000ED14, 0xE000EF50, 0xE000EF60


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clock")
    return {b.name: build_startup(b, tmp) for b in BOARDS}


def test_every_real_board_has_a_clock_tree_or_says_why_not():
    real = [b for b in all_boards() if b.kind == "hardware" and not b.alias_of]
    at_reset = {b.name for b in real if b.clock_tree is None}
    for name in at_reset:
        assert json.loads((boards_dir() / f"{name}.json").read_text()).get("reset_clock"), name
    assert {b.name for b in real} - at_reset == {b.name for b in BOARDS}
    assert {"nucleo-f446re", "nucleo-f746zg", "nucleo-h743zi", "nucleo-h7a3zi-q", "nucleo-l4r5zi",
            "nucleo-u575zi-q"} <= {b.name for b in BOARDS}


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.name)
def test_the_start_up_reaches_the_board_files_clocks_in_an_allowed_order(board, libs):
    tree = board.clock_tree
    r = run_startup(libs[board.name], FAKES[tree.family]())
    got = {k: round(v) for k, v in r.fake.frequencies().items()}
    print(f"{board.name}: " + ", ".join(f"{k} {v / 1e6:g} MHz" for k, v in got.items()))
    assert r.fake.broken == []
    assert r.state == {"core_hz": board.clock_hz, "uart_brr": r.state["uart_brr"], "status": 1, "note": ""}
    assert got == tree.claimed.frequencies() and got["core"] == board.clock_hz == board.timer.hz
    assert got[tree.uart_bus] == board.uart.clock_hz
    pll = r.fake.pll_ranges()
    lim = r.fake.limits()
    assert lim["pll_in"][0] <= pll["input"] <= lim["pll_in"][1] and lim["vco"][0] <= pll["vco"] <= lim["vco"][1]
    baud = baud_of(board, r.state["uart_brr"], got[tree.uart_bus])
    assert abs(baud - board.uart.baud) / board.uart.baud < 0.005, baud
    ccr = r.fake.regs.get(SCB_CCR, 0)
    assert bool(ccr & (1 << 17)) == tree.icache and bool(ccr & (1 << 16)) == tree.dcache
    order = [a for kind, a, _ in r.fake.log if kind == "w"]
    if tree.icache:  # invalidated before it is turned on
        assert order.index(SCB_ICIALLU) < order.index(SCB_CCR)
    if tree.dcache:
        assert max(i for i, a in enumerate(order) if a == SCB_DCISW) < len(order) - 1 - order[::-1].index(SCB_CCR)


@pytest.mark.parametrize("board, flag", [(b, f) for b in BOARDS for f in FLAGS[b.clock_tree.family]],
                         ids=lambda x: getattr(x, "name", x))
def test_a_ready_flag_that_never_comes_falls_back_to_the_reset_clock(board, flag, libs):
    tree = board.clock_tree
    r = run_startup(libs[board.name], FAKES[tree.family](never=frozenset({flag})))
    got = r.fake.frequencies()
    assert r.state["status"] == 2 and r.state["core_hz"] == tree.reset_hz and r.state["note"], r.state
    assert r.fake.broken == []
    assert all(round(v) == tree.reset_hz for v in got.values()), got
    assert r.fake.reads <= 2 * SPIN + 100  # the failed wait, the wait for the switch back, and the rest
    baud = baud_of(board, r.state["uart_brr"], got[tree.uart_bus])
    assert abs(baud - board.uart.baud) / board.uart.baud < 0.01, baud


H7 = [b for b in BOARDS if b.clock_tree.vos0 is not None]


@pytest.mark.parametrize("board", H7, ids=lambda b: b.name)
def test_an_h7_reaches_vos0_on_revision_v_and_stays_at_vos1_on_revision_y(board, libs):
    tree = board.clock_tree
    for rev, reached in ((tree.rev_id, tree.vos0), (0x1003, tree)):
        fake = FakeH7(rev_id=rev)
        r = run_startup(libs[board.name], fake)
        got = {k: round(v) for k, v in fake.frequencies().items()}
        print(f"{board.name} REV_ID 0x{rev:04X}: " + ", ".join(f"{k} {v / 1e6:g} MHz" for k, v in got.items()))
        assert fake.broken == [] and r.state["status"] == 1, (fake.broken, r.state)
        assert got == reached.frequencies() and r.state["core_hz"] == got["core"]
        baud = baud_of(board, r.state["uart_brr"], got[tree.uart_bus])
        assert abs(baud - board.uart.baud) / board.uart.baud < 0.005, baud
        writes = [(a, v) for kind, a, v in fake.log if kind == "w"]
        oden = [i for i, (a, v) in enumerate(writes) if a == fake.SYSCFG_PWRCR and v & 1]
        acr = max(i for i, (a, _) in enumerate(writes) if a == fake.FLASH_ACR)
        switch = next(i for i, (a, v) in enumerate(writes) if a == fake.RCC_CFGR and v & 7 == 3)
        assert writes[acr][1] & 0xF == reached.flash_wait_states and acr < switch
        assert (oden != [] and oden[0] < switch) if reached is tree.vos0 else oden == []


def test_the_fake_catches_oden_before_vos1_is_ready_and_on_revision_y():
    for rev, why in ((0x2003, "before VOS1 was ready"), (0x1003, "which has no VOS0")):
        f = FakeH7(rev_id=rev)
        f.write(f.RCC_APB4ENR, 1 << 1)
        f.write(f.SYSCFG_PWRCR, 1)
        assert any(why in b for b in f.broken), f.broken


def _writes(fake) -> list[tuple[int, int]]:
    return [(a, v) for kind, a, v in fake.log if kind == "w"]


def test_the_h7a3_writes_the_direct_smps_supply_once_then_vos0_then_the_wait_states_then_switches(libs):
    """RM0455: the supply byte first (the -Q board's direct SMPS: SMPSEN alone), VOS0 as PWR_SRDCR code 11 and no
    ODEN, 6 wait states with WRHIGHFREQ 3 before the switch; the fake refuses any other order (fake.broken)."""
    fake = FakeH7A3()
    r = run_startup(libs["nucleo-h7a3zi-q"], fake)
    assert fake.broken == [] and r.state["status"] == 1
    w = _writes(fake)
    supply = [i for i, (a, _) in enumerate(w) if a == fake.PWR_CR3]
    vos = [i for i, (a, v) in enumerate(w) if a == fake.PWR_SRDCR]
    acr = [i for i, (a, _) in enumerate(w) if a == fake.FLASH_ACR]
    switch = next(i for i, (a, v) in enumerate(w) if a == fake.RCC_CFGR and v & 7 == 3)
    assert len(supply) == 1 and w[supply[0]][1] & 0x3F == 0x04
    assert supply[0] < vos[0] and (w[vos[-1]][1] >> 14) & 3 == 3 and vos[-1] < acr[-1] < switch
    assert w[acr[-1]][1] & 0x3F == 6 | 3 << 4 and fake.power() == (0, False)
    assert not any(a in (fake.SYSCFG_PWRCR, fake.RCC_APB4ENR) for a, _ in w)


def test_the_u575_boosts_range_1_before_the_switch_and_turns_the_icache_on(libs):
    """RM0456: PLL1's source and the booster's prescaler before BOOSTEN, range 1 with the booster ready and 4 wait
    states before the switch, and the ICACHE on; the fake refuses any other order (fake.broken)."""
    fake = FakeU5()
    r = run_startup(libs["nucleo-u575zi-q"], fake)
    assert fake.broken == [] and r.state["status"] == 1
    w = _writes(fake)
    cfg = next(i for i, (a, _) in enumerate(w) if a == fake.RCC_PLL1CFGR)
    vosr = next(i for i, (a, _) in enumerate(w) if a == fake.PWR_VOSR)
    acr = next(i for i, (a, _) in enumerate(w) if a == fake.FLASH_ACR)
    switch = next(i for i, (a, v) in enumerate(w) if a == fake.RCC_CFGR1 and v & 3 == 3)
    assert cfg < vosr < acr < switch and (w[vosr][1] >> 16) & 7 == 0b111  # VOS 11 and BOOSTEN
    assert w[acr][1] & 0xF == 4 and w[acr][1] & (1 << 8) and fake.power() == (1, True) and fake.icache_on()


def test_the_rm0455_and_rm0456_fakes_catch_a_wrong_order():
    f = FakeH7A3()
    f.write(f.PWR_SRDCR, 3 << 14)  # VOS0 before the supply
    f.write(f.PWR_CR3, 0x02)  # the LDO: not what the -Q board is wired for
    assert any("before the supply" in b for b in f.broken) and any("direct SMPS" in b for b in f.broken)
    f = FakeH7A3()
    f.write(f.PWR_CR3, 0x04)
    f.read(f.PWR_CSR1)
    f.write(f.PWR_SRDCR, 3 << 14)  # VOS0 written but its VOSRDY never read
    f.write(f.FLASH_ACR, 0x36)
    f.write(f.RCC_PLLCKSELR, 4 << 4)
    f.write(f.RCC_PLL1DIVR, 34 | 1 << 9)
    f.write(f.RCC_CR, f.regs[f.RCC_CR] | 1 << 24)
    f.write(f.RCC_CFGR, 3)
    assert any("280 MHz with voltage scale 2" in b for b in f.broken), f.broken
    u = FakeU5()
    u.write(u.RCC_AHB3ENR, 1 << 2)
    u.write(u.PWR_VOSR, 3 << 16)  # range 1 without the booster
    u.write(u.PWR_VOSR, 3 << 16 | 1 << 18)  # the booster before PLL1SRC
    assert any("without the EPOD booster" in b for b in u.broken) and any("EPOD booster on" in b for b in u.broken)
    u = FakeU5()
    u.write(u.RCC_PLL1CFGR, 1 | 1 << 18)
    u.write(u.RCC_PLL1DIVR, 79 | 1 << 9 | 1 << 24)
    u.write(u.RCC_CR, u.regs[u.RCC_CR] | 1 << 24)
    u.write(u.RCC_CFGR1, 3)  # 160 MHz at range 4 and 0 wait states
    assert any("core at 160 MHz with voltage scale 4" in b for b in u.broken)
    assert any("0 flash wait states" in b for b in u.broken)


def test_the_fake_catches_a_switch_before_the_wait_states():
    f = FakeF4()
    f.write(f.RCC_APB1ENR, 1 << 28)
    f.write(f.RCC_PLLCFGR, 8 | 180 << 6 | 0 << 16)  # 180 MHz
    f.write(f.RCC_CR, f.regs[f.RCC_CR] | 1 << 24)
    f.write(f.RCC_CFGR, 2)  # the switch, with the flash at 0 wait states and no over-drive
    assert any("wait states" in b for b in f.broken) and any("voltage scale 1" in b for b in f.broken)


def edited(tmp_path: Path, name: str, change) -> Path:
    data = json.loads((boards_dir() / f"{name}.json").read_text())
    data["name"] = "edited"
    change(data)
    (tmp_path / "edited.json").write_text(json.dumps(data))
    return tmp_path


@pytest.mark.parametrize("name, change, sentence", [
    ("nucleo-f446re", lambda d: d["clock_tree"]["pll"].update(n=240),
     "field 'clock_tree.pll' puts the PLL VCO (source / m * n) at 480 MHz, outside the reference manual's 100-432 MHz"),
    ("nucleo-f446re", lambda d: d["clock_tree"]["pll"].update(m=4),
     "field 'clock_tree.pll' puts the PLL input (source / m) at 4 MHz"),
    ("nucleo-f446re", lambda d: d["clock_tree"].update(flash_wait_states=4),
     "field 'clock_tree.flash_wait_states' is 4, too few for HCLK 180 MHz at voltage scale 1"),
    ("nucleo-f446re", lambda d: d["clock_tree"].update(boost=False), "above the 168 MHz of voltage scale 1"),
    ("nucleo-f746zg", lambda d: d["clock_tree"]["apb_divs"].update(apb1=2), "gives APB1 108 MHz, above its 54 MHz"),
    ("nucleo-h743zi", lambda d: d["clock_tree"].update(voltage_scale=0), "voltage_scale' is 0"),
    ("nucleo-h743zi", lambda d: d["clock_tree"].update(flash_write_delay=1), "flash_write_delay' is 1, too short"),
    ("nucleo-h743zi", lambda d: d["clock_tree"]["vos0"].update(flash_wait_states=3),
     "field 'clock_tree.vos0.flash_wait_states' is 3, too few for HCLK 240 MHz at voltage scale 0"),
    ("nucleo-h743zi", lambda d: d["clock_tree"]["vos0"]["pll"].update(n=62),
     "field 'clock_tree.vos0.pll' puts the PLL VCO (source / m * n) at 992 MHz"),
    ("nucleo-h743zi", lambda d: d["clock_tree"]["vos0"].update(rev_id="0x1003"),
     "field 'clock_tree.vos0.rev_id' is 0x1003; VOS0 exists on revision 0x2003 only"),
    ("nucleo-h743zi", lambda d: d.update(clock_hz=400000000), "field 'clock_hz' says 400000000 Hz but its clock_tree gives 480000000"),
    ("nucleo-h7a3zi-q", lambda d: d["clock_tree"].update(flash_wait_states=5),
     "field 'clock_tree.flash_wait_states' is 5, too few for HCLK 280 MHz at voltage scale 0"),
    ("nucleo-h7a3zi-q", lambda d: d["clock_tree"].update(flash_write_delay=2), "flash_write_delay' is 2, too short"),
    ("nucleo-h7a3zi-q", lambda d: d["clock_tree"]["pll"].update(n=36),
     "field 'clock_tree.pll' puts the PLL VCO (source / m * n) at 576 MHz, outside the reference manual's 128-560 MHz"),
    ("nucleo-h7a3zi-q", lambda d: d["clock_tree"]["apb_divs"].update(apb1=1), "gives APB1 280 MHz, above its 140 MHz"),
    ("nucleo-h7a3zi-q", lambda d: d["clock_tree"].pop("manual"), "voltage_scale' is 0, which the stm32h7 does not offer"),
    ("nucleo-u575zi-q", lambda d: d["clock_tree"].update(boost=False), "voltage_scale' is 1, which the stm32u5 does not offer"),
    ("nucleo-u575zi-q", lambda d: d["clock_tree"].update(flash_wait_states=3),
     "field 'clock_tree.flash_wait_states' is 3, too few for HCLK 160 MHz at voltage scale 1"),
    ("nucleo-u575zi-q", lambda d: d["clock_tree"]["pll"].update(n=140),
     "field 'clock_tree.pll' puts the PLL VCO (source / m * n) at 560 MHz, outside the reference manual's 128-544 MHz"),
    ("nucleo-u575zi-q", lambda d: d["clock_tree"]["pll"].update(r=3), "field 'clock_tree.pll.r' is 3"),
    ("nucleo-u575zi-q", lambda d: d.update(clock_hz=4000000), "field 'clock_hz' says 4000000 Hz but its clock_tree gives 160000000"),
    ("nucleo-l4r5zi", lambda d: d["clock_tree"].update(boost=False), "above the 80 MHz of voltage scale 1"),
    ("nucleo-l4r5zi", lambda d: d.update(clock_hz=80000000), "field 'clock_hz' says 80000000 Hz but its clock_tree"),
    ("nucleo-l4r5zi", lambda d: d["clock_tree"]["pll"].update(r=3), "field 'clock_tree.pll.r' is 3"),
])
def test_an_impossible_clock_tree_is_refused_in_one_sentence(tmp_path, name, change, sentence):
    with pytest.raises(MCUDeployError) as err:
        load_board("edited", edited(tmp_path, name, change))
    message = str(err.value)
    assert message.startswith("board edited: ") and sentence in message and "\n" not in message, message
