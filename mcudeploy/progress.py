"""A progress bar on stderr for work counted in steps (``run --dataset``'s samples): one line redrawn in place
where the stream is a terminal, at most every REDRAW_S seconds, and cleared when the work is done; where it is
not (a log file, a pipe, a test) it draws nothing, so logs hold only the results."""
from __future__ import annotations

import sys
import threading
import time
from typing import Optional, TextIO

REDRAW_S = 0.1
WIDTH = 28  # characters of the bar itself


class Bar:
    """``total`` steps of work, ``label`` saying what is being done (changed with ``stage``); ``advance`` may be
    called from several threads (a pool of boards)."""

    def __init__(self, total: int, label: str = "", stream: Optional[TextIO] = None):
        self.total, self.label, self.done = max(total, 1), label, 0
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._drawn_at = 0.0
        self._width = 0

    def stage(self, label: str) -> None:
        with self._lock:
            self.label = label
            self._draw(force=True)

    def advance(self, steps: int = 1) -> None:
        with self._lock:
            self.done = min(self.total, self.done + steps)
            self._draw(force=self.done == self.total)

    def text(self) -> str:
        filled = WIDTH * self.done // self.total
        return f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total}"

    def close(self) -> None:
        with self._lock:
            if self.live and self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
            self._width = 0

    def _draw(self, force: bool) -> None:
        now = time.monotonic()
        if not self.live or (not force and now - self._drawn_at < REDRAW_S):
            return
        line = self.text()
        self.stream.write("\r" + line + " " * max(0, self._width - len(line)))
        self.stream.flush()
        self._drawn_at, self._width = now, max(self._width, len(line))

    def __enter__(self) -> "Bar":
        self._draw(force=True)
        return self

    def __exit__(self, *exc) -> None:
        self.close()
