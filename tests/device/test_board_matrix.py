"""The cross-board matrix (issue 6, acceptance 4): every int8 conformance case and every int8
reference model gives, on each emulated board, the host board's outputs bit for bit.

Cost is kept low by batching: the int8 conformance cases (the builders of
conformance/test_int8_cases.py, same seeds) are put side by side in one ONNX model, each
case's names prefixed with its own, so one firmware and one QEMU session per board run all of
them; each case is still its own test, reading its output from that run. Each reference model
is one firmware per board (qemu-stm32f4, a second Cortex-M4 machine, runs KWS only; qemu-m0, a
Cortex-M0 with 16 KB of SRAM, the autoencoder and KWS, the two that fit it). Models and the batch
too large for a board are skipped with the bytes over. A board's batch runs once a session: the
xdist workers, over which a board's cases spread, share its outputs (shared_run).
CI runs a bounded part of the models and boards (MODEL_CASES, CASE_BOARDS; tests/bounded.py), the whole with
MCUDEPLOY_FULL_CAMPAIGNS=1.
The seconds each board took are printed at the end of the module (pytest's terminal summary):
about 30 s per board on a quiet two-core machine, 1 minute per board under load (5 boards, 204
tests: 2 to 5 minutes).

The comparison is with the host board on the same plan (``compare_with_host``'s way): the
host build is checked against the numpy reference and onnxruntime by the conformance and
model tests themselves.
"""
from __future__ import annotations

import dataclasses
import pickle
import shutil
import time

import bounded
import numpy as np
import onnx
import pytest
from conformance.test_int8_cases import CASES, OPSET, OPSET_OF, quantized
from object_cache import run_folder
from onnx import compose, helper
from shared_models import need_models, shared_models

from mcudeploy import check
from mcudeploy.boards import load_board
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.device.runner import run_on_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import locked
from mcudeploy.fit import FitError, check_fit
from mcudeploy.compile import compile_model

pytestmark = pytest.mark.qemu

BOARDS = ["qemu-m4", "qemu-m7", "qemu-stm32f4", "qemu-m3", "qemu-m0"]
# one board of each core runs every model (the Cortex-M33 runs the M4's DSP C, compiled for ARMv8-M; qemu-rv32, a
# RISC-V core, the portable C as the M3 does: its six models took 252 s on a loaded two-core machine, 125 s of CPU,
# the first model's build compiling the kernel library for RISC-V once)
MODEL_BOARDS = ["qemu-m4", "qemu-m7", "qemu-m3", "qemu-an505", "qemu-rv32"]
CASE_SAMPLES = 4
MODEL_SAMPLES = 3
SEP = "__"
MODELS = shared_models("*int8*.onnx") or [None]
# boards that run some reference models only, to keep the matrix's time: the STM32F4 machine, a Cortex-M4 as qemu-m4 is
# (the same kernels; its own memory map and UART), and the Cortex-M0, whose 16 KB hold only these two untuned
SOME_MODELS = {"qemu-stm32f4": ("kws_dscnn_int8",), "qemu-m0": ("ad_autoencoder_int8", "kws_dscnn_int8")}
PER_GROUP_FIXTURES = ("seconds",)  # only a table of seconds: each group of MCUDEPLOY_TEST_BOARDS keeps its own (tests/spread.py)
# CI's bounded size (tests/bounded.py): each model runs on one board of MODEL_BOARDS, the boards taking the models in
# turn (each at least one; until stop 68 qemu-m4 ran every model besides, 6 more firmwares, about 150 s of CI);
# MCUDEPLOY_FULL_CAMPAIGNS=1 runs all of them
MODEL_CASES = [bounded.case(board, path, id=f"{path.stem if path else 'no-models'}-{board}",
                             in_ci=m % len(MODEL_BOARDS) == b)
               for b, board in enumerate(MODEL_BOARDS) for m, path in enumerate(MODELS)] + [
    pytest.param(board, path, id=f"{path.stem}-{board}")
    for board, stems in SOME_MODELS.items() for path in MODELS if path and path.stem in stems]
# the int8 cases on every board of BOARDS but, in CI, the STM32F4 machine: a Cortex-M4 as qemu-m4 is (the same
# kernels), whose own memory map and UART its KWS run covers
CASE_BOARDS = [bounded.case(board, id=board, in_ci=board != "qemu-stm32f4") for board in BOARDS]


def need_tools_of(board: str) -> None:
    """Skip, naming the packages, where the board's own compiler or emulator (not the Arm ones) is missing."""
    b = load_board(board)
    missing = [tool for tool in (b.toolchain.cc, b.qemu.binary) if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"board {board} needs {' and '.join(missing)} "
                    f"(apt-get install {b.toolchain.packages} {b.qemu.package})")


