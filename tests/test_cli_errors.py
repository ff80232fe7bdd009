"""Bad input ends in one sentence naming the file, node or tensor, and a non-zero exit."""
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mcudeploy.cli import main


def _save(tmp_path, model, name="m.onnx"):
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _qdq_model(dims=(1, 4)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant")]
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]), helper.make_tensor("z", TensorProto.INT8, [], [0])]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                             opset_imports=[helper.make_opsetid("", 13)])


def _error(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert err.startswith("mcudeploy: error: ")
    assert len(err.splitlines()) == 1, err
    return err


def test_not_an_onnx_file(tmp_path, capsys):
    path = tmp_path / "notes.onnx"
    path.write_text("this is not a model\n" * 20)
    err = _error(capsys, ["plan", str(path), "-b", "host"])
    assert str(path) in err and "not a readable ONNX model" in err


def test_missing_file(tmp_path, capsys):
    err = _error(capsys, ["plan", str(tmp_path / "absent.onnx"), "-b", "host"])
    assert "absent.onnx" in err


def test_truncated_model(tmp_path, capsys):
    data = _qdq_model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    err = _error(capsys, ["plan", str(path), "-b", "host"])
    assert str(path) in err


def test_unsupported_operator_names_node_and_op(tmp_path, capsys):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("Sin", ["x"], ["y"], name="my_sin")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    err = _error(capsys, ["plan", str(_save(tmp_path, model)), "-b", "host"])
    assert "my_sin" in err and "Sin" in err


def test_unknown_dimension_names_the_tensor_and_can_be_pinned(tmp_path, capsys):
    path = _save(tmp_path, _qdq_model(("batch", "width")))
    err = _error(capsys, ["plan", str(path), "-b", "host"])
    assert "input x" in err and "--input-shape" in err
    assert main(["plan", str(path), "-b", "host", "--input-shape", "x=1x7"]) == 0
    assert "arena" in capsys.readouterr().out


def test_unknown_board_lists_the_known_ones(tmp_path, capsys):
    err = _error(capsys, ["plan", str(_save(tmp_path, _qdq_model())), "-b", "no-such-board"])
    assert "no-such-board" in err and "host" in err
    assert "systems of several cores or chips: " in err and "qemu-m4x2" in err  # -b takes a system too


def test_bad_input_shape_spec(tmp_path, capsys):
    err = _error(capsys, ["plan", str(_save(tmp_path, _qdq_model())), "-b", "host", "--input-shape", "x=1by4"])
    assert "--input-shape" in err


def test_no_traceback_from_the_command(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 500, dtype=np.uint8).tobytes())
    proc = subprocess.run([sys.executable, "-m", "mcudeploy", "plan", str(path), "-b", "host"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert str(path) in proc.stderr


@pytest.mark.parametrize("cmd", [["boards"]])
def test_boards_lists_host(capsys, cmd):
    assert main(cmd) == 0
    assert "host" in capsys.readouterr().out


def test_the_schedule_help_offers_exactly_the_schedulers_methods():
    from mcudeploy import cli, schedule

    assert cli.SCHEDULE_METHODS == schedule.METHODS  # the CLI's copy (kept to start fast) has not drifted


def test_the_objective_help_offers_exactly_the_planners_objectives():
    from mcudeploy import cli, objective
    from mcudeploy.stages import assign as partition

    assert cli.BOARD_OBJECTIVES == objective.OBJECTIVES and cli.SYSTEM_OBJECTIVES == partition.OBJECTIVES


@pytest.mark.parametrize("command", ["compile", "plan", "run", "measure", "flash", "tune"])
def test_every_command_that_builds_a_plan_takes_every_plan_changing_option(command):
    from mcudeploy import cli

    from mcudeploy.objective import Objective
    from mcudeploy.plan import CompileOptions
    from mcudeploy.target.board import plan_options

    given = {"--input-shape": ["x=1x4"], "--int8-input": [], "--stream-input": [], "--fast-memory": ["50%"],
             "--schedule": ["dfs"], "--time-limit": ["3"], "--objective": ["latency"], "--memory-budget": ["64K"]}
    assert set(given) == {option for option, _, _ in cli.PLAN_OPTIONS}
    output = ["-o", "out"] if command in ("compile", "tune") else []
    args = cli.parser().parse_args([command, "m.onnx", "-b", "qemu-m4", *output,
                                    *(word for option, values in given.items() for word in [option, *values])])
    assert cli._given_plan_options(args) == list(given)
    if command != "tune":  # tune's --time-limit bounds its search in wall-clock seconds; the schedule's is its own
        assert plan_options(cli._request(args)) == ({"x": (1, 4)}, CompileOptions(
            schedule_method="dfs", schedule_time_limit=3.0, int8_input=True, stream_input=True, fast_memory="50%",
            objective=Objective("latency", 65536)))


@pytest.mark.parametrize("argv, words", [
    (["--boards", "0"], "--boards must be a whole number of boards, 1 or more"),
    (["--boards", "2", "-b", "nucleo-f446re"], "is real hardware: give each board's serial port with --port"),
    (["--boards", "3", "--port", "socket://127.0.0.1:1", "--port", "socket://127.0.0.1:2"], "give one --port per board"),
    (["--port", "socket://127.0.0.1:1", "--place", "p"], "give either --port or --place, not both"),
])
@pytest.mark.parametrize("command", ["measure", "run"])
def test_a_pool_of_boards_that_cannot_be(tmp_path, capsys, argv, words, command):
    model = _save(tmp_path, _qdq_model())
    board = [] if "-b" in argv else ["-b", "qemu-m4"]
    assert words in _error(capsys, [command, str(model), *board, *argv])


def test_a_run_on_the_host_takes_no_pool(tmp_path, capsys):
    model = _save(tmp_path, _qdq_model())
    assert "the host board runs here" in _error(capsys, ["run", str(model), "-b", "host", "--boards", "2"])


def test_measure_settle_needs_a_budget_and_a_dma_board(tmp_path, capsys):
    """measure --settle without --fast-memory, or where no copy goes by DMA (qemu-m4 has no DMA
    engine), is refused in one sentence before any board is started."""
    from residual import residual_model

    path = _save(tmp_path, residual_model())
    assert "--settle needs --fast-memory" in _error(capsys, ["measure", str(path), "-b", "qemu-an505", "--settle"])
    err = _error(capsys, ["measure", str(path), "-b", "qemu-m4", "--settle", "--fast-memory", "60%"])
    assert "nothing is copied by DMA on qemu-m4" in err


def test_measure_settle_refused_on_a_system(tmp_path, capsys):
    """measure --settle on a system is refused in one sentence, not ignored."""
    from residual import residual_model

    path = _save(tmp_path, residual_model())
    err = _error(capsys, ["measure", str(path), "-b", "qemu-m4x2", "--settle"])
    assert "--settle" in err and "does not apply to the system qemu-m4x2" in err


def test_an_output_folded_to_a_constant_is_refused(tmp_path, capsys):
    """An output that only dequantizes an initializer is a constant once lowered: no operator would compute it
    (found by the fuzzer with the sanitizers: the plan gave it no place, and the C's generator failed)."""
    model = _qdq_model()
    g = model.graph
    g.initializer.append(helper.make_tensor("wq", TensorProto.INT8, [4], [1, 2, 3, 4]))
    g.node.append(helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"], name="dequant_w"))
    g.output.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [4]))
    err = _error(capsys, ["plan", str(_save(tmp_path, model)), "-b", "host"])
    assert "graph output w is computed from constants only" in err, err
