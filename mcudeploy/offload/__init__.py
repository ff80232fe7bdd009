"""Rewrites of a scheduled graph that trade time for memory, between the schedule and the placement
(pipeline.rewrite_ordered runs them): each takes the graph and its order and returns both, so the
lifetimes, the placement, the code and the simulator that follow see an ordinary graph.

- scratch.py: kernels whose working memory would raise the arena's peak run a variant without it.
- (to come, issue "swap or recompute") a fast-memory budget met by copying idle tensors out to a
  slower region and back (copy and wait operators; a tensor a rewrite puts in a region says so in
  Tensor.region, which the placement honours) or by running their producers again.
"""
from mcudeploy.offload.scratch import fit_scratch

__all__ = ["fit_scratch"]
