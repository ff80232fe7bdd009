"""State that cannot be trusted, one writer per folder, failing writes, SIGKILL of a tune and wrong --input
files: the campaigns of tests/faults/state_campaign.py at CI size (benchmarks/fault_bench.py runs them in
full), and the file helpers they rest on (mcudeploy/files.py)."""
from __future__ import annotations

import dataclasses
import errno
import os
import random
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import state_campaign as campaign  # noqa: E402
from object_cache import run_folder  # noqa: E402

from mcudeploy.errors import MCUDeployError  # noqa: E402
from mcudeploy.files import LOCK_FILE, locked, output_lock, write_atomic, writing  # noqa: E402

COUNT = {"tune-state": 1, "plan": 1, "inputs": 1, "writers": 2, "disk": 4}  # per kind of fault (a class has several)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The clean case (a quantized model, compiled and run), made once for every pytest-xdist worker of this run
    (in the folder the run's workers share, object_cache.run_folder, under a lock); each worker's campaigns work in a
    folder of its own."""
    shared = run_folder(tmp_path_factory) / "state-faults-clean"
    with locked(shared):
        made = campaign.clean_case(shared)
    return dataclasses.replace(made, work=tmp_path_factory.mktemp("faults"))


@pytest.mark.parametrize("name", list(COUNT))
def test_every_fault_is_refused_in_one_sentence_or_harmless(clean, name):
    tally = campaign.CAMPAIGNS[name](clean, COUNT[name], random.Random(f"ci-{name}"))
    assert tally.injected >= COUNT[name]
    assert tally.ok, "\n".join(tally.failures)
    assert tally.detected + tally.harmless == tally.injected and tally.reported == tally.detected


def test_a_tune_killed_at_a_random_moment_resumes_to_the_uninterrupted_plan(clean):
    tally = campaign.campaign_kill(clean, 1, random.Random("ci-kill"), budget=2)
    assert tally.ok and tally.injected == 1, "\n".join(tally.failures)


def test_a_written_file_has_the_umasks_mode_and_a_failed_write_names_it(tmp_path, monkeypatch):
    old = os.umask(0o027)
    try:
        path = write_atomic(tmp_path / "a.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    monkeypatch.setattr("mcudeploy.files.os.fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    with pytest.raises(MCUDeployError, match=rf"^cannot write {tmp_path / 'b.json'}: full$"):
        with writing(tmp_path):
            write_atomic(tmp_path / "b.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temporary left


def test_a_second_writer_is_refused_naming_the_folder_and_the_holder(tmp_path):
    (tmp_path / "out").mkdir()
    with output_lock(tmp_path / "out", "tune"):
        assert (tmp_path / "out" / LOCK_FILE).read_text() == f"{os.getpid()} tune\n"
        # a lock on another open file description of the same file: what another process holds
        with pytest.raises(MCUDeployError, match=rf"^{tmp_path / 'out'} is being written by another mcudeploy "
                                                 rf"command \(pid {os.getpid()}, mcudeploy tune\)"):
            with output_lock(tmp_path / "out", "compile"):
                pass
    (tmp_path / "out" / ".plan.json.k1ll3d.tmp").write_text("{")  # what a writer killed mid-write leaves
    (tmp_path / "out" / ".mcud.k1ll3d.tmp").mkdir()
    with output_lock(tmp_path / "out", "compile"):  # released with the block; the next holder removes them
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [LOCK_FILE]


def test_a_command_that_wrote_nothing_leaves_no_folder(tmp_path):
    with output_lock(tmp_path / "new" / "out", "compile"):  # refused before writing (a model that does not fit)
        assert (tmp_path / "new" / "out" / LOCK_FILE).exists()
    assert not (tmp_path / "new" / "out").exists()
    with output_lock(tmp_path / "kept", "compile"):
        (tmp_path / "kept" / "plan.json").write_text("{}")
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [LOCK_FILE, "plan.json"]


def test_a_tune_says_it_set_a_damaged_state_aside(clean, tmp_path):
    from mcudeploy.search import TuneOptions, Tuner

    out = tmp_path / "out"
    out.mkdir()
    (out / "tune-state.json").write_text('{"identity": {"version": 3, "model": "0')
    lines = []

    def interrupted(compiled):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Tuner(clean.model, "qemu-m4", out, measure=interrupted, progress=lines.append,
              options=TuneOptions(effort=0.5)).run()
    said = [line for line in lines if "set aside" in line]
    assert len(said) == 1 and said[0].endswith(f"{out / 'tune-state.json'} is not valid JSON (truncated or damaged): "
                                               f"set aside as tune-state.json.bad-1; starting afresh")
    assert (out / "tune-state.json.bad-1").read_text() == '{"identity": {"version": 3, "model": "0'
