"""plan.json: what was decided for a model on a board, as plain data."""
from __future__ import annotations

from pathlib import Path

from mcudeploy.ops import registry

PLAN_VERSION = 1


def plan_dict(compiled, scheme=None, latency=None) -> dict:
    graph = compiled.graph
    lives = compiled.lifetimes
    step = {n.name: i for i, n in enumerate(compiled.order)}
    macs = sum(registry.get(n.op).macs(graph, n) for n in compiled.order)
    return {
        "version": PLAN_VERSION,
        "model": Path(compiled.model).name,
        "board": compiled.board.name,
        "arena_bytes": compiled.placement.arena_bytes,
        "lower_bound_bytes": compiled.placement.lower_bound_bytes,
        "placement": compiled.placement.method,
        "schedule": compiled.schedule_method,
        "alignment": compiled.board.alignment,
        "order": [{"step": step[n.name], "node": n.name, "op": n.op, "inputs": [i for i in n.inputs if i],
                   "outputs": list(n.outputs), "macs": registry.get(n.op).macs(graph, n)} for n in compiled.order],
        "buffers": [{"name": b.name, "tensors": list(b.tensors), "offset": compiled.placement.offsets[b.name],
                     "size": b.size, "first": b.first, "last": b.last} for b in lives.buffers],
        "inputs": [{"name": n, "shape": list(graph[n].shape), "dtype": graph[n].dtype} for n in graph.inputs],
        "outputs": [{"name": n, "shape": list(graph[n].shape), "dtype": graph[n].dtype} for n in graph.outputs],
        "weights_bytes": sum(t.nbytes for t in graph.tensors.values() if t.is_const),
        "macs": macs,
        "scheme": scheme or [],
        "latency": latency or {"ticks": None, "baseline_ticks": None, "source": "none"},
    }
