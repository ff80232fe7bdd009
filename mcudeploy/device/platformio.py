"""Build and upload firmware with PlatformIO, with no access to PlatformIO's registry.

``flash(model, board)`` writes a PlatformIO project (platformio.ini, a board manifest made from
``boards/<name>.json``, and the build spec of ``mcudeploy.device.build``), runs ``pio run``,
reports the firmware's SRAM and flash use against the board's capacity, refuses a firmware
that does not fit, then runs ``pio run -t upload``.

Offline means two things. The project names the platform shipped in ``firmware/platformio``
(``platform = symlink://…``; with ``file://`` PlatformIO would copy it once and keep using that
copy after mcudeploy changes), which compiles with arm-none-eabi-gcc from PATH and asks for no
package. And PlatformIO's core fetches one package of its own before any build, the
SCons tool: ``prepare_core`` installs it into ``$PLATFORMIO_CORE_DIR/packages/tool-scons``
from the PyPI ``scons`` wheel (or an installed ``SCons`` of the same version), labelled with
the version and owner PlatformIO looks for, so PlatformIO finds it and never downloads it.

Emulated boards upload with ``upload_protocol = custom``: the upload command is this module's
``emulate`` hook, which starts QEMU in the background with the board's UART on
``socket://127.0.0.1:PORT``, connects once to take the firmware's BOOT frame and IDENTIFY it (as a
real board boots after its upload; this also proves the firmware serves) and records the emulator
under ``<mcudeploy cache>/emulators/<board>@<port>.json``. The emulator keeps running after
``flash`` returns, so ``--port socket://127.0.0.1:PORT`` reaches the measurer, connection after
connection. One emulator runs per port: flashing another port leaves it running (several boards
side by side), flashing its port again replaces it. It stops when the firmware exits (EXIT),
with ``stop_emulator`` (``mcudeploy flash -b BOARD --stop [--port URL | --all]``), or after
$MCUDEPLOY_EMULATOR_LIFETIME seconds (default an hour; an idle measurer sleeps until its UART
has a byte, so a forgotten emulator costs no CPU, but it holds its port and memory). Real boards upload through PlatformIO's usual means (OpenOCD or st-flash for
ST-LINK, a copy to the board's USB disk for mbed), and fail in one sentence when none is there.
"""
from __future__ import annotations

import argparse
import errno
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence
from urllib.parse import urlparse

from mcudeploy import interrupts
from mcudeploy.boards import Board, load_board
from mcudeploy.device import elfsize, qemu
from mcudeploy.device.host import BuildError, cache_dir
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import write_atomic
from mcudeploy.resources import firmware_dir

log = logging.getLogger(__name__)

BUILD_SPEC = "mcudeploy-build.json"
PLATFORM_SUBDIR = "platformio"
PIO_TIMEOUT_S = 900  # a cold build of every kernel takes well under a minute; this only stops a hang
EMULATOR_START_TIMEOUT_S = 15.0
EMULATOR_BOOT_WAIT_S = 5.0  # for the BOOT frame (it comes 45-85 ms after the connection; a lost one costs this)
PORT_ENV = "MCUDEPLOY_EMULATOR_PORT"
LIFETIME_ENV = "MCUDEPLOY_EMULATOR_LIFETIME"
DEFAULT_LIFETIME_S = 3600.0
OPENOCD_TARGETS = {"stm32f4": "stm32f4x", "stm32f7": "stm32f7x", "stm32h7": "stm32h7x", "stm32l4": "stm32l4x"}


# ---------------------------------------------------------------- the offline PlatformIO core


def core_dir() -> Path:
    """PlatformIO's core dir: $PLATFORMIO_CORE_DIR, else PlatformIO's default ~/.platformio."""
    return Path(os.environ.get("PLATFORMIO_CORE_DIR") or Path.home() / ".platformio").expanduser()


def _scons_requirement() -> str:
    """The tool-scons version the installed PlatformIO core asks for, e.g. '4.41101.0'."""
    try:
        from platformio.dependencies import get_core_dependencies
    except ImportError:
        raise MCUDeployError("flashing needs PlatformIO; install it with `pip install platformio`") from None
    return get_core_dependencies()["tool-scons"].lstrip("~^=<> ")


