"""`mcudeploy report` on a system's plan.json: the page draws every stage in its chip's core at the
chip's place on the topology (row-major on a mesh, so snake order turns back on the second row),
an arrow from each stage to the next labelled with the bytes plan.json says it sends, the
bottleneck marked, and a link to each stage's own memory report, which is written beside it."""
from __future__ import annotations

import json
import re

import onnx
import pytest

from mcudeploy.cli import main
from mcudeploy.report.system import CHIP_H, CHIP_W, GAP_X, GAP_Y, MARGIN
from residual import residual_model


@pytest.fixture
def residual(tmp_path):
    path = tmp_path / "residual.onnx"
    onnx.save(residual_model(), path)
    return path


def _attrs(tag: str) -> dict:
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


@pytest.mark.parametrize("system", ["qemu-m4x2", "qemu-m4-mesh2x2"])
def test_the_page_puts_each_stage_on_its_chip_and_links_them(residual, tmp_path, capsys, system):
    out = tmp_path / "out"
    assert main(["compile", str(residual), "-b", system, "-o", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert f"wrote {out / 'report.html'} and each stage's memory report ({len(plan['stages'])})" in capsys.readouterr().out
    html = (out / "report.html").read_text()
    cols = plan["topology"]["dims"][1] if plan["topology"]["kind"] == "mesh" else len(plan["stages"])
    cores = {int(a["data-stage"]): a for a in map(_attrs, re.findall(r'<rect class="core[^>]*>', html))}
    assert sorted(cores) == [s["stage"] for s in plan["stages"]]
    for s in plan["stages"]:
        row, col = divmod(s["chip"], cols)
        x, y = float(cores[s["stage"]]["x"]), float(cores[s["stage"]]["y"])
        chip_x, chip_y = MARGIN + col * (CHIP_W + GAP_X), MARGIN + row * (CHIP_H + GAP_Y)
        assert chip_x < x < chip_x + CHIP_W and chip_y < y < chip_y + CHIP_H  # inside its chip's box
        assert ("bottleneck" in cores[s["stage"]]["class"]) == (s["stage"] == plan["pipeline"]["bottleneck_stage"])
        assert (out / f"stage{s['stage']}" / "report.html").is_file() and f'href="stage{s["stage"]}/report.html"' in html
    labels = re.findall(r'<text class="link-label"[^>]*>([\d,]+) B<', html)
    assert [int(b.replace(",", "")) for b in labels] == [s["sent_bytes"] for s in plan["stages"][:-1]]
    rows = re.findall(r'<tr class="[^"]*" data-stage="(\d+)">', html)
    assert [int(r) for r in rows] == [s["stage"] for s in plan["stages"]]
    assert f'{plan["pipeline"]["throughput_ratio"]:.2f}x one' in html
