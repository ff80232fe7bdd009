"""What a report shows, computed from plan.json alone: one pure function from the plan's plain
data to the plain data that the text summary and the HTML page both render.

Time runs over steps: step -1 is "before the first operator" (the graph inputs are written
there), step s is the s-th operator of the order. A buffer occupies steps first..last and the
bytes offset..offset+size of its region. Live bytes at a step is the sum of the sizes of the
buffers occupying it; the peak is the first step where that sum is largest.

Fields added to plan.json after version 1 ("regions", a buffer's "region", "tensors", and
"schedule"/"placement" as objects) are read when present and derived or left out when not; so
are the split's: "scheme" (the operators cut), "split" (what it saved) and "latency".
"""
from __future__ import annotations

import math
from typing import Any, Optional

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, itemsize
from mcudeploy.objective import objective_line
from mcudeploy.ops import registry

DEFAULT_REGION = "arena"
REQUIRED = ("model", "board", "arena_bytes", "lower_bound_bytes", "order", "buffers")
REQUIRED_BUFFER = ("name", "offset", "size", "first", "last")


def short_name(name: str, width: int = 40) -> str:
    """A readable label for a long framework name: the last ';'-separated part (TensorFlow
    joins fused names with ';'), cut from the left to ``width`` characters."""
    tail = name.rsplit(";", 1)[-1] or name
    return tail if len(tail) <= width else "…" + tail[-(width - 1):]


def check_plan(plan: Any, source: str = "the plan") -> None:
    """Raise an MCUDeployError naming the first field a report cannot do without."""
    if not isinstance(plan, dict):
        raise MCUDeployError(f"{source} is not a plan.json: it holds no JSON object")
    for key in REQUIRED:
        if key not in plan:
            raise MCUDeployError(f"{source} is not a plan.json: it has no \"{key}\" field")
    for i, b in enumerate(plan["buffers"]):
        for key in REQUIRED_BUFFER:
            if key not in b:
                raise MCUDeployError(f"{source} is not a plan.json: buffer {i} has no \"{key}\" field")


def method_info(value: Any) -> dict:
    """"schedule"/"placement" are a method name in version 1 and an object later."""
    if isinstance(value, dict):
        return {"method": str(value.get("method", "?")), "proven_optimal": value.get("proven_optimal"),
                "time_s": value.get("time_s")}
    return {"method": str(value) if value is not None else "?", "proven_optimal": None, "time_s": None}


def _regions(plan: dict, buffers: list[dict]) -> list[dict]:
    listed = plan.get("regions") or []
    regions = [{"name": str(r["name"]), "size": r.get("size"), "arena_bytes": r.get("arena_bytes")} for r in listed]
    names = [r["name"] for r in regions]
    for b in buffers:
        if b["region"] not in names:
            names.append(b["region"])
            regions.append({"name": b["region"], "size": None, "arena_bytes": None})
    if not regions:
        regions.append({"name": DEFAULT_REGION, "size": None, "arena_bytes": plan["arena_bytes"]})
    for r in regions:
        used = max((b["offset"] + b["size"] for b in buffers if b["region"] == r["name"]), default=0)
        if r["arena_bytes"] is None:
            r["arena_bytes"] = used
        r["drawn_bytes"] = max(r["arena_bytes"], used)  # the y extent of its picture
        r["buffers"] = sum(1 for b in buffers if b["region"] == r["name"])
    return regions


def _tensor_details(plan: dict) -> dict[str, list[dict]]:
    """Buffer name -> its tensors with shape, dtype and offset, from "tensors" when present."""
    shapes = {t["name"]: t for t in plan.get("inputs", []) + plan.get("outputs", [])}
    by_buffer: dict[str, list[dict]] = {}
    for t in plan.get("tensors") or []:
        by_buffer.setdefault(t.get("buffer"), []).append(
            {"name": t["name"], "shape": t.get("shape"), "dtype": t.get("dtype"), "offset": t.get("offset")})
    for b in plan["buffers"]:
        if b["name"] not in by_buffer:
            by_buffer[b["name"]] = [{"name": n, "shape": shapes.get(n, {}).get("shape"),
                                     "dtype": shapes.get(n, {}).get("dtype"), "offset": None}
                                    for n in b.get("tensors") or [b["name"]]]
    return by_buffer


