"""``mcudeploy report``: a plan.json, one board's or a system's, as text or as a self-contained HTML
page; which it is, the codec's reading tells (plan/codec.py: PlanFile.kind)."""
from __future__ import annotations

from typing import Callable, Optional

from mcudeploy.files import check_output
from mcudeploy.plan import codec


def report_plan(path, output: Optional[str] = None, text: bool = False,
                say: Callable[[str], None] = lambda _: None) -> list[str]:
    """What ``mcudeploy report`` prints for the plan at ``path`` (a plan.json or its folder): its text
    (what ``plan`` and ``compile`` print), or the page written to ``output`` (default: report.html beside
    it; a system's page links each stage's own report); ``say`` is told what the page leaves out."""
    system = _system_plan(path)
    if system is not None:  # a system's plan.json: the stages on the topology and their balance
        from mcudeploy.report.system import plan_lines, write_system_report

        if text:
            return plan_lines(system.plan)
        if output:
            check_output(output, folder=False)
        page, *stages = write_system_report(path, system.plan, output)
        return [f"wrote {page}" + (f" and each stage's memory report ({len(stages)})" if stages else "")]
    from mcudeploy.report.html import read_plan, write_report

    if text:
        from mcudeploy.report.text import plan_text

        return [plan_text(read_plan(path), detail=True)]
    if output:
        check_output(output, folder=False)
    return [f"wrote {write_report(path, output, say=say)}"]


def _system_plan(path) -> Optional[codec.PlanFile]:
    """The plan.json at ``path`` (or in that folder) when it is a system's, else None (a board's, or none
    that reads: the board's reading then says why)."""
    try:
        plan = codec.read_plan(codec.plan_path(path))
    except (OSError, codec.PlanError):
        return None
    return plan if plan.kind == "system" else None
