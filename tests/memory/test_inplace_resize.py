"""In-place operators whose output is bigger or smaller than the input they write over: a 1x1
convolution that changes the channel count, a stride-2 depthwise convolution. The buffer is then
a staircase (the input's size up to the step, the output's after), the placement keeps it whole,
and the generated C on the host gives the numpy reference bit for bit, with the arena full of
noise; the arena oracle (memory/oracle.py) agrees too."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.memory.oracle import run_in_arena
from mcudeploy.ops import registry
from mcudeploy.compile import compile_graph
from mcudeploy.reference import run_reference


def chain(x_shape, layers, seed=0) -> Graph:
    """int8 Convs one after the other, as the QDQ lowering leaves them: layers are
    (output channels, kernel, attributes)."""
    rng = np.random.default_rng(seed)
    tensors = {"x": Tensor("x", tuple(x_shape), "int8", "input", Quant((0.03,), (-9,)))}
    nodes, src, c = [], "x", x_shape[1]
    for i, (cout, kernel, attrs) in enumerate(layers):
        group = attrs.get("group", 1)
        s_w = rng.uniform(0.002, 0.01, cout)
        s_x = tensors[src].quant.scale[0]
        tensors[f"w{i}"] = constant(f"w{i}", rng.integers(-127, 128, (cout, c // group, *kernel)).astype(np.int8),
                                    Quant(tuple(s_w), (0,) * cout, 0))
        tensors[f"b{i}"] = constant(f"b{i}", rng.integers(-5000, 5000, cout).astype(np.int32),
                                    Quant(tuple(s_x * s_w), (0,) * cout, 0))
        node = Node(f"conv{i}", "Conv", (src, f"w{i}", f"b{i}"), (f"t{i}",), dict(attrs))
        partial = Graph("g", tensors, tuple(nodes), ("x",), ())
        shape, dtype = registry.get("Conv").infer(partial, node)[0]
        tensors[f"t{i}"] = Tensor(f"t{i}", shape, dtype, "activation", Quant((0.05,), (3,)))
        nodes.append(node)
        src, c = f"t{i}", cout
    tensors[src] = Tensor(src, tensors[src].shape, "int8", "output", tensors[src].quant)
    return Graph("g", tensors, tuple(nodes), ("x",), (src,))


PAD1 = {"pads": [1, 1, 1, 1]}
CASES = {
    "expand_1x1": ((1, 4, 6, 7), (12, (1, 1), {})),
    "project_1x1": ((1, 8, 6, 7), (3, (1, 1), {})),
    "depthwise_stride2": ((1, 4, 9, 8), (4, (3, 3), {"group": 4, "strides": [2, 2], **PAD1})),
    "depthwise_stride2_ring": ((1, 3, 40, 60), (3, (3, 3), {"group": 3, "strides": [2, 2], **PAD1})),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_resizing_in_place_is_bit_exact_in_c(name, tmp_path):
    x_shape, middle = CASES[name]
    c = x_shape[1]
    # a 3x3 convolution makes the middle operator's input, a 1x1 one reads its output
    graph = chain(x_shape, [(c, (3, 3), PAD1), middle, (2, (1, 1), {})])
    compiled = compile_graph(graph, "host")
    slots, lives = compiled.lifetimes.slots, compiled.lifetimes
    assert slots["t1"].buffer == slots["t0"].buffer, "the middle operator did not run in place"
    (buffer,) = [b for b in lives.buffers if b.name == slots["t0"].buffer]
    assert len(buffer.rects()) > 1 and len({size for _, size, _, _ in buffer.rects()}) > 1
    alignment = compiled.board.alignment
    assert buffer.size >= max(graph["t0"].nbytes, graph["t1"].nbytes)
    assert buffer.size < max(graph["t0"].nbytes, graph["t1"].nbytes) + alignment
    rng = np.random.default_rng(1)
    samples = [{"x": rng.integers(-128, 128, x_shape).astype(np.int8)} for _ in range(2)]
    got = run_compiled_on_host(compiled, samples, tmp_path)
    for sample, outputs in zip(samples, got):
        expected = run_reference(graph, [sample["x"]])[0]
        np.testing.assert_array_equal(outputs[0], expected)
        arena = run_in_arena(compiled.graph, compiled.order, lives, compiled.placement, sample)
        np.testing.assert_array_equal(arena[0], expected)


def test_the_staircase_is_what_is_live():
    """Up to the step the buffer holds the input's bytes, at it the larger, after it the output's:
    the arena of a 1x1 expansion is the bigger tensor plus what else is live, not both."""
    graph = chain((1, 4, 8, 8), [(4, (3, 3), PAD1), (16, (1, 1), {}), (2, (1, 1), {})])
    compiled = compile_graph(graph, "host")
    live = compiled.lifetimes.live_bytes()
    small, big = graph["t0"].nbytes, graph["t1"].nbytes
    step = [n.name for n in compiled.order].index("conv1")
    scratch = registry.get("Conv").scratch(compiled.graph, compiled.order[step])
    assert live[step + 1] == big + scratch  # t0 and t1 in one buffer, plus the kernel's scratch
    assert max(live) < small + big
