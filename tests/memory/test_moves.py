"""A value moved to another memory region while it is idle, and back (mcudeploy/offload/moves.py):
the mechanism swap will use. Through the generated C on the host the moved plan gives the unmoved
plan's outputs bit for bit, the fast region's arena drops by the moved tensor, and plan.json says
where the value is at which steps."""
import dataclasses
import json

import numpy as np
import pytest

from mcudeploy.boards import Region, load_board
from mcudeploy.codegen import write_project
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import MCUDeployError
from mcudeploy.offload import move, stays
from mcudeploy.compile import compile_graph, compile_model
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference
from residual import SHAPE, residual_model

RNG = np.random.default_rng(11)


def two_region_board():
    host = load_board("host")
    return dataclasses.replace(host, regions=(Region("sram", 1 << 20), Region("psram", 1 << 24, section=".mcud_psram")))


def move_idle(tensor, region):
    """A rewrite: ``tensor`` out to ``region`` after its first use and back before its last."""
    def rewrite(graph, order):
        uses = [i for i, n in enumerate(order) if tensor in n.inputs]
        return move(graph, order, tensor, region, uses[0], uses[-1])
    return rewrite


def test_a_moved_value_frees_fast_memory_and_computes_the_same(tmp_path):
    board = two_region_board()
    plain = compile_model(residual_model(), board, options=CompileOptions(schedule_method="model"))
    moved = compile_graph(plain.graph, board, "residual",
                          options=CompileOptions(schedule_method="model", rewrites=[move_idle("a", "psram")]))
    assert [n.op for n in moved.order].count("Copy") == 2
    a_bytes = plain.graph["a"].nbytes
    assert plain.placement.arenas["sram"] - moved.placement.arenas["sram"] == a_bytes
    assert moved.placement.arenas["psram"] == a_bytes and plain.placement.arenas["psram"] == 0

    chain, = stays(moved)
    assert [s.region for s in chain] == ["sram", "psram", "sram"]
    assert chain[0].last < chain[1].last and chain[1].first <= chain[0].last and chain[2].first <= chain[1].last
    plan = json.loads((write_project(moved, tmp_path / "moved") / "plan.json").read_text())
    assert plan["moves"] == [{"value": "a", "stays": [{"tensor": s.tensor, "region": s.region, "first": s.first,
                                                       "last": s.last} for s in chain]}]
    assert [b["region"] for b in plan["buffers"] if b["name"] in {s.tensor for s in chain}] == ["sram", "psram", "sram"]

    samples = [{"x": RNG.standard_normal(SHAPE).astype(np.float32)} for _ in range(2)]
    want = run_compiled_on_host(plain, samples, tmp_path / "plain")
    got = run_compiled_on_host(moved, samples, tmp_path / "moved_run")
    for sample, g, w in zip(samples, got, want):
        assert np.array_equal(g[0], w[0])
        np.testing.assert_allclose(g[0], run_reference(moved.graph, sample)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tensor, after, before, why", [
    ("y", 2, 3, "graph output"),  # the order: a (Conv with its Relu), b, c, y
    ("a", 0, 3, "used between"),
    ("a", 1, 0, "must be a later use"),
    ("a", 2, 3, "neither makes nor reads"),
])
def test_moves_that_cannot_be_made_say_why(tensor, after, before, why):
    compiled = compile_model(residual_model(), two_region_board(), options=CompileOptions(schedule_method="model"))
    with pytest.raises(MCUDeployError, match=why):
        move(compiled.graph, compiled.order, tensor, "psram", after, before)
