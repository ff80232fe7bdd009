"""A model cut into consecutive stages (mcudeploy/stages), each compiled for its own board: run one
after another on the host, each fed what the earlier ones sent, the stages' C gives the whole
model's C bit for bit, and plan.json lists every stage's plan and the bytes on every link."""
import numpy as np
import pytest

from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.compile import compile_graph, lower
from mcudeploy.plan import CompileOptions
from mcudeploy.stages import compile_stages, staged_plan_dict
from residual import SHAPE, residual_model
from shared_models import MODELS, need_models

RNG = np.random.default_rng(3)


def run_staged(staged, sample, tmp_path):
    """The stages' C on the host in turn; what each sends is kept for the later ones."""
    values = dict(sample)
    for stage in staged.stages:
        g = stage.compiled.graph
        outs, = run_compiled_on_host(stage.compiled, [{i: values[i] for i in g.inputs}], tmp_path / f"s{stage.index}")
        values.update(zip(g.outputs, outs))
    return values


def check_staged_equals_whole(graph, bounds, samples, tmp_path, **options):
    whole = compile_graph(graph, "host", "whole", CompileOptions(**options))
    staged = compile_stages(graph, "host", bounds, CompileOptions(**options))
    assert len(staged.stages) == len(bounds) + 1
    want = run_compiled_on_host(whole, samples, tmp_path / "whole")
    for sample, w in zip(samples, want):
        got = run_staged(staged, sample, tmp_path)
        for name, value in zip(graph.outputs, w):
            assert np.array_equal(got[name], value), name
    return whole, staged


def test_a_residual_block_over_two_stages(tmp_path):
    graph = lower(import_model(residual_model()))
    samples = [{"x": RNG.standard_normal(SHAPE).astype(np.float32)} for _ in range(2)]
    whole, staged = check_staged_equals_whole(graph, [2], samples, tmp_path, schedule_method="model")
    first, second = staged.stages
    # the order is a, b, c, y: the first stage makes a and b, the second reads both (the skip and c's input)
    assert set(first.sends) == set(second.receives) == {"a", "b"}
    assert {(l.tensor, l.src, l.dst, l.nbytes) for l in staged.links} == {
        ("a", 0, 1, graph["a"].nbytes), ("b", 0, 1, graph["b"].nbytes)}
    assert max(staged.arena_bytes) <= whole.placement.arena_bytes
    plan = staged_plan_dict(staged)
    assert [s["stage"] for s in plan["stages"]] == [0, 1]
    assert plan["stages"][1]["plan"]["inputs"][0]["name"] in {"a", "b"}
    assert sum(l["bytes"] for l in plan["links"]) == graph["a"].nbytes + graph["b"].nbytes


def test_int8_kws_over_three_stages_is_bit_exact(tmp_path):
    need_models()
    graph = lower(import_model(MODELS / "onnx" / "kws_dscnn_int8.onnx"))
    x = graph[graph.inputs[0]]
    samples = [{x.name: RNG.standard_normal(x.shape).astype(np.float32)}]
    steps = len(graph.nodes)
    _, staged = check_staged_equals_whole(graph, [steps // 3, 2 * steps // 3], samples, tmp_path)
    assert all(l.nbytes > 0 for l in staged.links) and all(s.compiled.graph.arithmetic == graph.arithmetic
                                                           for s in staged.stages)


@pytest.mark.parametrize("bounds", [[0], [4], [2, 2], [3, 1]])
def test_bounds_outside_the_order_are_refused(bounds):
    graph = lower(import_model(residual_model()))
    with pytest.raises(MCUDeployError, match="must rise strictly"):
        compile_stages(graph, "host", bounds, CompileOptions(schedule_method="model"))