def scons_version_for(package_version: str) -> str:
    """PlatformIO spells SCons X.Y.Z as the package version X.(Y*100+Z).0: 4.41101.0 is SCons 4.11.1."""
    major, packed = package_version.split(".")[:2]
    return f"{major}.{int(packed) // 100 % 100}.{int(packed) % 100}"


def _package_manifest(path: Path) -> dict:
    try:
        return json.loads((path / "package.json").read_text())
    except (OSError, ValueError):
        return {}


def installed_scons(core: Path, requirement: str) -> Optional[Path]:
    """The tool-scons package PlatformIO would pick for ``requirement`` (same major.minor series), if any."""
    packages = core / "packages"
    series = requirement.split(".")[:2]
    for path in sorted(packages.glob("tool-scons*")) if packages.is_dir() else ():
        manifest = _package_manifest(path)
        version = str(manifest.get("version", "")).split(".")[:2]
        if (manifest.get("name") == "tool-scons" and version == series and (path / ".piopm").is_file()
                and (path / "scons.py").is_file()):
            return path
    return None


def scons_wheel(version: Optional[str] = None) -> Path:
    """The PyPI wheel of SCons ``version`` (default: the one PlatformIO asks for), fetched once into the cache."""
    version = version or scons_version_for(_scons_requirement())
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"scons-{version}-*.whl"))
    if not found:
        log.info("fetching the SCons %s wheel from PyPI for PlatformIO's tool-scons", version)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--dest", str(wheels), f"scons=={version}"], capture_output=True, text=True)
        found = sorted(wheels.glob(f"scons-{version}-*.whl"))
        if proc.returncode != 0 or not found:
            raise MCUDeployError(f"PlatformIO needs SCons {version} and pip could not download it from PyPI; "
                                 f"put scons-{version}-py3-none-any.whl into {wheels}")
    return found[-1]


def _scons_tree(version: str, work: Path) -> Path:
    """A folder holding the ``SCons`` package of this version: the installed one, else the wheel's."""
    try:
        if importlib.metadata.version("scons") == version:
            found = importlib.util.find_spec("SCons")
            if found and found.submodule_search_locations:
                return Path(list(found.submodule_search_locations)[0]).parent
    except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
        pass
    with zipfile.ZipFile(scons_wheel(version)) as zf:
        zf.extractall(work, [n for n in zf.namelist() if n.startswith("SCons/")])
    return work


