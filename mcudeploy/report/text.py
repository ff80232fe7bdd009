"""The plan as text, for `mcudeploy plan` and `compile`: the same view as the HTML report
(mcudeploy.report.view), drawn with characters."""
from __future__ import annotations

from mcudeploy.fit import fit
from mcudeploy.plan import BoardPlan, board_plan, plan_dict
from mcudeploy.report.view import io_text, kb, plan_view, short_name, state_text, types_text

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
    lines = [f"model {v['model']} on {v['board']}: {steps_text(v['steps'], v['views'])}, {macs}",
             f"arena {v['arena_bytes']:,} bytes (live-bytes lower bound {bound:,}, {gap}), "
             f"weights {v['weights_bytes'] or 0:,} bytes in flash, {_methods(v)}", v["objective"]]
    io = v["io"]
    for kind in ("inputs", "outputs"):
        if io[kind]:
            lines.append(f"{kind}: " + "; ".join(io_text(t) for t in io[kind]))
    if io["types"]:
        lines.append(f"tensors in the arena: {types_text(io['types'])}")
    lat = latency_text(v["latency"])
    if lat:
        lines.append(lat)
    if v["split"]["cut"] or v["split"]["saving"]:
        lines.append(split_summary(v["split"]))
    if len(v["regions"]) > 1 or v["regions"][0]["size"]:
        lines.append("regions: " + ", ".join(
            f"{r['name']} {r['arena_bytes']:,}" + (f" of {r['size']:,} bytes" if r["size"] else " bytes")
            for r in v["regions"]))
    if v.get("offload"):
        lines.append(offload_text(v["offload"]))
    if v.get("state"):
        lines.append(state_text(v["state"]))
    return lines


def steps_text(steps: int, views: list) -> str:
    """"14 steps: 12 operators the C runs (NAME_NUM_OPS) and 2 views that move no data (Reshape)"."""
    if not views:
        return f"{steps} operators"
    kinds = ", ".join(sorted(set(views)))
    return (f"{steps} steps: {steps - len(views)} operator{'s' if steps - len(views) != 1 else ''} the C runs "
            f"(the header's NUM_OPS) and {len(views)} view{'s that move' if len(views) != 1 else ' that moves'} no data "
            f"({kinds})")


def offload_text(o: dict) -> str:
    """plan.json's "offload" in one line: the budget, what went to the slow region, and its cost."""
    share = f" ({o['added_ticks_modelled'] / o['baseline_ticks']:.1%} of the {o['baseline_ticks']:,.0f} estimated)" \
        if o.get("baseline_ticks") else ""
    return (f"fast memory {o['fast_region']} within {o['budget_bytes']:,} bytes: {len(o['swaps'])} tensor(s) swapped "
            f"to {o['slow_region']} and back ({o['bytes_moved']:,} bytes moved), {len(o.get('resident', []))} kept "
            f"there; added {o['added_ticks_modelled']:,.0f} ticks{share}, {o['speeds']} speeds")


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
    return lines + [""] + split_lines(v["split"])


def latency_text(lat: dict) -> str:
    """"latency 1,234 ticks (measured on qemu-m4), unsplit 1,200 ticks: +2.8%", or "" when unknown."""
    if lat["ticks"] is None:
        return ""
    text = f"latency {lat['ticks']:,} ticks ({lat['source']})"
    if lat["baseline_ticks"] is not None:
        text += f", unsplit {lat['baseline_ticks']:,} ticks"
        if lat["overhead"] is not None:
            text += f": {lat['overhead']:+.1%}"
    return text


def split_summary(split: dict) -> str:
    if not split["cut"]:
        return "split: not split (every operator runs whole)"
    text = f"split: {split['operators']} operators cut"
    s = split["saving"]
    if s:
        ratio = f", {s['ratio']:.2f}x" if s["ratio"] is not None else ""
        text += (f", arena {s['arena_bytes']:,} bytes instead of {s['arena_bytes_unsplit']:,} "
                 f"(saved {s['saved_bytes']:,} bytes{ratio})")
    return text


def _more(more) -> str:
    """Work the pieces add to the operator's own (recomputed halo rows)."""
    return "–" if more is None else "same" if abs(more) < 5e-4 else f"{more:+.1%}"


def split_lines(split: dict) -> list[str]:
    """Which operators the split cut, along which axis, into how many pieces, with which halo."""
    lines = [split_summary(split)]
    if not split["cut"]:
        return lines
    lines.append(f"  {'#':>3}  {'operator':<{NAME_WIDTH}} {'op':<16} {'axis':<6} {'pieces':>6}  {'halo':<9}  MACs")
    for r in split["rows"]:
        pieces = r["pieces"] if r["pieces"] is not None else "–"
        extra = "".join(f"  {k} {val}" for k, val in r["extra"].items())
        lines.append(f"  {r['index']:>3}  {short_name(r['node'], NAME_WIDTH) if r['node'] else '–':<{NAME_WIDTH}} "
                     f"{r['op'][:16]:<16} {r['axis'][:6]:<6} {pieces:>6}  {r['halo']:<9}  {_more(r['more_macs'])}{extra}")
    return lines


def plan_text(plan: BoardPlan, detail: bool = False) -> str:
    v = plan_view(plan)
    return "\n".join(header_lines(v) + (detail_lines(v) if detail else []))


def summary(compiled, detail: bool = False) -> str:
    """The plan's header, then the board's totals per region and flash (mcudeploy/fit.py; none on the host)."""
    v = plan_view(board_plan(plan_dict(compiled)))
    lines = header_lines(v)
    board = fit(compiled)
    if board is not None:
        lines.append(board.totals_line())
    return "\n".join(lines + (detail_lines(v) if detail else []))
