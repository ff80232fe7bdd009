"""Board files are checked once, against boards/board.schema.json, and every wrong field is named."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcudeploy.boards import SCHEMA, all_boards, board_names, load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.resources import boards_dir
from mcudeploy.schema import problems


def test_every_shipped_board_meets_the_schema_and_loads():
    schema = json.loads((boards_dir() / SCHEMA).read_text())
    for name in board_names():
        data = json.loads((boards_dir() / f"{name}.json").read_text())
        if "alias_of" not in data:
            assert problems(data, schema) == [], name
    boards = {b.name: b for b in all_boards()}
    assert "board" not in boards and "board.schema" not in boards  # the schema is no board
    for b in boards.values():
        if b.has_firmware:
            assert b.uart and b.timer and b.upload and b.cpu_flags, b.name
            assert (Path(__file__).parents[1] / "firmware" / "runtime" / f"uart_{b.uart.driver}.c").is_file()
            assert (Path(__file__).parents[1] / "firmware" / "runtime" / f"timer_{b.timer.driver}.c").is_file()
            if b.dma_engine:
                assert (Path(__file__).parents[1] / "firmware" / "runtime" / f"dma_{b.dma_engine.driver}.c").is_file()
        if b.kind == "qemu":
            assert b.qemu.machine
        if b.kind == "hardware":  # a board fact, not a table in the code; "custom": built, not flashed by mcudeploy
            assert b.upload.openocd_target or b.upload.protocol in ("custom", "picotool", "jlink"), b.name
    assert boards["stm32"].alias_of == "nucleo-f446re" and boards["stm32"].uart == boards["nucleo-f446re"].uart


def edited(tmp_path: Path, change) -> Path:
    data = json.loads((boards_dir() / "qemu-m4.json").read_text())
    data["name"] = "edited"
    change(data)
    (tmp_path / "edited.json").write_text(json.dumps(data))
    return tmp_path


@pytest.mark.parametrize("change, sentence", [
    (lambda d: d.pop("uart"), "lacks the required field 'uart'"),
    (lambda d: d["uart"].update(driver="pl022"), "field 'uart.driver' should be one of cmsdk, stm32_usart"),
    (lambda d: d["timer"].update(hz="fast"), "field 'timer.hz' should be an integer, not 'fast'"),
    (lambda d: d["regions"][0].update(size=-4), "field 'regions[0].size' is -4, below its least 1"),
    (lambda d: d["uart"].update(base="0xZZ"), "field 'uart.base' is '0xZZ', which is not a number"),
    (lambda d: d.update(clocks=1), "has a field 'clocks' that mcudeploy does not know"),
    (lambda d: d["qemu"].pop("machine"), "lacks the required field 'qemu.machine'"),
    (lambda d: d.update(kind="fpga"), "field 'kind' should be one of host, qemu, hardware, not 'fpga'"),
    (lambda d: d.update(dma_engine={"driver": "pl330", "base": 0}), "field 'dma_engine.driver' should be one of pl080"),
    (lambda d: d.update(dma_engine={"driver": "pl080", "base": 0, "reaches": ["tcm"]}),
     "field 'dma_engine.reaches' names 'tcm', which is not one of the board's regions (sram, psram)"),
    (lambda d: d.update(arch="riscv"), "arch 'riscv' needs a field 'toolchain' (the Arm compiler is the default)"),
    (lambda d: d.update(arch="riscv", toolchain={"cc": "riscv64-unknown-elf-gcc", "packages": "p"}),
     "field 'uart.irq' must be -1 on a board of arch 'riscv' (its firmware polls the UART)"),
    (lambda d: d.update(arch="mips"), "field 'arch' should be one of arm, riscv, not 'mips'"),
])
def test_a_wrong_field_is_named_in_one_sentence(tmp_path, change, sentence):
    with pytest.raises(MCUDeployError) as err:
        load_board("edited", edited(tmp_path, change))
    assert sentence in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(f"board file {tmp_path / 'edited.json'}: ")


def test_the_risc_v_board_names_its_compiler_emulator_and_runtime():
    """qemu-rv32's toolchain, emulator and architecture are its data; an Arm board keeps the defaults."""
    rv, m3 = load_board("qemu-rv32"), load_board("qemu-m3")
    assert (rv.arch, rv.toolchain.cc, rv.qemu.binary, rv.qemu.package) == (
        "riscv", "riscv64-unknown-elf-gcc", "qemu-system-riscv32", "qemu-system-misc")
    assert "--specs=picolibc.specs" in rv.toolchain.ldflags and rv.uart.reg_shift == 0 and rv.uart.irq == -1
    assert (m3.arch, m3.toolchain.cc, m3.qemu.binary) == ("arm", "arm-none-eabi-gcc", "qemu-system-arm")
    assert m3.toolchain.ldflags == ("-nostartfiles", "--specs=nano.specs")


