"""Single-Conv int8 graphs as the QDQ lowering produces them, built directly (shared by the Conv tests)."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import Graph, Node, Quant, Tensor, constant
from mcudeploy.ops import registry


def int8_conv(x_shape, cout, kernel, attrs, *, seed=0, s_y=0.05, z_x=-9, z_y=4, clip=None, bias=True,
              w_range=127, dead=()) -> tuple[Graph, Node, dict]:
    """An int8 Conv as the QDQ lowering produces it. s_y sets the requantization shifts: the
    default gives shifts near 39 (mcud_requant_hi); s_y = 1e-4 gives multipliers above 1/2, shifts <= 32.
    The output channels in ``dead`` have weights of 0 only (the first of them a bias near 2^30, as Keras leaves
    such channels: their output is then not the zero point)."""
    rng = np.random.default_rng(seed)
    group = attrs.get("group", 1)
    s_x = 0.03
    s_w = rng.uniform(0.002, 0.01, cout)
    w = rng.integers(-w_range, w_range + 1, (cout, x_shape[1] // group, *kernel)).astype(np.int8)
    b = rng.integers(-5000, 5000, cout).astype(np.int32)
    if dead:
        w[list(dead)] = 0
        b[dead[0]], s_w[dead[0]] = -(1 << 30) + 77, 1e-8
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    tensors = [Tensor("x", x_shape, "int8", "input", Quant((s_x,), (z_x,))),
               constant("w", w, Quant(tuple(s_w), (0,) * cout, 0))]
    if bias:
        tensors.append(constant("b", b, Quant(tuple(s_x * s_w), (0,) * cout, 0)))
    node_attrs = dict(attrs)
    if clip is not None:
        node_attrs.update(clip_min=clip[0], clip_max=clip[1])
    node = Node("conv", "Conv", ("x", "w", "b" if bias else ""), ("y",), node_attrs)
    partial = Graph("g", {t.name: t for t in tensors}, (), ("x",), ())
    shape, dtype = registry.get("Conv").infer(partial, node)[0]
    tensors.append(Tensor("y", shape, dtype, "output", Quant((s_y,), (z_y,))))
    graph = Graph("g", {t.name: t for t in tensors}, (node,), ("x",), ("y",))
    return graph, node, {"x": x}


FAST_KERNELS = [(1, 1), (1, 2), (2, 2), (3, 3), (1, 3), (3, 1), (2, 3), (1, 1)]


def random_convs(rng, cin: int, arithmetic: str, kernels=FAST_KERNELS, direct: bool = False) -> Graph:
    """One input and an int8 Conv per kernel reading it, each its own output: random output channels (odd counts take
    the last-channel path), kernels giving groups of taps odd and even in number, strides, pads, maps whose pixel
    count leaves tails of one to three, and tiles of blocks or none; or, where direct, each without scratch (the
    direct kernel), strides along W too."""
    h, w = (int(v) for v in rng.integers(3, 10, 2))
    s_x = 0.03
    tensors = [Tensor("x", (1, cin, h, w), "int8", "input", Quant((s_x,), (int(rng.integers(-20, 20)),)))]
    nodes, outputs = [], []
    for k, kernel in enumerate(kernels):
        off = k % 2 == 0 and arithmetic == "tflite"  # a dead channel (its output the zero point) and one off the
        cout = int(rng.integers(17, 20) if off else rng.integers(1, 10))  # doubled route (a scale near 1), in few pairs
        s_w = rng.uniform(0.002, 0.01, cout)
        wt = rng.integers(-127, 128, (cout, cin, *kernel)).astype(np.int8)
        b = rng.integers(-5000, 5000, cout).astype(np.int32)
        if off:  # the one off the route: a scale near 1, or an accumulator past 2^30 (Keras's huge biases on tiny
            s_w[0] = 1e-13  # weight scales) whose output is not saturated
            if k % 4 == 0:
                s_w[1], b[1] = 2.5e-8, (1 << 30) + int(rng.integers(0, 1000))
            else:
                s_w[-1] = 2.0
        if k % 3 == 1 and cout >= 3:  # channels of weights 0 only (p->live), one with a bias near 2^30 as Keras's
            dead = sorted({cout // 2, cout - 2})
            wt[dead] = 0
            b[dead[0]], s_w[dead[0]] = -(1 << 30) + int(rng.integers(0, 1000)), 1e-8
        tensors += [constant(f"w{k}", wt, Quant(tuple(s_w), (0,) * cout, 0)),
                    constant(f"b{k}", b, Quant(tuple(s_x * s_w), (0,) * cout, 0))]
        attrs = {"strides": [int(rng.integers(1, 3)), 1], "pads": [int(v) for v in rng.integers(0, 2, 4)]}
        if direct:
            attrs.update(scratch=0, strides=[int(v) for v in rng.integers(1, 3, 2)])
        elif rng.random() < 0.5:
            attrs["tile"] = int(rng.choice([3, 8]))
        node = Node(f"conv{k}", "Conv", ("x", f"w{k}", f"b{k}"), (f"y{k}",), attrs)
        partial = Graph("g", {t.name: t for t in tensors}, (), ("x",), (), arithmetic=arithmetic)
        shape, dtype = registry.get("Conv").infer(partial, node)[0]
        tensors.append(Tensor(f"y{k}", shape, dtype, "output",
                              Quant((float(rng.uniform(0.02, 0.2)),), (int(rng.integers(-10, 10)),))))
        nodes.append(node)
        outputs.append(f"y{k}")
    return Graph("convs", {t.name: t for t in tensors}, tuple(nodes), ("x",), tuple(outputs), arithmetic=arithmetic)
