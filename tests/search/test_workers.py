"""The search's compile workers (mcudeploy/search/workers.py) end cleanly: between runs each exits by itself when the
tuner closes them, nothing printed; while a compile is under way they are killed, not waited for."""
from __future__ import annotations

import time
from pathlib import Path

from mcudeploy.errors import MCUDeployError
from mcudeploy.search.workers import Compiles


class _Tuner:
    """What a worker calls: a compile that takes ``seconds`` (scheme[1]), refused for a negative scheme[0]."""

    def search_compile(self, scheme):
        time.sleep(scheme[1])
        if scheme[0] < 0:
            raise MCUDeployError(f"scheme {scheme[0]} refused")
        return ("plan", scheme[0])


def _processes(compiles: Compiles) -> list:
    return list(compiles._pool._processes.values())


def test_closed_between_runs_every_worker_exits_by_itself_and_nothing_is_printed(capfd):
    compiles = Compiles(_Tuner(), 2)
    got = compiles.run([(k, 0.01 * (k % 3)) for k in range(6)] + [(-1, 0.0)])
    assert got[:6] == [("plan", k) for k in range(6)]
    assert isinstance(got[6], MCUDeployError) and str(got[6]) == "scheme -1 refused"
    workers = _processes(compiles)  # started as jobs came (two, all but always)
    assert 1 <= len(workers) <= 2
    compiles.close()
    # each read its end from the queue and exited (status 0); killed, as close() did before, they ended by SIGKILL
    assert [p.exitcode for p in workers] == [0] * len(workers)
    assert compiles._pool is None
    compiles.close()  # twice: nothing to do
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "Error" not in err, err


def _long_job(mark: str) -> None:
    """In a worker: say it started (the file ``mark``), then take 30 s."""
    Path(mark).touch()
    time.sleep(30)


def test_closed_at_once_a_compile_under_way_is_not_waited_for(tmp_path):
    compiles = Compiles(_Tuner(), 2)
    compiles.run([(0, 0.0), (1, 0.0)])
    marks = [tmp_path / f"started{k}" for k in range(2)]
    for mark in marks:
        compiles._pool.submit(_long_job, str(mark))
    deadline = time.monotonic() + 20
    while not all(m.exists() for m in marks) and time.monotonic() < deadline:  # both workers in their 30 s job
        time.sleep(0.05)
    assert all(m.exists() for m in marks)
    workers = _processes(compiles)
    assert len(workers) == 2
    start = time.monotonic()
    compiles.close(at_once=True)
    # gone (killed and reaped: the pool's own thread may reap them first, so their status is not always ours to
    # read) long before their jobs' 30 s
    while any(Path(f"/proc/{p.pid}").exists() for p in workers) and time.monotonic() - start < 10:
        time.sleep(0.05)
    assert not any(Path(f"/proc/{p.pid}").exists() for p in workers), [p.pid for p in workers]
    assert time.monotonic() - start < 10
