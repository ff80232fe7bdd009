"""Cases for the split tests: random valid cuts of a graph (a seed node and one of its spatial
axes, grown along the tensors it shares with producers and consumers, the axis component, while
``check_cut`` accepts it; half of them with each node its own piece count), small chains of
operators, and seeded random weights and inputs for the generated graphs of benchmarks/graphs.py
(whose weights are all zero)."""
from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Optional

import numpy as np

from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry
from mcudeploy.partition import Cut, check_cut
from mcudeploy.partition.cut import analyse


def _axes(graph: Graph, node: Node) -> list[str]:
    try:
        return [a.name for a in registry.get(node.op).expr(graph, node).axes if a.kind == "spatial"]
    except Exception:
        return []


def _neighbours(graph: Graph, node: Node, axis: str) -> list[tuple[str, str]]:
    """(node, axis) pairs joined to (node, axis) through one tensor dimension."""
    e = registry.get(node.op).expr(graph, node)
    found = []
    for o, dims in zip(node.outputs, e.outputs):
        d = next((i for i, dim in enumerate(dims) if dim.axis == axis), None)
        for user in graph.users(o):
            ue = registry.get(user.op).expr(graph, user)
            for x, udims in zip(user.inputs, ue.inputs):
                if x == o and udims is not None and d is not None and udims[d].axis is not None:
                    found.append((user.name, udims[d].axis))
    for x, dims in zip(node.inputs, e.inputs):
        p = graph.producer(x) if x else None
        if p is None or dims is None:
            continue
        d = next((i for i, dim in enumerate(dims) if dim.axis == axis), None)
        if d is None:
            continue
        pe = registry.get(p.op).expr(graph, p)
        pdims = pe.outputs[list(p.outputs).index(x)]
        if pdims[d].kind == "identity":
            found.append((p.name, pdims[d].axis))
    return found


def random_cut(graph: Graph, rng: random.Random, max_nodes: int = 6, max_pieces: int = 6,
               axes: Optional[tuple[str, ...]] = None, nodes: Optional[set] = None) -> Optional[Cut]:
    """A random cut `check_cut` accepts (of `nodes` only, if given), or None when the draw found none."""
    halo = rng.choice(("keep", "recompute"))
    seeds = [(n.name, a) for n in graph.nodes for a in _axes(graph, n)
             if (axes is None or a in axes) and (nodes is None or n.name in nodes)]
    rng.shuffle(seeds)
    for seed in seeds[:20]:
        pieces = rng.randint(2, max_pieces)
        chosen = [seed]
        if check_cut(graph, Cut(tuple(chosen), pieces, halo)) is not None:
            continue
        for _ in range(rng.randint(0, max_nodes - 1)):
            names = {n for n, _ in chosen}
            options = sorted({nb for n, a in chosen for nb in _neighbours(graph, graph.node(n), a)
                              if nb[0] not in names and (nodes is None or nb[0] in nodes)})
            rng.shuffle(options)
            for option in options:
                if check_cut(graph, Cut(tuple(chosen + [option]), pieces, halo)) is None:
                    chosen.append(option)
                    break
            else:
                break
        cut = Cut(tuple(chosen), pieces, halo)
        return random_counts(graph, cut, rng) if rng.random() < 0.5 else cut
    return None


def random_counts(graph: Graph, cut: Cut, rng: random.Random) -> Cut:
    """`cut` with each node its own random count (Cut.counts): at most its extent, and a multiple or
    a divisor of the count of each of its producers in the cut; `cut` itself if the draw is invalid."""
    facts = analyse(graph, cut)
    counts: dict[str, int] = {}
    for name, node in facts.nodes.items():  # in graph order: producers first
        made = [p.name for p in (graph.producer(x) for x in node.inputs if x) if p is not None and p.name in counts]
        options = [k for k in range(1, facts.extent[name] + 1)
                   if all(k % counts[p] == 0 or counts[p] % k == 0 for p in made)]
        counts[name] = rng.choice(options)
    if max(counts.values()) < 2:
        return cut
    drawn = Cut.per_node(cut.axes, [counts[n] for n, _ in cut.axes], cut.halo)
    return drawn if check_cut(graph, drawn) is None else cut


# --------------------------------------------------------------------------- graphs and values

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/graphs.py builds the generated graphs

from benchmarks.graphs import Builder, make  # noqa: E402


def with_random_weights(graph: Graph, seed: int = 0) -> Graph:
    """Every constant replaced by seeded random values of its dtype (small enough for int32 sums)."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for name, t in graph.tensors.items():
        if t.is_const and t.dtype in ("int8", "int32", "float32"):
            if t.dtype == "int8":
                data = rng.integers(-40, 41, t.shape).astype(np.int8)
            elif t.dtype == "int32":  # a bias: in scale s_x * s_w of the generated graphs (0.05 * 0.01)
                data = rng.integers(-2000, 2001, t.shape).astype(np.int32)
                t = t.with_(quant=t.quant or Quant((0.0005,), (0,)))
            else:
                data = (rng.standard_normal(t.shape) * 0.3).astype(np.float32)
            t = Tensor(name, t.shape, t.dtype, t.kind, t.quant, data)
        tensors[name] = t
    return graph.replace(tensors=tensors)


def random_inputs(graph: Graph, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for name in graph.inputs:
        t = graph[name]
        if t.dtype == "float32":
            out[name] = rng.standard_normal(t.shape).astype(np.float32)
        else:
            info = np.iinfo(t.dtype)
            out[name] = rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype)
    return out


def same(got, want) -> bool:
    """The same outputs, bit for bit (dtype and every value)."""
    return len(got) == len(want) and all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(got, want))


def generated(family: str, ops: int, seed: int, dtype: str = "int8") -> Graph:
    return with_random_weights(make(family, ops, seed, dtype), seed)


def bottleneck(dtype: str = "int8", hw: int = 64, channels: int = 4, expand: int = 6) -> Graph:
    """Pointwise expand -> depthwise 3x3 -> pointwise project: the middle tensors dwarf the ends."""
    b = Builder(f"bottleneck{hw}_{dtype}", dtype)
    x = b.input((1, channels, hw, hw))
    h = b.relu(b.conv(x, channels * expand, 1))
    h = b.relu(b.conv(h, 0, 3, depthwise=True))
    return with_random_weights(b.finish([b.conv(h, channels, 1)]))


def rows_cut(graph: Graph, pieces: int, halo: str):
    """Every node of a chain cut along its rows (Conv "oh", elementwise "d2")."""
    from mcudeploy.partition import Cut

    return Cut(tuple((n.name, "oh" if n.op == "Conv" else "d2") for n in graph.nodes), pieces, halo)


def random_scheme(graph: Graph, rng: random.Random, cuts: int = 2) -> tuple:
    """Up to `cuts` random cuts on distinct nodes, each valid on the graph the previous ones leave."""
    from mcudeploy.partition import split

    scheme, free, g = [], {n.name for n in graph.nodes}, graph
    for _ in range(cuts):
        cut = random_cut(g, rng, nodes=free)
        if cut is None:
            break
        scheme.append(cut)
        free -= {n for n, _ in cut.axes}
        g = split(g, (cut,))
    return tuple(scheme)
