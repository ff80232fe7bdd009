"""Swap under a fast-memory budget (mcudeploy/offload/swap.py), on the host: the budget is met, the
idle skip of a residual block is swapped (not kept in slow memory), chains fall back to keeping
tensors in the slow region, the C gives the unconstrained plan's outputs bit for bit, and plans
that cannot be made are refused in one sentence."""
import dataclasses
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from mcudeploy.boards import load_board
from mcudeploy.codegen import write_project
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import MCUDeployError
from mcudeploy.offload.swap import parse_budget
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from mcudeploy.project import load_project
from residual import SHAPE, residual_model
from shared_models import MODELS, need_models

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("spec, want", [("32768", (32768, None)), ("32K", (32768, None)), ("1M", (1 << 20, None)),
                                        ("50%", (None, 0.5)), ("12.5 %", (None, 0.125))])
def test_budgets_parse(spec, want):
    assert parse_budget(spec) == want


@pytest.mark.parametrize("spec", ["0%", "150%", "lots", "-3"])
def test_bad_budgets_are_refused(spec):
    with pytest.raises(MCUDeployError, match="--fast-memory"):
        parse_budget(spec)


def fast_arena(compiled):
    return compiled.placement.arenas[compiled.board.regions[0].name]


def same_outputs(plain, fitted, samples, tmp_path):
    want = run_compiled_on_host(plain, samples, tmp_path / "plain")
    got = run_compiled_on_host(fitted, samples, tmp_path / "fitted")
    return all(np.array_equal(g, w) for gs, ws in zip(got, want) for g, w in zip(gs, ws))


def test_the_idle_skip_is_swapped_and_the_c_is_unchanged(tmp_path):
    from onnx import save
    model = tmp_path / "residual.onnx"
    save(residual_model(), model)
    plain = compile_model(model, "host", options=CompileOptions(schedule_method="model"))
    a = plain.graph["a"].nbytes
    budget = fast_arena(plain) - a
    fitted = compile_model(model, "host", options=CompileOptions(schedule_method="model", fast_memory=budget))
    assert fast_arena(fitted) <= budget
    o = fitted.offload
    assert [s.tensor for s in o.swaps] == ["a"] and not o.residents
    assert o.bytes_moved == 2 * a and o.added_ticks > 0 and o.modelled
    samples = [{"x": RNG.standard_normal(SHAPE).astype(np.float32)} for _ in range(2)]
    assert same_outputs(plain, fitted, samples, tmp_path)
    plan = json.loads((write_project(fitted, tmp_path / "p") / "plan.json").read_text())
    off = plan["offload"]
    assert (off["budget_bytes"], off["fast_region"], off["slow_region"], off["speeds"]) == (budget, "sram", "slow",
                                                                                            "modelled")
    swap, = off["swaps"]
    order = [e["node"] for e in plan["order"]]
    assert plan["order"][swap["out_step"]]["op"] == "Copy" and plan["order"][swap["in_step"]]["op"] == "Copy"
    assert swap["out_step"] < order.index(next(e["node"] for e in plan["order"] if e["op"] == "Add"))
    # run DIR rebuilds the same plan, copies included
    assert load_project(tmp_path / "p").compiled.offload.as_plan() == fitted.offload.as_plan()


