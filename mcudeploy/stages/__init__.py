"""Plans of several stages: a model cut into consecutive parts of its order, each compiled by
mcudeploy/pipeline.py for its own core or chip, the tensors that cross a cut sent over a link.

- staged.py: the container (StagedPlan: its stages, each a Compiled, and the links between them),
  the cut of a scheduled graph into stage graphs, and its plan.json.
- (to come, issue "pipeline over several cores and chips") systems as data (boards/ files naming
  chips, cores and links) and the partitioner that chooses the cuts and places the stages.
"""
from mcudeploy.stages.staged import Link, Stage, StagedPlan, compile_stages, stage_graphs, staged_plan_dict

__all__ = ["Link", "Stage", "StagedPlan", "compile_stages", "stage_graphs", "staged_plan_dict"]