def prepare_core(core: Optional[Path] = None) -> Path:
    """Make ``core`` (default: ``core_dir()``) ready for an offline ``pio run``; return the tool-scons dir.

    Idempotent; an existing tool-scons of the right series (made by us or by PlatformIO) is kept.
    """
    from mcudeploy.codegen.emit import BANNER, environment

    core = Path(core or core_dir())
    requirement = _scons_requirement()
    found = installed_scons(core, requirement)
    if found:
        return found
    version = scons_version_for(requirement)
    packages = core / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    target = packages / "tool-scons"
    if target.exists():  # another version, e.g. from an older PlatformIO: install beside it
        target = packages / f"tool-scons@{requirement}"
    tmp = Path(tempfile.mkdtemp(prefix="_mcud_tool_scons_", dir=packages))
    try:
        source = _scons_tree(version, tmp / "_wheel")
        shutil.copytree(source / "SCons", tmp / "SCons", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.rmtree(tmp / "_wheel", ignore_errors=True)
        script = environment().get_template("platformio/scons.py.j2").render(banner=BANNER, scons_version=version)
        (tmp / "scons.py").write_text(script)
        (tmp / "package.json").write_text(json.dumps({
            "name": "tool-scons", "version": requirement,
            "description": f"SCons {version} from PyPI, installed by mcudeploy for offline PlatformIO builds"},
            indent=1) + "\n")
        # PlatformIO matches core packages by owner: without "platformio" here it would download its own.
        (tmp / ".piopm").write_text(json.dumps({
            "type": "tool", "name": "tool-scons", "version": requirement,
            "spec": {"owner": "platformio", "id": None, "name": "tool-scons", "requirements": None, "uri": None}}))
        try:
            tmp.rename(target)
        except OSError:
            if not installed_scons(core, requirement):  # not a concurrent install that won: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("installed SCons %s as PlatformIO's tool-scons in %s", version, target)
    return installed_scons(core, requirement) or target


def pio_python_env() -> dict:
    """This environment, with this mcudeploy importable by the Python subprocesses we start."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


def pio_environment(core: Path) -> dict:
    """The environment for a ``pio`` subprocess: no telemetry, no upgrade check, this mcudeploy importable."""
    env = pio_python_env()
    env["PLATFORMIO_CORE_DIR"] = str(core)
    env["PLATFORMIO_DISABLE_UPGRADE_CHECK"] = "true"
    env["PLATFORMIO_SETTING_ENABLE_TELEMETRY"] = "no"
    env["PLATFORMIO_NO_ANSI"] = "true"
    return env


def run_pio(project: Path, targets: Sequence[str] = (), core: Optional[Path] = None,
            timeout: float = PIO_TIMEOUT_S, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """``pio run`` in ``project`` (its default environment) with the given targets; output is logged."""
    core = Path(core or core_dir())
    prepare_core(core)
    cmd = [sys.executable, "-m", "platformio", "run", "--project-dir", str(project)]
    for t in targets:
        cmd += ["--target", t]
    log.info("running %s", " ".join(cmd[2:]))
    with tempfile.TemporaryFile() as out:
        # a process group of its own: an interrupt or a timeout ends PlatformIO and whatever it started
        proc = subprocess.Popen(cmd, cwd=project, env={**pio_environment(core), **(env or {})},
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            interrupts.wait(proc, timeout)
        except subprocess.TimeoutExpired:
            _end_group(proc.pid)
            raise MCUDeployError(f"PlatformIO did not finish `pio run {' '.join(targets)}` within {timeout:.0f} s") \
                from None
        except BaseException:
            _end_group(proc.pid)
            raise
        out.seek(0)
        text = out.read().decode(errors="replace")
    for line in text.splitlines():
        log.info("pio: %s", line)
    return subprocess.CompletedProcess(cmd, proc.returncode, text)


def _pio_failure(proc: subprocess.CompletedProcess) -> str:
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    errors = [l[len("Error: "):] for l in lines if l.startswith("Error: ")]
    return errors[-1].strip() if errors else ""


# ---------------------------------------------------------------- the project


def platform_dir() -> Path:
    return firmware_dir() / PLATFORM_SUBDIR


def _upload_settings(board: Board) -> dict:
    upload = dict(board.data.get("upload") or {})
    if board.kind == "qemu":
        # The port is not in the command (a changed platformio.ini makes PlatformIO rebuild everything):
        # `flash` passes it in the environment, $MCUDEPLOY_EMULATOR_PORT.
        cmd = [sys.executable, "-m", "mcudeploy.device.platformio", "emulate", "--board", board.name, "$SOURCE"]
        return {"protocol": "custom", "protocols": ["custom"], "command": " ".join(_ini_quote(c) for c in cmd),
                "port": "", "note": "starts QEMU with the UART on a TCP socket"}
    protocol = upload.get("protocol", "stlink")
    return {"protocol": protocol, "protocols": list(upload.get("protocols", [protocol])), "command": "",
            "port": upload.get("port", ""), "note": f"flashes the board over {protocol}"}


def _ini_quote(arg: str) -> str:
    return f'"{arg}"' if re.search(r"[\s;#]", arg) else arg


def socket_port(url: str) -> int:
    """The TCP port of a ``socket://127.0.0.1:PORT`` URL (the only kind an emulated board takes)."""
    parts = urlparse(url)
    if parts.scheme != "socket" or parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
        raise MCUDeployError(f"an emulated board listens on socket://127.0.0.1:PORT; '{url}' is not such a URL")
    return parts.port


def board_manifest(board: Board, upload: dict, spec: Optional[dict] = None) -> dict:
    """The values of templates/platformio/board.json.j2: PlatformIO's view of ``boards/<name>.json``.

    The RAM capacity is that of the region the firmware's RAM lives in (the build spec's), so
    PlatformIO's "RAM: used N bytes from M bytes" line agrees with mcudeploy's report.
    """
    spec = spec or {}
    data = board.data
    machine = (data.get("qemu") or {}).get("machine")
    mcu = data.get("mcu") or machine or (data.get("platformio") or {}).get("board") or board.name
    return {
        "description": board.description,
        "vendor": data.get("vendor", "mcudeploy"),
        "url": data.get("url", "https://docs.platformio.org/en/latest/platforms/creating_board.html"),
        "cpu": board.core,
        "mcu": mcu,
        "f_cpu": f"{int(data.get('clock_hz', 0))}L",
        "flash_bytes": int(spec.get("flash_bytes", board.flash_bytes)),
        "sram_bytes": int(spec.get("sram_bytes", board.sram_bytes)),
        "flash_origin": hex(int(data.get("flash_origin", 0))),
        "upload_protocol": upload["protocol"],
        "upload_protocols": upload["protocols"],
        "openocd_target": (data.get("upload") or {}).get("openocd_target",
                                                         OPENOCD_TARGETS.get(data.get("family", ""), "")),
    }


def write_platformio_project(board: Board, project: Path, spec: dict, what: str) -> Path:
    """Write platformio.ini, boards/<board>.json and the build spec into ``project``; return the ini's path."""
    from mcudeploy.codegen.emit import BANNER, environment

    project.mkdir(parents=True, exist_ok=True)
    env = environment()
    upload = _upload_settings(board)
    (project / BUILD_SPEC).write_text(json.dumps(spec, indent=1) + "\n")
    (project / "boards").mkdir(exist_ok=True)
    manifest = env.get_template("platformio/board.json.j2").render(banner=BANNER,
                                                                   **board_manifest(board, upload, spec))
    json.loads(manifest)  # a template slip would only show up inside PlatformIO otherwise
    (project / "boards" / f"{board.name}.json").write_text(manifest)
    ini = env.get_template("platformio/platformio.ini.j2").render(
        banner=BANNER, what=what, board=board.name, description=board.description,
        platform_dir=platform_dir().resolve().as_posix(), env=board.name, build_spec=BUILD_SPEC,
        upload_protocol=upload["protocol"], upload_command=upload["command"], upload_port=upload["port"],
        upload_note=upload["note"], baud=int((board.data.get("serial") or {}).get("baud", 115200)))
    (project / "platformio.ini").write_text(ini)
    return project / "platformio.ini"


def firmware_elf(project: Path, board: Board) -> Path:
    return project / ".pio" / "build" / board.name / "firmware.elf"


def upload(project: Path, board: Board, core: Optional[Path] = None,
           port: Optional[str] = None) -> subprocess.CompletedProcess:
    """``pio run -t upload``: start the emulator (on ``port``, a socket URL, else a free port) or flash the board."""
    env = {}
    if board.kind == "qemu":
        _need_tool("qemu-system-arm", "install qemu-system-arm")
        env[PORT_ENV] = str(socket_port(port)) if port else "0"
    proc = run_pio(project, ["upload"], core=core, env=env)
    if proc.returncode != 0:
        reason = _pio_failure(proc)
        if reason:
            raise MCUDeployError(f"cannot upload to board '{board.name}': {reason.rstrip('.')}")
        raise BuildError(f"PlatformIO failed to upload {project}:\n{proc.stdout[-6000:]}")
    return proc


def _need_tool(name: str, how: str) -> None:
    if shutil.which(name) is None:
        raise MCUDeployError(f"flashing needs {name}, which is not on PATH; {how}")


# ---------------------------------------------------------------- the emulator behind `upload`


def _emulators_dir() -> Path:
    path = cache_dir() / "emulators"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Emulator:
    board: str
    pid: int  # the supervisor's, which leads the process group QEMU runs in
    port: int
    elf: str
    log: str
    lifetime: float

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"


def emulator_lifetime() -> float:
    """Seconds a flashed emulator may run ($MCUDEPLOY_EMULATOR_LIFETIME, 0 for no limit; default an hour):
    a forgotten one does not hold its port and memory for ever."""
    try:
        return max(float(os.environ.get(LIFETIME_ENV) or DEFAULT_LIFETIME_S), 0.0)
    except ValueError:
        raise MCUDeployError(f"${LIFETIME_ENV} should be a number of seconds, not "
                             f"'{os.environ[LIFETIME_ENV]}'") from None


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


def _is_our_emulator(emu: Emulator) -> bool:
    """The recorded pid is still our supervisor (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{emu.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _alive(emu.pid)
    return b"supervise" in cmdline and emu.elf.encode() in cmdline


def _end_group(pid: int) -> None:
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not _alive(pid):
            return


def _record(board_name: str, port: int) -> Path:
    return _emulators_dir() / f"{board_name}@{port}.json"


def running_emulators(board_name: Optional[str] = None) -> list[Emulator]:
    """The emulators earlier flashes started that still run (of one board, or of all), newest first."""
    found = []
    for path in _emulators_dir().glob(f"{board_name or '*'}@*.json"):
        try:
            emu = Emulator(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if _alive(emu.pid) and _is_our_emulator(emu):
            found.append((path.stat().st_mtime, emu))
        else:
            path.unlink(missing_ok=True)
    return [emu for _, emu in sorted(found, key=lambda f: (-f[0], f[1].port))]


def running_emulator(board_name: str, port: Optional[int] = None) -> Optional[Emulator]:
    """The emulator of this board listening on ``port`` (None: the one flashed last), if it still runs."""
    for emu in running_emulators(board_name):
        if port is None or emu.port == port:
            return emu
    return None


def _stop(emu: Emulator) -> Emulator:
    _end_group(emu.pid)
    _record(emu.board, emu.port).unlink(missing_ok=True)
    return emu


def stop_emulator(board_name: str, port: Optional[int] = None) -> Optional[Emulator]:
    """Stop the emulator of this board on ``port`` (None: the only one that runs); return it, or None
    when none runs there. Several running and no port given is one sentence asking for one."""
    running = running_emulators(board_name)
    if port is not None:
        running = [e for e in running if e.port == port]
    elif len(running) > 1:
        ports = ", ".join(f"socket://127.0.0.1:{e.port}" for e in running)
        raise MCUDeployError(f"{len(running)} emulators of board {board_name} run ({ports}): say which with "
                             f"--port, or stop them all with --all")
    return _stop(running[0]) if running else None


def stop_emulators(board_name: Optional[str] = None) -> list[Emulator]:
    """Stop every emulator of this board (None: of every board)."""
    return [_stop(emu) for emu in running_emulators(board_name)]


def _emulator_port(board: Board) -> int:
    """The port a flash without --port uses: that of the board's emulator flashed last (it is
    replaced), else a free one."""
    last = running_emulator(board.name)
    return last.port if last else qemu.free_port()


def _end_emulators_on(port: int) -> None:
    """Stop the emulator listening on ``port``, recorded or not (a flash interrupted before it
    recorded the emulator it started leaves only the supervisor's command line to find it by)."""
    for emu in running_emulators():
        if emu.port == port:
            _stop(emu)
    needle = f"tcp:127.0.0.1:{port},".encode()
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if b"mcudeploy.device.platformio" in cmd and b"supervise" in cmd and needle in cmd:
            _end_group(int(entry.name))


def start_emulator(board: Board, elf: Path, port: int = 0, lifetime: Optional[float] = None) -> Emulator:
    """Start QEMU on ``elf`` in the background, its UART listening on 127.0.0.1:port.

    ``port`` 0: the port of this board's emulator flashed last (which this one replaces), else a
    free one; an emulator already on the port asked for stops first, and emulators on other ports
    keep running, so several boards can be flashed side by side, one per port. QEMU runs under a
    small supervisor (``supervise`` below) in a process group of its own, so it outlives
    PlatformIO's upload step, ends after ``lifetime`` seconds, and one signal stops both.
    """
    port = port or _emulator_port(board)
    _end_emulators_on(port)
    lifetime = emulator_lifetime() if lifetime is None else lifetime
    if _port_taken(port):
        raise MCUDeployError(f"port {port} on 127.0.0.1 is taken; flash with another --port socket://127.0.0.1:PORT")
    log_path = _emulators_dir() / f"{board.name}@{port}.log"
    cmd = [sys.executable, "-m", "mcudeploy.device.platformio", "supervise", "--lifetime", f"{lifetime:g}", "--",
           *qemu.command_line(board, elf.resolve(), port)]
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=pio_python_env())
    try:
        deadline = time.monotonic() + EMULATOR_START_TIMEOUT_S
        while not _port_taken(port):
            if proc.poll() is not None:
                message = log_path.read_text(errors="replace").strip().splitlines()
                raise MCUDeployError(f"QEMU exited with status {proc.returncode} before listening on port {port}"
                                     f"{': ' + message[-1] if message else ''}")
            if time.monotonic() > deadline:
                raise MCUDeployError(f"QEMU did not listen on port {port} within {EMULATOR_START_TIMEOUT_S:.0f} s")
            time.sleep(0.01)
        _await_boot(board, port, proc, log_path)
    except BaseException:
        _end_group(proc.pid)
        raise
    emu = Emulator(board.name, proc.pid, port, str(elf.resolve()), str(log_path), lifetime)
    write_atomic(_record(board.name, port), json.dumps(emu.__dict__) + "\n")
    return emu


