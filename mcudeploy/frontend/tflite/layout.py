"""Where the data-moving handlers keep a tensor, and the IR nodes they add on the way.

A tensor of the .tflite (its shape as the file gives it, "plain") may be held inside in another order:
"nchw" (a 4-D tensor kept NCHW, ``Importer.nchw``) or "ncl" (a 3-D (N, L, C) tensor whose elements some IR
tensor holds in N, C, L order: ``Importer.channels_first``, what a Keras Conv1D's RESHAPE of a
(N, C, 1, L) convolution output leaves). A reshape that keeps the order of the elements is a view: the
converter's EXPAND_DIMS -> CONV_2D -> RESHAPE around every Conv1D and 1-D pooling then needs no transpose
between layers. ``same_order`` decides it by reshaping the indices themselves.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from mcudeploy.frontend.tflite.importer import TO_NCHW, TO_NHWC
from mcudeploy.ir import Graph, Node, Quant, Tensor
from mcudeploy.ops import registry

PERMS = {"plain": None, "nchw": TO_NCHW, "ncl": (0, 2, 1)}


def held(values: np.ndarray, layout: str) -> np.ndarray:
    """The elements of a tensor (its file shape) in the order ``layout`` stores them."""
    perm = PERMS[layout]
    return np.ravel(values if perm is None else values.transpose(perm))


def same_order(shape, layout: str, out_shape, out_layout: str) -> bool:
    """Whether a tensor of ``shape`` held in ``layout``, reshaped to ``out_shape`` (in the file's order),
    is held in ``out_layout`` by the same bytes: a reshape that is a view."""
    if PERMS[layout] is not None and len(shape) != len(PERMS[layout]):
        return False
    if PERMS[out_layout] is not None and len(out_shape) != len(PERMS[out_layout]):
        return False
    index = np.arange(math.prod(shape)).reshape(shape)
    return np.array_equal(held(index, layout), held(index.reshape(out_shape), out_layout))


def nchw(shape) -> tuple[int, ...]:
    return tuple(shape[p] for p in TO_NCHW)


def inner(imp, op: str, inputs, attrs: dict, suffix: str, out: int, layout: str = "plain",
          quant: Optional[Quant] = None) -> str:
    """An intermediate IR tensor (named after TFLite tensor ``out`` and ``suffix``), made by ``op`` from
    ``inputs``, of the type ``op`` makes and ``out``'s quantization (``layout`` "nchw": a per-channel axis
    moved), or ``quant``."""
    name = f"{imp.tname(out)}/{suffix}"
    k = 1
    while name in imp.tensors:
        name = f"{imp.tname(out)}/{suffix}{k}"
        k += 1
    node = Node(f"{imp.label.split(' (')[0].replace(' ', '_')}:{name}", registry.get(op).name, tuple(inputs),
                (name,), attrs)
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    (shape, dtype), *_ = registry.get(op).infer(scope, node)
    q = quant or imp.quant(out, len(imp.shape(out)))
    if quant is None and q is not None and q.axis is not None:
        q = Quant(q.scale, q.zero_point, TO_NCHW.index(q.axis)) if layout == "nchw" and len(shape) == 4 else None
    imp.tensors[name] = Tensor(name, tuple(int(d) for d in shape), dtype, quant=q)
    imp.nodes.append(node)
    return name


def to_plain(imp, name: str, out: int) -> str:
    """The NHWC form of 4-D NCHW IR tensor ``name``: a Reshape where it has one channel or one pixel
    (the same order of elements), else a Transpose."""
    n, c, h, w = imp.tensors[name].shape
    if c == 1 or h * w == 1:
        return inner(imp, "Reshape", (name,), {"shape": (n, h, w, c), "allowzero": 0}, "nhwc", out)
    return inner(imp, "Transpose", (name,), {"perm": TO_NHWC}, "nhwc", out)


def of_input(imp, name: str) -> bool:
    """Whether IR tensor ``name`` is a graph input or a Reshape of one (its bytes)."""
    made = {o: n for n in imp.nodes for o in n.outputs}
    while imp.tensors[name].kind != "input":
        node = made.get(name)
        if node is None or node.op != "Reshape":
            return False
        name = node.inputs[0]
    return True


def _nchw_view(imp, out: int, name: str) -> None:
    """A plain 4-D tensor that is a graph input's bytes is read as NCHW through permuted strides (a
    TransposeView, as Importer.value reads a 4-D graph input), not copied."""
    t = imp.tensors[name]
    n, h, w, c = t.shape
    if c == 1 or h * w == 1 or not of_input(imp, name):
        return  # Importer.value: a Reshape, or a Transpose
    view = f"{name}/nchw"
    imp.tensors[view] = Tensor(view, nchw(t.shape), t.dtype, quant=t.quant if t.quant is None or t.quant.axis is None
                               else Quant(t.quant.scale, t.quant.zero_point, TO_NCHW.index(t.quant.axis)))
    imp.nodes.append(Node(f"{view}/transposeview", "TransposeView", (name,), (view,), {"perm": TO_NCHW}))
    imp.converted[(out, "nchw")] = view


def holdings(imp, i: int) -> dict[str, str]:
    """The IR tensors holding TFLite tensor i, by layout ("plain" only where it exists already)."""
    if imp.is_const(i):
        return {"plain": imp.value(i, "plain")}
    out = {"nchw" if i in imp.nchw else "plain": imp.value(i, "nchw" if i in imp.nchw else "plain")}
    if i in imp.channels_first:
        out["ncl"] = imp.channels_first[i]
    return out


def reshape(imp, have: dict[str, str], shape, out: int, plain: Optional[Callable[[], str]] = None) -> str:
    """Make TFLite tensor ``out`` as ``shape``'s elements, in the file's order, reshaped; ``have`` holds the
    source by layout, ``plain()`` makes its plain form where none is held. A view wherever the order allows:
    a 4-D output NCHW when some held form already has its order, else plain; a 3-D output whose N, C, L
    order a held form has is remembered as such (``Importer.channels_first``)."""
    out_shape = imp.shape(out)
    if math.prod(shape) != math.prod(out_shape):
        imp.fail(f"makes {list(out_shape)} of the {math.prod(shape)} elements of {list(shape)} (the file's shapes "
                 f"disagree: a model converted with an unknown dimension; convert it with a batch of 1)", True)
    if len(out_shape) == 4:
        for layout, src in have.items():
            if same_order(shape, layout, out_shape, "nchw"):
                return imp.emit("Reshape", (src,), out, {"shape": nchw(out_shape), "allowzero": 0}, "nchw")
    if len(out_shape) == 3:
        for layout, src in have.items():
            if layout != "plain" and same_order(shape, layout, out_shape, "ncl"):
                imp.channels_first[out] = src
                break
    for layout, src in have.items():
        if same_order(shape, layout, out_shape, "plain"):
            name = imp.emit("Reshape", (src,), out, {"shape": tuple(out_shape), "allowzero": 0})
            if len(out_shape) == 4:
                _nchw_view(imp, out, name)
            return name
    src = have["plain"] if "plain" in have else plain()
    name = imp.emit("Reshape", (src,), out, {"shape": tuple(out_shape), "allowzero": 0})
    if len(out_shape) == 4:
        _nchw_view(imp, out, name)
    return name


def reshape_tensor(imp, x: int, out: int) -> str:
    """RESHAPE, EXPAND_DIMS, SQUEEZE of TFLite tensor x (see ``reshape``)."""
    return reshape(imp, holdings(imp, x), imp.shape(x), out, lambda: imp.value(x, "plain"))
