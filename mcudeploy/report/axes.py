"""`mcudeploy plan --show-axes`: the components of the axis connection graph that cross more than
one operator, as text tables (mcudeploy.analysis.axes computes them)."""
from __future__ import annotations

from mcudeploy.analysis import Component, crossing, cuttable, segments
from mcudeploy.ir import Graph
from mcudeploy.report.view import short_name

NAME_WIDTH = 40


def _window(w: dict) -> str:
    parts = [f"{w['kernel']}={w['size']}", f"stride {w['stride']}"]
    if w["dilation"] != 1:
        parts.append(f"dilation {w['dilation']}")
    parts += [f"pad {w['pad']}", f"halo {w['halo']}"]
    return "window " + ", ".join(parts)


def component_lines(graph: Graph, c: Component, max_len: int = 8) -> list[str]:
    """One table: a row per member (operator, op, axis, extent, kind) and what it reads from
    earlier rows (identity, or the window with its halo)."""
    row = {m: i for i, m in enumerate(c.members)}
    ops = {n.name: n.op for n in graph.nodes}
    reads: dict = {}
    for e in c.edges:
        how = _window(e.window) if e.window else "identity"
        reads.setdefault(e.consumer, []).append(f"#{row[e.producer]} {how}")
    kinds = sorted({m.kind for m in c.members})
    n_cut = len(segments(graph, c, max_len)) if sum(cuttable(graph, m) for m in c.members) >= 2 else 0
    lines = [f"component {c.index}: {len(c.nodes)} operators, {'/'.join(kinds)}"
             f"{', crosses a reduction' if c.crosses_reduction else ''}; "
             f"{n_cut} segment{'' if n_cut == 1 else 's'} the split can cut (of at most {max_len} axes)",
             f"  {'#':>3}  {'operator':<{NAME_WIDTH}} {'op':<18} {'axis':<5} {'extent':>6}  {'kind':<9}  reads"]
    for i, m in enumerate(c.members):
        lines.append(f"  {i:>3}  {short_name(m.node, NAME_WIDTH):<{NAME_WIDTH}} {ops[m.node][:18]:<18} "
                     f"{m.axis:<5} {m.extent:>6}  {m.kind:<9}  {'; '.join(reads.get(m, [])) or '-'}")
    return lines


def axes_lines(graph: Graph, max_len: int = 8) -> list[str]:
    """Every component crossing more than one operator, except those whose axes all have
    extent 1 (the batch dimension: nothing to cut), which are only counted."""
    shown, unit = [], 0
    for c in crossing(graph):
        if all(m.extent == 1 for m in c.members):
            unit += 1
        else:
            shown.append(c)
    lines = [f"axis connection graph of {graph.name}: {len(shown)} components cross more than one operator"
             + (f" ({unit} more have extent 1 everywhere and are not shown)" if unit else "")]
    for c in shown:
        lines += [""] + component_lines(graph, c, max_len)
    return lines
