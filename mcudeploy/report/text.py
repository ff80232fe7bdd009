"""The plan as text, for `mcudeploy plan` and `compile`."""
from __future__ import annotations

from mcudeploy.ops import registry


def _kb(n: int) -> str:
    return f"{n:,} B" if n < 10240 else f"{n / 1024:,.1f} KB"


def summary(compiled, detail: bool = False) -> str:
    g = compiled.graph
    p = compiled.placement
    lives = compiled.lifetimes
    weights = sum(t.nbytes for t in g.tensors.values() if t.is_const)
    macs = sum(registry.get(n.op).macs(g, n) for n in compiled.order)
    lines = [
        f"model {compiled.model} on {compiled.board.name}: {len(compiled.order)} operators, {macs:,} MACs",
        f"arena {p.arena_bytes:,} bytes (live-bytes lower bound {p.lower_bound_bytes:,}, "
        f"{'at the bound' if p.arena_bytes == p.lower_bound_bytes else f'{p.arena_bytes / max(p.lower_bound_bytes, 1) - 1:.1%} above'}"
        f"), weights {weights:,} bytes in flash, placement {p.method}",
    ]
    if compiled.board.kind != "host":
        sram = compiled.board.sram_bytes
        lines.append(f"board SRAM {sram:,} bytes: the arena uses {p.arena_bytes / sram:.1%}")
    if detail:
        live = lives.live_bytes()
        peak_step = max(range(len(live)), key=live.__getitem__) - 1
        lines.append("")
        lines.append(f"{'step':>4}  {'operator':<40} {'op':<18} {'live bytes':>10}")
        for i, n in enumerate(compiled.order):
            mark = "  <- peak" if i == peak_step else ""
            lines.append(f"{i:>4}  {n.name[:40]:<40} {n.op:<18} {live[i + 1]:>10,}{mark}")
        at_peak = [b for b in lives.buffers if b.first <= peak_step <= b.last]
        lines.append("")
        lines.append("live at the peak: " + ", ".join(f"{b.name} ({_kb(b.size)})" for b in at_peak))
    return "\n".join(lines)
