"""The simulator (mcudeploy.simulate.simulate) against a timing cache filled by hand: exact sums
when every kernel is cached, estimates flagged where not, and the fit behind the estimates."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from mcudeploy.compile import compile_model
from mcudeploy.simulate.simulate import (DEFAULT_COPY_INSTRUCTIONS_PER_BYTE, DEFAULT_INSTRUCTIONS_PER_BYTE,
                                         DEFAULT_INSTRUCTIONS_PER_CALL, DEFAULT_INSTRUCTIONS_PER_MAC, fit, nnls,
                                         simulate)
from mcudeploy.simulate.timing_cache import TimingCache
from simulate_graphs import conv_chain_model


def conv_chain():
    return compile_model(conv_chain_model(), "qemu-m4")


@pytest.fixture(scope="module")
def compiled():
    return conv_chain()


def test_exact_sum_when_every_kernel_is_cached(compiled, tmp_path):
    cache = TimingCache("qemu-m4", tmp_path)
    ops = simulate(compiled, cache).ops
    kernels = [o for o in ops if o.source != "none"]
    assert len(kernels) >= 2
    cache.put({o.signature: {"ticks": 1000 * (k + 1), "kernel": o.kernel} for k, o in enumerate(kernels)})
    sim = simulate(compiled, cache)
    assert sim.ticks == sum(1000 * (k + 1) for k in range(len(kernels)))
    assert sim.source == "measured" and sim.estimated == () and sim.counts["measured"] == len(kernels)
    assert sim.arena_bytes == compiled.placement.arena_bytes
    assert sim.lower_bound_bytes == compiled.placement.lower_bound_bytes
    assert sim.latency(5)["baseline_ticks"] == 5 and sim.latency()["source"] == "measured"


def test_uncached_kernels_are_estimated_and_flagged(compiled, tmp_path):
    cache = TimingCache("qemu-m4", tmp_path)
    first = simulate(compiled, cache)
    assert first.source == "estimated" and first.measured == ()
    for o in first.ops:  # an empty cache: the documented default, turned into QEMU ticks (40 instructions)
        if o.source == "estimated":
            per_byte = DEFAULT_INSTRUCTIONS_PER_BYTE if o.macs else DEFAULT_COPY_INSTRUCTIONS_PER_BYTE
            instructions = DEFAULT_INSTRUCTIONS_PER_MAC * o.macs + per_byte * o.bytes + DEFAULT_INSTRUCTIONS_PER_CALL
            assert o.how == "default" and o.ticks == pytest.approx(instructions / 40)
    kernels = [o for o in first.ops if o.source != "none"]
    cached, missing = kernels[:-1], kernels[-1]
    cache.put({o.signature: {"ticks": 777, "kernel": o.kernel} for o in cached})
    sim = simulate(compiled, cache)
    assert sim.estimated == (missing.node,) and set(sim.measured) == {o.node for o in cached}
    assert sim.source == "partly estimated" and sim.counts["estimated"] == 1
    est = next(o for o in sim.ops if o.node == missing.node)
    # the cached entries carry no MACs or bytes: the fits skip them, the default remains
    assert est.how == "default" and sim.ticks == round(777 * len(cached) + est.ticks)


def test_estimates_use_the_kernels_own_fit_then_the_boards(compiled, tmp_path):
    cache = TimingCache("qemu-m4", tmp_path)
    target = next(o for o in simulate(compiled, cache).ops if o.source != "none")
    rng = np.random.default_rng(1)

    def entries(fn, a, b, c, n=6):
        out = {}
        for k in range(n):
            macs, nbytes = int(rng.integers(1_000, 100_000)), int(rng.integers(100, 10_000))
            out[f"{fn}-{k}"] = {"ticks": a * macs + b * nbytes + c, "macs": macs, "bytes": nbytes, "kernel": fn}
        return out

    cache.put(entries("some_other_kernel", 2.0, 0.0, 50.0))
    est = next(o for o in simulate(compiled, cache).ops if o.node == target.node)
    assert est.how == "fit board" and est.ticks == pytest.approx(2.0 * est.macs + 50.0, rel=1e-6)
    cache.put(entries(target.kernel, 0.25, 0.5, 300.0))
    est = next(o for o in simulate(compiled, cache).ops if o.node == target.node)
    assert est.how == f"fit {target.kernel}"
    assert est.ticks == pytest.approx(0.25 * est.macs + 0.5 * est.bytes + 300.0, rel=1e-6)


def test_fit_recovers_a_linear_model_and_keeps_coefficients_non_negative():
    rng = np.random.default_rng(2)
    macs = rng.integers(100, 1_000_000, 40)
    nbytes = rng.integers(10, 50_000, 40)
    ticks = 0.125 * macs + 0.75 * nbytes + 1234.0
    f = fit([{"macs": int(m), "bytes": int(b), "ticks": float(t)} for m, b, t in zip(macs, nbytes, ticks)])
    assert (f.per_mac, f.per_byte, f.per_call) == pytest.approx((0.125, 0.75, 1234.0), rel=1e-6)
    # ticks falling with bytes: unconstrained least squares would give a negative per-byte cost
    rows = [{"macs": m, "bytes": b, "ticks": 2.0 * m - 0.5 * b + 10} for m, b in ((100, 10), (200, 400), (300, 50),
                                                                                  (400, 300), (500, 20))]
    f = fit(rows)
    assert f.per_mac >= 0 and f.per_byte == 0 and f.per_call >= 0
    assert fit(rows[:2]) is None  # fewer entries than coefficients: no fit
    assert fit([{"ticks": 5}] * 10) is None  # entries without macs and bytes are skipped


def test_nnls_matches_the_unconstrained_solution_when_it_is_feasible():
    rng = np.random.default_rng(3)
    x = rng.random((20, 3))
    y = x @ np.array([1.0, 2.0, 3.0])
    assert nnls(x, y) == pytest.approx([1.0, 2.0, 3.0])
    assert np.all(nnls(x, -y) == 0)  # nothing non-negative fits a negated target better than zero


@pytest.mark.qemu
def test_measured_entries_carry_work_and_the_simulation_repeats_the_measurement(compiled, tmp_path):
    from mcudeploy.device.measure import measure_model

    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    cache = TimingCache("qemu-m4", tmp_path)
    measured = measure_model(compiled, repeat=1, cache=cache)
    sim = simulate(compiled, TimingCache("qemu-m4", tmp_path))
    assert sim.source == "measured" and sim.ticks == measured.total_ticks
    for o in sim.ops:
        if o.signature:
            entry = cache.get(o.signature)
            assert (entry["macs"], entry["bytes"]) == (o.macs, o.bytes) and entry["kernel"] == o.kernel
