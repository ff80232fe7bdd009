"""The offline PlatformIO core: ``pio run`` with no access to PlatformIO's registry.

PlatformIO's core fetches one package of its own before any build, the SCons tool:
``prepare_core`` installs it into ``$PLATFORMIO_CORE_DIR/packages/tool-scons`` from the PyPI
``scons`` wheel (or an installed ``SCons`` of the same version), labelled with the version and
owner PlatformIO looks for, so PlatformIO finds it and never downloads it. ``run_pio`` runs
``pio run`` in a process group of its own, so an interrupt or a timeout ends PlatformIO and
whatever it started.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Optional, Sequence

from mcudeploy import interrupts
from mcudeploy.codegen.emit import BANNER, environment
from mcudeploy.device.host import cache_dir
from mcudeploy.device.processes import end_group
from mcudeploy.errors import MCUDeployError

log = logging.getLogger(__name__)

PIO_TIMEOUT_S = 900  # a cold build of every kernel takes well under a minute; this only stops a hang


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
            end_group(proc.pid)
            raise MCUDeployError(f"PlatformIO did not finish `pio run {' '.join(targets)}` within {timeout:.0f} s") \
                from None
        except BaseException:
            end_group(proc.pid)
            raise
        out.seek(0)
        text = out.read().decode(errors="replace")
    for line in text.splitlines():
        log.info("pio: %s", line)
    return subprocess.CompletedProcess(cmd, proc.returncode, text)



def pio_failure(proc: subprocess.CompletedProcess) -> str:
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    errors = [l[len("Error: "):] for l in lines if l.startswith("Error: ")]
    return errors[-1].strip() if errors else ""

