"""`mcudeploy report`: the HTML page opens in headless Chromium without console messages, and the
rectangles its script draws (one per tensor) sit inside the buffers plan.json places; the memory curve and the peak
it marks are the compiler's own live bytes. The text summary of `mcudeploy plan` shows the same.

The page's script reads each drawn <rect> back from the SVG, maps it through the inverse of the
chart's scales and writes the result into <script id="drawn">; the tests read it with --dump-dom.
Tests that need Chromium skip when it is absent, except in CI (tests/browser.py).
"""
from __future__ import annotations

import copy
import json
import re

import pytest

import zoo
from browser import open_in_chromium
from shared_models import need_models, shared_models
from mcudeploy.cli import main
from mcudeploy.errors import MCUDeployError
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions, board_plan, plan_dict
from mcudeploy.report.html import render, write_report
from mcudeploy.report.text import plan_text, summary
from mcudeploy.report.view import plan_view


def drawn(dom: str) -> dict:
    m = re.search(r'<script type="application/json" id="drawn">(.*?)</script>', dom, re.S)
    assert m, "the page has no drawn-data element"
    return json.loads(m.group(1))


def inside_its_buffer(block: dict, buffer: dict) -> bool:
    """A block lies within its buffer's bytes and steps, and at each of its steps within the bytes the
    buffer's parts live then cover (where the buffer's size changes in place)."""
    lo, hi = block["offset"] - buffer["offset"], block["offset"] - buffer["offset"] + block["size"]
    if not (0 <= lo <= hi <= buffer["size"] and buffer["first"] <= block["first"] <= block["last"] <= buffer["last"]):
        return False
    for s in range(block["first"], block["last"] + 1):
        covered = lo
        for at, size, first, last in sorted(buffer.get("parts") or [[0, buffer["size"], buffer["first"], buffer["last"]]]):
            if first <= s <= last and at <= covered:
                covered = max(covered, at + size)
        if covered < hi:
            return False
    return True


def check_page(plan: dict, html_path, tmp_path, live_bytes: list[int]) -> dict:
    """Open the page; compare what it drew with plan.json and with the compiler's live bytes: every tensor
    of the arena drawn (in one rectangle, or one per band of a buffer freed band by band; a buffer without
    tensors: one per part, else one), each rectangle inside the bytes its buffer holds, every buffer drawn."""
    dom, console = open_in_chromium(html_path, tmp_path)
    assert console == [], console
    d = drawn(dom)
    assert d["errors"] == []
    default = (plan.get("regions") or [{"name": "arena"}])[0]["name"]
    buffers = {b["name"]: b for b in plan["buffers"]}
    arena_tensors = sorted(t["name"] for t in plan.get("tensors") or [] if not t.get("state"))
    assert sorted({r["tensor"] for r in d["rects"] if r["tensor"]}) == arena_tensors
    assert {r["buffer"] for r in d["rects"]} == set(buffers)
    for r in d["rects"]:
        b = buffers[r["buffer"]]
        assert r["region"] == (b.get("region") or default)
        assert inside_its_buffer(r, b), (r, b)
        if r["tensor"] is None:
            assert [r["offset"] - b["offset"], r["size"], r["first"], r["last"]] in (
                b.get("parts") or [[0, b["size"], b["first"], b["last"]]])
    assert d["memory"] == live_bytes
    assert d["peak"]["bytes"] == max(live_bytes)
    assert live_bytes[d["peak"]["step"] + 1] == max(live_bytes)
    return d


def self_contained(html: str) -> bool:
    """No <link>, no src=, no url(...), no @import: nothing for the browser to fetch."""
    return not re.search(r"<link\b|\bsrc\s*=|url\(|@import", html, re.I)


@pytest.fixture(scope="module")
def unet(tmp_path_factory):
    float_model, _, _ = zoo.unet(tmp_path_factory.mktemp("unet"))
    return compile_model(float_model, "host")


def test_zoo_unet_report_in_chromium(unet, tmp_path):
    plan = plan_dict(unet)
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    out = write_report(tmp_path / "plan.json", tmp_path / "report.html")
    html = out.read_text()
    assert self_contained(html)
    assert len(plan["buffers"]) > 6  # 9 once the Concat inputs are written into their outputs
    check_page(plan, out, tmp_path, unet.lifetimes.live_bytes())


