"""plan.json: what was decided for a model on a board, as plain data."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from mcudeploy.offload.moves import COPIES, stays
from mcudeploy.ops import registry
from mcudeploy.partition import Cut, cut_to_dict
from mcudeploy.plan.codec import PLAN_VERSION
from mcudeploy.plan.compiled import Compiled


def _first_region(compiled) -> str:
    return next(iter(compiled.placement.arenas), None) or next(
        (r.name for r in compiled.board.regions if not r.excluded), "arena")


def _region_of(compiled, buffer: str) -> str:
    return compiled.placement.regions.get(buffer) or _first_region(compiled)


def _regions(compiled) -> list[dict]:
    sizes = {r.name: r.size for r in compiled.board.regions}
    arenas = compiled.placement.arenas or {_first_region(compiled): compiled.placement.arena_bytes}
    return [{"name": name, "size": sizes.get(name), "arena_bytes": size} for name, size in arenas.items()]


def _tensors(compiled) -> list[dict]:
    """Every tensor in the arena: its buffer, byte offset in its region's arena, and strides (elements)."""
    graph, lives, offsets = compiled.graph, compiled.lifetimes, compiled.placement.offsets
    state = compiled.placement.state_offsets
    out = []
    for name, slot in lives.slots.items():
        t = graph[name]
        if slot.buffer in state:  # in the states' buffer, not an arena (memory/state.py)
            out.append({"name": name, "buffer": slot.buffer, "offset": state[slot.buffer] + slot.offset,
                        "shape": list(t.shape), "dtype": t.dtype, "strides": list(slot.strides), "state": True})
            continue
        out.append({"name": name, "buffer": slot.buffer, "offset": offsets[slot.buffer] + slot.offset,
                    "shape": list(t.shape), "dtype": t.dtype, "strides": list(slot.strides)})
    return out


def _states(compiled) -> dict:
    """A stateful model's states (Graph.states): the bytes they keep between calls outside the arena, and per
    state its buffer's offset there and whether its next value is written in place or else copied in after which
    step of the order."""
    graph, lives, placement = compiled.graph, compiled.lifetimes, compiled.placement
    buffers = {b.name: b for b in lives.state}
    out = []
    for state, value in graph.state_updates():
        b = buffers[lives.buffer_of[state]]
        out.append({"name": state, "next": value, "shape": list(graph[state].shape), "dtype": graph[state].dtype,
                    **_quant(graph, state), "buffer": b.name, "offset": placement.state_offsets[b.name],
                    "size": b.size, "tensors": list(b.tensors), "in_place": bool(lives.in_place.get(state)),
                    "copied_after_step": lives.copies.get(state)})
    return {"state_bytes": placement.state_bytes, "states": out}


def _schedule(compiled) -> dict:
    """The order's method (asked for, and the one that produced it), its peak and the bound no order
    goes below, whether it is proven optimal, the effort it was allowed and spent (mcudeploy/effort.py:
    the same on any machine load) and how long it took (wall clock: not)."""
    sched = compiled.schedule
    return {"method": sched.method, "used": sched.used, "peak_bytes": sched.peak_bytes,
            "bound_bytes": sched.bound_bytes, "proven_optimal": sched.proven_optimal,
            "effort_limit_s": sched.limit_s, "effort_s": round(sched.effort_s, 3), "time_s": sched.time_s}


def model_sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _source(compiled) -> dict:
    """Where the model came from: its absolute path and digest, so that ``mcudeploy run DIR`` can
    rebuild exactly this plan and refuse a model that changed (none for a model given in memory)."""
    path = Path(compiled.model)
    if not path.is_file():
        return {"model_path": None, "model_sha256": None}
    return {"model_path": os.fspath(path.resolve()), "model_sha256": model_sha256(path)}


def _cuts(compiled) -> list[dict]:
    """The split as the rewrite takes it (the partition.Cut entries of ``compiled.scheme``): "scheme"
    describes it per operator, which does not say which operators one cut groups."""
    return [cut_to_dict(cut) for cut in compiled.scheme or () if isinstance(cut, Cut)]


def _entry(e) -> dict:
    """A scheme entry as plain data: describe() gives dicts; a dataclass (a Cut) becomes one."""
    if isinstance(e, dict):
        return dict(e)
    if dataclasses.is_dataclass(e):
        return json.loads(json.dumps(dataclasses.asdict(e), default=str))
    return {"entry": str(e)}


def _quant(graph, name: str) -> dict:
    """The scale and zero point of a quantized (per-tensor) input or output, else nothing."""
    q = graph[name].quant
    if q is None or len(q.scale) != 1:
        return {}
    return {"scale": float(q.scale[0]), "zero_point": int(q.zero_point[0])}


