"""A failed upload to a real board, told as what to check: the uploader's own words (OpenOCD's "open
failed", st-flash's "Couldn't find any ST-Link devices", PlatformIO's missing upload_port) are matched to
the common causes (no probe on USB, no permission to open it, a probe whose microcontroller does not
answer, another chip than the board's, the board's USB disk not found), each one sentence naming the
board and what to check. Output that matches none keeps the tool's last error line. A real board's serial
--port is checked before anything is built (check_serial_port)."""
from __future__ import annotations

import grp
import os
import re
from pathlib import Path
from typing import Optional

from mcudeploy.boards import Board
from mcudeploy.errors import MCUDeployError

# (cause, pattern), first match wins: a permission problem also prints "open failed", and st-flash finding no
# probe may go on to "Failed to connect to target"
CAUSES = (
    ("permission", r"LIBUSB_ERROR_ACCESS|Permission denied|insufficient permissions|Operation not permitted"),
    ("target", r"UNEXPECTED idcode|expected \d+ of \d+: 0x|unknown chip id|Unknown (device|flash)"),
    ("probe", r"open failed|No CMSIS-DAP device found|unable to find a matching CMSIS-DAP device|Couldn't find any "
              r"ST-Link|Found 0 stlink programmers|No ST-LINK detected|LIBUSB_ERROR_NO_DEVICE|LIBUSB_ERROR_NOT_FOUND|"
              r"LIBUSB_ERROR_NOT_SUPPORTED"),
    ("answer", r"unable to connect to the target|init mode failed|[Tt]arget voltage may be too low|Failed to connect "
               r"to target|Failed to enter SWD mode|timed out while waiting for target halted|couldn't halt target|"
               r"communication failure|Error connecting DP|[Tt]arget not examined"),
    ("disk", r"upload_port|could not find the board's disk|No such file or directory: '/media"),
)

PROBES = {"stlink": "ST-LINK", "cmsis-dap": "CMSIS-DAP", "mbed": "mbed"}


def _quote(output: str, pattern: str) -> str:
    """The uploader's line that told the cause, without its log prefix: `OpenOCD said "open failed"`."""
    for line in output.splitlines():
        if re.search(pattern, line):
            text = re.sub(r"^\s*(Error|Warn|ERROR|WARN|Info)\s*:?\s*", "", line.strip())
            text = re.sub(r"^\S*\s*(ERROR|WARN)\s+\S+:\s*", "", text)  # st-flash: "2024-... ERROR usb.c: ..."
            return text[:120].rstrip(" .")
    return ""


def explain_upload(output: str, board: Board) -> Optional[str]:
    """One sentence for the cause of a failed upload to ``board`` in the uploader's ``output``, or None."""
    protocol = board.upload.protocol if board.upload else ""
    probe = PROBES.get(protocol, protocol or "debug")
    where = f"cannot upload to board '{board.name}'"
    for cause, pattern in CAUSES:
        said = _quote(output, pattern)
        if not said:
            continue
        said = f' (the uploader said "{said}")'
        if cause == "permission" and protocol == "mbed":
            return f"{where}: no permission to write its USB disk{said}; check that the disk is mounted writable"
        if cause == "permission":
            return (f"{where}: no permission to open its {probe} probe over USB{said}; install your probe's udev "
                    f"rules (OpenOCD's 60-openocd.rules, or stlink-tools'), add your user to the plugdev group, log in "
                    f"again and replug the board")
        if cause == "target":
            target = board.upload.openocd_target if board.upload else ""
            return (f"{where}: the probe answered with another chip than the board's{said}; check that -b names "
                    f"the board that is plugged in{f' (OpenOCD target {target})' if target else ''}")
        if cause == "answer":
            return (f"{where}: its {probe} probe was found but the microcontroller did not answer{said}; check that "
                    f"the board is powered and the probe's jumpers to the target are on, then try again while holding "
                    f"the board's RESET button (a firmware in low-power mode or with its debug pins reused does not "
                    f"answer otherwise)")
        if cause == "probe":
            return (f"{where}: no {probe} probe was found on USB{said}; check the USB cable (a data cable, not a "
                    f"charge-only one) and that the board is plugged in, that no other program holds the probe (an "
                    f"IDE, st-util, another OpenOCD), and that `lsusb` lists it")
        if cause == "disk":
            return (f"{where}: its USB disk was not found{said}; check that the board is plugged in and its disk is "
                    f"mounted, or set upload.port in boards/{board.name}.json to its mount point")
    return None


def serial_ports() -> list[str]:
    """The serial ports a board's USB link shows up as on Linux."""
    return sorted(str(p) for pattern in ("ttyACM*", "ttyUSB*") for p in Path("/dev").glob(pattern))


def check_serial_port(board: Board, port: str) -> None:
    """A real board's --port (a device path; URLs are left to the transport) exists and may be opened:
    else one sentence naming the board and the port, and what to check."""
    if not port or "://" in port:
        return
    where = f"board '{board.name}': the serial port {port}"
    if not os.path.exists(port):
        known = serial_ports()
        seen = f"serial ports here: {', '.join(known)}" if known else "no serial port is here: is the board plugged in?"
        raise MCUDeployError(f"{where} does not exist ({seen})")
    if not os.access(port, os.R_OK | os.W_OK):
        try:
            group = grp.getgrgid(os.stat(port).st_gid).gr_name
        except (KeyError, OSError):
            group = "dialout"
        raise MCUDeployError(f"{where} may not be opened by this user; add it to the {group} group "
                             f"(sudo usermod -aG {group} $USER) and log in again")