def test_a_budget_below_the_inputs_and_outputs_is_refused():
    """A slow region the caller cannot reach ("dma": false) holds no graph input or output."""
    host = load_board("host")
    board = dataclasses.replace(host, regions=(host.regions[0], dataclasses.replace(host.regions[1], dma=False)))
    plain = compile_model(residual_model(), board, options=CompileOptions(schedule_method="model"))
    io = plain.graph["x"].nbytes
    with pytest.raises(MCUDeployError, match=r"cannot be met with slow: the least arena sram reached is ([\d,]+) B") as err:
        compile_model(residual_model(), board, options=CompileOptions(schedule_method="model", fast_memory=io // 2))
    assert "\n" not in str(err.value)
    least = int(re.search(r"reached is ([\d,]+) B", str(err.value)).group(1).replace(",", ""))
    assert io <= least < plain.placement.arena_bytes  # the input (or the output) stays; the rest could go


def test_a_board_without_slow_memory_says_so():
    with pytest.raises(MCUDeployError, match="board qemu-m7 has no slower memory region"):
        compile_model(residual_model(), "qemu-m7", options=CompileOptions(fast_memory="50%"))


def test_the_cli_refuses_a_budget_in_one_sentence(tmp_path):
    from onnx import save
    save(residual_model(), tmp_path / "r.onnx")
    for board, budget, why in (("qemu-m7", "50%", "no slower memory region"), ("host", "lots", "give bytes")):
        cli = subprocess.run([sys.executable, "-m", "mcudeploy", "plan", str(tmp_path / "r.onnx"), "-b", board,
                              "--fast-memory", budget], capture_output=True, text=True)
        assert cli.returncode == 1 and "Traceback" not in cli.stderr
        assert cli.stderr.count("\n") == 1 and why in cli.stderr


@pytest.mark.parametrize("model", ["ic_resnet8_int8", "kws_dscnn_int8", "vww_mobilenetv1_int8"])
@pytest.mark.parametrize("share", [0.75, 0.5, 0.25])
def test_shared_models_under_a_budget_compute_the_same(model, share, tmp_path):
    need_models()
    path = MODELS / "onnx" / f"{model}.onnx"
    plain = compile_model(path, "host")
    try:
        fitted = compile_model(path, "host", options=CompileOptions(fast_memory=f"{share * 100:g}%"))
    except MCUDeployError as err:  # the planner may say the budget cannot be met: then say why
        assert "cannot be met" in str(err)
        pytest.skip(str(err))
    assert fast_arena(fitted) <= int(fast_arena(plain) * share)
    x = plain.graph[plain.graph.inputs[0]]
    samples = [{x.name: RNG.standard_normal(x.shape).astype(np.float32)} for _ in range(2)]
    assert same_outputs(plain, fitted, samples, tmp_path)


def test_a_model_too_big_for_the_fast_region_swaps_without_being_asked(tmp_path):
    """On a board whose first region cannot hold the arena, the plan uses the slow region by itself,
    with swaps where they cost less than whole buffers there, and says what it added."""
    host = load_board("host")
    plain = compile_model(residual_model(), host, options=CompileOptions(schedule_method="model"))
    room = fast_arena(plain) - plain.graph["a"].nbytes
    small = dataclasses.replace(host, regions=(dataclasses.replace(host.regions[0], size=room),) + host.regions[1:])
    fitted = compile_model(residual_model(), small, options=CompileOptions(schedule_method="model"))
    assert fitted.offload is not None and fitted.offload.budget_bytes == room
    assert fast_arena(fitted) <= room and [s.tensor for s in fitted.offload.swaps] == ["a"]
    samples = [{"x": RNG.standard_normal(SHAPE).astype(np.float32)}]
    assert same_outputs(plain, fitted, samples, tmp_path)


def recompute_model():
    """p = Relu(x), b = Conv(x), c = Conv(b), y = p + c + x: p idles across the convs, longer than x
    (which b reads), and x, which p's producer reads, is read again where p is."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)
    nodes, inits = [helper.make_node("Relu", ["x"], ["p"])], []
    for name, src in (("b", "x"), ("c", "b")):
        w = numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), name + "_w")
        nodes.append(helper.make_node("Conv", [src, w.name], [name], pads=[1, 1, 1, 1]))
        inits.append(w)
    nodes.append(helper.make_node("Sum", ["p", "c", "x"], ["y"]))
    g = helper.make_graph(nodes, "recompute", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("bytes_per_tick, recomputed", [(0.25, True), (4000.0, False)])
def test_recompute_where_it_costs_less_than_the_copies(bytes_per_tick, recomputed, tmp_path):
    """With a slow memory of a quarter byte per tick (the host counts a tick per estimated
    instruction), running Relu again beats copying p out and back; with a very fast one, the copies
    win. Either way the C computes the same."""
    host = load_board("host")
    slow = host.regions[1]
    speed = dataclasses.replace(slow.speed, read_bytes_per_tick=bytes_per_tick, write_bytes_per_tick=bytes_per_tick)
    board = dataclasses.replace(host, regions=(host.regions[0], dataclasses.replace(slow, speed=speed)))
    from onnx import save
    model = tmp_path / "r.onnx"
    save(recompute_model(), model)
    plain = compile_model(model, board, options=CompileOptions(schedule_method="model"))
    budget = fast_arena(plain) - plain.graph["p"].nbytes
    fitted = compile_model(model, board, options=CompileOptions(schedule_method="model", fast_memory=budget))
    o = fitted.offload
    assert fast_arena(fitted) <= budget
    if recomputed:
        assert [(r.tensor, r.node) for r in o.recomputes] == [("p", fitted.graph.producer("p").name)] and not o.swaps
        assert fitted.order[o.recomputes[0].step].attr("recompute") == fitted.graph.producer("p").name
    else:
        assert [s.tensor for s in o.swaps] == ["p"] and not o.recomputes
    samples = [{"x": RNG.standard_normal(SHAPE).astype(np.float32)} for _ in range(2)]
    assert same_outputs(plain, fitted, samples, tmp_path)
    write_project(fitted, tmp_path / "p")
    assert load_project(tmp_path / "p").compiled.offload.as_plan() == o.as_plan()  # run DIR replays the clone too


def test_with_a_dma_engine_the_swap_is_asynchronous_and_the_c_is_unchanged(tmp_path):
    """The host board given a DMA engine (its C copies with the kernel library's memcpy fallback):
    the skip's copies are CopyStart/CopyWait pairs with a slot each, the outputs are the unconstrained
    plan's, and run DIR rebuilds the same plan."""
    from mcudeploy.boards import DmaEngine

    from residual import skip_model

    from onnx import save

    model = tmp_path / "skip.onnx"
    save(skip_model(), model)
    board = dataclasses.replace(load_board("host"), dma_engine=DmaEngine("pl080", 0, 2))
    plain = compile_model(model, board, options=CompileOptions(schedule_method="model"))
    fitted = compile_model(model, board,
                           options=CompileOptions(schedule_method="model", fast_memory=int(fast_arena(plain) * 0.9)))
    o = fitted.offload
    assert o.asynchronous and [s.tensor for s in o.swaps] == ["a"]
    swap, = o.swaps
    ops = [n.op for n in fitted.order]
    assert ops.count("CopyStart") == ops.count("CopyWait") == 2 and "Copy" not in ops
    assert fitted.order[swap.trigger].op == "CopyStart" and fitted.order[swap.in_step].op == "CopyWait"
    assert swap.trigger < swap.in_step - 1  # a computation runs between the start and the wait
    assert all(n.attr("slot") is not None for n in fitted.order if n.op.startswith("Copy"))
    samples = [{"x": RNG.standard_normal(SHAPE).astype(np.float32)}]
    assert same_outputs(plain, fitted, samples, tmp_path)
    plan = json.loads((write_project(fitted, tmp_path / "p") / "plan.json").read_text())
    assert plan["offload"]["swaps"][0]["trigger"] == swap.trigger
    again = load_project(tmp_path / "p").compiled  # the copies come from the plan, not the board
    assert again.offload.as_plan() == o.as_plan() and [n.name for n in again.order] == [n.name for n in fitted.order]
