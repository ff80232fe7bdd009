"""What a report shows, computed from plan.json alone: one pure function from the plan's plain
data to the plain data that the text summary and the HTML page both render.

Time runs over steps: step -1 is "before the first operator" (the graph inputs are written
there), step s is the s-th operator of the order. A buffer occupies steps first..last and the
bytes offset..offset+size of its region. Live bytes at a step is the sum of the sizes of the
buffers occupying it; the peak is the first step where that sum is largest.

The plan comes typed (plan/typed.py: BoardPlan). Fields added to plan.json after version 1
("regions", a buffer's "region", "tensors", and "schedule"/"placement" as objects) are read when
present and derived or left out when not; so are the split's: "scheme" (the operators cut),
"split" (what it saved) and "latency".
"""
from __future__ import annotations

import math
from typing import Any, Optional

from mcudeploy.ir import DTYPES, itemsize
from mcudeploy.objective import objective_line
from mcudeploy.ops import registry
from mcudeploy.plan.typed import BoardPlan, Buffer, Latency, Method, Port, Step, Tensor

DEFAULT_REGION = "arena"


def short_name(name: str, width: int = 40) -> str:
    """A readable label for a long framework name: the last ';'-separated part (TensorFlow
    joins fused names with ';'), cut from the left to ``width`` characters."""
    tail = name.rsplit(";", 1)[-1] or name
    return tail if len(tail) <= width else "…" + tail[-(width - 1):]


def method_info(value: Any) -> dict:
    """"schedule"/"placement" are a method name in version 1 and an object later."""
    if isinstance(value, Method):
        return {"method": value.method if value.method is not None else "?", "proven_optimal": value.proven_optimal,
                "time_s": value.time_s}
    return {"method": str(value) if value is not None else "?", "proven_optimal": None, "time_s": None}


def _regions(plan: BoardPlan, buffers: list[dict]) -> list[dict]:
    regions = [{"name": r.name, "size": r.size, "arena_bytes": r.arena_bytes} for r in plan.regions]
    names = [r["name"] for r in regions]
    for b in buffers:
        if b["region"] not in names:
            names.append(b["region"])
            regions.append({"name": b["region"], "size": None, "arena_bytes": None})
    if not regions:
        regions.append({"name": DEFAULT_REGION, "size": None, "arena_bytes": plan.arena_bytes})
    for r in regions:
        used = max((b["offset"] + b["size"] for b in buffers if b["region"] == r["name"]), default=0)
        if r["arena_bytes"] is None:
            r["arena_bytes"] = used
        r["drawn_bytes"] = max(r["arena_bytes"], used)  # the y extent of its picture
        r["buffers"] = sum(1 for b in buffers if b["region"] == r["name"])
    return regions


def _listed(values: Optional[tuple]) -> Optional[list]:
    return list(values) if values is not None else None


def _tensor_details(plan: BoardPlan) -> dict[str, list[dict]]:
    """Buffer name -> its tensors with shape, dtype and offset, from "tensors" when present."""
    ports = {t.name: t for t in plan.inputs + plan.outputs}
    by_buffer: dict[str, list[dict]] = {}
    for t in plan.tensors:
        by_buffer.setdefault(t.buffer, []).append(
            {"name": t.name, "shape": _listed(t.shape), "dtype": t.dtype, "offset": t.offset})
    for b in plan.buffers:
        if b.name not in by_buffer:
            by_buffer[b.name] = [{"name": n, "shape": _listed(ports[n].shape) if n in ports else None,
                                  "dtype": ports[n].dtype if n in ports else None, "offset": None}
                                 for n in b.tensors or [b.name]]
    return by_buffer


def tensor_bytes(t: Tensor) -> Optional[int]:
    """The bytes a tensor of plan.json "tensors" spans at its strides (its shape's bytes when it has none)."""
    shape, dtype, strides = t.shape, t.dtype, t.strides
    if shape is None or dtype not in DTYPES:
        return None
    if any(d <= 0 for d in shape):
        return 0
    elements = (1 + sum((d - 1) * s for d, s in zip(shape, strides)) if strides is not None
                and len(strides) == len(shape) else math.prod(shape))
    return elements * itemsize(dtype)