def _await_boot(board: Board, port: int, proc: subprocess.Popen, log_path: Path) -> None:
    """Connect once, take the firmware's BOOT frame and ask it to IDENTIFY, then hang up.

    QEMU holds the guest until the first connection; this one plays the board's reset. Afterwards
    the emulated board is where a real one is after an upload: booted, its greeting gone, waiting
    for requests, so the host's first frame is answered, not met by BOOT. The IDENTIFY (with the
    session's resending) proves the firmware serves, even when its BOOT frame was lost.
    """
    from mcudeploy.device.session import Session
    from mcudeploy.device.transport import LinkLost, open_transport

    try:
        with open_transport(f"socket://127.0.0.1:{port}", connect_timeout=EMULATOR_START_TIMEOUT_S) as link:
            info = Session(link, board.name).open(boot_wait=EMULATOR_BOOT_WAIT_S)
            log.info("the firmware booted on QEMU (pid %d) for board %s: %s", proc.pid, board.name, info.board)
            return
    except (LinkLost, MCUDeployError) as exc:
        failure = exc
    if proc.poll() is not None:
        lines = log_path.read_text(errors="replace").strip().splitlines()
        raise MCUDeployError(f"QEMU exited with status {proc.returncode} before the firmware booted"
                             f"{': ' + lines[-1] if lines else ''}")
    raise MCUDeployError(f"the firmware on QEMU for board {board.name} did not start serving "
                         f"({str(failure).rstrip('.')})")


