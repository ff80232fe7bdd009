"""An RFC 2217 server in front of a serial port: how a farm exports an emulated board's UART.

labgrid exports a board's serial line as a NetworkSerialPort, which clients open as
``rfc2217://HOST:PORT`` (ser2net serves that for a real /dev/tty on the exporter). An emulated
board's UART is a TCP socket of QEMU (``socket://127.0.0.1:PORT``, mcudeploy/device/emulator.py),
so ``python -m mcudeploy.device.bridge --listen HOST:PORT socket://127.0.0.1:QPORT`` stands where
ser2net would: it takes one client at a time, opens the port behind it for that client (QEMU
takes a new connection after the last one hung up, so a board flashed again is reached the same
way) and moves bytes both ways through pyserial's RFC 2217 PortManager, which also answers the
client's line settings. It is the shape of pyserial's examples/rfc2217_server.py.
"""
from __future__ import annotations

import argparse
import logging
import select
import socket
import sys
from typing import Optional, Sequence

import serial
import serial.rfc2217

log = logging.getLogger(__name__)


def _serve_client(client: socket.socket, target: str) -> None:
    port = serial.serial_for_url(target, timeout=0)
    try:
        manager = serial.rfc2217.PortManager(port, _Writer(client))
        while True:
            ready, _, _ = select.select([client, port.fileno()] if hasattr(port, "fileno") else [client], [], [], 0.05)
            if client in ready:
                data = client.recv(4096)
                if not data:
                    return
                port.write(b"".join(manager.filter(data)))
            data = port.read(4096)
            if data:
                client.sendall(b"".join(manager.escape(data)))
    finally:
        port.close()


class _Writer:
    """What PortManager writes its RFC 2217 answers to: the client's socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)


def serve(listen: str, target: str, once: bool = False) -> None:
    host, _, port = listen.rpartition(":")
    with socket.create_server((host or "127.0.0.1", int(port)), reuse_port=False) as server:
        log.info("RFC 2217 on %s for %s", listen, target)
        while True:
            client, address = server.accept()
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            log.info("client %s", address)
            try:
                _serve_client(client, target)
            except (OSError, serial.SerialException) as exc:
                log.info("client %s: %s", address, exc)
            finally:
                client.close()
            if once:
                return


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mcudeploy.device.bridge",
                                description="serve a serial port (a pyserial URL) as RFC 2217")
    p.add_argument("--listen", required=True, metavar="HOST:PORT")
    p.add_argument("target", help="the port behind it, e.g. socket://127.0.0.1:QPORT (an emulator's UART)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        serve(args.listen, args.target)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
