"""The timing cache: one signature per kernel call, shared across models; entries survive and merge."""
from __future__ import annotations

import pytest
from devmodels import matmul

from mcudeploy.errors import MCUDeployError
from mcudeploy.ops import registry
from mcudeploy.compile import compile_model
from mcudeploy.search.state import TuneState
from mcudeploy.simulate.timing_cache import TimingCache, kernel_signature


def signatures(compiled) -> list:
    return [kernel_signature(compiled.graph, n, compiled.lifetimes, compiled.placement)
            for n in compiled.order if not registry.get(n.op).view]


def test_signatures_follow_the_kernel_not_the_model(tmp_path):
    a = signatures(compile_model(matmul(tmp_path / "a.onnx", 8), "qemu-m4"))
    b = signatures(compile_model(matmul(tmp_path / "b.onnx", 8), "qemu-m4"))
    c = signatures(compile_model(matmul(tmp_path / "c.onnx", 16), "qemu-m4"))
    d = signatures(compile_model(matmul(tmp_path / "d.onnx", 8, seed=1), "qemu-m4"))
    assert a == b  # same kernel, shapes and weights in two files: one measurement serves both
    assert a != c  # other shapes
    assert a == d  # other weight values, same instructions: a constant view counts by shape and place
    assert all(isinstance(s, str) and len(s) == 32 for s in a)


def test_the_cache_persists_and_merges_concurrent_writers(tmp_path):
    one, two = TimingCache("qemu-m4", tmp_path), TimingCache("qemu-m4", tmp_path)
    one.put({"sig-a": {"ticks": 10}})
    two.put({"sig-b": {"ticks": 20}})  # written after `one`, without having read it: both survive
    fresh = TimingCache("qemu-m4", tmp_path)
    assert fresh.get("sig-a") == {"ticks": 10} and fresh.get("sig-b") == {"ticks": 20} and len(fresh) == 2
    assert "sig-a" not in TimingCache("qemu-m7", tmp_path)  # per board
    (tmp_path / "timings" / "qemu-m4.json").write_text("not json")
    assert len(TimingCache("qemu-m4", tmp_path)) == 0  # a damaged file is a cold cache, not a crash


def _writer(root: str, who: int, count: int) -> None:
    cache = TimingCache("qemu-m4", root)
    for i in range(count):
        cache.put({f"sig-{who}-{i}": {"ticks": i}})


def test_processes_writing_at_once_lose_nothing(tmp_path):
    """Two tunes on two boards of one kind share the file: four processes put 50 entries each, one
    at a time, all at once; every entry survives and the file is never half written."""
    import json
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), who, 50)) for who in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    data = json.loads((tmp_path / "timings" / "qemu-m4.json").read_text())
    assert len(data["timings"]) == 200 and len(TimingCache("qemu-m4", tmp_path)) == 200
    assert not [p for p in (tmp_path / "timings").iterdir() if p.name.endswith(".tmp")]


def test_a_cache_or_state_that_cannot_be_written_is_one_sentence_naming_the_file(tmp_path):
    (tmp_path / "timings").write_text("a file where the cache's folder should be")
    with pytest.raises(MCUDeployError, match=r"^cannot write .*timings"):
        TimingCache("qemu-m4", tmp_path).put({"sig-a": {"ticks": 10}})
    (tmp_path / "tuned").write_text("a file where tune's output folder should be")
    state = TuneState(tmp_path / "tuned", {"model": "m"})
    with pytest.raises(MCUDeployError, match=r"^cannot write .*tuned"):
        state.save()