# ---------------------------------------------------------------- flash


@dataclass(frozen=True)
class FlashResult:
    board: Board
    project: Path
    elf: Path
    memory: elfsize.MemoryReport
    what: str
    port: Optional[str] = None  # where to talk to the firmware: the emulator's socket URL, or the user's --port
    uploaded: bool = True
    emulator: Optional[Emulator] = None


def generate_project(board: Board, project: Path, compiled=None) -> dict:
    """Write the firmware sources (measurer, plus the model when given) and the PlatformIO project; return the spec."""
    from mcudeploy.device.build import firmware_build_spec

    project.mkdir(parents=True, exist_ok=True)
    for stale in ("model.c", "model.h"):  # a measurer-alone project must not pick up an earlier model
        if compiled is None:
            (project / stale).unlink(missing_ok=True)
    if compiled is not None:
        from mcudeploy.codegen import write_project

        write_project(compiled, project)
    spec = firmware_build_spec(board, project)
    write_platformio_project(board, project, spec, _what(compiled))
    return spec


def _what(compiled) -> str:
    return f"measurer with model {Path(compiled.model).name}" if compiled is not None else "measurer alone"


def default_project_dir(board: Board, model: Optional[str]) -> Path:
    stem = Path(model).stem if model else "measurer"
    return cache_dir() / "platformio" / f"{board.name}-{stem}"


