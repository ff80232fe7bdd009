"""16x8 pointwise and depthwise convolutions (mcud_conv_s16_pw, mcud_conv_s16_dw) on the Cortex-M DSP path, bit for
bit mcudeploy's numpy reference: the host build runs the portable C of mcud_dsp.h (tests/ops/test_16x8.py), this
board the DSP instructions (SMLAD, SMLALD, SXTB16, PKHBT and PKHTB), on tests/ops/test_16x8.py's cases: odd channel
counts (a tail of cin % 4), odd widths (one pixel left in a row), an int32 sum that wraps, an int64 one over more
channels than one 32-bit partial sum takes, no bias; 3x3 windows inside, over each edge and strided, a dilated one.
The cases run side by side in one graph, so one firmware and one emulator run serve them all."""
from __future__ import annotations

import pytest
from tests.conftest import missing_tools
from ops.test_16x8 import CONVS, _conv

from mcudeploy.compile import compile_graph
from mcudeploy.device.runner import run_on_board
from mcudeploy.ir import Graph, Node
from mcudeploy.reference import evaluate

pytestmark = pytest.mark.qemu

CASES = sorted(name for name in CONVS if name.startswith(("pointwise", "depthwise")))


def side_by_side() -> tuple[Graph, dict]:
    """Every case's graph in one, its tensors named "case/tensor"; the inputs of every case."""
    tensors, nodes, inputs, outputs, values = {}, [], [], [], {}
    for name in CASES:
        graph, node, given = _conv(**CONVS[name], seed=3)

        def renamed(t: str) -> str:
            return f"{name}/{t}" if t else t

        tensors.update({renamed(k): t.with_(name=renamed(k)) for k, t in graph.tensors.items()})
        nodes.append(Node(renamed(node.name), node.op, tuple(map(renamed, node.inputs)), tuple(map(renamed, node.outputs)),
                          node.attrs))
        inputs += [renamed(i) for i in graph.inputs]
        outputs += [renamed(o) for o in graph.outputs]
        values.update({renamed(k): v for k, v in given.items()})
    return Graph("conv16", tensors, nodes, inputs, outputs, arithmetic="tflite"), values


@pytest.fixture(scope="module")
def ran():
    if missing_tools():
        pytest.skip(f"needs {' and '.join(missing_tools())} (apt-get install qemu-system-arm gcc-arm-none-eabi "
                    f"libnewlib-arm-none-eabi)")
    graph, inputs = side_by_side()
    compiled = compile_graph(graph, "qemu-m4")
    result = run_on_board(compiled, [inputs])
    return dict(zip(compiled.graph.model_outputs(), result.outputs[0])), evaluate(graph, inputs)


@pytest.mark.parametrize("name", CASES)
def test_16x8_convolutions_on_the_dsp_path_are_the_reference(ran, name):
    board, want = ran
    assert (board[f"{name}/y"] == want[f"{name}/y"]).all()
