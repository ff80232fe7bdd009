"""A model compiled for a system: the partition (assign.py) compiled stage by stage
(staged.compile_stages, each stage for its own core's board), the stages' times, and plan.json.

A stage's time is its compiled plan's ticks on its board (simulate: measured from the timing cache
where the board ran its kernels, else estimated; or the ticks a run of the stage measured, given as
``measured``), in seconds on the chip (partition.seconds_per_tick), plus the time of sending what
crosses its outgoing cut over the link (modelled where the system's file says so). The pipeline's
throughput against one core running the whole model is that core's time for the model over the
slowest stage's time.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Optional

from mcudeploy.ir import Graph
from mcudeploy.plan import PLAN_VERSION, CompileOptions, codec
from mcudeploy.simulate.simulate import simulate
from mcudeploy.simulate.timing_cache import TimingCache
from mcudeploy.stages.assign import Partition, partition, scratch_policy, seconds_per_tick
from mcudeploy.stages.staged import StagedPlan, compile_stages, staged_plan_dict
from mcudeploy.stages.system import System


@dataclass(frozen=True)
class StageTime:
    ticks: int
    source: str  # measured, estimated, partly estimated (simulate), or "run" (a run of the stage measured it)
    compute_s: float
    link_s: float
    sent_bytes: int

    @property
    def seconds(self) -> float:
        return self.compute_s + self.link_s


@dataclass(frozen=True)
class SystemPlan:
    model: str
    graph: Graph  # the lowered model
    partition: Partition
    staged: StagedPlan
    times: tuple[StageTime, ...]
    one_chip_ticks: Optional[int] = None  # the one-chip plan's ticks as a board measured them

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.graph.outputs)

    @property
    def one_chip(self):
        """The whole model compiled for the first stage's board: what the stages are checked against."""
        return self.partition.costs[self.partition.units[0].board.name].compiled

    @property
    def system(self) -> System:
        return self.partition.system

    @property
    def whole_seconds(self) -> float:
        if self.one_chip_ticks is not None:
            return self.one_chip_ticks * seconds_per_tick(self.one_chip.board)
        return self.partition.costs[self.partition.units[0].board.name].whole_seconds

    @property
    def bottleneck_stage(self) -> int:
        return max(range(len(self.times)), key=lambda k: self.times[k].seconds)

    @property
    def throughput_ratio(self) -> float:
        return self.whole_seconds / self.times[self.bottleneck_stage].seconds

    @property
    def source(self) -> str:
        sources = {t.source for t in self.times}
        return sources.pop() if len(sources) == 1 else "partly estimated"


def stage_times(p: Partition, staged: StagedPlan, measured: Optional[Mapping[int, int]] = None) -> tuple[StageTime, ...]:
    out = []
    for k, stage in enumerate(staged.stages):
        board = stage.compiled.board
        if measured and k in measured:
            ticks, source = int(measured[k]), "measured"
        else:
            sim = simulate(stage.compiled, TimingCache(board.name))
            ticks, source = sim.ticks, sim.source
        sent = p.split.sent[k]
        link = p.system.link_after(k).seconds(sent) if k < len(staged.stages) - 1 else 0.0
        out.append(StageTime(ticks, source, ticks * seconds_per_tick(board), link, sent))
    return tuple(out)


@dataclass(frozen=True)
class SystemOptions:
    """The choices that change a system's plan (run, compile, measure and flash -b SYSTEM)."""

    stages: Optional[int] = None  # --stages: the pipeline's stages (None: one per core)
    objective: str = "throughput"  # assign.OBJECTIVES
    schedule_method: str = "auto"
    time_limit: float = 10.0  # the schedule's effort seconds


def compile_system(graph: Graph, system: System, model: str, options: SystemOptions = SystemOptions()) -> SystemPlan:
    """Partition the lowered ``graph`` over ``system`` and compile every stage for its core."""
    o = options
    p = partition(graph, system, o.stages, o.objective, o.schedule_method, o.time_limit)
    name = Path(model).stem if model else graph.name
    stage_options = CompileOptions(schedule_method=o.schedule_method, schedule_time_limit=o.time_limit,
                                   scratch=scratch_policy(o.objective))
    staged = compile_stages(graph, [u.board for u in p.units], p.bounds, stage_options, name=name, order=p.order)
    return SystemPlan(os.fspath(model), graph, p, staged, stage_times(p, staged))


