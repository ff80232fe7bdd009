"""Plans of several stages over a system of cores and chips (what runs them: mcudeploy/target/).

- system.py: systems as data (boards/systems/*.json: chips, cores, links, topology), the placement
  order of their cores (along a chain, snake order on a mesh).
- steps.py: the model as the partitioner sees it (steps of one order, their seconds per board, cut
  bytes, live peaks, weights) and the graph reduction.
- split.py: the exact dynamic program for the least bottleneck, and the heuristic.
- assign.py: costs from the simulator (measured ticks where cached), the split, --objective.
- staged.py: the container (StagedPlan: its stages, each a Compiled, and the links between them),
  the cut of a scheduled graph into stage graphs, and its plan.json.
- system_plan.py: a model compiled for a system, the stages' times, plan.json's stages and pipeline.
"""
from mcudeploy.stages.staged import Link, Stage, StagedPlan, compile_stages, stage_graphs, staged_plan_dict

__all__ = ["Link", "Stage", "StagedPlan", "compile_stages", "stage_graphs", "staged_plan_dict"]
