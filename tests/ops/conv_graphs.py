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