def build_and_check(board: Board, project: Path, spec: dict, model_name: str,
                    core: Optional[Path] = None) -> tuple[Path, elfsize.MemoryReport]:
    """``pio run``; the ELF and its memory report, or one sentence saying by how much it does not fit."""
    _need_tool(spec.get("cc", "arm-none-eabi-gcc"), "install gcc-arm-none-eabi and libnewlib-arm-none-eabi")
    proc = run_pio(project, core=core)
    capacity = (spec["flash_bytes"], spec["sram_bytes"], spec["sram_region"])
    if proc.returncode != 0:
        if "overflowed" in proc.stdout or "will not fit" in proc.stdout:
            sizing = run_pio(project, ["sizing"], core=core)
            sizing_elf = firmware_elf(project, board).with_name("firmware-sizing.elf")
            if sizing.returncode == 0 and sizing_elf.is_file():
                elfsize.check_fits(elfsize.memory_report(sizing_elf, *capacity), model_name, board.name)
        raise BuildError(f"PlatformIO failed to build {project}:\n{proc.stdout[-6000:]}")
    elf = firmware_elf(project, board)
    report = elfsize.memory_report(elf, *capacity)
    elfsize.check_fits(report, model_name, board.name)
    return elf, report


def flash(model: Optional[str], board_name: str, port: Optional[str] = None, project: Optional[Path] = None,
          upload_firmware: bool = True, input_shapes=None, core: Optional[Path] = None) -> FlashResult:
    """Build the measurer (with ``model`` when given) for the board with PlatformIO and upload it.

    A firmware that does not fit the board is refused after the build, before any upload.
    """
    board = load_board(board_name)
    if board.kind not in ("qemu", "hardware"):
        raise MCUDeployError(f"board '{board.name}' is not a microcontroller; flash needs a qemu or hardware "
                             f"board (see `mcudeploy boards`)")
    if board.kind == "qemu" and port:
        socket_port(port)
    compiled = None
    if model:
        from mcudeploy.pipeline import compile_model

        compiled = compile_model(model, board, input_shapes)
    project = Path(project or default_project_dir(board, model)).resolve()
    spec = generate_project(board, project, compiled)
    elf, report = build_and_check(board, project, spec, Path(model).name if model else "(measurer alone)", core)
    if not upload_firmware:
        return FlashResult(board, project, elf, report, _what(compiled), port, uploaded=False)
    if board.kind == "qemu":
        port = port or f"socket://127.0.0.1:{_emulator_port(board)}"
    try:
        upload(project, board, core, port)
    except BaseException:
        if board.kind == "qemu":  # an emulator the interrupted upload started must not outlive it
            _end_emulators_on(socket_port(port))
        raise
    if board.kind == "qemu":
        emu = running_emulator(board.name, socket_port(port))
        if emu is None:
            raise MCUDeployError(f"the emulator for board '{board.name}' stopped right after it started")
        return FlashResult(board, project, elf, report, _what(compiled), emu.url, emulator=emu)
    return FlashResult(board, project, elf, report, _what(compiled), port)


