"""A system's plan.json (stages/system_plan.py) as text (plan_lines) and as one self-contained HTML
page: the stages on the topology (chips in a chain or on a mesh, the cores inside them, the links
between consecutive stages with the bytes they carry), their balance (compute and link time against
the bottleneck) and a table of every stage, linked to each stage's own memory report.

Python lays the drawing out (``system_view``); templates/report/system.html.j2 renders it as SVG,
so the page needs no script.
"""
from __future__ import annotations

from pathlib import Path

from mcudeploy import __version__
from mcudeploy.errors import MCUDeployError
from mcudeploy.files import write_atomic
from mcudeploy.plan.typed import Stage, SystemPlan
from mcudeploy.report.html import BANNER, _asset, environment

CHIP_W, CHIP_H, GAP_X, GAP_Y, MARGIN = 230, 120, 100, 60, 20


def plan_lines(d: SystemPlan) -> list[str]:
    """A system's plan.json as text: the stages on the topology, their balance, the pipeline's figures."""
    pipe, topo = d.pipeline, d.topology
    dims = "x".join(map(str, topo.dims))
    out = [f"{d.system} ({topo.kind}{' ' + dims if dims else ''}): {len(d.stages)} stage(s), "
           f"{pipe.objective} objective, cuts by the {pipe.method} split"]
    slowest = max(s.compute_s + s.link_s for s in d.stages) or 1.0
    first = 0
    for s in d.stages:
        bar = "#" * max(1, round(20 * (s.compute_s + s.link_s) / slowest))
        last = first + len(s.operators) - 1
        out.append(f"  stage {s.stage} on chip {s.chip} {s.core} ({s.board}): operators {first}..{last} "
                   f"of the order, arena {s.arena_bytes:,} B, weights {s.flash_bytes:,} B, {s.ticks:,} ticks "
                   f"({s.ticks_source}) = {s.compute_s * 1e3:.2f} ms + send {s.sent_bytes:,} B in "
                   f"{s.link_s * 1e3:.2f} ms  {bar}")
        first = last + 1
    out.append(f"throughput {pipe.throughput_ratio:.2f}x one {pipe.one_core_board} core "
               f"({pipe.one_core_s * 1e3:.2f} ms per frame alone, {pipe.bottleneck_s * 1e3:.2f} ms at the "
               f"bottleneck, stage {pipe.bottleneck_stage}, {pipe.link_share:.0%} of it on the link); stage "
               f"times: {pipe.source}; link times {pipe.links}")
    if pipe.one_core_ticks is not None:
        out.append(f"one {pipe.one_core_board} core alone: {pipe.one_core_ticks:,} ticks, measured")
    if pipe.note:
        out.append(pipe.note)
    return out


def _grid(d: SystemPlan) -> tuple[int, int]:
    """Rows and columns of the drawing: the mesh's dims, or one row of the chain's chips."""
    dims = d.topology.dims
    if d.topology.kind == "mesh" and len(dims) == 2:
        return dims[0], dims[1]
    return 1, max(s.chip for s in d.stages) + 1


def _chips(d: SystemPlan, cols: int) -> list[dict]:
    """Each chip the plan uses, at its place (row-major index on a mesh), with its cores' stages."""
    by_chip: dict[int, list[Stage]] = {}
    for s in d.stages:
        by_chip.setdefault(s.chip, []).append(s)
    chips = []
    for chip, stages in sorted(by_chip.items()):
        row, col = divmod(chip, cols)
        x, y = MARGIN + col * (CHIP_W + GAP_X), MARGIN + row * (CHIP_H + GAP_Y)
        w = (CHIP_W - 12) / len(stages)
        cores = [{"stage": s.stage, "core": s.core, "x": x + 6 + i * w, "y": y + 24, "w": w - 4,
                  "h": CHIP_H - 30, "cx": x + 6 + i * w + (w - 4) / 2, "cy": y + 24 + (CHIP_H - 30) / 2,
                  "ms": s.compute_s * 1e3, "arena": s.arena_bytes}
                 for i, s in enumerate(sorted(stages, key=lambda s: s.stage))]
        chips.append({"chip": chip, "board": stages[0].board, "x": x, "y": y, "w": CHIP_W, "h": CHIP_H,
                      "cores": cores})
    return chips


