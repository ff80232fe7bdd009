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
            assert b.upload.openocd_target or b.upload.protocol == "custom", b.name
    assert boards["stm32"].alias_of == "nucleo-f446re" and boards["stm32"].uart == boards["nucleo-f446re"].uart


def edited(tmp_path: Path, change) -> Path:
    data = json.loads((boards_dir() / "qemu-m4.json").read_text())
    data["name"] = "edited"
    change(data)
    (tmp_path / "edited.json").write_text(json.dumps(data))
    return tmp_path


@pytest.mark.parametrize("change, sentence", [
    (lambda d: d.pop("uart"), "lacks the required field 'uart'"),
    (lambda d: d["uart"].update(driver="pl011"), "field 'uart.driver' should be one of cmsdk, stm32_usart"),
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