@pytest.mark.parametrize("name", ["vww_mobilenetv1_int8", "ic_resnet8_int8", "kws_dscnn_int8"])
def test_reference_model_report_in_chromium(name, tmp_path):
    need_models()
    model = [p for p in shared_models(f"{name}.onnx")]
    if not model:
        pytest.skip(f"{name}.onnx is not among the shared models")
    compiled = compile_model(model[0], "host")
    assert main(["compile", str(model[0]), "-b", "host", "-o", str(tmp_path / "out")]) == 0
    assert main(["report", str(tmp_path / "out" / "plan.json"), "-o", str(tmp_path / "report.html")]) == 0
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    d = check_page(plan, tmp_path / "report.html", tmp_path, compiled.lifetimes.live_bytes())
    assert d["peak"]["bytes"] == plan["lower_bound_bytes"] == compiled.placement.lower_bound_bytes


def with_regions(plan: dict) -> dict:
    """The plan as the layout work will write it: buffers over two regions, "tensors" and
    "regions", and schedule/placement as objects. Odd buffers move to a second region,
    stacked in order (not a valid layout, only a drawing check)."""
    p = copy.deepcopy(plan)
    top, moved = 0, {}
    for i, b in enumerate(p["buffers"]):
        b["region"] = "sram" if i % 2 == 0 else "ccm"
        if i % 2:
            moved[b["name"]] = top - b["offset"]
            b["offset"], top = top, top + b["size"]
    p["regions"] = [{"name": "sram", "size": 131072, "arena_bytes": plan["arena_bytes"]},
                    {"name": "ccm", "size": 65536, "arena_bytes": top}]
    p["tensors"] = [dict(t, offset=t["offset"] + moved.get(t["buffer"], 0)) for t in plan["tensors"]]
    p["schedule"] = {"method": "exact", "proven_optimal": True, "time_s": 0.25}
    p["placement"] = {"method": "exact", "proven_optimal": False}
    return p


def test_regions_and_tensors_in_chromium(unet, tmp_path):
    plan = with_regions(plan_dict(unet))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    out = write_report(tmp_path / "plan.json")
    assert out == tmp_path / "report.html"
    d = check_page(plan, out, tmp_path, unet.lifetimes.live_bytes())
    assert {r["region"] for r in d["rects"]} == {"sram", "ccm"}
    html = out.read_text()
    assert "exact, proven optimal, 0.25 s" in html and "not proven optimal" in html


def test_view_without_new_fields_matches_compiler(unet):
    plan = plan_dict(unet)
    for key in ("regions", "tensors"):  # a version-1 plan, as written before the layout work
        plan.pop(key)
    for b in plan["buffers"]:
        b.pop("region")
    plan["schedule"], plan["placement"] = plan["schedule"]["method"], plan["placement"]["method"]
    v = plan_view(board_plan(plan))
    live = unet.lifetimes.live_bytes()
    assert v["live"] == live
    assert v["peak"]["bytes"] == max(live) == unet.placement.lower_bound_bytes
    assert [r["name"] for r in v["regions"]] == ["arena"]
    assert v["regions"][0]["arena_bytes"] == unet.placement.arena_bytes
    peak = v["peak"]["step"]
    assert {b["name"] for b in v["peak"]["buffers"]} == {
        b.name for b in unet.lifetimes.buffers if b.first <= peak <= b.last}
    assert sum(b["size"] for b in v["peak"]["buffers"]) == max(live)
    assert v["schedule"]["method"] == unet.schedule_method and v["schedule"]["proven_optimal"] is None


def test_html_names_the_peak_tensors_and_every_operator(unet):
    plan = plan_dict(unet)
    html = render(board_plan(plan))
    v = plan_view(board_plan(plan))
    for b in v["peak"]["buffers"]:
        for t in b["tensors"]:
            assert t["name"] in html
    rows = re.findall(r'<tr data-step="(-?\d+)"', html)
    assert rows == [str(s) for s in range(-1, len(plan["order"]))]
    assert 'id="split-none"' in html


def test_split_section_lists_unknown_scheme_fields_as_given(unet):
    plan = plan_dict(unet)
    plan["scheme"] = [{"component": 0, "axis": "h", "factor": 4}]
    html = render(board_plan(plan))
    assert 'id="split-table"' in html and "<b>factor</b> 4" in html