def _edge(a: dict, b: dict) -> tuple[float, float, float, float, str]:
    """The arrow from core box a to core box b, edge to edge: sideways on one row, else up or down."""
    if abs(a["cy"] - b["cy"]) < 1:
        if b["x"] > a["x"]:
            return a["x"] + a["w"], a["cy"], b["x"], b["cy"], "row"
        return a["x"], a["cy"], b["x"] + b["w"], b["cy"], "row"
    if b["y"] > a["y"]:
        return a["cx"], a["y"] + a["h"], b["cx"], b["y"], "column"
    return a["cx"], a["y"], b["cx"], b["y"] + b["h"], "column"


def _arrows(d: SystemPlan, chips: list[dict]) -> list[dict]:
    """One arrow from each stage to the next, labelled with the bytes it sends and their time."""
    box = {c["stage"]: c for chip in chips for c in chip["cores"]}
    out = []
    for s in d.stages[:-1]:
        x1, y1, x2, y2, way = _edge(box[s.stage], box[s.stage + 1])
        lx, ly = ((x1 + x2) / 2, y1 - 18) if way == "row" else (x1 + 8, (y1 + y2) / 2 - 4)
        out.append({"x1": x1, "y1": y1, "x2": x2, "y2": y2, "bytes": s.sent_bytes, "ms": s.link_s * 1e3,
                    "link": s.link or "link", "lx": lx, "ly": ly,
                    "anchor": "middle" if way == "row" else "start"})
    return out


def _row(s: Stage, first: int, slowest: float, bottleneck: int) -> dict:
    """A stage's row of the table: its operators first..last of the order, and its share of the slowest time."""
    return {"stage": s.stage, "chip": s.chip, "core": s.core, "board": s.board, "arena_bytes": s.arena_bytes,
            "flash_bytes": s.flash_bytes, "ticks": s.ticks, "ticks_source": s.ticks_source, "sent_bytes": s.sent_bytes,
            "first": first, "last": first + len(s.operators) - 1, "compute_ms": s.compute_s * 1e3,
            "link_ms": s.link_s * 1e3, "compute_pct": 100 * s.compute_s / slowest,
            "link_pct": 100 * s.link_s / slowest, "bottleneck": s.stage == bottleneck,
            "balance": (s.compute_s + s.link_s) / slowest}


def system_view(d: SystemPlan) -> dict:
    """What the page shows, computed from a system's plan.json."""
    rows, cols = _grid(d)
    chips = _chips(d, cols)
    slowest = max(s.compute_s + s.link_s for s in d.stages) or 1.0
    first, table = 0, []
    for s in d.stages:
        table.append(_row(s, first, slowest, d.pipeline.bottleneck_stage))
        first += len(s.operators)
    return {"system": d.system, "model": d.model, "topology": d.topology, "pipeline": d.pipeline,
            "chips": chips, "arrows": _arrows(d, chips), "stages": table,
            "width": 2 * MARGIN + cols * CHIP_W + (cols - 1) * GAP_X,
            "height": 2 * MARGIN + rows * CHIP_H + (rows - 1) * GAP_Y}


def render_system(view: dict, stage_reports: dict[int, str]) -> str:
    """The page of ``view`` (system_view's), each stage linked to its report in ``stage_reports``."""
    return environment().get_template("report/system.html.j2").render(
        v=view, reports=stage_reports, banner=BANNER, version=__version__, css=_asset("report.css"))


def write_system_report(plan_path: Path, d: SystemPlan, out_path=None) -> list[Path]:
    """The system's page (default: report.html beside its plan.json) and each stage's own memory
    report in its stageK/ folder, linked from the page; the paths written, the system's first."""
    from mcudeploy.report.html import write_report

    plan_path = Path(plan_path)
    folder = plan_path if plan_path.is_dir() else plan_path.parent
    view = system_view(d)
    written, links = [], {}
    for s in d.stages:
        stage_plan = folder / f"stage{s.stage}" / "plan.json"
        if stage_plan.is_file():
            written.append(write_report(stage_plan))
            links[s.stage] = f"stage{s.stage}/report.html"
    out = Path(out_path) if out_path else folder / "report.html"
    html = render_system(view, links)
    try:
        write_atomic(out, html)
    except OSError as exc:
        raise MCUDeployError(f"cannot write the report to {out}: {exc.strerror}") from None
    return [out] + written
