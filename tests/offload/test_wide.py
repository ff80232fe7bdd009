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


def test_products_read_paired_weights_where_the_core_has_no_mve(tmp_path):
    """offload.dsp_packings: on a core without MVE every constant int8 product reads its weights paired where they
    fit (mcud_gemm_s8*_p without scratch, _a16p with), on an MVE core none does (its VMLADAVs read the plain packing);
    a folder loads back to the same kernels (project.load_project decides it again from the board)."""
    from pathlib import Path

    from mcudeploy.cli import main
    from mcudeploy.ops import registry
    from mcudeploy.project import load_project

    model = Path(__file__).resolve().parents[1] / "keras_corpus" / "dscnn_gap-int8.tflite"

    def products(compiled):
        return {n.name: (n.attr("dsp", 0), registry.get(n.op).kernel(compiled.graph, n).fn)
                for n in compiled.graph.nodes if n.op == "Gemm"}

    m4 = products(compile_model(str(model), "qemu-m4"))
    assert m4 and all(paired == 1 and fn.endswith("p") for paired, fn in m4.values())
    m55 = products(compile_model(str(model), "qemu-m55"))
    assert m55.keys() == m4.keys() and all(paired == 0 and not fn.endswith("p") for paired, fn in m55.values())
    out = tmp_path / "out"
    assert main(["compile", str(model), "-b", "qemu-m4", "-o", str(out)]) == 0
    assert products(load_project(out).compiled) == m4
