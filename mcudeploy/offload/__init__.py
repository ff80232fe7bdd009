"""Rewrites of a scheduled graph that trade time for memory, between the schedule and the placement
(compile.rewrite_ordered runs them): each takes the graph and its order and returns both, so the
lifetimes, the placement, the code and the simulator that follow see an ordinary graph.

- scratch.py: kernels whose working memory would raise the arena's peak run a variant without it.
- wide.py: convolutions whose weights widened to int16 the board's flash cannot also hold run on int8 ones; products
  and depthwise convolutions pack their constants for the DSP kernels where the core has no MVE.
- tiles.py: the latency objective's convolutions take their scratch in tiles (each weight read once a tile).
- sram.py: the latency objective's constants copied to SRAM where the first region has room beside the arena.
- moves.py: the mechanism of swap: an idle tensor copied to another region and back (Copy nodes;
  the copy says its region in Tensor.region, which the placement honours), so a value lives in
  more than one region over time; ``stays`` reads where it is at which step.
- recompute.py: an idle tensor's producer run again before its next use.
- swap.py: the policy under a fast-memory budget (which tensors to swap, recompute or keep in the
  slow region, priced by the board's memory speeds); exact_swap.py: the same choice on CP-SAT, to
  measure the heuristic against.
"""
from mcudeploy.offload.moves import Stay, move, stays
from mcudeploy.offload.scratch import fit_scratch
from mcudeploy.offload.tiles import tile_convolutions
from mcudeploy.offload.wide import dsp_packings, fit_wide_weights

__all__ = ["Stay", "dsp_packings", "fit_scratch", "fit_wide_weights", "move", "stays", "tile_convolutions"]