def tensor_bytes(t: dict) -> Optional[int]:
    """The bytes a tensor of plan.json "tensors" spans at its strides (its shape's bytes when it has none)."""
    shape, dtype = t.get("shape"), t.get("dtype")
    if not isinstance(shape, list) or dtype not in DTYPES:
        return None
    if any(d <= 0 for d in shape):
        return 0
    strides = t.get("strides")
    elements = (1 + sum((d - 1) * s for d, s in zip(shape, strides)) if isinstance(strides, list)
                and len(strides) == len(shape) else math.prod(shape))
    return elements * itemsize(dtype)


def blocks(plan: dict, buffers: list[dict]) -> list[dict]:
    """What the arena picture draws: one block per tensor of each buffer (plan.json "tensors"), from the
    step that writes it to the last step that reads it (the buffer's own ends for a model input or output),
    at its own offset and bytes; so operators that write into one buffer in place, or into its slices, are
    drawn each as its own block. Where the buffer has parts (its size changes in place, or it is freed band
    by band), a tensor is drawn only over the parts' bytes and steps, in as many blocks as that takes. A
    buffer whose tensors the plan does not give is one block per part, else one block."""
    order = plan["order"]
    written: dict[str, int] = {}
    read: dict[str, int] = {}
    for i, o in enumerate(order):
        for name in o.get("outputs", []):
            written.setdefault(name, i)
        for name in o.get("inputs", []):
            read[name] = i
    ends = {t["name"] for t in plan.get("inputs") or []} | {t["name"] for t in plan.get("outputs") or []}
    by_buffer: dict[str, list[dict]] = {}
    for t in plan.get("tensors") or []:
        if not t.get("state"):
            by_buffer.setdefault(t.get("buffer"), []).append(t)
    out = []
    for k, b in enumerate(buffers):
        tensors = [t for t in by_buffer.get(b["name"], []) if isinstance(t.get("offset"), int)]
        if not tensors:
            parts = b["parts"] or [[0, b["size"], b["first"], b["last"]]]
            out += [{"buffer": k, "tensor": None, "offset": b["offset"] + at, "size": size,
                     "first": first, "last": last} for at, size, first, last in parts]
            continue
        for t in tensors:
            name = t["name"]
            first = b["first"] if name in ends or name not in written else max(written[name], b["first"])
            last = b["last"] if name in ends or name not in read else min(max(read[name], first), b["last"])
            size = tensor_bytes(t)
            lo = int(t["offset"])
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


def split_rows(plan: dict) -> list[dict]:
    """plan.json's "scheme" (mcudeploy.partition.describe: one entry per operator cut, with
    "node", "op", "axis", "pieces", "halo", "piece_nodes", and "macs"/"piece_macs": the node's
    work whole and in pieces), one row per entry; "more_macs" is what recomputed halos add
    (piece_macs / macs - 1). Fields the row does not know are kept in "extra" and shown as given."""
    rows = []
    for i, entry in enumerate(plan.get("scheme") or []):
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


def split_view(plan: dict) -> dict:
    """The split section: the operators cut (rows), and what the split saved, from plan.json's
    "split" ({"arena_bytes_unsplit", "arena_bytes", "saved_bytes"}) when present. "ratio" is the
    split arena over the unsplit one (0.6 means 40% saved)."""
    rows = split_rows(plan)
    s = plan.get("split") if isinstance(plan.get("split"), dict) else {}
    saving = None
    unsplit = s.get("arena_bytes_unsplit")
    if isinstance(unsplit, int):
        arena = int(s.get("arena_bytes", plan["arena_bytes"]))
        saving = {"arena_bytes_unsplit": unsplit, "arena_bytes": arena,
                  "saved_bytes": int(s.get("saved_bytes", unsplit - arena)),
                  "ratio": arena / unsplit if unsplit else None}
    return {"cut": bool(rows), "rows": rows, "operators": len({r["node"] for r in rows}), "saving": saving}


