"""The plan as text, for `mcudeploy plan` and `compile`: the same view as the HTML report
(mcudeploy.report.view), drawn with characters."""
from __future__ import annotations

from mcudeploy.report.view import kb, plan_view, short_name

BAR_WIDTH = 32
NAME_WIDTH = 40


def _methods(v: dict) -> str:
    parts = []
    for what in ("schedule", "placement"):
        m = v[what]
        extra = []
        if m["proven_optimal"] is not None:
            extra.append("proven optimal" if m["proven_optimal"] else "not proven optimal")
        if m["time_s"] is not None:
            extra.append(f"{m['time_s']:.2f} s")
        parts.append(f"{what} {m['method']}" + (f" ({', '.join(extra)})" if extra else ""))
    return ", ".join(parts)


def header_lines(v: dict) -> list[str]:
    bound = v["lower_bound_bytes"]
    gap = "at the bound" if v["arena_bytes"] == bound else f"{v['above_bound']:.1%} above"
    macs = f"{v['macs']:,} MACs" if v["macs"] is not None else "MACs unknown"
    lines = [f"model {v['model']} on {v['board']}: {v['steps']} operators, {macs}",
             f"arena {v['arena_bytes']:,} bytes (live-bytes lower bound {bound:,}, {gap}), "
             f"weights {v['weights_bytes'] or 0:,} bytes in flash, {_methods(v)}"]
    if len(v["regions"]) > 1 or v["regions"][0]["size"]:
        lines.append("regions: " + ", ".join(
            f"{r['name']} {r['arena_bytes']:,}" + (f" of {r['size']:,} bytes" if r["size"] else " bytes")
            for r in v["regions"]))
    return lines


def _bar(n: int, top: int) -> str:
    eighths = round(n * BAR_WIDTH * 8 / top) if top else 0
    return "█" * (eighths // 8) + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[eighths % 8]


def _mark(step: int, peak: dict) -> str:
    return "  <- peak" if step == peak["step"] else "  <- peak again" if step in peak["ties"] else ""


def detail_lines(v: dict) -> list[str]:
    """Memory over time as one bar per step beside the per-operator table, the peak marked,
    then the buffers live at the peak."""
    top = max(v["live"]) or 1
    peak = v["peak"]
    ties = peak["ties"]
    more = f" and {len(ties) - 6} more" if len(ties) > 6 else ""
    also = f"; reached again at step {', '.join(map(str, ties[:6]))}{more}" if ties else ""
    lines = ["", f"memory over time: peak {peak['bytes']:,} bytes at step {peak['step']} ({peak['op']}){also}",
             f"{'step':>4}  {'operator':<{NAME_WIDTH}} {'op':<16} {'MACs':>11} {'live bytes':>10}"]
    inputs = v["live"][0]
    lines.append(f"{'in':>4}  {'(graph inputs)':<{NAME_WIDTH}} {'':<16} {'':>11} {inputs:>10,}  "
                 f"{_bar(inputs, top)}{_mark(-1, peak)}")
    for r in v["operators"]:
        macs = f"{r['macs']:,}" if r["macs"] is not None else "–"
        lines.append(f"{r['step']:>4}  {short_name(r['node'], NAME_WIDTH):<{NAME_WIDTH}} {r['op'][:16]:<16} "
                     f"{macs:>11} {r['live']:>10,}  {_bar(r['live'], top)}{_mark(r['step'], peak)}")
    lines += ["", f"live at the peak (step {peak['step']}): {len(peak['buffers'])} buffers, {peak['bytes']:,} bytes"]
    rw = max(len(r["name"]) for r in v["regions"]) if len(v["regions"]) > 1 else -1
    for b in peak["buffers"]:
        where = f"{b['region']:<{rw}} " if rw > 0 else ""
        names = ", ".join(short_name(t["name"], 60) for t in b["tensors"]) or b["name"]
        lines.append(f"  {where}@{b['offset']:>8,}  {kb(b['size']):>9}  steps {b['first']}..{b['last']}  {names}")
    if v["split"]:
        lines += ["", f"split: {len(v['split'])} entries in the scheme"]
    return lines


def plan_text(plan: dict, detail: bool = False) -> str:
    v = plan_view(plan)
    return "\n".join(header_lines(v) + (detail_lines(v) if detail else []))


def summary(compiled, detail: bool = False) -> str:
    from mcudeploy.plan import plan_dict

    v = plan_view(plan_dict(compiled))
    lines = header_lines(v)
    if compiled.board.kind != "host":
        sram = compiled.board.sram_bytes
        lines.append(f"board SRAM {sram:,} bytes: the arena uses {compiled.placement.arena_bytes / sram:.1%}")
    return "\n".join(lines + (detail_lines(v) if detail else []))
