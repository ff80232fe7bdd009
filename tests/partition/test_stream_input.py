"""--stream-input (passes/stream_input.py, ops/read_input.py): a graph input comes into the arena through
ReadInput nodes that ask the firmware's callback for its rows. Unsplit, the one ReadInput reads the
whole input; cut with the first layers, each piece reads its own band, so no step holds the whole
input. Either way the plan computes bit for bit what the plain graph does, on the numpy reference,
in a byte arena (memory/oracle.py) and in C on the host (the callback of mcud_model.h copies from
a buffer outside the arena)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from split_cases import bottleneck, random_cut, random_inputs, rows_cut, same
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node, Tensor
from mcudeploy.memory.oracle import run_in_arena
from mcudeploy.partition import check_cut, mechanisms, split
from mcudeploy.passes.stream_input import stream_inputs
from mcudeploy.compile import compile_graph
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference

INPUT = 4 * 48 * 48  # bottleneck(hw=48)'s int8 input, bytes


def _graphs():
    plain = bottleneck("int8", hw=48)
    return plain, stream_inputs(plain)


def test_the_pass_reads_each_input_through_one_read_node():
    plain, streamed = _graphs()
    assert streamed.streamed == plain.inputs and streamed.inputs == plain.inputs
    reads = [n for n in streamed.nodes if n.op == "ReadInput"]
    assert len(reads) == 1 and reads[0].inputs == ()
    assert not streamed.users(plain.inputs[0])  # the input itself is read by nothing: no buffer for it
    x = random_inputs(plain, 3)
    assert same(run_reference(streamed, x), run_reference(plain, x))


def test_unsplit_the_callback_writes_the_whole_input_into_the_arena():
    plain, streamed = _graphs()
    x = random_inputs(plain, 4)
    want = run_reference(plain, x)
    a, b = compile_graph(plain, "host"), compile_graph(streamed, "host")
    assert b.placement.arena_bytes == a.placement.arena_bytes
    assert plain.inputs[0] not in b.lifetimes.buffer_of
    assert same(run_compiled_on_host(b, [x])[0], want)


@pytest.mark.parametrize("halo", ("keep", "recompute"))
def test_a_cut_through_the_read_never_holds_the_whole_input(halo):
    plain, streamed = _graphs()
    x = random_inputs(plain, 5)
    want = run_reference(plain, x)
    cut = rows_cut(streamed, 16, halo)
    assert check_cut(streamed, cut) is None
    pieces = split(streamed, (cut,))
    assert "streamed-input" in mechanisms(streamed, (cut,))
    assert sum(n.op == "ReadInput" for n in pieces.nodes) == 16
    compiled = compile_graph(pieces, "host")
    kept = compile_graph(split(plain, (rows_cut(plain, 16, halo),)), "host")
    print(f"\n{halo}: arena with the input whole {kept.placement.arena_bytes} B, streamed "
          f"{compiled.placement.arena_bytes} B (input {INPUT} B)")
    # with the input whole, its bands free as they are read (memory/parts.py) but all of it is live
    # before the first step; streamed, a read holds one band (3 rows of 48, and a halo row or two)
    assert compiled.placement.arena_bytes < kept.placement.arena_bytes
    bands = [compiled.graph[n.outputs[0]].nbytes for n in compiled.graph.nodes if n.op == "ReadInput"]
    assert max(bands) <= 4 * 5 * 48
    assert compiled.lifetimes.live_bytes()[0] == 0  # nothing before the first step
    got = run_in_arena(compiled.graph, compiled.order, compiled.lifetimes, compiled.placement, x)
    assert same(got, want)
    assert same(run_compiled_on_host(compiled, [x])[0], want)


@pytest.mark.parametrize("seed", range(4))
def test_random_cuts_through_the_read_compute_what_the_plain_graph_does(seed):
    """Random cuts that hold the ReadInput (rows or columns, counts per node, either halo): pieces
    whose bands are written into a gather's output take strided views, read run by run."""
    plain, streamed = _graphs()
    rng = random.Random(seed)
    read = streamed.nodes[0].name
    cut = None
    for _ in range(50):
        cut = random_cut(streamed, rng, axes=("d2", "d3", "oh", "ow"))
        if cut is not None and read in {n for n, _ in cut.axes}:
            break
    else:
        pytest.fail("no random cut through the ReadInput in 50 draws")
    x = random_inputs(plain, seed)
    want = run_reference(plain, x)
    pieces = split(streamed, (cut,))
    assert same(run_reference(pieces, x), want), f"reference differs for {cut}"
    compiled = compile_graph(pieces, "host", options=CompileOptions(placement_method="greedy"))
    assert same(run_compiled_on_host(compiled, [x])[0], want), f"host C differs for {cut}"


def test_an_input_that_is_also_an_output_is_refused():
    t = Tensor("x", (1, 4), "int8", "input")
    y = Tensor("y", (1, 4), "int8", "output")
    g = Graph("g", {"x": t, "y": y}, (Node("r", "Relu", ("x",), ("y",)),), ("x",), ("y", "x"))
    with pytest.raises(UnsupportedError, match="input x is also a graph output"):
        stream_inputs(g)


def test_a_model_whose_inputs_nothing_reads_is_refused():
    t = Tensor("x", (1, 4), "int8", "input")
    c = Tensor("c", (1, 4), "int8", "constant", data=np.zeros((1, 4), np.int8))
    y = Tensor("y", (1, 4), "int8", "output")
    g = Graph("g", {"x": t, "c": c, "y": y}, (Node("r", "Relu", ("c",), ("y",)),), ("x",), ("y",))
    with pytest.raises(UnsupportedError, match="no input that an operator reads"):
        stream_inputs(g)