def plan_dict(compiled: Compiled, scheme=None, latency=None, split=None) -> dict:
    """plan.json of ``compiled``. ``scheme``: a list of partition.describe entries (default the split
    ``compiled`` was made with); what tune found, as arguments: ``latency`` ({"ticks", "baseline_ticks",
    "source"}) and ``split`` ({"arena_bytes_unsplit", "arena_bytes", "saved_bytes"}, written only when known)."""
    scheme = scheme if scheme is not None else compiled.scheme
    graph = compiled.graph
    lives = compiled.lifetimes
    step = {n.name: i for i, n in enumerate(compiled.order)}
    macs = sum(registry.get(n.op).macs(graph, n) for n in compiled.order)
    plan = {
        "version": PLAN_VERSION,
        "model": Path(compiled.model).name,
        **_source(compiled),
        "board": compiled.board.name,
        "arena_bytes": compiled.placement.arena_bytes,
        "lower_bound_bytes": compiled.placement.lower_bound_bytes,
        "placement": {"method": compiled.placement.method, "proven_optimal": compiled.placement.proven_optimal,
                      "detail": compiled.placement.detail, "effort_s": round(compiled.placement.effort_s, 3),
                      "time_s": round(compiled.placement.time_s, 3)},
        "schedule": _schedule(compiled),
        "alignment": compiled.board.alignment,
        "order": [{"step": step[n.name], "node": n.name, "op": n.op, "inputs": [i for i in n.inputs if i],
                   "outputs": list(n.outputs), "macs": registry.get(n.op).macs(graph, n),
                   "kernel": not registry.get(n.op).view and n.name not in lives.elided,
                   # offload.fit_scratch chose the kernel without working memory (the objective's choice)
                   **({"scratch": 0} if n.attrs.get("scratch", 1) == 0 else {}),
                   # offload.tile_convolutions: the latency objective's scratch in tiles of this many blocks
                   **({"tile": n.attrs["tile"]} if n.attrs.get("tile", 1) > 1 and n.attrs.get("scratch", 1) else {}),
                   # offload.constants_to_sram: the bytes of constants this step's kernel reads from SRAM
                   **({"sram": n.attrs["sram"]} if n.attrs.get("sram") else {}),
                   # offload.move's copies: the value each holds, the region it writes, and for an
                   # asynchronous copy its slot and modelled ticks
                   **({"of": n.attr("of"), "region": graph[n.outputs[0]].region,
                       **{k: n.attr(k) for k in ("slot", "ticks", "modelled") if n.attr(k) is not None}}
                      if n.op in COPIES else {}),
                   # offload.recompute's clones: the node each runs again
                   **({"recompute": n.attr("recompute")} if n.attr("recompute") else {})} for n in compiled.order],
        "regions": _regions(compiled),
        "sharing": sorted(lives.sharing),  # memory.layout.lay_out keeps the set that placed smallest
        "buffers": [{"name": b.name, "tensors": list(b.tensors), "offset": compiled.placement.offsets[b.name],
                     "size": b.size, "first": b.first, "last": b.last, "region": _region_of(compiled, b.name),
                     # [offset in the buffer, size, first, last] where the buffer's size changes in place
                     **({"parts": [list(r) for r in b.parts]} if b.parts else {})}
                    for b in lives.buffers],
        "tensors": _tensors(compiled),
        "int8_input": bool(compiled.int8_input),  # lowered with --int8-input
        "stream_input": bool(compiled.stream_input),  # lowered with --stream-input
        "inputs": [{"name": n, "shape": list(graph[n].shape), "dtype": graph[n].dtype,
                    **_quant(graph, n)} for n in graph.model_inputs()],
        "outputs": [{"name": n, "shape": list(graph[n].shape), "dtype": graph[n].dtype,
                     **_quant(graph, n)} for n in graph.model_outputs()],
        **(_states(compiled) if graph.states else {}),
        "weights_bytes": sum(t.nbytes for t in graph.tensors.values() if t.is_const),
        "macs": macs,
        "scheme": [_entry(e) for e in scheme or []],
        "cuts": _cuts(compiled),
        "latency": dict(latency) if latency else {"ticks": None, "baseline_ticks": None, "source": "none"},
        "objective": compiled.objective.as_plan(),  # what the plan was made for (mcudeploy/objective)
    }
    if compiled.cores is not None:  # one inference on several cores: each step's core (-1: no kernel) and phase
        plan["cores"] = {"count": compiled.cores.cores, "core": list(compiled.cores.core),
                         "phase": list(compiled.cores.phase)}
    moved = stays(compiled)
    if moved:  # values a rewrite moved to another region and back (mcudeploy/offload/moves.py)
        plan["moves"] = [{"value": chain[0].value, "stays": [{"tensor": s.tensor, "region": s.region, "first": s.first,
                                                               "last": s.last} for s in chain]} for chain in moved]
    offload = compiled.offload
    if offload is not None:  # swaps made to meet a fast-memory budget (mcudeploy/offload/swap.py)
        plan["offload"] = offload.as_plan()
    code = compiled.code
    if code is not None:  # how the C meets the firmware (plan/code_options.py): what `run DIR` regenerates
        plan["c"] = code.as_plan(compiled.model)
    if split:
        plan["split"] = dict(split)
    return plan
