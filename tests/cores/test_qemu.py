"""One inference on the two Cortex-M33 of QEMU's mps2-an521 (qemu-an521-chip), planned by mcudeploy/cores: the
firmware starts core 1, both cores run their steps of each phase and meet at a barrier in shared memory, and the
outputs are bit for bit the numpy reference; a core 1 that never comes ends the RUN with one sentence naming it and
the phase."""
from __future__ import annotations

from pathlib import Path

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
