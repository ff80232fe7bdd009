"""A TCP relay between two emulated chips' joined link UARTs that damages one link frame (tests).

``LinkProxy`` is run_chain's ``relay``: given chip k's down-link port it connects there, listens on a
port of its own for chip k+1's up link, and passes the bytes on, cut into link frames (the header of
mcudeploy/stages/chain.py gives each frame's length). Frame ``index`` gets ``fault``: ``flip`` one bit
of its payload, or ``drop`` it and every byte after it (the link falls silent).
"""
from __future__ import annotations

import socket
import threading

from mcudeploy.stages.chain import HEADER


class LinkProxy:
    def __init__(self, fault: str, index: int = 0):
        self.fault, self.index = fault, index
        self.frames = 0
        self._sockets: list[socket.socket] = []

    def __call__(self, k: int, port: int) -> int:
        upstream = socket.create_connection(("127.0.0.1", port))
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        self._sockets += [upstream, server]
        threading.Thread(target=self._pump, args=(upstream, server), daemon=True).start()
        return server.getsockname()[1]

    def _pump(self, upstream: socket.socket, server: socket.socket) -> None:
        downstream, _ = server.accept()
        self._sockets.append(downstream)
        data, dead = b"", False
        try:
            while True:
                chunk = upstream.recv(65536)
                if not chunk:
                    return
                data += chunk
                while len(data) >= HEADER.size:
                    size = HEADER.size + HEADER.unpack_from(data)[4] + 4
                    if len(data) < size:
                        break
                    frame, data = bytearray(data[:size]), data[size:]
                    if self.frames == self.index and self.fault == "flip":
                        frame[HEADER.size] ^= 0x10
                    dead = dead or (self.frames == self.index and self.fault == "drop")
                    self.frames += 1
                    if not dead:
                        downstream.sendall(bytes(frame))
        except OSError:
            return

    def close(self) -> None:
        for s in self._sockets:
            s.close()
