"""The start-up's fallback end to end: QEMU's netduinoplus2 (STM32F405) does not model the RCC (its reads
give 0), so a clock tree on qemu-stm32f4 never sees HSI ready; the firmware must give up within its bound,
run on at the reset clock, and say so in IDENTIFY."""
from __future__ import annotations

import json

import pytest

from mcudeploy.boards import load_board
from mcudeploy.device import protocol as P
from mcudeploy.device.build import build_firmware
from mcudeploy.device.qemu import QemuBoard
from mcudeploy.device.session import Session
from mcudeploy.resources import boards_dir

pytestmark = pytest.mark.qemu


def test_a_clock_tree_whose_ready_flag_never_comes_runs_on_at_the_reset_clock_and_says_so(tmp_path, need_qemu):
    data = json.loads((boards_dir() / "qemu-stm32f4.json").read_text())
    data["family"] = "stm32f4"
    data["clock_tree"] = {"source": "hsi", "pll": {"m": 8, "n": 168, "p": 2, "q": 7}, "ahb_div": 1,
                          "apb_divs": {"apb1": 4, "apb2": 2}, "voltage_scale": 1, "flash_wait_states": 5,
                          "uart_bus": "apb2", "reset_hz": 16_000_000}
    data["uart"]["clock_hz"] = 84_000_000  # APB2 of a 168 MHz tree
    (tmp_path / "qemu-stm32f4.json").write_text(json.dumps(data))
    board = load_board("qemu-stm32f4", tmp_path)
    fw = build_firmware(board, tmp_path / "fw")
    with QemuBoard(board, fw.elf) as emulator:
        s = Session(emulator.start(), board.name)
        info = s.open(boot_wait=5.0)
        assert (info.core_hz, info.clock_status, info.clock_note) == (16_000_000, P.CLOCK_FALLBACK,
                                                                      "HSI ready (RCC_CR.HSIRDY)")
        assert "NOT applied" in info.clock_line()
        assert s.echo(b"still serving") == b"still serving"
        s.exit(0)
        assert emulator.stop() == 0