def blocks(plan: BoardPlan, buffers: list[dict]) -> list[dict]:
    """What the arena picture draws: one block per tensor of each buffer (plan.json "tensors"), from the
    step that writes it to the last step that reads it (the buffer's own ends for a model input or output),
    at its own offset and bytes; so operators that write into one buffer in place, or into its slices, are
    drawn each as its own block. Where the buffer has parts (its size changes in place, or it is freed band
    by band), a tensor is drawn only over the parts' bytes and steps, in as many blocks as that takes. A
    buffer whose tensors the plan does not give is one block per part, else one block."""
    written: dict[str, int] = {}
    read: dict[str, int] = {}
    for i, o in enumerate(plan.order):
        for name in o.outputs:
            written.setdefault(name, i)
        for name in o.inputs:
            read[name] = i
    ends = {t.name for t in plan.inputs + plan.outputs}
    by_buffer: dict[str, list[Tensor]] = {}
    for t in plan.tensors:
        if not t.state:
            by_buffer.setdefault(t.buffer, []).append(t)
    out = []
    for k, b in enumerate(buffers):
        tensors = [t for t in by_buffer.get(b["name"], []) if t.offset is not None]
        if not tensors:
            parts = b["parts"] or [[0, b["size"], b["first"], b["last"]]]
            out += [{"buffer": k, "tensor": None, "offset": b["offset"] + at, "size": size,
                     "first": first, "last": last} for at, size, first, last in parts]
            continue
        for t in tensors:
            name = t.name
            first = b["first"] if name in ends or name not in written else max(written[name], b["first"])
            last = b["last"] if name in ends or name not in read else min(max(read[name], first), b["last"])
            size = tensor_bytes(t)
            lo = t.offset
            hi = lo + (b["size"] if size is None else size)
            out += [{"buffer": k, "tensor": name, "offset": o0, "size": o1 - o0, "first": s0, "last": s1}
                    for o0, o1, s0, s1 in _in_parts(b, lo, hi, first, last)]
    return out


def _in_parts(b: dict, lo: int, hi: int, first: int, last: int) -> list[tuple[int, int, int, int]]:
    """The bytes lo..hi over steps first..last that the buffer ``b`` holds, as rectangles (bytes from, bytes to,
    first step, last step): all of them for a buffer without parts; else the parts' (a buffer freed band by band,
    or shrunk in place, holds only its parts' bytes, and other buffers may take the rest), those of one
    lifetime side by side joined, then those of one byte range step after step."""
    if not b["parts"]:
        return [(lo, hi, first, last)]
    cut = sorted((max(lo, b["offset"] + at), min(hi, b["offset"] + at + size), max(first, f), min(last, l))
                 for at, size, f, l in b["parts"])
    cut = [r for r in cut if r[0] < r[1] and r[2] <= r[3]]
    joined: list[list[int]] = []
    for o0, o1, s0, s1 in sorted(cut, key=lambda r: (r[2], r[3], r[0])):  # side by side, one lifetime
        if joined and joined[-1][2:] == [s0, s1] and joined[-1][1] >= o0:
            joined[-1][1] = max(joined[-1][1], o1)
        else:
            joined.append([o0, o1, s0, s1])
    rects: list[list[int]] = []
    for o0, o1, s0, s1 in sorted(joined, key=lambda r: (r[0], r[1], r[2])):  # one byte range, step after step
        if rects and rects[-1][:2] == [o0, o1] and rects[-1][3] + 1 >= s0:
            rects[-1][3] = max(rects[-1][3], s1)
        else:
            rects.append([o0, o1, s0, s1])
    return [tuple(r) for r in rects]


