"""The search's compile workers (mcudeploy/search/workers.py) end cleanly: between runs each exits by itself when the
tuner closes them, nothing printed; while a compile is under way they are killed, not waited for."""
from __future__ import annotations

import time

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
    workers = _processes(compiles)
    assert len(workers) == 2
    compiles.close()
    # each read its end from the queue and exited (status 0); killed, as close() did before, they ended by SIGKILL
    assert [p.exitcode for p in workers] == [0, 0]
    assert compiles._pool is None
    compiles.close()  # twice: nothing to do
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "Error" not in err, err


def test_closed_at_once_a_compile_under_way_is_not_waited_for():
    compiles = Compiles(_Tuner(), 2)
    compiles.run([(0, 0.0), (1, 0.0)])  # the workers exist
    workers = _processes(compiles)
    for _ in range(2):
        compiles._pool.submit(time.sleep, 30)
    time.sleep(0.5)  # both workers are asleep in a 30 s job
    start = time.monotonic()
    compiles.close(at_once=True)
    for p in workers:
        p.join(10)
    assert time.monotonic() - start < 10
    assert all(p.exitcode is not None and p.exitcode < 0 for p in workers)  # killed
