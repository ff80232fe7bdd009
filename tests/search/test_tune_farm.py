"""Boards of a labgrid farm (acceptance 2 of issue 22), on the loopback interface: a coordinator, an
exporter exporting an emulated board's UART as a network serial port (RFC 2217), one place. measure
through the place gives the ticks of a direct --port, a short tune through it the plan of a local
emulator, and Ctrl-C releases the place."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from mcudeploy.boards import load_board
from mcudeploy.device import emulator, qemu
from mcudeploy.device.pool import BoardPool
from mcudeploy.search import Tuner, space
from mcudeploy.simulate.timing_cache import TimingCache

pytestmark = pytest.mark.qemu
PLACE = "mcud-test"


@pytest.fixture
def farm(tmp_path, need_qemu):
    pytest.importorskip("labgrid", reason="needs labgrid (pip install 'mcudeploy[farm]')")
    import labfarm

    if not labfarm.labgrid_tool("labgrid-coordinator"):
        pytest.skip("needs labgrid's commands (labgrid-coordinator, labgrid-exporter) beside this Python or on PATH")
    with labfarm.loopback_farm(tmp_path / "farm", "qemu-m4", PLACE) as env:
        yield env


def mcudeploy(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcudeploy", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def ticks(done: subprocess.CompletedProcess) -> list:
    assert done.returncode == 0, done.stderr
    return [(op["name"], op["ticks"]) for op in json.loads(done.stdout)["ops"]]


def tune(model, folder, **where):
    return Tuner(model, "qemu-m4", folder, time_limit=600, progress=lambda line: None, effort=0.3, budget=2,
                 top_segments=2, pieces=(2, 4), cache=TimingCache("qemu-m4", folder / "cache"), **where).run()


def test_measure_and_tune_through_a_labgrid_place(farm, small_mobilenet, tmp_path):
    import labfarm

    from mcudeploy.device import farm as lab

    env = dict(farm, MCUDEPLOY_CACHE=str(tmp_path / "cache-farm"))
    through = ticks(mcudeploy(env, "measure", str(small_mobilenet), "-b", "qemu-m4", "--place", PLACE, "--json"))
    assert labfarm.acquired_by(env, PLACE) == ""  # released after the command
    url = f"socket://127.0.0.1:{qemu.free_port()}"
    direct_env = dict(farm, MCUDEPLOY_CACHE=str(tmp_path / "cache-direct"))
    try:
        done = mcudeploy(direct_env, "flash", str(small_mobilenet), "-b", "qemu-m4", "--port", url)
        assert done.returncode == 0, done.stderr
        assert ticks(mcudeploy(direct_env, "measure", str(small_mobilenet), "-b", "qemu-m4", "--port", url,
                               "--json")) == through
    finally:
        emulator.end_emulators_on(emulator.socket_port(url))

    board = load_board("qemu-m4")
    local = tune(small_mobilenet, tmp_path / "local")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LG_COORDINATOR", farm["LG_COORDINATOR"])
        with lab.acquired(board, PLACE) as boards:
            assert labfarm.acquired_by(env, PLACE)
            remote = tune(small_mobilenet, tmp_path / "farm-tune", pool=BoardPool(board, boards))
    assert (space.scheme_key(remote.best.scheme), remote.best.arena, remote.best.ticks, remote.best.run_ticks) == \
        (space.scheme_key(local.best.scheme), local.best.arena, local.best.ticks, local.best.run_ticks)

    # Ctrl-C in the middle of a tune through the farm: the place is released
    proc = subprocess.Popen([sys.executable, "-m", "mcudeploy", "tune", str(small_mobilenet), "-b", "qemu-m4",
                             "--place", PLACE, "-o", str(tmp_path / "interrupted")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not labfarm.acquired_by(env, PLACE):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert labfarm.acquired_by(env, PLACE) == ""