def live_bytes(buffers: list[dict], steps: int) -> list[int]:
    """Live bytes at steps -1..steps-1 (index 0 is step -1)."""
    live = [0] * (steps + 1)
    for b in buffers:
        for _, size, first, last in b.get("parts") or [(0, b["size"], b["first"], b["last"])]:
            for t in range(max(first, -1), min(last, steps - 1) + 1):
                live[t + 1] += size
    return live


SCHEME_FIELDS = ("node", "op", "axis", "pieces", "halo", "piece_nodes", "macs", "piece_macs")


def _halo(value: Any) -> str:
    """The halo of a cut: a mode ("keep": read from the neighbouring piece kept alive,
    "recompute": the producer's pieces compute the overlap again), or whatever else was given."""
    if value is None or value == "":
        return "–"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def _per_operator(entry) -> list:
    """A scheme entry as describe() gives it (one operator), or a Cut's fields, one entry per operator named."""
    if not isinstance(entry, dict) or entry.get("node") or not isinstance(entry.get("axes"), list):
        return [entry]
    counts = entry.get("counts") if isinstance(entry.get("counts"), list) else None
    named = [a for a in entry["axes"] if isinstance(a, (list, tuple)) and len(a) == 2]
    if not named:
        return [entry]
    return [{"node": str(name), "axis": str(axis), "halo": entry.get("halo"),
             "pieces": counts[k] if counts and k < len(counts) else entry.get("pieces")}
            for k, (name, axis) in enumerate(named)]


def split_rows(plan: BoardPlan) -> list[dict]:
    """plan.json's "scheme" (mcudeploy.partition.describe: one entry per operator cut, with
    "node", "op", "axis", "pieces", "halo", "piece_nodes", and "macs"/"piece_macs": the node's
    work whole and in pieces), one row per entry; "more_macs" is what recomputed halos add
    (piece_macs / macs - 1); a cut as the rewrite takes it (a partition.Cut's fields: "axes", "pieces",
    "halo", "counts", as compile writes it) gives a row per operator it names. Fields the row does not know
    are kept in "extra" and shown as given."""
    rows = []
    for i, entry in enumerate(e for entry in plan.scheme for e in _per_operator(entry)):
        e = entry if isinstance(entry, dict) else {"entry": entry}
        node = str(e.get("node") or "")
        pieces = e.get("piece_nodes")
        pieces = [str(p) for p in pieces] if isinstance(pieces, (list, tuple)) else []
        macs, piece_macs = e.get("macs"), e.get("piece_macs")
        more = piece_macs / macs - 1 if isinstance(macs, int) and isinstance(piece_macs, int) and macs > 0 else None
        rows.append({"index": i, "node": node, "label": short_name(node) if node else "–",
                     "op": str(e.get("op") or "–"), "axis": str(e.get("axis") or "–"), "pieces": e.get("pieces"),
                     "halo": _halo(e.get("halo")), "piece_nodes": pieces, "more_macs": more,
                     "extra": {k: v for k, v in e.items() if k not in SCHEME_FIELDS}})
    return rows


def split_view(plan: BoardPlan) -> dict:
    """The split section: the operators cut (rows), and what the split saved, from plan.json's
    "split" ({"arena_bytes_unsplit", "arena_bytes", "saved_bytes"}) when present. "ratio" is the
    split arena over the unsplit one (0.6 means 40% saved)."""
    rows = split_rows(plan)
    s = plan.split
    saving = None
    unsplit = s.arena_bytes_unsplit if s else None
    if unsplit is not None:
        arena = s.arena_bytes if s.arena_bytes is not None else plan.arena_bytes
        saving = {"arena_bytes_unsplit": unsplit, "arena_bytes": arena,
                  "saved_bytes": s.saved_bytes if s.saved_bytes is not None else unsplit - arena,
                  "ratio": arena / unsplit if unsplit else None}
    return {"cut": bool(rows), "rows": rows, "operators": len({r["node"] for r in rows}), "saving": saving}


