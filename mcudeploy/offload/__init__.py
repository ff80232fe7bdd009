"""Rewrites of a scheduled graph that trade time for memory, between the schedule and the placement
(pipeline.rewrite_ordered runs them): each takes the graph and its order and returns both, so the
lifetimes, the placement, the code and the simulator that follow see an ordinary graph.

- scratch.py: kernels whose working memory would raise the arena's peak run a variant without it.
- moves.py: the mechanism of swap: an idle tensor copied to another region and back (Copy nodes;
  the copy says its region in Tensor.region, which the placement honours), so a value lives in
  more than one region over time; ``stays`` reads where it is at which step.
- (to come, issue "swap or recompute") the policy: which tensors to move under a fast-memory
  budget, with the copies' time from the board's memories, or their producers run again.
"""
from mcudeploy.offload.moves import Stay, move, stays
from mcudeploy.offload.scratch import fit_scratch

__all__ = ["Stay", "fit_scratch", "move", "stays"]