def test_reset_wait_states_are_refused_beside_a_clock_tree(tmp_path):
    """flash_data.wait_states is the flash latency of a board at its reset clock; a clock tree sets its own."""
    data = json.loads((boards_dir() / "nucleo-l4r5zi.json").read_text())
    data["name"] = "edited"
    data["flash_data"]["wait_states"] = 0
    (tmp_path / "edited.json").write_text(json.dumps(data))
    with pytest.raises(MCUDeployError, match=r"^board edited: flash_data.wait_states is for a board at its reset "
                                             r"clock; this board's clock_tree sets"):
        load_board("edited", tmp_path)


NEW_BOARDS = ("pico", "pico2", "nano33ble", "hifive1-revb", "microbit", "microbit-v2")


@pytest.mark.parametrize("name", NEW_BOARDS)
def test_the_boards_tinyml_users_start_from_load_and_say_they_have_not_run_on_silicon(name):
    board = load_board(name)
    assert board.kind == "hardware" and not board.silicon and board.datasheet and board.notes
    assert board.upload.protocol in ("picotool", "bossac", "jlink", "mbed")


def test_mcudeploy_boards_marks_the_boards_not_yet_run_on_silicon(capsys):
    from mcudeploy.cli import main

    assert main(["boards"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    for name in NEW_BOARDS:
        assert lines[name].endswith("[not yet run on silicon]"), name
    assert "silicon" not in lines["nucleo-f446re"]


@pytest.mark.parametrize("name, origin, flash, sram", [
    # the data sheets' memory maps (each board file names its own)
    ("pico", 0x10000000, 2 * 1024 * 1024, 264 * 1024),  # boot2's 256 bytes first, then the vectors
    ("pico2", 0x10000000, 4 * 1024 * 1024, 520 * 1024),
    ("nano33ble", 0x10000, 1024 * 1024 - 0x10000, 256 * 1024),  # after Arduino's bootloader
    ("hifive1-revb", 0x20010000, 4 * 1024 * 1024 - 0x10000, 16 * 1024),  # after the boot loader, in the DTIM
    ("microbit", 0, 256 * 1024, 16 * 1024),
    ("microbit-v2", 0, 512 * 1024, 128 * 1024),
])
def test_the_new_boards_memories(name, origin, flash, sram):
    board = load_board(name)
    assert (board.flash_origin, board.flash_bytes, board.regions[0].size) == (origin, flash, sram)


def test_pl011_and_sifive_divisors():
    from mcudeploy.device.build import uart_brr

    # PL011: 12 MHz / (16 * 115200) = 6.5104: IBRD 6, FBRD round(0.5104 * 64) = 33, as 6 * 64 + 33 = 417
    assert uart_brr(load_board("pico"))[0] == 417
    # SiFive: 16 MHz / 115200 = 138.9, div = 139 - 1
    assert uart_brr(load_board("hifive1-revb"))[0] == 138


def test_an_init_write_may_wait_for_a_flag():
    writes = load_board("pico").uart.init
    stable = next(w for w in writes if w.addr == 0x40024004)
    assert stable.wait == 0x80000000 and stable.set == 0 and stable.clear == 0


def test_uf2_blocks_carry_the_address_and_family():
    import struct

    from mcudeploy.device.uf2 import uf2_bytes

    data = uf2_bytes(bytes(range(256)) * 2 + b"x", 0x10000100, 0xE48BFF56)
    assert len(data) == 3 * 512
    head = struct.unpack("<8I", data[512:544])
    assert head == (0x0A324655, 0x9E5D5157, 0x2000, 0x10000200, 256, 1, 3, 0xE48BFF56)
    assert data[544:800] == bytes(range(256)) and struct.unpack("<I", data[1020:1024])[0] == 0x0AB16F30


def test_estimate_for_a_core_without_timings_is_refused_in_one_sentence():
    """Every real board's core now has timings (the Cortex-M0 and M0+ in tests/test_estimate.py); a core without
    them, here the micro:bit made a Cortex-M23, is refused before the emulated board's core is looked at."""
    import dataclasses

    from mcudeploy.estimate.cycles import target_for

    m23 = dataclasses.replace(load_board("microbit"), core="cortex-m23")
    with pytest.raises(MCUDeployError, match=r"^no instruction timings are modelled for the cortex-m23 of board "
                                             r"microbit \(mcudeploy/estimate/cores.py\), so no cycles can be "
                                             r"estimated for it$"):
        target_for(m23, load_board("qemu-m0"))


@pytest.mark.parametrize("name, emulated, clock", [("nano33ble", "qemu-m4", 64e6), ("microbit-v2", "qemu-m4", 64e6),
                                                   ("pico2", "qemu-an505", 12e6)])
def test_estimate_targets_of_the_new_m4_and_m33_boards(name, emulated, clock):
    from mcudeploy.estimate.cycles import target_for

    t = target_for(load_board(name), load_board(emulated))
    assert t.clock_hz == clock and t.wait_states == 0 and not t.flash_cache


def test_the_user_guides_own_board_example_loads(tmp_path):
    import re
    import shutil

    guide = (Path(__file__).parents[1] / "docs" / "user-guide.md").read_text()
    section = guide[guide.index("### A board of your own, as data"):]
    example = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    shutil.copy(boards_dir() / SCHEMA, tmp_path / SCHEMA)
    (tmp_path / f"{example['name']}.json").write_text(json.dumps(example))
    board = load_board(example["name"], tmp_path)
    assert board.uart.driver == "nrf_uarte" and not board.silicon


def test_the_rp2040_boot2_is_its_assembly_with_the_boot_roms_crc():
    import shutil

    from mcudeploy.device import boot2
    from mcudeploy.resources import firmware_dir

    assert boot2.crc32_mpeg2(b"123456789") == 0x0376E6E7  # CRC-32/MPEG-2's check value
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs arm-none-eabi-gcc")
    image = boot2.assemble(firmware_dir() / boot2.SOURCE)
    assert int.from_bytes(image[252:], "little") == boot2.crc32_mpeg2(image[:252])
    assert (firmware_dir() / boot2.TARGET).read_text() == boot2.c_source(image)  # regenerated, not edited


@pytest.mark.parametrize("change, message", [
    ({"icache_bytes": 12288}, r"^board hifive1-x: xip.icache_bytes \(12288\) must be a power of two of sets of "
                              r"xip.icache_ways \(2\) lines of xip.line_bytes \(64\), itself a power of two$"),
    ({"fastest_sck_cycles": 16}, r"^board hifive1-x: xip.fastest_sck_cycles \(16\) is more than xip.sck_cycles \(8\): "
                                 r"the fastest setting cannot be slower$"),
])
def test_a_wrong_xip_is_named_in_one_sentence(tmp_path, change, message):
    """The serial flash a board runs in place from (the HiFive1's xip) is checked when the board loads."""
    import shutil

    data = json.loads((boards_dir() / "hifive1-revb.json").read_text())
    data["name"] = "hifive1-x"
    data["xip"].update(change)
    shutil.copy(boards_dir() / SCHEMA, tmp_path / SCHEMA)
    (tmp_path / "hifive1-x.json").write_text(json.dumps(data))
    with pytest.raises(MCUDeployError, match=message):
        load_board("hifive1-x", tmp_path)
