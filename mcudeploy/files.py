"""Files written so that an interruption never leaves one looking complete: the bytes go to a
temporary name beside the target and are renamed over it in one step (a rename within a folder
is atomic on POSIX), so a reader sees the old file or the new one, never half of one."""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path
from typing import Iterator, Union


def write_atomic(path: Union[str, os.PathLike], data: Union[str, bytes]) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file and a rename."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextlib.contextmanager
def locked(path: Union[str, os.PathLike]) -> Iterator[None]:
    """Hold an exclusive lock on ``path``.lock while the block runs: writers that read a file, merge
    and write it back (the timing cache) do so one at a time, across processes."""
    lock = Path(f"{os.fspath(path)}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
