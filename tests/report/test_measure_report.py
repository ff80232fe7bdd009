"""The report after `measure`: timings.json beside plan.json, and the page showing, in headless Chromium,
each operator's ticks and estimated milliseconds, their total and the firmware's flash, code and constants
as the firmware's ELF gives them (held against arm-none-eabi-size). And `report DIR` with a timings.json
of another plan, or one that is not a timings file: said in one sentence, never shown as this plan's."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

import zoo
from browser import open_in_chromium
from mcudeploy.cli import main
from mcudeploy.plan import plan_id
from mcudeploy.report.timings import FORMAT, TIMINGS_FILE, VERSION


def fact(dom: str, name: str) -> str:
    m = re.search(rf'<dd id="fact-{name}">(.*?)</dd>', dom, re.S)
    assert m, f"the page has no {name} fact"
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))


def figure(text: str) -> int:
    return int(re.match(r"([\d,]+)", text).group(1).replace(",", ""))


@pytest.mark.qemu
def test_the_report_after_measure_shows_ticks_and_flash(tmp_path, capsys):
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    zoo.unet(tmp_path)  # int8: Concat inputs written into its output, convs in place
    out = tmp_path / "out"
    assert main(["measure", str(tmp_path / "unet_qdq.onnx"), "-b", "qemu-m4", "-o", str(out),
                 "--estimate-for", "nucleo-f446re", "--repeat", "1"]) == 0
    assert f"wrote {out / TIMINGS_FILE} and {out / 'report.html'}" in capsys.readouterr().out
    plan = json.loads((out / "plan.json").read_text())
    timings = json.loads((out / TIMINGS_FILE).read_text())
    assert (timings["format"], timings["version"], timings["plan_id"]) == (FORMAT, VERSION, plan_id(plan))
    ops = timings["ops"]
    assert [plan["order"][o["step"]]["node"] for o in ops] == [o["node"] for o in ops]
    assert all(o["ticks"] > 0 for o in ops) and timings["total_ticks"] == sum(o["ticks"] for o in ops)

    dom, console = open_in_chromium(out / "report.html", tmp_path)
    assert console == []
    rows = dict(re.findall(r'<tr data-step="(\d+)".*?<td class="num ticks" data-ticks="(\d+)"', dom))
    assert rows == {str(o["step"]): str(o["ticks"]) for o in ops}
    for o in ops:  # the figure a reader sees, and the estimated milliseconds beside it
        row = re.search(rf'<tr data-step="{o["step"]}".*?</tr>', dom, re.S).group(0)
        assert f'>{o["ticks"]:,}</td>' in row and f'>{o["estimated_ms"]:.4f}</td>' in row
    assert re.search(rf'id="total-ticks" data-ticks="{timings["total_ticks"]}"><b>{timings["total_ticks"]:,}</b>', dom)
    assert fact(dom, "latency").startswith(f"{timings['total_ticks']:,} ticks on qemu-m4; est. ")
    assert f"{timings['estimated_ms']:.3f} ms on nucleo-f446re" in fact(dom, "latency")

    # flash from the ELF: the firmware built again from the folder (the same C) gives arm-none-eabi-size's figures
    from mcudeploy.device.runner import build_for_board
    from mcudeploy.project import load_project

    elf = build_for_board(load_project(out).compiled, tmp_path / "again").elf
    berkeley = subprocess.run(["arm-none-eabi-size", str(elf)], capture_output=True, text=True, check=True).stdout
    text, data = (int(v) for v in berkeley.splitlines()[1].split()[:2])
    flash = figure(fact(dom, "flash"))
    assert flash == text + data == timings["memory"]["flash_used"]
    assert figure(fact(dom, "code")) + figure(fact(dom, "rodata")) + figure(fact(dom, "data")) == flash
    assert figure(fact(dom, "rodata")) >= plan["weights_bytes"]
    for r in plan["regions"]:
        assert figure(fact(dom, f"region-{r['name']}")) == r["arena_bytes"]


def _folder(tmp_path):
    """A small float model and the folder compile -o wrote for it."""
    import onnx
    from residual import residual_model

    model = tmp_path / "residual.onnx"
    onnx.save(residual_model(), model)
    out = tmp_path / "out"
    assert main(["compile", str(model), "-b", "host", "-o", str(out)]) == 0
    return model, out


def test_report_names_timings_of_another_plan(tmp_path, capsys):
    _, out = _folder(tmp_path)
    plan = json.loads((out / "plan.json").read_text())
    other = {"format": FORMAT, "version": VERSION, "plan_id": "0x00000000u", "ops": [], "total_ticks": 0}
    (out / TIMINGS_FILE).write_text(json.dumps(other))
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"times another plan (0x00000000u) than {out / 'plan.json'} ({plan_id(plan)})" in err
    page = (out / "report.html").read_text()
    assert "not measured" in page and "times another plan" in page and 'id="fact-flash"' not in page


@pytest.mark.parametrize("content, says", [
    ("{not json", "is not a timings file mcudeploy can read"),
    ('{"format": "something else"}', 'it has no "format": "mcudeploy timings"'),
    (json.dumps({"format": FORMAT, "version": VERSION + 1}), f"of version {VERSION + 1}, written by a newer mcudeploy"),
])
def test_a_broken_timings_file_is_one_sentence(tmp_path, capsys, content, says):
    _, out = _folder(tmp_path)
    (out / TIMINGS_FILE).write_text(content)
    capsys.readouterr()
    assert main(["report", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mcudeploy: error: {out / TIMINGS_FILE}") and says in err and len(err.splitlines()) == 1


def test_measure_output_refusals(tmp_path, capsys):
    model, out = _folder(tmp_path)
    assert main(["measure", str(out), "-o", str(tmp_path / "elsewhere")]) == 1
    assert "writes its timings into that folder; -o applies to a model file" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["measure", str(model), "-b", "qemu-m4", "-o", str(tmp_path / "file")]) == 1
    assert "is a file, not a folder" in capsys.readouterr().err
