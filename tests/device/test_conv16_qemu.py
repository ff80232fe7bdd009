"""16x8 pointwise convolutions (mcud_conv_s16_pw) on the Cortex-M DSP path, bit for bit mcudeploy's numpy reference:
the host build runs the portable C of mcud_dsp.h (tests/ops/test_16x8.py), these boards the DSP instructions
(SMLAD, SXTB16, PKHBT and PKHTB), on tests/ops/test_16x8.py's cases: odd channel counts (a tail of cin % 4),
odd widths (one pixel left in a row), an int32 sum that wraps, no bias."""
from __future__ import annotations

import pytest
from ops.test_16x8 import CONVS, _conv

from mcudeploy.compile import compile_graph
from mcudeploy.device.runner import run_on_board
from mcudeploy.reference import evaluate

pytestmark = pytest.mark.qemu

POINTWISE = sorted(name for name in CONVS if name.startswith("pointwise"))


@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m7"])
@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_16x8_on_the_dsp_path_is_the_reference(need_qemu, name, board):
    graph, _, inputs = _conv(**CONVS[name], seed=3)
    compiled = compile_graph(graph, board)
    assert [n.op for n in compiled.graph.nodes] == ["Conv"]
    result = run_on_board(compiled, [inputs])
    want = evaluate(graph, inputs)["y"]
    assert (result.outputs[0][0] == want).all()