def with_measured(plan: SystemPlan, ticks: Mapping[int, int], one_chip_ticks: Optional[int] = None) -> SystemPlan:
    """The plan with the stages' times from ticks measured on the boards (stage index -> ticks), and
    the one-chip plan's."""
    return replace(plan, times=stage_times(plan.partition, plan.staged, ticks),
                   one_chip_ticks=one_chip_ticks if one_chip_ticks is not None else plan.one_chip_ticks)


def weights_bytes(compiled) -> int:
    return sum(t.nbytes for t in compiled.graph.tensors.values() if t.is_const)


def pipeline_dict(plan: SystemPlan) -> dict:
    b = plan.bottleneck_stage
    slow = plan.times[b]
    return {"throughput_ratio": round(plan.throughput_ratio, 4), "bottleneck_stage": b,
            # the share of the bottleneck stage's time spent sending over its outgoing link
            "link_share": round(slow.link_s / slow.seconds, 4) if slow.seconds > 0 else 0.0,
            "bottleneck_s": slow.seconds, "one_core_s": plan.whole_seconds,
            "one_core_board": plan.partition.units[0].board.name, "source": plan.source,
            "links": "modelled" if plan.system.modelled_links else "measured",
            "objective": plan.partition.objective, "method": plan.partition.split.method,
            "one_core_ticks": plan.one_chip_ticks,  # measured on the board, where it was
            "note": QEMU_NOTE if any(u.board.kind == "qemu" for u in plan.partition.units) else ""}


def system_plan_dict(plan: SystemPlan) -> dict:
    """plan.json of a system plan: staged_plan_dict's stages and links, each stage with its chip,
    core, operators, arena and flash bytes, ticks and the bytes it sends; and ``pipeline``."""
    staged = staged_plan_dict(plan.staged)
    for entry, stage, unit, t in zip(staged["stages"], plan.staged.stages, plan.partition.units, plan.times):
        link = plan.system.link_after(stage.index) if stage.index < len(plan.times) - 1 else None
        entry.update({"chip": unit.chip, "core": unit.core, "board": unit.board.name,
                      "operators": [n.name for n in stage.compiled.graph.nodes],
                      "arena_bytes": stage.compiled.placement.arena_bytes, "flash_bytes": weights_bytes(stage.compiled),
                      "ticks": t.ticks, "ticks_source": t.source, "compute_s": t.compute_s, "link_s": t.link_s,
                      "sent_bytes": t.sent_bytes, "link": link.kind if link else None})
    return {"version": PLAN_VERSION, "model": Path(plan.model).name, "system": plan.system.name,
            "topology": {"kind": plan.system.topology, "dims": list(plan.system.dims)},
            "stages": staged["stages"], "links": staged["links"], "pipeline": pipeline_dict(plan)}


QEMU_NOTE = ("under QEMU a tick counts guest instructions (-icount), and the cores of one emulator (mps2-an521's two) "
             "share that one clock: each stage's ticks are taken on its own and "
             "turned into time at one instruction per cycle of the board's clock; the link's time is modelled from "
             "the system file")


def system_lines(plan: SystemPlan) -> list[str]:
    """The stages on the topology and their balance, for people (as ``report --text`` tells its plan.json)."""
    from mcudeploy.report.system import plan_lines

    return plan_lines(codec.system_plan(system_plan_dict(plan)))


def write_system(plan: SystemPlan, out: Path) -> Path:
    """Every stage's C project in out/stageK/ (its own plan.json there) and the system's plan.json."""
    from mcudeploy.codegen import write_project

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for stage in plan.staged.stages:
        write_project(stage.compiled, out / f"stage{stage.index}")
    codec.write_plan(out / codec.PLAN_FILE, system_plan_dict(plan), end="")
    return out
