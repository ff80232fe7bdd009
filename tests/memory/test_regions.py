"""Memory regions from board data: excluded regions are unusable, the first usable one keeps
room for the stack, and "dma"/"section"/"reserved" are read per region."""
import dataclasses

import pytest

from mcudeploy.boards import Region, all_boards, load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.memory import Area, areas


def board_with(regions, **fields):
    return dataclasses.replace(load_board("host"), regions=tuple(
        Region(r["name"], r["size"], 0, bool(r.get("excluded")), r.get("reserved", 0), r.get("section"),
               r.get("dma", True)) for r in regions), **fields)


def test_every_board_has_a_usable_region():
    for board in all_boards():
        usable = areas(board)
        assert [a.name for a in usable] == [r.name for r in board.regions if not r.excluded] != []
        assert 0 < usable[0].capacity <= board.regions[0].size or board.regions[0].excluded


def test_region_fields():
    board = board_with([{"name": "sram", "size": 131072}, {"name": "ccm", "size": 65536, "dma": False,
                                                            "section": ".ccmram", "reserved": 1024},
                        {"name": "bkp", "size": 4096, "excluded": True}], stack_bytes=8192)
    assert areas(board) == (Area("sram", 131072 - 8192), Area("ccm", 65536 - 1024, ".ccmram", dma=False))


def test_a_board_with_every_region_excluded():
    board = board_with([{"name": "sram", "size": 1024, "excluded": True}])
    with pytest.raises(MCUDeployError, match="no usable memory region"):
        areas(board)


def test_a_tensor_put_in_a_region_keeps_its_buffer_there():
    """Room for swap: a rewrite that copies a tensor out to slow memory says so in Tensor.region."""
    from random_graphs import random_graph

    from mcudeploy.memory.layout import lay_out

    graph = random_graph(3)
    regions = (Area("fast", 1 << 20), Area("slow", 1 << 20))
    lives, placed = lay_out(graph, graph.nodes, regions)
    moved = next(t for t in graph.tensors.values() if t.kind == "activation" and placed.regions[lives.buffer_of[t.name]]
                 == "fast" and t.name not in graph.outputs)
    pinned = graph.replace(tensors={**graph.tensors, moved.name: dataclasses.replace(moved, region="slow")})
    lives, placed = lay_out(pinned, pinned.nodes, regions)
    assert placed.regions[lives.buffer_of[moved.name]] == "slow"
    wrong = pinned.replace(tensors={**pinned.tensors, moved.name: dataclasses.replace(moved, region="nowhere")})
    with pytest.raises(MCUDeployError, match="fits no memory region"):
        lay_out(wrong, wrong.nodes, regions)
