"""A firmware as UF2 (Microsoft's USB flashing format, github.com/microsoft/uf2): what a board whose boot ROM
shows a USB drive (the Raspberry Pi RP2040's RPI-RP2, the RP2350's) takes by a copy. 512-byte blocks, each 256
bytes of the image at their flash address, with the chip's family ID (flag 0x2000) so the boot ROM refuses
another chip's file."""
from __future__ import annotations

import struct
from pathlib import Path

MAGIC_START = (0x0A324655, 0x9E5D5157)
MAGIC_END = 0x0AB16F30
FAMILY_ID_PRESENT = 0x00002000
PAYLOAD = 256


def uf2_bytes(image: bytes, origin: int, family: int) -> bytes:
    """``image`` (a flat binary that starts at flash address ``origin``, a multiple of 256) as UF2 blocks."""
    if origin % PAYLOAD:
        raise ValueError(f"a UF2 image starts on a 256-byte boundary, not at 0x{origin:08X}")
    chunks = [image[i:i + PAYLOAD] for i in range(0, len(image), PAYLOAD)] or [b""]
    blocks = []
    for n, chunk in enumerate(chunks):
        head = struct.pack("<8I", *MAGIC_START, FAMILY_ID_PRESENT, origin + n * PAYLOAD, PAYLOAD, n, len(chunks),
                           family)
        blocks.append(head + chunk.ljust(476, b"\0") + struct.pack("<I", MAGIC_END))
    return b"".join(blocks)


def write_uf2(binary: Path, origin: int, family: int) -> Path:
    """firmware.uf2 beside ``binary`` (firmware.bin, from ``origin``)."""
    out = binary.with_suffix(".uf2")
    out.write_bytes(uf2_bytes(binary.read_bytes(), origin, family))
    return out
