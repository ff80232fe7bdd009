"""Two stages on the two Cortex-M33 of one QEMU mps2-an521 (mcudeploy/target/dual.py): core 0 releases
core 1, every frame's boundary tensors cross a ring in the shared SSRAM, the outputs equal the one-chip
plan's bit for bit, and a core that stops taking frames ends the stream with an error."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.samples import random_inputs
from mcudeploy.cli import main
from mcudeploy.target.dual_firmware import dual_values
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.compile import lower
from mcudeploy.target.dual import dual_chip, run_dual, stream
from mcudeploy.stages.system import load_system
from mcudeploy.stages.system_plan import SystemOptions, compile_system
from residual import residual_model
from shared_models import MODELS, need_models


def plan_of(model, name="model"):
    return compile_system(lower(import_model(model)), load_system("qemu-an521"), name,
                          SystemOptions(schedule_method="model"))


def test_the_ring_holds_every_tensor_the_second_stage_reads_aligned():
    plan = plan_of(residual_model())
    chip = dual_chip(plan)
    first, second = (s.compiled for s in plan.staged.stages)
    ring = dual_values(first, second, plan.graph.inputs, plan.graph.outputs, chip)["dual"]
    assert [p["tensor"] for p in ring["received"]] == list(second.graph.inputs)
    ends = [p["at"] + p["bytes"] for p in ring["received"]]
    assert all(p["at"] % 8 == 0 for p in ring["received"] + ring["outputs"])
    assert max(ends) <= ring["slot_bytes"] and ring["slots"] == chip.slots
    assert all(b["at"] >= a["at"] + a["bytes"] for a, b in zip(ring["received"], ring["received"][1:]))
    assert sorted(p["tensor"] for p in ring["sent"] + ring["inputs_sent"]) == sorted(second.graph.inputs)
    assert [p["tensor"] for p in ring["outputs"]] == list(plan.graph.outputs)


@pytest.mark.qemu
def test_two_cores_stream_int8_kws_bit_for_bit(need_qemu):
    need_models()
    plan = plan_of(MODELS / "onnx" / "kws_dscnn_int8.onnx", "kws_dscnn_int8")
    samples = random_inputs(plan.graph, 4, seed=3)
    run = run_dual(plan, samples)
    assert len(run.outputs) == len(samples)
    for got, want in zip(run.outputs, run.one_chip_outputs):
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert all(t > 0 for t in run.run_ticks)


@pytest.mark.qemu
def test_run_streams_int8_ad_through_both_cores_of_one_emulator(need_qemu, capsys):
    need_models()
    assert main(["run", str(MODELS / "onnx" / "ad_autoencoder_int8.onnx"), "-b", "qemu-an521", "--samples", "3"]) == 0
    out = capsys.readouterr().out
    assert "stage 0 on chip 0 cpu0" in out and "stage 1 on chip 0 cpu1" in out
    assert "both stages ran in one emulator of qemu-an521-chip (mps2-an521)" in out and "share one instruction clock" in out
    assert "the 2 stage(s) on qemu-an521 vs the one-chip plan on 3 streamed input(s): bit for bit identical" in out


@pytest.mark.qemu
def test_a_core_that_stops_taking_frames_is_a_stalled_ring(need_qemu, tmp_path):
    need_models()
    plan = plan_of(MODELS / "onnx" / "kws_dscnn_int8.onnx", "kws_dscnn_int8")
    with pytest.raises(MCUDeployError, match="stopped the stream at frame 1: .*the ring stalled"):
        stream(plan, random_inputs(plan.graph, 4, seed=4), tmp_path, stall_after=1)
