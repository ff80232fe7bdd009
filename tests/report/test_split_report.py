"""The report's split section (text and HTML) and the split fields of plan.json: which operators
were cut, along which axis, into how many pieces, with which halo, what it saved, and the latency
with its source; "not split" when there is no scheme."""
from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.compile import compile_model
from mcudeploy.plan import board_plan, plan_dict
from mcudeploy.report.html import render
from mcudeploy.report.text import plan_text, summary
from mcudeploy.report.view import plan_view

# what partition.describe gives for KWS cut in 4 strips along H (two operators shown)
SCHEME = [
    {"node": "model/conv2d/Conv2D", "op": "Conv", "axis": "oh", "pieces": 4, "halo": "keep",
     "piece_nodes": ["model/conv2d/Conv2D#0", "model/conv2d/Conv2D#1", "model/conv2d/Conv2D#2",
                     "model/conv2d/Conv2D#3"]},
    {"node": "model/depthwise/Conv2D", "op": "Conv", "axis": "oh", "pieces": 4, "halo": "recompute",
     "piece_nodes": ["model/depthwise/Conv2D#0", "model/depthwise/Conv2D#3"], "macs": 1000, "piece_macs": 1125},
]
# 16,000 B unsplit (KWS's per-operator bound), 9,600 B split: 6,400 B saved, 0.60x
SPLIT = {"arena_bytes_unsplit": 16000, "arena_bytes": 9600, "saved_bytes": 6400}
LATENCY = {"ticks": 10_500, "baseline_ticks": 10_000, "source": "measured on qemu-m4"}  # +5.0%


@pytest.fixture(scope="module")
def compiled():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "W")
    graph = helper.make_graph([helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", pads=[1, 1, 1, 1])], "one_conv",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 8, 8])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return compile_model(model, "host")


def split_plan(compiled) -> dict:
    return plan_dict(compiled, scheme=SCHEME, latency=LATENCY, split=SPLIT)


def test_plan_json_keeps_its_fields_and_adds_the_split_when_known(compiled):
    plain = plan_dict(compiled)
    assert plain["scheme"] == [] and plain["latency"]["source"] == "none" and "split" not in plain
    plan = json.loads(json.dumps(split_plan(compiled)))  # plain JSON
    assert plan["scheme"] == SCHEME and plan["split"] == SPLIT and plan["latency"] == LATENCY
    assert set(plain) <= set(plan)


def test_view_of_the_split(compiled):
    v = plan_view(board_plan(split_plan(compiled)))
    s = v["split"]
    assert s["cut"] and s["operators"] == 2
    assert [(r["op"], r["axis"], r["pieces"], r["halo"]) for r in s["rows"]] == [
        ("Conv", "oh", 4, "keep"), ("Conv", "oh", 4, "recompute")]
    assert s["saving"] == {"arena_bytes_unsplit": 16000, "arena_bytes": 9600, "saved_bytes": 6400, "ratio": 0.6}
    assert v["latency"]["overhead"] == pytest.approx(0.05)
    none = plan_view(board_plan(plan_dict(compiled)))
    assert not none["split"]["cut"] and none["split"]["saving"] is None and none["latency"]["overhead"] is None


def test_text_report_shows_the_cut_the_saving_and_the_latency(compiled):
    text = plan_text(board_plan(split_plan(compiled)), detail=True)
    assert "split: 2 operators cut, arena 9,600 bytes instead of 16,000 (saved 6,400 bytes, 0.60x)" in text
    assert "latency 10,500 ticks (measured on qemu-m4), unsplit 10,000 ticks: +5.0%" in text
    rows = [line for line in text.splitlines() if "Conv2D" in line and " oh " in line]
    assert len(rows) == 2 and rows[0].split()[-3:] == ["4", "keep", "–"]
    assert rows[1].split()[-3:] == ["4", "recompute", "+12.5%"]  # recomputed halo rows: 1,125 MACs for 1,000


def test_text_report_says_not_split(compiled):
    text = summary(compiled, detail=True)
    assert "split: not split (every operator runs whole)" in text
    assert "latency" not in text  # nothing measured: no latency line
    assert "split" not in summary(compiled)  # the short summary says nothing of a split that did not happen


def test_html_report_shows_the_split(compiled):
    html = render(board_plan(split_plan(compiled)))
    assert 'id="split-table"' in html and 'id="split-saving"' in html and 'id="split-none"' not in html
    for text in ("6,400 bytes (0.60× the unsplit arena)", "16,000 bytes", "9,600 bytes", "<td>keep</td>",
                 "<td>recompute</td>", "10,500 ticks (measured on qemu-m4)", "+5.0%", "2 operators cut"):
        assert text in html, text
    assert html.count('<td class="num">4</td>') == 2  # pieces
    assert "+12.5%</td>" in html


def test_html_report_says_not_split(compiled):
    html = render(board_plan(plan_dict(compiled)))
    assert 'id="split-none"' in html and 'id="split-table"' not in html and 'id="split-saving"' not in html
    assert "not split" in html
