"""What ``mcudeploy tune`` writes of its result (mcudeploy/search/tune.py's TuneResult): the C project
of the plan it kept, and plan.json with the scheme, the split's saving, both latencies and what the
search explored."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from mcudeploy.codegen import write_project
from mcudeploy.partition import describe
from mcudeploy.plan import plan_dict
from mcudeploy.search.tune import TuneResult


def tune_record(result: TuneResult) -> dict:
    """plan.json's "tune": the budget, what was explored, and what stopped the search."""
    return {"budget": {"candidates": result.budget}, "used": result.work.as_dict(), "stopped_by": result.stopped_by,
            "effort_s": result.effort, "time_limit_s": result.time_limit}


def write_result(result: TuneResult, code=None) -> Path:
    """The C project and plan.json of the best plan, with the scheme, the saving, the latency and
    what the search explored ("tune": tune_record); ``code``: the C options
    (plan.CodeOptions; default the defaults)."""
    best, base = result.best, result.baseline
    if code is not None:
        best = dataclasses.replace(best, compiled=dataclasses.replace(best.compiled, code=code))
    scheme = describe(base.compiled.graph, best.compiled.graph, best.scheme) if best.scheme else []
    source = f"measured on {best.compiled.board.name}"
    latency = {"ticks": best.ticks, "baseline_ticks": base.ticks, "source": source,
               "budget_ticks": result.budget_ticks, "run_ticks": best.run_ticks, "baseline_run_ticks": base.run_ticks}
    plan = plan_dict(best.compiled, scheme=scheme, latency=latency)
    if best.compiled.objective.name == "memory":  # else the baseline is the memory objective's plan: nothing split
        plan["split"] = {"arena_bytes_unsplit": base.arena, "arena_bytes": best.arena,
                         "saved_bytes": base.arena - best.arena, "ratio": round(best.arena / base.arena, 4)}
    plan["tune"] = tune_record(result)
    return write_project(best.compiled, result.out_dir, plan)
