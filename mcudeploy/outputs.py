"""Where the commands write: the output path checked before any long work, and an OSError while
writing told as one sentence naming the path (a full disk, a folder that is not writable)."""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from mcudeploy.errors import MCUDeployError


def check_output(path, folder: bool) -> Path:
    """Refuse an output `path` that cannot be written, before the work whose result it would hold:
    a folder (folder=True, made if missing) that is a file, or a file that is a folder, or a path
    whose nearest existing folder is not writable."""
    path = Path(path)
    if path.exists():
        if folder and not path.is_dir():
            raise MCUDeployError(f"{path} is a file, not a folder: give -o a folder (it is made if missing)")
        if not folder and path.is_dir():
            raise MCUDeployError(f"{path} is a folder, not a file: give -o the file to write")
    parent = path if folder else path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise MCUDeployError(f"cannot write {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise MCUDeployError(f"cannot write {path}: the folder {parent} is not writable")
    return path


@contextmanager
def writing(path):
    """An OSError raised in the block becomes one sentence naming the file it concerns (else `path`)."""
    try:
        yield
    except shutil.Error as exc:  # copytree: a list of (source, destination, reason)
        problems = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        where, why = (problems[0][1], problems[0][2]) if problems else (path, exc)
        raise MCUDeployError(f"cannot write {where}: {_first_line(why)}") from None
    except OSError as exc:
        where = exc.filename2 or exc.filename or path  # os.replace(temporary, final): the final name
        raise MCUDeployError(f"cannot write {where}: {exc.strerror or _first_line(exc)}") from None


def _first_line(value) -> str:
    text = str(value).strip().splitlines()
    return text[0].rstrip(".") if text else type(value).__name__
