"""Files written so that an interruption never leaves one looking complete: the bytes go to a
temporary name beside the target and are renamed over it in one step (a rename within a folder
is atomic on POSIX), so a reader sees the old file or the new one, never half of one. The files and
folders get the mode the umask gives (or the one the file had), not the temporary's 0600 or 0700.

The commands' output paths are checked before any long work (check_output), and an OSError while
writing (a full disk, a permission) is told as one sentence naming the path (writing)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator, Union

from mcudeploy.errors import MCUDeployError


def write_atomic(path: Union[str, os.PathLike], data: Union[str, bytes]) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file and a rename."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:  # mkstemp makes it 0600: the file gets the mode it had, else what the umask gives (0644 typically)
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            mode = 0o666 & ~umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def fresh_dir(parent: Path, prefix: str) -> Path:
    """A new empty folder in ``parent`` under a temporary name, with the mode the umask gives a folder
    (mkdtemp makes it 0700), to be filled and renamed into place."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    path.chmod(0o777 & ~umask())
    return path


def copy_tree(source: Path, target: Path) -> None:
    """Copy the folder ``source`` to ``target`` (made), files and folders with the modes the umask gives
    (shutil.copytree would give them the source's: a read-only installation's 0444)."""
    for folder, _, names in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copyfile(Path(folder) / name, into / name)


def umask() -> int:
    """The process's umask, read without changing it where Linux tells it (/proc), else by setting it back."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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


def read_model(path: Union[str, os.PathLike]) -> tuple[Path, bytes]:
    """The model file at ``path`` (as a Path) and its bytes; one sentence where it is missing or
    cannot be read (the ONNX and TFLite importers' first step)."""
    path = Path(path)
    if not path.is_file():
        raise MCUDeployError(f"{path}: no such model file")
    try:
        return path, path.read_bytes()
    except OSError as exc:
        raise MCUDeployError(f"cannot read {path}: {exc.strerror or _first_line(exc)}") from None


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


@contextlib.contextmanager
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