def test_plan_text_shows_the_same_summary(unet):
    text = summary(unet, detail=True)
    v = plan_view(board_plan(plan_dict(unet)))
    peak = v["peak"]
    assert f"peak {peak['bytes']:,} bytes at step {peak['step']}" in text
    assert len([line for line in text.splitlines() if line.endswith("<- peak")]) == 1
    assert f"live at the peak (step {peak['step']}): {len(peak['buffers'])} buffers" in text
    for r in v["operators"]:
        assert re.search(rf"^\s+{r['step']}\s.*\b{r['op']}\b.*\s{r['live']:,}\s", text, re.M), r
    assert text == plan_text(board_plan(plan_dict(unet)), detail=True)  # host board: no SRAM line


def test_report_text_prints_a_plan_json(unet, tmp_path, capsys):
    from mcudeploy.cli import main
    from mcudeploy.codegen import write_project

    out = write_project(unet, tmp_path / "out")
    assert main(["report", str(out), "--text"]) == 0
    assert capsys.readouterr().out.rstrip("\n") == plan_text(board_plan(plan_dict(unet)), detail=True)


def test_plan_command_prints_the_table(tmp_path, capsys):
    import onnx

    float_model, _, _ = zoo.unet(tmp_path)
    onnx.save(float_model, tmp_path / "unet.onnx")
    assert main(["plan", str(tmp_path / "unet.onnx"), "-b", "host"]) == 0
    out = capsys.readouterr().out
    assert "memory over time: peak" in out and "live at the peak" in out and "MACs" in out


@pytest.mark.parametrize("content, says", [
    (None, "there is no plan at"),
    ("{not json", "is not valid JSON"),
    ("[]", "holds no JSON object"),
    ('{"model": "m"}', 'has no "board" field'),
])
def test_report_errors_are_one_sentence(tmp_path, capsys, content, says):
    path = tmp_path / "plan.json"
    if content is not None:
        path.write_text(content)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("mcudeploy: error: ") and says in err and len(err.splitlines()) == 1


def test_buffer_without_offset_is_named(unet):
    plan = plan_dict(unet)
    del plan["buffers"][3]["offset"]
    with pytest.raises(MCUDeployError, match=r'the plan is not a plan.json: buffers\[3\] has no "offset" field'):
        render(board_plan(plan))


@pytest.mark.parametrize("board", ["qemu-m4", "qemu-an505"])
def test_the_report_marks_the_transfers_of_a_fast_memory_budget(board, tmp_path):
    """A residual block's skip swapped out and back (plain copies on qemu-m4, DMA on qemu-an505): the
    page lists each transfer with the steps it spans, and gives them to the arena pictures."""
    from residual import residual_model

    compiled = compile_model(residual_model(), board, options=CompileOptions(fast_memory="60%"))
    plan = plan_dict(compiled)
    v = plan_view(board_plan(plan))
    swaps = plan["offload"]["swaps"]
    assert swaps and [m["kind"] for m in v["marks"]] == ["out", "in"] * len(swaps)
    back = [m for m in v["marks"] if m["kind"] == "in"]
    assert [(m["first"], m["last"]) for m in back] == [(s["trigger"], s["in_step"]) for s in swaps]
    assert all(m["regions"] == [plan["offload"]["fast_region"], plan["offload"]["slow_region"]] for m in v["marks"])
    page = render(board_plan(plan))
    assert page.count('data-mark="out"') == page.count('data-mark="in"') == len(swaps)
    assert ("copy back (DMA)" in page) == (board == "qemu-an505")
    drawn = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
                       .group(1))
    assert drawn["marks"] == v["marks"]


def test_the_transfers_are_drawn_in_chromium(tmp_path):
    from residual import residual_model

    from mcudeploy.memory.lifetimes import lifetimes

    compiled = compile_model(residual_model(), "qemu-an505", options=CompileOptions(fast_memory="60%"))
    plan = plan_dict(compiled)
    html = tmp_path / "report.html"
    html.write_text(render(board_plan(plan)))
    check_page(plan, html, tmp_path, list(lifetimes(compiled.graph, compiled.order, compiled.board.alignment).live_bytes()))
    dom, _ = open_in_chromium(html, tmp_path)
    marks = plan_view(board_plan(plan))["marks"]
    # each transfer in the fast region's picture and in the slow region's
    assert len(re.findall(r'class="mark mark-(?:in|out)"', dom)) == 2 * len(marks)