def latency_view(plan: BoardPlan) -> dict:
    """plan.json's "latency": ticks, the unsplit model's ticks, where they come from, and the
    overhead of the split (ticks / baseline - 1) when both are known."""
    latency = plan.latency or Latency()
    ticks, base = latency.ticks, latency.baseline_ticks
    known = ticks is not None and base is not None and base > 0
    return {"ticks": ticks, "baseline_ticks": base, "source": latency.source or "none",
            "overhead": ticks / base - 1 if known else None}


COPY_OPS = ("Copy", "CopyStart", "CopyWait")  # mcudeploy/offload's copies (offload.moves.COPIES)


def offload_marks(plan: BoardPlan, fast: str) -> list[dict]:
    """What a fast-memory budget added to the order, for the arena pictures: each transfer (kind
    "out" to the slow region, "in" back to ``fast``; from its start to its wait when asynchronous)
    and each recompute, with the steps it spans and the regions it touches."""
    slow = (plan.offload or {}).get("slow_region")
    marks, started = [], {}
    for i, o in enumerate(plan.order):
        if o.op in COPY_OPS and o.of:
            if o.op == "CopyStart":
                started[o.outputs[0]] = i
                continue
            first = started.get(o.inputs[0], i) if o.op == "CopyWait" else i
            # by the region it writes where recorded (a stage copy reads the value itself, into fast memory);
            # else the copy out reads the value itself, the copy back its copy
            out = o.region == slow if o.region_recorded else o.inputs[-1] == o.of
            marks.append({"kind": "out" if out else "in", "tensor": o.of, "first": first, "last": i,
                          "regions": [fast, slow], "asynchronous": o.op == "CopyWait"})
        elif o.recompute:
            marks.append({"kind": "recompute", "tensor": o.outputs[0], "first": i, "last": i, "regions": [fast],
                          "node": o.recompute, "asynchronous": False})
    return marks


def view_ops(order: tuple[Step, ...]) -> list[str]:
    """The op of each step that is a view (a Reshape, a Flatten: it moves no data, and model.c makes no call
    for it), in order. The generated header's NUM_OPS counts the other steps."""
    known = set(registry.names())
    return [o.op for o in order if o.op in known and registry.get(o.op).view]


def _buffer(b: Buffer, first_region: str, details: dict[str, list[dict]]) -> dict:
    return {"name": b.name, "region": b.region or first_region, "offset": b.offset, "size": b.size,
            "first": b.first, "last": b.last, "parts": [list(part) for part in b.parts],
            "tensors": details.get(b.name, [])}


def plan_view(plan: BoardPlan) -> dict:
    """What the text and the page show of ``plan`` (codec.read_plan's, or codec.board_plan of plan_dict's)."""
    order = plan.order
    steps = len(order)
    first_region = plan.regions[0].name if plan.regions else DEFAULT_REGION
    details = _tensor_details(plan)
    buffers = [_buffer(b, first_region, details) for b in plan.buffers]
    regions = _regions(plan, buffers)
    live = live_bytes(buffers, steps)
    peak_index = max(range(len(live)), key=lambda i: (live[i], -i))
    peak_step = peak_index - 1
    at_peak = sorted((b for b in buffers if b["first"] <= peak_step <= b["last"]),
                     key=lambda b: (b["region"], b["offset"], b["name"]))
    rows = [{"step": o.step if o.step is not None else i, "node": o.node, "label": short_name(o.node), "op": o.op,
             "macs": o.macs, "live": live[i + 1], "peak": i == peak_step,
             "inputs": list(o.inputs), "outputs": list(o.outputs)}
            for i, o in enumerate(order)]
    arena, bound = plan.arena_bytes, plan.lower_bound_bytes
    return {
        "model": plan.model, "board": plan.board, "version": plan.version,
        "arena_bytes": arena, "lower_bound_bytes": bound,
        "above_bound": (arena / bound - 1) if bound else 0.0,
        "alignment": plan.alignment, "weights_bytes": plan.weights_bytes,
        "macs": plan.macs if plan.has("macs") else sum(r["macs"] or 0 for r in rows),
        "schedule": method_info(plan.schedule), "placement": method_info(plan.placement),
        "latency": latency_view(plan),
        "steps": steps, "views": view_ops(order), "regions": regions, "buffers": buffers, "live": live,
        "peak": {"step": peak_step, "bytes": live[peak_index],
                 "ties": [i - 1 for i in range(peak_index + 1, len(live)) if live[i] == live[peak_index]],
                 "op": order[peak_step].op if peak_step >= 0 else "inputs",
                 "node": order[peak_step].node if peak_step >= 0 else "",
                 "buffers": at_peak},
        "blocks": blocks(plan, buffers),
        "operators": rows, "split": split_view(plan), "offload": plan.offload, "state": state_view(plan),
        "io": io_view(plan), "objective": objective_line(plan.objective),
        "marks": offload_marks(plan, first_region) if plan.offload else [],
    }