def summary(result: FlashResult) -> list[str]:
    """What ``mcudeploy flash`` prints."""
    lines = [f"built the {result.what} for {result.board.name} with PlatformIO: {result.elf}", *result.memory.lines()]
    if not result.uploaded:
        lines.append("not uploaded (--no-upload)")
    elif result.board.kind == "qemu":
        limit = result.emulator.lifetime if result.emulator else 0
        lines.append(f"QEMU runs it in the background{f' for up to {limit:g} s' if limit else ''}; talk to it with "
                     f"--port {result.port} (stop it with `mcudeploy flash -b {result.board.name} --stop "
                     f"--port {result.port}`)")
    else:
        where = f"--port {result.port}" if result.port else "--port with its serial port, e.g. /dev/ttyACM0"
        lines.append(f"uploaded to {result.board.name}; talk to it with {where}")
    return lines


# ---------------------------------------------------------------- the upload hook


def supervise(cmd: Sequence[str], lifetime: float) -> int:
    """Run ``cmd`` and return its status; end it once ``lifetime`` seconds have passed (0: never)."""
    child = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL)
    try:
        return child.wait(timeout=lifetime or None)
    except subprocess.TimeoutExpired:
        print(f"mcudeploy: ending the emulator after its lifetime of {lifetime:g} s "
              f"(${LIFETIME_ENV})", flush=True)
        child.terminate()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        return 124


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m mcudeploy.device.platformio emulate --board B ELF``: PlatformIO's upload command (also
    ``stop --board B``, and ``supervise``, the emulator's keeper)."""
    p = argparse.ArgumentParser(prog="python -m mcudeploy.device.platformio")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("emulate", help="start QEMU on the ELF in the background (PlatformIO's upload)")
    s.add_argument("--board", required=True)
    s.add_argument("--port", type=int, default=int(os.environ.get(PORT_ENV) or 0),
                   help=f"TCP port for the UART (default ${PORT_ENV}, else any free one)")
    s.add_argument("elf")
    s = sub.add_parser("stop", help="stop the emulator of a board")
    s.add_argument("--board", required=True)
    s.add_argument("--port", type=int, help="the TCP port of the one to stop (default: the only one)")
    s = sub.add_parser("supervise", help="run a command, ending it after --lifetime seconds (0: never)")
    s.add_argument("--lifetime", type=float, default=0.0)
    s.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command == "supervise":
        return supervise(args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd, args.lifetime)
    try:
        if args.command == "emulate":
            emu = start_emulator(load_board(args.board), Path(args.elf), args.port)
            print(f"QEMU (pid {emu.pid}) runs {Path(args.elf).name}; its UART is at {emu.url}")
        else:
            emu = stop_emulator(args.board, args.port)
            print(f"stopped QEMU (pid {emu.pid})" if emu else f"no emulator runs for board '{args.board}'")
    except MCUDeployError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
