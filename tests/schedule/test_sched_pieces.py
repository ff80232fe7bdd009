"""The piece-major order (mcudeploy/schedule/pieces.py) on a split chain and on an unsplit graph."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "partition"))

from split_cases import bottleneck, rows_cut  # noqa: E402
from mcudeploy.partition import split  # noqa: E402
from mcudeploy.schedule import schedule  # noqa: E402


def test_pieces_run_strip_after_strip_and_peak_below_the_plain_orders():
    graph = bottleneck("int8", hw=64)
    cut = split(graph, (rows_cut(graph, 8, "keep"),))
    found = schedule(cut, "pieces")
    seen = [n.piece_index for n in found.order if n.piece_index is not None]
    assert sorted(set(seen)) == list(range(8))
    # a kept halo below needs the producer's next strip first: never more than one strip ahead
    assert all(max(seen[:i + 1]) - j <= 1 for i, j in enumerate(seen))
    for plain in ("model", "bfs", "dfs"):  # reverse post-order walks the strips too (backwards): not here
        other = schedule(cut, plain)
        print(f"pieces {found.peak_bytes} B, {plain} {other.peak_bytes} B")
        assert found.peak_bytes < other.peak_bytes


def test_an_unsplit_graph_keeps_its_own_order():
    graph = bottleneck("int8", hw=16)
    assert [n.name for n in schedule(graph, "pieces").order] == [n.name for n in graph.nodes]
