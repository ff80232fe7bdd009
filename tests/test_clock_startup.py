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
from tests.clock_fake import FAKES, SPIN, FakeF4, FakeH7, baud_of, build_startup, run_startup

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs the host's gcc")

BOARDS = [b for b in all_boards() if b.clock_tree is not None and not b.alias_of]
FLAGS = {"stm32f4": ("hsi", "pll", "od", "vos", "switch"), "stm32f7": ("hsi", "pll", "od", "vos", "switch"),
         "stm32h7": ("supply", "vos", "vos0", "hsi", "pll", "switch"), "stm32l4": ("hsi", "vos", "pll", "switch")}
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
    assert {"nucleo-f446re", "nucleo-f746zg", "nucleo-h743zi", "nucleo-l4r5zi"} <= {b.name for b in BOARDS}


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
    ("nucleo-l4r5zi", lambda d: d["clock_tree"].update(boost=False), "above the 80 MHz of voltage scale 1"),
    ("nucleo-l4r5zi", lambda d: d.update(clock_hz=80000000), "field 'clock_hz' says 80000000 Hz but its clock_tree"),
    ("nucleo-l4r5zi", lambda d: d["clock_tree"]["pll"].update(r=3), "field 'clock_tree.pll.r' is 3"),
])
def test_an_impossible_clock_tree_is_refused_in_one_sentence(tmp_path, name, change, sentence):
    with pytest.raises(MCUDeployError) as err:
        load_board("edited", edited(tmp_path, name, change))
    message = str(err.value)
    assert message.startswith("board edited: ") and sentence in message and "\n" not in message, message
