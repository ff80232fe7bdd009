"""Which int8 convolutions of a latency plan take their scratch in tiles (mcudeploy/objective).

mcud_conv_s8_fast gathers the receptive fields of four output pixels (a block) into its scratch and runs every
output channel's int16 weights over them; so each pair of pixels reads the layer's whole copy of the weights from
flash again, and a data cache smaller than that copy misses on every line of it every time. With a tile of
blocks in its scratch, the kernel takes one pair of output channels at a time over every pixel of the tile
(mcud_conv_fast_tile): the pair's weights are read once per tile and then come from the cache. The same products in
the same order: the same bits. A tile is as large as the fewest passes over the output allow (tile_blocks: at most
TILE_BLOCKS blocks; the last tile takes the one to three pixels after the whole blocks too, where it has room), so
that each pass reads the weights once. It costs that many times the scratch and some instructions of bookkeeping, so
a convolution gets a tile only where it pays: what it reads from flash per pass (the weights and the channels'
requantization constants, through the same cache) outgrows the board's data cache, and one pair of channels' weights
fits in half of it. The cache is the board file's ``flash_data`` where it gives one (the
ART's 256 bytes of an STM32L4 hold no pair of a real layer: no tiles there), else the Cortex-M7's L1 data cache, 4 KB
on the smallest part (CORE_CACHES); other cores: none. A real board that runs with its caches off (at its reset
clock: a board file without a clock tree) gets no tiles. Only the latency objective asks (the memory objective's plans
keep one block); where a step's scratch must go to fit the budget, it goes whole (offload.fit_scratch). A core with
MVE runs its own convolution kernels (firmware/include/mcud_conv_mve.h), which take no tiles.
"""
from __future__ import annotations

from mcudeploy.boards import Board
from mcudeploy.ir import Graph
from mcudeploy.ops.conv import PIXELS, tile_weight_bytes

TILE_BLOCKS = 16  # blocks of four pixels per tile at the most (firmware: MCUD_TILE_BLOCKS)
CORE_CACHES = {"cortex-m7": 4096}  # bytes of data cache every part of the core has (the M7's L1: 4 to 64 KB)


def cache_bytes(board: Board) -> int:
    """The data cache the weights are read through on ``board`` (0: none known, or a real board that runs with its
    caches off: Board.data_cache_on)."""
    if board.kind == "hardware" and not board.data_cache_on:
        return 0
    if board.flash_data is not None:
        return board.flash_data.cache_lines * board.flash_data.line_bytes
    return CORE_CACHES.get(board.core, 0)


def tile_blocks(pixels: int) -> int:
    """Blocks of a tile over ``pixels`` output pixels: the fewest passes of at most TILE_BLOCKS blocks, the blocks
    shared out evenly among them (9 pixels: 3 blocks, the last one's single pixel the tail; 144: 3 passes of 12)."""
    blocks = -(-pixels // PIXELS)
    passes = -(-blocks // TILE_BLOCKS)
    return -(-blocks // passes)


def tile_convolutions(graph: Graph, board: Board) -> Graph:
    """``graph`` with "tile" (tile_blocks) on every convolution whose tiles pay on ``board`` (the module's rule)."""
    cache = cache_bytes(board)
    if "mve" in board.features or not cache:
        return graph

    def tiled(node):
        sizes = tile_weight_bytes(graph, node)
        if sizes is None or sizes[0] <= cache or 2 * sizes[1] > cache or tile_blocks(sizes[2]) == 1:
            return node
        return node.with_(attrs={**node.attrs, "tile": tile_blocks(sizes[2])})

    return graph.replace(nodes=tuple(tiled(n) for n in graph.nodes))
