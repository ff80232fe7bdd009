"""Issue 37: a failed upload says what to check, in one sentence naming the board (no probe, no permission, the
chip not answering, another chip, the board's USB disk), from the uploader's own words; a real board's serial
--port that is absent or not ours is refused before anything is built."""
from __future__ import annotations

import os

import pytest

from mcudeploy.boards import load_board
from mcudeploy.device import flash
from mcudeploy.device.upload_failure import check_serial_port, explain_upload
from mcudeploy.errors import MCUDeployError

OPENOCD = """Open On-Chip Debugger 0.12.0
Licensed under GNU GPL v2
Info : auto-selecting first available session transport "hla_swd". To override use 'transport select <transport>'.
Info : clock speed 2000 kHz
{lines}
in procedure 'program'
** OpenOCD init failed **
shutdown command invoked
*** [upload] Error 1
"""

CASES = {  # the uploader's lines -> words of the sentence
    "no probe": ("Error: open failed", 'no ST-LINK probe was found on USB (the uploader said "open failed"); check '
                                       'the USB cable'),
    "no permission": ("Error: libusb_open() failed with LIBUSB_ERROR_ACCESS\nError: open failed",
                      "no permission to open its ST-LINK probe over USB"),
    "not answering": ("Info : STLINK V2J37M26 (API v2) VID:PID 0483:374B\nInfo : Target voltage: 0.003\n"
                      "Error: init mode failed (unable to connect to the target)",
                      "its ST-LINK probe was found but the microcontroller did not answer (the uploader said "
                      '"init mode failed (unable to connect to the target)"); check that the board is powered'),
    "another chip": ("Warn : UNEXPECTED idcode: 0x2ba01477\nError: expected 1 of 1: 0x6ba02477",
                     "the probe answered with another chip than the board's"),
    "st-flash, no probe": ("st-flash 1.7.0\n2024-01-01T00:00:00 WARN usb.c: Couldn't find any ST-Link devices",
                           'no ST-LINK probe was found on USB (the uploader said "Couldn\'t find any ST-Link '
                           'devices")'),
}


@pytest.mark.parametrize("case", CASES)
def test_openocd_and_st_flash_failures_are_told_as_what_to_check(case):
    lines, words = CASES[case]
    text = explain_upload(OPENOCD.format(lines=lines), load_board("nucleo-f446re"))
    assert text.startswith("cannot upload to board 'nucleo-f446re': ") and words in text, text
    assert "\n" not in text


def test_an_unknown_failure_is_left_to_the_tools_own_line():
    assert explain_upload(OPENOCD.format(lines="Error: something new"), load_board("nucleo-f446re")) is None


def test_a_real_boards_serial_port_is_checked_before_the_build(tmp_path):
    board = load_board("nucleo-f446re")
    with pytest.raises(MCUDeployError, match=r"^board 'nucleo-f446re': the serial port /dev/ttyNOPE9 does not exist "
                                             r"\((serial ports here: |no serial port is here)"):
        flash.flashable(board, "/dev/ttyNOPE9")
    if os.geteuid() != 0:  # root opens anything
        locked = tmp_path / "ttyACM7"
        locked.write_text("")
        locked.chmod(0)
        with pytest.raises(MCUDeployError, match=r"may not be opened by this user; add it to the \S+ group"):
            check_serial_port(board, str(locked))
    check_serial_port(board, "rfc2217://farm:4000")  # a URL is the transport's to open


# End to end (PlatformIO builds a project, a fake openocd fails the upload): tests/device/test_user_projects.py
