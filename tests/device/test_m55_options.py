"""Issue 40's acceptance 4 on ``qemu-m55`` (QEMU mps3-an547, the MVE kernels): the memory-first default,
``--objective latency``, ``--fast-memory``, ``--stream-input`` and ``tune --objective latency`` each give a plan
that runs there bit for bit with the host (KWS int8 from .tflite, about 10 s a run). The latency plans are checked
against the memory plan's ticks too: on the M55 a kernel keeps its scratch only where that is faster
(Op.scratch_pays), and tune times the plan with every scratch kept beside it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from shared_models import MODELS, need_models  # noqa: E402
from object_cache import fresh_cache

pytestmark = pytest.mark.qemu


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One cache for the module's commands (its builds and the TFLite Micro reference's made once)."""
    return fresh_cache(tmp_path_factory.mktemp("m55-cache"))


def _mcudeploy(cache: Path, *argv) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCUDEPLOY_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "mcudeploy", *argv], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("flags", [(), ("--objective", "latency"), ("--fast-memory", "50%"), ("--stream-input",)],
                         ids=["memory", "latency", "fast-memory", "stream-input"])
def test_each_plan_runs_on_qemu_m55_bit_for_bit(tmp_path, cache, need_qemu, flags):
    need_models()
    kws = str(MODELS / "tflite" / "kws_dscnn_int8.tflite")
    proc = _mcudeploy(cache, "run", kws, "-b", "qemu-m55", "--check", "--samples", "2", *flags)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "bit for bit" in proc.stdout and "PASS" in proc.stdout, proc.stdout
    proc = _mcudeploy(cache, "compile", kws, "-b", "qemu-m55", "-o", str(tmp_path / "p"), *flags)  # its plan
    assert proc.returncode == 0, proc.stderr + proc.stdout
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert plan["board"] == "qemu-m55"
    if "--fast-memory" in flags:  # half the memory plan's arena, at most, in the DTCM
        dtcm = next(r for r in plan["regions"] if r["name"] == "dtcm")
        assert dtcm["arena_bytes"] <= plan["arena_bytes"] // 2
    if "--stream-input" in flags:
        assert plan["stream_input"] is True


def test_tune_latency_on_qemu_m55_times_the_plan_with_every_scratch_kept(tmp_path, cache, need_qemu):
    """KWS's first Conv (10 x 4 taps on one channel) runs the direct kernel on the M55 (its stack columns make the
    scratch worthless there); tune times the plan that gives it its scratch anyway, and keeps the faster."""
    need_models()
    kws = str(MODELS / "tflite" / "kws_dscnn_int8.tflite")
    proc = _mcudeploy(cache, "tune", kws, "-b", "qemu-m55", "--objective", "latency", "--budget", "2",
                      "--time-limit", "120", "-o", str(tmp_path / "t"))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "every scratch kept" in proc.stdout + proc.stderr
    plan = json.loads((tmp_path / "t" / "plan.json").read_text())
    assert plan["board"] == "qemu-m55" and plan["objective"]["name"] == "latency"
    assert plan["latency"]["ticks"] <= plan["latency"]["baseline_ticks"]
