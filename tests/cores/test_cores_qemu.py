"""One inference on the two Cortex-M33 of QEMU's mps2-an521 (qemu-an521-chip), planned by mcudeploy/cores: the
firmware starts core 1, both cores run their steps of each phase and meet at a barrier in shared memory, and the
outputs are bit for bit the numpy reference; a core 1 that never comes ends the RUN with one sentence naming it and
the phase."""
from __future__ import annotations


import numpy as np
import pytest

import zoo
from mcudeploy import check as checks
from mcudeploy.boards import load_board
from mcudeploy.codegen import write_project
from mcudeploy.compile import lower
from mcudeploy.cores.compile import plan_on_cores
from mcudeploy.device.build import build_firmware
from mcudeploy.device.runner import connect, run_on_board
from mcudeploy.device.samples import sample_bytes
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_onnx
from mcudeploy.reference import run_reference

pytestmark = pytest.mark.qemu
CHIP = "qemu-an521-chip"


@pytest.fixture(scope="module")
def branching(tmp_path_factory):
    _, qdq, _ = zoo.BUILDERS["branching"](tmp_path_factory.mktemp("branching"))
    graph = lower(import_onnx(qdq))
    board = load_board(CHIP)
    return graph, plan_on_cores(graph, board).compiled("branching", board)


def test_both_cores_run_one_inference_bit_for_bit(need_qemu, branching, tmp_path):
    graph, compiled = branching
    assert set(compiled.cores.core) - {-1} == {0, 1}
    samples = checks.random_inputs(compiled.graph, 3, seed=11)
    run = run_on_board(compiled, samples, workdir=tmp_path)
    for sample, got in zip(samples, run.outputs):
        for g, want in zip(got, run_reference(graph, sample)):
            np.testing.assert_array_equal(g, want)


def test_a_core_that_never_comes_is_named_with_its_phase(need_qemu, branching, tmp_path):
    _, compiled = branching
    board = compiled.board
    firmware = build_firmware(board, write_project(compiled, tmp_path), "branching", stop_core1=True)
    sample = checks.random_inputs(compiled.graph, 1, seed=2)[0]
    with connect(board, firmware) as session:
        with pytest.raises(MCUDeployError, match=r"core 1 did not reach the barrier after phase 0\b"):
            session.infer(sample_bytes(compiled.graph, sample), [compiled.graph[n].nbytes
                                                                 for n in compiled.graph.model_outputs()])


def test_a_plan_on_two_cores_is_refused_by_a_board_of_one(branching, tmp_path):
    _, compiled = branching
    project = write_project(compiled, tmp_path)
    with pytest.raises(MCUDeployError, match="runs one inference on 2 cores, but board qemu-m4 names no cores"):
        build_firmware(load_board("qemu-m4"), project, "branching")


def test_each_cores_instructions_per_phase_and_the_critical_path(need_qemu, branching, tmp_path):
    """The plugin counts each vCPU's instructions per phase: both cores work, the critical path (the longer core of
    each phase plus the barrier) is below the sum of both cores' work and above the longer core's, and the outputs
    are still bit for bit."""
    from mcudeploy.device.core_phases import measure_on_cores
    graph, compiled = branching
    samples = checks.random_inputs(compiled.graph, 2, seed=4)
    measured = measure_on_cores(compiled, samples, tmp_path)
    for sample, got in zip(samples, measured.outputs):
        for g, want in zip(got, run_reference(graph, sample)):
            np.testing.assert_array_equal(g, want)
    run = measured.runs[0]
    assert len(run.work) == 2 and len(run.work[0]) == compiled.cores.phase_count
    totals = [sum(w) for w in run.work]
    assert min(totals) > 0
    assert max(totals) <= run.critical_path < sum(totals)
    assert 0 < run.barriers < run.critical_path
    assert len(measured.runs) == 2 and len(measured.runs[1].work[1]) == compiled.cores.phase_count


def test_the_counts_are_refused_when_they_do_not_add_up():
    from mcudeploy.device.core_phases import parse
    text = "W 0 10\nW 1 12\nB 0 3\nB 1 1\n"
    assert parse(text, 2, 1, 1)[0].critical_path == 12 + 1
    with pytest.raises(MCUDeployError, match="holds \\[1, 1\\] phases of work"):
        parse(text, 2, 2, 1)
    with pytest.raises(MCUDeployError, match="names vCPU 2"):
        parse(text + "W 2 1\n", 2, 1, 1)
