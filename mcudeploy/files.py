"""Files written so that an interruption never leaves one looking complete: the bytes go to a
temporary name beside the target and are renamed over it in one step (a rename within a folder
is atomic on POSIX), so a reader sees the old file or the new one, never half of one. The files and
folders get the mode the umask gives (or the one the file had), not the temporary's 0600 or 0700.

The bytes are flushed to the disk (fsync) before the rename, and the folder after it, so a crash of
the machine keeps the order of the writes too.

The commands' output paths are checked before any long work (check_output), and an OSError while
writing (a full disk, a permission) is told as one sentence naming the path (writing). A folder a
command writes has one writer at a time (output_lock)."""
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


LOCK_FILE = ".mcudeploy.lock"
TEMPORARY = ".tmp"  # the suffix of what write_atomic and make_folder make: ".NAME.XXXXXXXX.tmp"


def umask() -> int:
    """The process's umask: from /proc/self/status on Linux (reading leaves it alone, for the other threads),
    else by setting it and setting it back."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Union[str, os.PathLike], data: Union[str, bytes]) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file, fsync and a rename."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY)
    try:
        try:  # mkstemp makes it 0600: the file gets the mode it had, else what the umask gives (0644 typically)
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            mode = 0o666 & ~umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not exc.filename:  # a write or fsync that failed: name the file
            raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from None
        raise
    sync_folder(path.parent)
    return path


def copy_tree(source: Path, target: Path) -> None:
    """Copy the folder ``source`` to ``target`` (made), files and folders with the modes the umask gives
    (shutil.copytree would give them the source's: a read-only installation's 0444)."""
    for folder, _, names in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copyfile(Path(folder) / name, into / name)


def sync_folder(folder: Union[str, os.PathLike]) -> None:
    """fsync a folder, so the renames and removals in it reach the disk (where the system allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder: the rename is still atomic
        pass
    finally:
        os.close(fd)


def _remove_leftovers(folder: Path) -> None:
    """The temporaries a writer killed mid-write left in ``folder`` (none is in use: the caller holds its lock)."""
    for path in folder.glob(f".*{TEMPORARY}"):
        with contextlib.suppress(OSError):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def make_folder(prefix: str, parent: Union[str, os.PathLike]) -> Path:
    """A new folder in ``parent`` (tempfile.mkdtemp's unique name) with the mode an ordinary mkdir
    gives (0777 less the umask), not mkdtemp's 0700: one that is renamed into place as output."""
    fresh = Path(tempfile.mkdtemp(prefix=prefix, suffix=TEMPORARY, dir=parent))
    os.chmod(fresh, 0o777 & ~umask())
    return fresh


_HELD: set = set()  # the descriptors of the output locks this process holds


def _drop_held_locks() -> None:
    """In a forked child (the tuner's compile workers): close the parent's lock descriptors, so that a
    child outliving a killed parent does not keep its folder locked (flock holds while any copy is open)."""
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_drop_held_locks)


@contextlib.contextmanager
def output_lock(folder: Union[str, os.PathLike], command: str) -> Iterator[Path]:
    """Hold ``folder`` (made if missing) for one writer: an exclusive flock on FOLDER/.mcudeploy.lock
    for the block. The kernel releases it when the process ends however it ends (kill -9 too), so a
    dead writer never leaves it held; the file keeps the holder's pid and command for the refusal."""
    folder = Path(folder)
    created = not folder.exists()
    with writing(folder):
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").split()
            who = f" (pid {holder[0]}, mcudeploy {' '.join(holder[1:])})" if holder and holder[0].isdigit() else ""
            raise MCUDeployError(f"{folder} is being written by another mcudeploy command{who}: wait for it to "
                                 f"finish, or give another output folder") from None
        _HELD.add(fd)
        with writing(folder / LOCK_FILE):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {command}\n".encode(), 0)
        _remove_leftovers(folder)
        yield folder
    finally:
        _HELD.discard(fd)
        if created and [p.name for p in folder.iterdir()] == [LOCK_FILE]:  # a command that wrote nothing leaves
            with contextlib.suppress(OSError):                              # no folder behind (a fit refused)
                (folder / LOCK_FILE).unlink()
                folder.rmdir()
        os.close(fd)  # closing the descriptor releases the lock


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
