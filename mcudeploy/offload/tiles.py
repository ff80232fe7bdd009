"""Which int8 convolutions of a latency plan take their scratch in tiles (mcudeploy/objective.py).

mcud_conv_s8_fast gathers the receptive fields of four output pixels (a block) into its scratch and runs every
output channel's int16 weights over them; so each pair of pixels reads the layer's whole copy of the weights from
flash again, and a data cache smaller than that copy (the Cortex-M7's 4 KB, an STM32's 256-byte ART) misses on
every line of it every time. With a tile of TILE_BLOCKS blocks in its scratch, the kernel takes one pair of output
channels at a time over every pixel of the tile (mcud_conv_fast_tile): the pair's weights, 4 * kpad bytes, are read
once per tile and then come from the cache where it holds them. The same products in the same order: the same
bits. It costs TILE_BLOCKS times the scratch, so only the latency objective asks for it (the memory objective's
plans keep one block); where a step's scratch must go to fit the budget, it goes whole (offload.fit_scratch).
A core with MVE runs its own convolution kernels (firmware/include/mcud_conv_mve.h), which take no tiles.
"""
from __future__ import annotations

from mcudeploy.boards import Board
from mcudeploy.ir import Graph

TILE_BLOCKS = 8  # blocks of four pixels per tile (firmware: MCUD_TILE_BLOCKS at the most)


def tile_convolutions(graph: Graph, board: Board) -> Graph:
    """``graph`` with "tile" = TILE_BLOCKS on every Conv, unless ``board``'s core has MVE: ops/conv.py takes it
    where its kernel tiles (int8, group 1, int16 weights, an even count of output channels) and ignores it elsewhere."""
    if "mve" in board.features:
        return graph
    return graph.replace(nodes=tuple(n.with_(attrs={**n.attrs, "tile": TILE_BLOCKS}) if n.op == "Conv" else n
                                     for n in graph.nodes))
