"""Which int8 convolutions of a latency plan take their scratch in tiles (mcudeploy/objective.py).

mcud_conv_s8_fast gathers the receptive fields of four output pixels (a block) into its scratch and runs every
output channel's int16 weights over them; so each pair of pixels reads the layer's whole copy of the weights from
flash again, and a data cache smaller than that copy misses on every line of it every time. With a tile of
TILE_BLOCKS blocks in its scratch, the kernel takes one pair of output channels at a time over every pixel of the
tile (mcud_conv_fast_tile): the pair's weights are read once per tile and then come from the cache. The same
products in the same order: the same bits. It costs TILE_BLOCKS times the scratch and some instructions of
bookkeeping, so a convolution gets a tile only where it pays: its weights outgrow the board's data cache and one
pair of channels' weights fits in half of it. The cache is the board file's ``flash_data`` where it gives one (the
ART's 256 bytes of an STM32L4 hold no pair of a real layer: no tiles there), else the Cortex-M7's L1 data cache, 4 KB
on the smallest part (CORE_CACHES); other cores: none. Only the latency objective asks (the memory objective's plans
keep one block); where a step's scratch must go to fit the budget, it goes whole (offload.fit_scratch). A core with
MVE runs its own convolution kernels (firmware/include/mcud_conv_mve.h), which take no tiles.
"""
from __future__ import annotations

from mcudeploy.boards import Board
from mcudeploy.ir import Graph
from mcudeploy.ops.conv import tile_weight_bytes

TILE_BLOCKS = 8  # blocks of four pixels per tile (firmware: MCUD_TILE_BLOCKS at the most)
CORE_CACHES = {"cortex-m7": 4096}  # bytes of data cache every part of the core has (the M7's L1: 4 to 64 KB)


def cache_bytes(board: Board) -> int:
    """The data cache the weights are read through on ``board`` (0: none known)."""
    if board.flash_data is not None:
        return board.flash_data.cache_lines * board.flash_data.line_bytes
    return CORE_CACHES.get(board.core, 0)


def tile_convolutions(graph: Graph, board: Board) -> Graph:
    """``graph`` with "tile" = TILE_BLOCKS on every convolution whose tiles pay on ``board`` (the module's rule)."""
    cache = cache_bytes(board)
    if "mve" in board.features or not cache:
        return graph

    def pays(node) -> bool:
        sizes = tile_weight_bytes(graph, node)
        return sizes is not None and sizes[0] > cache and 2 * sizes[1] <= cache

    return graph.replace(nodes=tuple(n.with_(attrs={**n.attrs, "tile": TILE_BLOCKS}) if pays(n) else n
                                     for n in graph.nodes))