def latency_view(plan: dict) -> dict:
    """plan.json's "latency": ticks, the unsplit model's ticks, where they come from, and the
    overhead of the split (ticks / baseline - 1) when both are known."""
    latency = plan.get("latency") if isinstance(plan.get("latency"), dict) else {}
    ticks, base = latency.get("ticks"), latency.get("baseline_ticks")
    known = isinstance(ticks, (int, float)) and isinstance(base, (int, float)) and base > 0
    return {"ticks": ticks, "baseline_ticks": base, "source": str(latency.get("source") or "none"),
            "overhead": ticks / base - 1 if known else None}


COPY_OPS = ("Copy", "CopyStart", "CopyWait")  # mcudeploy/offload's copies (offload.moves.COPIES)


def offload_marks(plan: dict, fast: str) -> list[dict]:
    """What a fast-memory budget added to the order, for the arena pictures: each transfer (kind
    "out" to the slow region, "in" back to ``fast``; from its start to its wait when asynchronous)
    and each recompute, with the steps it spans and the regions it touches."""
    slow = (plan.get("offload") or {}).get("slow_region")
    marks, started = [], {}
    for i, o in enumerate(plan["order"]):
        if o.get("op") in COPY_OPS and o.get("of"):
            if o["op"] == "CopyStart":
                started[o["outputs"][0]] = i
                continue
            first = started.get(o["inputs"][0], i) if o["op"] == "CopyWait" else i
            # by the region it writes where recorded (a stage copy reads the value itself, into fast memory);
            # else the copy out reads the value itself, the copy back its copy
            out = o["region"] == slow if "region" in o else o["inputs"][-1] == o["of"]
            marks.append({"kind": "out" if out else "in", "tensor": o["of"], "first": first, "last": i,
                          "regions": [fast, slow], "asynchronous": o["op"] == "CopyWait"})
        elif o.get("recompute"):
            marks.append({"kind": "recompute", "tensor": o["outputs"][0], "first": i, "last": i, "regions": [fast],
                          "node": o["recompute"], "asynchronous": False})
    return marks


def view_ops(order: list) -> list[str]:
    """The op of each step that is a view (a Reshape, a Flatten: it moves no data, and model.c makes no call
    for it), in order. The generated header's NUM_OPS counts the other steps."""
    known = set(registry.names())
    return [o["op"] for o in order if o.get("op") in known and registry.get(o["op"]).view]