def batched_cases() -> onnx.ModelProto:
    """All int8 conformance cases in one model: case ``name``'s output is ``name__y``."""
    parts = []
    for name in sorted(CASES):
        build, _ = CASES[name]
        # the seeds and opsets test_int8_case uses
        model, _ = quantized(build, seed=sorted(CASES).index(name) + 1, opset=OPSET_OF.get(name, OPSET))
        parts.append(compose.add_prefix(model, f"{name}{SEP}"))
    graph = helper.make_graph([n for m in parts for n in m.graph.node], "int8_cases",
                              [v for m in parts for v in m.graph.input], [v for m in parts for v in m.graph.output],
                              [t for m in parts for t in m.graph.initializer])
    # the newest opset of any case (a reduction takes its axes as an input from opset 18; the other
    # cases' operators read the same there)
    opset = max([OPSET, *OPSET_OF.values()])
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@dataclasses.dataclass
class BoardOutputs:
    names: list[str]                  # graph outputs
    board: list[list[np.ndarray]]     # per sample, per output
    host: list[list[np.ndarray]]

    def differing(self, output: str) -> list[str]:
        k = self.names.index(output)
        out = []
        for s, (dev, ref) in enumerate(zip(self.board, self.host)):
            n = int(np.count_nonzero(dev[k] != ref[k]))
            if n:
                out.append(f"sample {s}: {n} of {ref[k].size} elements differ")
        return out


def run_and_compare(compiled, samples, workdir) -> BoardOutputs:
    result = run_on_board(compiled, samples, workdir=workdir / "board")
    # the firmware's stack (READ_STACK): a quarter of it left unused (kernels keep buffers there, MCUD_DIRECT_COLS)
    assert result.stack is not None and result.stack.used <= 3 * result.stack.size // 4, result.stack.describe()
    # the worst case of the firmware's call graph (mcudeploy/device/stack_bound.py) holds what the run used
    assert result.firmware.stack.bytes >= result.stack.used, (result.firmware.stack, result.stack.describe())
    host = run_compiled_on_host(dataclasses.replace(compiled, board=load_board("host")), samples, workdir / "host")
    assert all(compiled.graph[n].dtype != "float32" for n in compiled.graph.outputs), "the matrix is for int8"
    return BoardOutputs(list(compiled.graph.outputs), result.outputs, host)


@pytest.fixture(scope="module")
def seconds(request):
    """Seconds per (board, what), printed after the tests whatever pytest's capture."""
    spent: dict[tuple[str, str], float] = {}
    yield spent
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None or capture is None or not spent:
        return
    lines = ["", "board matrix, seconds spent (build + QEMU + host build):"]
    for board in dict.fromkeys([*BOARDS, *MODEL_BOARDS, *SOME_MODELS]):
        mine = {what: s for (b, what), s in spent.items() if b == board}
        if mine:
            lines.append(f"  {board:<14} {sum(mine.values()):6.1f} s  "
                         + ", ".join(f"{w} {s:.1f}" for w, s in mine.items()))
    lines.append(f"  {'total':<14} {sum(spent.values()):6.1f} s")
    with capture.global_and_fixture_disabled():  # what capsys.disabled() does, for a module fixture
        for line in lines:
            reporter.write_line(line)


def run_cases(board: str, work) -> BoardOutputs:
    compiled = compile_model(batched_cases(), board)
    check_fit(compiled)  # too large for the board (qemu-m0's 16 KB): every case skips, with the bytes over
    samples = check.random_inputs(compiled.graph, CASE_SAMPLES, seed=11)
    return run_and_compare(compiled, samples, work)


def shared_run(board: str, tmp_path_factory) -> BoardOutputs:
    """``run_cases`` once per board for the whole session: the xdist workers that both meet a board's cases (they
    spread over both) wait for the first one's run and read its outputs, instead of building and running it again."""
    shared = run_folder(tmp_path_factory) / f"board-matrix-cases-{board}.pickle"
    with locked(shared):
        if shared.exists():
            return pickle.loads(shared.read_bytes())
        outputs = run_cases(board, tmp_path_factory.mktemp(f"cases-{board}"))
        shared.write_bytes(pickle.dumps(outputs))
        return outputs


@pytest.fixture(scope="module")
def case_runs(tmp_path_factory, seconds):
    """The batched conformance cases, run once per board on first use."""
    runs: dict[str, object] = {}

    def get(board: str) -> BoardOutputs:
        if board not in runs:
            start = time.monotonic()
            try:
                runs[board] = shared_run(board, tmp_path_factory)
            except Exception as exc:  # noqa: BLE001 -- kept, so the other cases fail at once instead of rebuilding
                runs[board] = exc
            seconds[(board, "int8 cases")] = time.monotonic() - start
        if isinstance(runs[board], FitError):
            pytest.skip(str(runs[board]))
        if isinstance(runs[board], Exception):
            raise runs[board]
        return runs[board]
    return get


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("board", CASE_BOARDS)
def test_int8_case_equals_the_host_board(board, case, case_runs, need_qemu):
    runs = case_runs(board)
    output = f"{case}{SEP}y"
    assert output in runs.names
    assert not runs.differing(output), f"{case} on {board} vs the host board: {runs.differing(output)}"


@pytest.mark.parametrize("board,path", MODEL_CASES)
def test_int8_model_equals_the_host_board(board, path, tmp_path, seconds, need_qemu):
    need_models()
    need_tools_of(board)
    start = time.monotonic()
    compiled = compile_model(path, board)
    samples = check.random_inputs(compiled.graph, MODEL_SAMPLES, seed=5)
    try:
        runs = run_and_compare(compiled, samples, tmp_path)
    except MCUDeployError as exc:
        if "over by" in str(exc):  # the firmware does not fit: the message names the bytes over
            pytest.skip(str(exc))
        raise
    finally:
        seconds[(board, path.stem)] = time.monotonic() - start
    bad = {name: runs.differing(name) for name in runs.names if runs.differing(name)}
    assert not bad, f"{path.name} on {board} vs the host board: {bad}"
