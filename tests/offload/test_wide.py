"""Which convolutions keep their weights widened to int16 (offload/wide.py): every one where the board's flash
holds the copies too, the ones whose weights serve the most output pixels first where it does not, and the fit
check counting what is kept."""
from __future__ import annotations

import dataclasses

import onnx
import pytest
import zoo

from mcudeploy.boards import load_board
from mcudeploy.compile import compile_model
from mcudeploy.fit import fit
from mcudeploy.offload.wide import CODE_ALLOWANCE, constant_bytes
from mcudeploy.ops.conv import wide_weight_bytes


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    work = tmp_path_factory.mktemp("wide")
    _, qdq, _ = zoo.mobilenetv2(work, size=32, stages=((6, 16, 2, 2),), stem=16, classes=4)
    path = work / "mnv2_int8.onnx"
    onnx.save(qdq, path)
    return path


def _wide(compiled) -> dict:
    return {n.name: n.attrs["wide"] for n in compiled.graph.nodes if "wide" in n.attrs}


def test_a_board_whose_flash_holds_every_copy_keeps_them_all_and_counts_them(model):
    compiled = compile_model(model, "qemu-m4")
    wide = _wide(compiled)
    assert wide and all(wide[name] == wide_weight_bytes(compiled.graph, n)
                        for n in compiled.graph.nodes for name in [n.name] if name in wide)
    flash = fit(compiled).uses[-1]
    assert dict(flash.parts)["weights widened to int16"] == sum(wide.values())


def test_a_small_flash_keeps_the_copies_of_the_most_used_weights_and_fits(model):
    whole = compile_model(model, "qemu-m4")
    copies = sum(_wide(whole).values())
    base = constant_bytes(whole.graph)
    board = dataclasses.replace(load_board("qemu-m4"), flash_bytes=CODE_ALLOWANCE + base + copies // 2)
    compiled = compile_model(model, board)
    wide = _wide(compiled)
    kept = [name for name, b in wide.items() if b]
    dropped = [name for name, b in wide.items() if not b]
    assert kept and dropped
    assert sum(wide.values()) <= copies // 2
    nodes = {n.name: n for n in compiled.graph.nodes}
    pixels = {name: compiled.graph[nodes[name].outputs[0]].shape[2] * compiled.graph[nodes[name].outputs[0]].shape[3]
              for name in wide}
    first = max(wide, key=lambda name: (pixels[name], -wide_weight_bytes(compiled.graph, nodes[name])))
    assert wide[first]  # the most used weights are the first kept (their copy alone fits half the copies)
    assert fit(compiled).ok


def test_the_host_keeps_every_copy_and_marks_nothing(model):
    assert not _wide(compile_model(model, "host"))
