"""A TCP relay between two emulated chips' joined link UARTs that damages link frames and wants (tests).

``LinkProxy`` is run_chain's ``relay``: given chip k's down-link port it connects there, listens on a
port of its own for chip k+1's up link, and passes the bytes on both ways: link frames down, cut by the
header of mcudeploy/target/chain.py, and the receiver's 12-byte wants up (firmware/runtime/link.c).

``faults`` maps the index of a frame (in the order they pass, resends counted) to what happens to it:
``flip`` one bit (``bit``: which, else one of the payload's), ``drop`` it, ``duplicate`` it, ``late``
(held ``late_s`` seconds while the link goes on, then delivered), ``silent`` (it and every byte after it
dropped: the link falls silent); ``want_faults`` the same for the wants, by their index (``flip``,
``drop``). ``injected`` counts the faults that happened.
"""
from __future__ import annotations

import socket
import threading
from typing import Mapping, Optional

from mcudeploy.target.chain import HEADER

WANT = 12


class LinkProxy:
    def __init__(self, faults: Optional[Mapping[int, str]] = None, want_faults: Optional[Mapping[int, str]] = None,
                 bit: Optional[int] = None, late_s: float = 1.0):
        self.faults, self.want_faults = dict(faults or {}), dict(want_faults or {})
        self.bit, self.late_s = bit, late_s
        self.frames = 0
        self.wants = 0
        self.injected = 0
        self._sockets: list[socket.socket] = []
        self._send_lock = threading.Lock()
        self._silent = False

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
        threading.Thread(target=self._pump_wants, args=(downstream, upstream), daemon=True).start()
        data = b""
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
                    self._pass(downstream, frame, self.faults.get(self.frames))
                    self.frames += 1
        except OSError:
            return

    def _pass(self, to: socket.socket, frame: bytearray, fault: Optional[str]) -> None:
        self.injected += fault is not None and not self._silent
        if fault == "silent":
            self._silent = True
        if self._silent or fault == "drop":
            return
        if fault == "flip":
            bit = self.bit if self.bit is not None else 8 * HEADER.size + (len(frame) - HEADER.size - 4) * 4
            frame[bit // 8 % len(frame)] ^= 1 << bit % 8
        if fault == "late":
            held = bytes(frame)
            threading.Timer(self.late_s, self._send, args=(to, held)).start()
            return
        self._send(to, bytes(frame) * (2 if fault == "duplicate" else 1))

    def _send(self, to: socket.socket, data: bytes) -> None:
        try:
            with self._send_lock:
                to.sendall(data)
        except OSError:
            pass

    def _pump_wants(self, downstream: socket.socket, upstream: socket.socket) -> None:
        data = b""
        try:
            while True:
                chunk = downstream.recv(4096)
                if not chunk:
                    return
                data += chunk
                while len(data) >= WANT:
                    want, data = bytearray(data[:WANT]), data[WANT:]
                    fault = self.want_faults.get(self.wants)
                    self.wants += 1
                    self.injected += fault is not None
                    if fault == "drop":
                        continue
                    if fault == "flip":
                        want[6] ^= 0x01
                    upstream.sendall(bytes(want))
        except OSError:
            return

    def close(self) -> None:
        for s in self._sockets:
            s.close()
