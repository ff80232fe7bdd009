"""Execution orders. For now the model's own (topological) order; issue 3 adds the others."""
from __future__ import annotations

from mcudeploy.ir import Graph, Node


def schedule(graph: Graph, method: str = "model", time_limit: float = 10.0) -> list[Node]:
    if method != "model":
        raise ValueError(f"unknown schedule method {method}")
    return list(graph.nodes)