def plan_view(plan: dict, source: str = "the plan") -> dict:
    check_plan(plan, source)
    order = list(plan["order"])
    steps = len(order)
    first_region = (plan.get("regions") or [{"name": DEFAULT_REGION}])[0]["name"]
    details = _tensor_details(plan)
    buffers = []
    for b in plan["buffers"]:
        buffers.append({"name": b["name"], "region": str(b.get("region") or first_region),
                        "offset": int(b["offset"]), "size": int(b["size"]),
                        "first": int(b["first"]), "last": int(b["last"]),
                        "parts": [[int(v) for v in part] for part in b.get("parts") or []],
                        "tensors": details.get(b["name"], [])})
    regions = _regions(plan, buffers)
    live = live_bytes(buffers, steps)
    peak_index = max(range(len(live)), key=lambda i: (live[i], -i))
    peak_step = peak_index - 1
    at_peak = sorted((b for b in buffers if b["first"] <= peak_step <= b["last"]),
                     key=lambda b: (b["region"], b["offset"], b["name"]))
    rows = [{"step": int(o.get("step", i)), "node": o["node"], "label": short_name(o["node"]), "op": o["op"],
             "macs": o.get("macs"), "live": live[i + 1], "peak": i == peak_step,
             "inputs": o.get("inputs", []), "outputs": o.get("outputs", [])}
            for i, o in enumerate(order)]
    arena, bound = int(plan["arena_bytes"]), int(plan["lower_bound_bytes"])
    return {
        "model": plan["model"], "board": plan["board"], "version": plan.get("version"),
        "arena_bytes": arena, "lower_bound_bytes": bound,
        "above_bound": (arena / bound - 1) if bound else 0.0,
        "alignment": plan.get("alignment"), "weights_bytes": plan.get("weights_bytes"),
        "macs": plan.get("macs", sum(r["macs"] or 0 for r in rows)),
        "schedule": method_info(plan.get("schedule")), "placement": method_info(plan.get("placement")),
        "latency": latency_view(plan),
        "steps": steps, "views": view_ops(order), "regions": regions, "buffers": buffers, "live": live,
        "peak": {"step": peak_step, "bytes": live[peak_index],
                 "ties": [i - 1 for i in range(peak_index + 1, len(live)) if live[i] == live[peak_index]],
                 "op": order[peak_step]["op"] if peak_step >= 0 else "inputs",
                 "node": order[peak_step]["node"] if peak_step >= 0 else "",
                 "buffers": at_peak},
        "blocks": blocks(plan, buffers),
        "operators": rows, "split": split_view(plan), "offload": plan.get("offload"), "state": state_view(plan),
        "io": io_view(plan), "objective": objective_line(plan.get("objective")),
        "marks": offload_marks(plan, first_region) if plan.get("offload") else [],
    }


def _io(entry: dict) -> dict:
    """A model input or output of plan.json with its bytes (from its shape and type) and quantization."""
    dtype, shape = entry.get("dtype"), entry.get("shape")
    size = itemsize(dtype) if dtype in DTYPES else None
    nbytes = size * math.prod(shape) if size is not None and isinstance(shape, list) else None
    return {"name": str(entry["name"]), "dtype": dtype, "shape": shape, "bytes": nbytes,
            "scale": entry.get("scale"), "zero_point": entry.get("zero_point")}


def io_view(plan: dict) -> dict:
    """The model's inputs and outputs (type, shape, bytes, quantization), and how many tensors of each type the
    arena holds (plan.json "tensors"; {} when the plan has none)."""
    types: dict[str, int] = {}
    for t in plan.get("tensors") or []:
        if t.get("dtype"):
            types[t["dtype"]] = types.get(t["dtype"], 0) + 1
    return {"inputs": [_io(e) for e in plan.get("inputs") or []],
            "outputs": [_io(e) for e in plan.get("outputs") or []], "types": dict(sorted(types.items()))}


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


def state_view(plan: dict) -> Optional[dict]:
    """A stateful model's states (plan.json "states"): their bytes outside the arena, and how many of them take
    their next value in place (the others are copied in after the last step); None for a stateless model."""
    states = plan.get("states")
    if not states:
        return None
    return {"bytes": int(plan.get("state_bytes", sum(int(s["size"]) for s in states))), "count": len(states),
            "in_place": sum(1 for s in states if s.get("in_place")), "names": [s["name"] for s in states]}


def state_text(state: dict) -> str:
    """state_view in a few words."""
    copied = state["count"] - state["in_place"]
    how = ("all written in place" if not copied else "all copied in after the last step" if not state["in_place"]
           else f"{state['in_place']} written in place, {copied} copied in after the last step")
    return (f"state {state['bytes']:,} bytes kept between calls outside the arena ({state['count']} variable"
            f"{'s' if state['count'] != 1 else ''}, {how})")


def kb(n: Optional[int]) -> str:
    if n is None:
        return "–"
    return f"{n:,} B" if n < 10240 else f"{n / 1024:,.1f} KB"