def _io(entry: Port) -> dict:
    """A model input or output of plan.json with its bytes (from its shape and type) and quantization."""
    dtype, shape = entry.dtype, _listed(entry.shape)
    size = itemsize(dtype) if dtype in DTYPES else None
    nbytes = size * math.prod(shape) if size is not None and shape is not None else None
    scale, zero_point = entry.scale, entry.zero_point
    return {"name": entry.name, "dtype": dtype, "shape": shape, "bytes": nbytes,
            "scale": list(scale) if isinstance(scale, tuple) else scale,
            "zero_point": list(zero_point) if isinstance(zero_point, tuple) else zero_point}


def io_view(plan: BoardPlan) -> dict:
    """The model's inputs and outputs (type, shape, bytes, quantization), and how many tensors of each type the
    arena holds (plan.json "tensors"; {} when the plan has none)."""
    types: dict[str, int] = {}
    for t in plan.tensors:
        if t.dtype:
            types[t.dtype] = types.get(t.dtype, 0) + 1
    return {"inputs": [_io(e) for e in plan.inputs], "outputs": [_io(e) for e in plan.outputs],
            "types": dict(sorted(types.items()))}


def io_text(t: dict) -> str:
    """"in0 int16[1, 49, 10, 1], 980 bytes, scale 0.000130407, zero point 0"."""
    text = t["name"]
    if t["dtype"]:
        text += f" {t['dtype']}{t['shape'] if t['shape'] is not None else ''}"
    if t["bytes"] is not None:
        text += f", {t['bytes']:,} bytes"
    scale = t["scale"]
    if isinstance(scale, list):
        text += ", quantized per channel"
    elif scale is not None:
        text += f", scale {scale:.6g}, zero point {t['zero_point']}"
    return text


def types_text(types: dict) -> str:
    """"int16 (23 tensors)": the arena's tensors by type."""
    return ", ".join(f"{dtype} ({n} tensor{'s' if n != 1 else ''})" for dtype, n in types.items())


def state_view(plan: BoardPlan) -> Optional[dict]:
    """A stateful model's states (plan.json "states"): their bytes outside the arena, and how many of them take
    their next value in place (the others are copied in once nothing reads the state); None for a stateless model."""
    states = plan.states
    if not states:
        return None
    nbytes = plan.state_bytes if plan.state_bytes is not None else sum(s.size for s in states)
    return {"bytes": nbytes, "count": len(states), "in_place": sum(1 for s in states if s.in_place),
            "names": [s.name for s in states]}


def state_text(state: dict) -> str:
    """state_view in a few words."""
    copied = state["count"] - state["in_place"]
    how = ("all written in place" if not copied else "all copied in after their last read" if not state["in_place"]
           else f"{state['in_place']} written in place, {copied} copied in after their last read")
    return (f"state {state['bytes']:,} bytes kept between calls outside the arena ({state['count']} variable"
            f"{'s' if state['count'] != 1 else ''}, {how})")


def kb(n: Optional[int]) -> str:
    if n is None:
        return "–"
    return f"{n:,} B" if n < 10240 else f"{n / 1024:,.1f} KB"
