"""What identifies a plan: the id the generated header carries (NAME_plan_id()) and timings.json names."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

# what identifies a plan (PLAN_ID in the generated header): the model, the board, every decision and the C options
PLAN_ID_FIELDS = ("model_sha256", "board", "order", "sharing", "buffers", "tensors", "regions", "inputs", "outputs",
                  "arena_bytes", "cuts", "c")
PLAN_ID_IF_PRESENT = ("offload", "states")  # counted only where a plan has them (the ids of plans without stay as they were)


def plan_id(plan: Mapping[str, Any]) -> str:
    """32 bits of the SHA-256 of the plan's identifying fields, as a C literal (0x........u)."""
    fields = {k: plan.get(k) for k in PLAN_ID_FIELDS} | {k: plan[k] for k in PLAN_ID_IF_PRESENT if k in plan}
    data = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return f"0x{hashlib.sha256(data.encode()).hexdigest()[:8].upper()}u"
