"""A seeded suite of irregular IR graphs for the scheduling and placement benchmarks.

Three families, built from registered operators (Conv, Relu, Add, Concat, MaxPool, AveragePool,
Resize, Identity, Flatten, Gemm) on float32 or int8 tensors, so that shape inference, aliasing
and ``lifetimes()`` treat them exactly like imported models:

- ``randwire``: randomly wired networks (Xie et al. 2019): a Watts-Strogatz graph per stage,
  oriented by node index; each node sums its inputs (or concatenates them, now and then), then
  Relu and a convolution, a pooling or an inverted bottleneck with a wider transient tensor;
- ``nas``: NAS-like cells (DARTS-style): each cell reads the two previous cells, its nodes sum
  two operations on earlier states, and it concatenates the nodes no other node reads (ENAS's
  loose ends); two cells reduce;
- ``unet``: U-Net-like encoder and decoder with Concat skips, residual Adds inside the blocks
  and random extra skips across levels.

``make(family, ops, seed, dtype)`` returns the largest graph of the family with at most ``ops``
operators; ``suite()`` is the fixed list the benchmark runs. Everything is a function of the
seed: the same arguments give the same graph.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from mcudeploy.ir import Graph, Node, Quant, Tensor, verify
from mcudeploy.ops import registry

ACT_QUANT = Quant((0.05,), (0,))


class Builder:
    """Appends operators one at a time, inferring each output with the operator's own rule."""

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self._zeros: dict = {}

    def _fresh(self, stem: str) -> str:
        return f"{stem}{len(self.tensors)}"

    def _const(self, shape: tuple[int, ...], dtype: str, quant: Optional[Quant] = None) -> str:
        key = (shape, dtype)
        if key not in self._zeros:  # weights are never read by the schedulers: share one zero array
            self._zeros[key] = np.zeros(shape, dtype=dtype)
        name = self._fresh("w")
        self.tensors[name] = Tensor(name, shape, dtype, "constant", quant, self._zeros[key])
        return name

    def input(self, shape: tuple[int, ...]) -> str:
        name = self._fresh("x")
        quant = ACT_QUANT if self.dtype == "int8" else None
        self.tensors[name] = Tensor(name, shape, self.dtype, "input", quant)
        self.inputs.append(name)
        return name

    def op(self, op: str, inputs: tuple[str, ...], **attrs) -> str:
        node = Node(f"n{len(self.nodes)}_{op.lower()}", op, inputs, (self._fresh("t"),), attrs)
        scope = Graph("scope", {i: self.tensors[i] for i in inputs if i}, (), (), ())
        (shape, dtype), = registry.get(op).infer(scope, node)
        quant = ACT_QUANT if dtype == "int8" else None
        self.tensors[node.outputs[0]] = Tensor(node.outputs[0], tuple(shape), dtype, "activation", quant)
        self.nodes.append(node)
        return node.outputs[0]

    def shape(self, t: str) -> tuple[int, ...]:
        return self.tensors[t].shape

    def conv(self, x: str, cout: int, k: int = 3, stride: int = 1, depthwise: bool = False) -> str:
        cin = self.shape(x)[1]
        group = cin if depthwise else 1
        cout = cin if depthwise else cout
        if self.dtype == "int8":
            w = self._const((cout, cin // group, k, k), "int8", Quant((0.01,) * cout, (0,) * cout, 0))
            b = self._const((cout,), "int32")
        else:
            w = self._const((cout, cin // group, k, k), "float32")
            b = self._const((cout,), "float32")
        pad = k // 2
        return self.op("Conv", (x, w, b), group=group, strides=(stride, stride), pads=(pad,) * 4)

    def relu(self, x: str) -> str:
        return self.op("Relu", (x,))

    def pool(self, x: str, kind: str = "MaxPool", k: int = 3, stride: int = 1) -> str:
        pad = k // 2 if k % 2 else 0  # odd windows keep ceil(n / stride), like the convolutions
        return self.op(kind, (x,), kernel_shape=(k, k), strides=(stride, stride), pads=(pad,) * 4)

    def upsample(self, x: str) -> str:
        return self.op("Resize", (x,), scales=(1.0, 1.0, 2.0, 2.0), mode="nearest",
                       coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    def merge(self, xs: list[str], rng: random.Random, add_bias: float = 0.6) -> str:
        """Add when every shape agrees (and the dice say so), else Concat along channels."""
        xs = list(dict.fromkeys(xs))
        if len(xs) == 1:
            return xs[0]
        if len({self.shape(x) for x in xs}) == 1 and rng.random() < add_bias:
            out = xs[0]
            for x in xs[1:]:
                out = self.op("Add", (out, x))
            return out
        while len(xs) > 8:  # Concat takes at most 8 inputs
            xs = [self.op("Concat", tuple(xs[:8]), axis=1)] + xs[8:]
        return self.op("Concat", tuple(xs), axis=1)

    def classifier(self, x: str, classes: int = 10) -> str:
        x = self.op("GlobalAveragePool", (x,), **{"global": 1})
        x = self.op("Flatten", (x,), axis=1)
        features = self.shape(x)[1]
        if self.dtype == "int8":
            w = self._const((features, classes), "int8", Quant((0.01,), (0,)))
            b = self._const((classes,), "int32")
        else:
            w = self._const((features, classes), "float32")
            b = self._const((classes,), "float32")
        return self.op("Gemm", (x, w, b))

    def finish(self, outputs: list[str]) -> Graph:
        tensors = dict(self.tensors)
        for o in outputs:
            tensors[o] = tensors[o].with_(kind="output")
        return verify(Graph(self.name, tensors, tuple(self.nodes), tuple(self.inputs), tuple(outputs)))


def _spatial(rng: random.Random) -> int:
    return rng.choice((16, 24, 32))


# --------------------------------------------------------------------------- randomly wired


def _watts_strogatz(n: int, k: int, p: float, rng: random.Random) -> list[tuple[int, int]]:
    """Edges (i < j) of a Watts-Strogatz small world graph, rewired with probability p."""
    edges = set()
    for i in range(n):
        for d in range(1, k // 2 + 1):
            edges.add((i, (i + d) % n))
    out = set()
    for i, j in sorted(edges):
        if rng.random() < p:
            choices = [m for m in range(n) if m != i and (min(i, m), max(i, m)) not in out]
            if choices:
                j = rng.choice(choices)
        if i != j:
            out.add((min(i, j), max(i, j)))
    return sorted(out)


def randwire(scale: int, seed: int, dtype: str = "float32") -> Graph:
    """``scale`` random nodes in all (about three operators each), in one to four stages."""
    rng = random.Random(seed)
    b = Builder(f"randwire{scale}_s{seed}_{dtype}", dtype)
    width = rng.choice((4, 8, 12))
    x = b.input((1, width, _spatial(rng), _spatial(rng)))  # the feature map entering the first stage
    stages = min(4, max(1, math.ceil(scale / 60)))
    for s in range(stages):
        n = scale // stages + (1 if s < scale % stages else 0)
        if s:
            width *= 2
            x = b.conv(x, width, 3, stride=2) if rng.random() < 0.5 else b.pool(x, "MaxPool", 2, 2)
        edges = _watts_strogatz(n, 4, 0.75, rng) if n >= 5 else [(i, i + 1) for i in range(n - 1)]
        preds: list[list[int]] = [[] for _ in range(n)]
        for i, j in edges:
            preds[j].append(i)
        outs: list[str] = []
        for v in range(n):
            h = b.relu(b.merge([outs[p] for p in preds[v]] or [x], rng, add_bias=0.8))
            choice = rng.random()
            if choice < 0.2:
                h = b.conv(h, 0, 3, depthwise=True)
            elif choice < 0.3:
                h = b.pool(h, "MaxPool", 3, 1)
            elif choice < 0.55:  # an inverted bottleneck: a transient tensor 2 or 4 times wider
                h = b.conv(b.relu(b.conv(h, rng.choice((2, 4)) * width, 1)), width, 3)
            else:
                h = b.conv(h, width, rng.choice((1, 3)))
            outs.append(h)
        sinks = [outs[v] for v in range(n) if not any(i == v for i, _ in edges)]
        x = b.merge(sinks, rng)
    return b.finish([b.classifier(x)])


# --------------------------------------------------------------------------- NAS-like cells


def _cell_op(b: Builder, x: str, width: int, stride: int, rng: random.Random) -> str:
    kind = rng.choice(("sep3", "sep5", "dil", "max", "avg", "skip", "conv1"))
    if kind in ("sep3", "sep5", "dil"):
        h = b.relu(x)
        h = b.conv(h, 0, 5 if kind == "sep5" else 3, stride=stride, depthwise=True)
        return b.conv(h, width, 1)
    if kind in ("max", "avg"):
        h = b.pool(x, "MaxPool" if kind == "max" else "AveragePool", 3, stride)
        return h if b.shape(h)[1] == width else b.conv(h, width, 1)
    if kind == "skip" and stride == 1 and b.shape(x)[1] == width:
        return b.op("Identity", (x,))
    return b.conv(b.relu(x), width, 1, stride=stride)


def nas(scale: int, seed: int, dtype: str = "float32") -> Graph:
    """``scale`` cell nodes in all, four per cell (about six operators each)."""
    rng = random.Random(seed)
    b = Builder(f"nas{scale}_s{seed}_{dtype}", dtype)
    width = rng.choice((4, 8, 12))
    stem = b.conv(b.input((1, 3, _spatial(rng), _spatial(rng))), width, 3)
    s0 = s1 = stem
    cells = max(1, math.ceil(scale / 4))
    for c in range(cells):
        nodes = scale // cells + (1 if c < scale % cells else 0)
        reduce = c in (cells // 3, 2 * cells // 3) and c > 0 and b.shape(s1)[2] >= 8
        if reduce:
            width *= 2
        p0 = b.conv(b.relu(s0), width, 1, stride=2 if b.shape(s0)[2] > b.shape(s1)[2] else 1)
        while b.shape(p0)[2:] != b.shape(s1)[2:]:
            p0 = b.pool(p0, "MaxPool", 3, 2)
        p1 = b.conv(b.relu(s1), width, 1)
        states, used = [p0, p1], set()
        for _ in range(nodes):
            i, j = rng.sample(range(len(states)), 2)
            a = _cell_op(b, states[i], width, 2 if reduce and i < 2 else 1, rng)
            d = _cell_op(b, states[j], width, 2 if reduce and j < 2 else 1, rng)
            states.append(b.op("Add", (a, d)))
            used.update((i, j))
        loose = [h for k, h in enumerate(states) if k >= 2 and k not in used]  # ENAS-style: the loose ends
        s0, s1 = s1, b.merge(loose, rng, add_bias=0.0)
    return b.finish([b.classifier(s1)])


# --------------------------------------------------------------------------- U-Net-like


def unet(scale: int, seed: int, dtype: str = "float32") -> Graph:
    """``scale`` convolutions in all over 2 to 4 levels, with residual and cross-level skips."""
    rng = random.Random(seed)
    b = Builder(f"unet{scale}_s{seed}_{dtype}", dtype)
    levels = 2 if scale < 12 else 3 if scale < 40 else 4
    blocks = 2 * levels + 1
    depth = [scale // blocks + (1 if i < scale % blocks else 0) for i in range(blocks)]
    width = rng.choice((4, 8))
    side = 8 * 2 ** levels // 2 * rng.choice((1, 2))
    x = b.input((1, 3, side, side))
    widths = [width * 2 ** i for i in range(levels + 1)]

    def block(h: str, w: int, convs: int) -> str:
        history = [h]
        for _ in range(max(1, convs)):
            h = b.relu(b.conv(h, w, rng.choice((1, 3))))
            if rng.random() < 0.35:
                same = [t for t in history if b.shape(t) == b.shape(h)]
                if same:
                    h = b.op("Add", (h, rng.choice(same)))
            history.append(h)
        return h

    skips = []
    for level in range(levels):
        x = block(x, widths[level], depth[level])
        skips.append(x)
        x = b.pool(x, "MaxPool", 2, 2)
    x = block(x, widths[levels], depth[levels])
    for level in reversed(range(levels)):
        x = b.conv(b.upsample(x), widths[level], 1)
        parts = [skips[level], x]
        for other in range(level):  # a UNet++-like skip from a finer level, pooled down
            if rng.random() < 0.4:
                h = skips[other]
                while b.shape(h)[2] > b.shape(x)[2]:
                    h = b.pool(h, "MaxPool", 2, 2)
                parts.append(h)
        x = block(b.merge(parts, rng, add_bias=0.0), widths[level], depth[levels + 1 + level])
    return b.finish([b.conv(x, 2, 1)])


# --------------------------------------------------------------------------- sizing and the suite

FAMILIES: dict[str, Callable[[int, int, str], Graph]] = {"randwire": randwire, "nas": nas, "unet": unet}


def make(family: str, ops: int, seed: int, dtype: str = "float32") -> Graph:
    """The graph of the family with the largest scale whose operator count is at most ``ops``."""
    build = FAMILIES[family]
    lo, hi = 1, max(2, ops)  # scale 1 always fits the smallest target the suite uses
    best = build(1, seed, dtype)
    while lo <= hi:
        mid = (lo + hi) // 2
        g = build(mid, seed, dtype)
        if len(g.nodes) <= ops:
            best, lo = g, mid + 1
        else:
            hi = mid - 1
    return best


@dataclass(frozen=True)
class Spec:
    family: str
    ops: int
    seed: int
    dtype: str

    def build(self) -> Graph:
        return make(self.family, self.ops, self.seed, self.dtype)


SMALL = (20, 30, 40)
MEDIUM = (100, 300)
LARGE = (2000,)


def suite(sizes: tuple[int, ...] = SMALL + MEDIUM + LARGE, seeds: tuple[int, ...] = (0, 1, 2)) -> list[Spec]:
    """The benchmark's graphs: every family at every size and seed; int8 on odd seeds."""
    return [Spec(f, ops, seed, "int8" if seed % 2 else "float32")
            for ops in sizes for f in FAMILIES for seed in (seeds if ops <= 300 else seeds[:1])]
