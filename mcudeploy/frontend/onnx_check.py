"""Facts of an ONNX model checked before any work: its wiring, its tensors' shapes and data.

A damaged model gets one sentence naming the file and the node, tensor or input at fault
(errors.InvalidModelError). The wiring is checked before onnx's own checker so that a cycle or a
dangling input is told in mcudeploy's words, with the node it concerns.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

import numpy as np
import onnx
from onnx import helper, numpy_helper

from mcudeploy.errors import InvalidModelError, UnsupportedError
from mcudeploy.ir import MAX_TENSOR_BYTES

_NARROW_INTS = {onnx.TensorProto.INT8: (-128, 127), onnx.TensorProto.UINT8: (0, 255),
                onnx.TensorProto.INT16: (-32768, 32767), onnx.TensorProto.UINT16: (0, 65535),
                onnx.TensorProto.BOOL: (0, 1)}  # stored widened in int32_data


def node_label(proto: onnx.NodeProto, index: int) -> str:
    return f"node {proto.name or f'{proto.op_type}_{index}'} ({proto.op_type})"


def check_names(graph: onnx.GraphProto, where: str) -> None:
    """Names are text on one line: they appear in messages and in the generated C."""
    named = [("initializer", t.name) for t in graph.initializer] + [("graph input", v.name) for v in graph.input]
    named += [("graph output", v.name) for v in graph.output]
    for index, node in enumerate(graph.node):
        named += [("node", node.name)] + [(f"an input of node {index}", i) for i in node.input]
        named += [(f"an output of node {index}", o) for o in node.output]
    for what, name in named:
        if isinstance(name, bytes):
            raise InvalidModelError(f"{where}: {what} has a name that is not UTF-8 text ({name!r})")
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
            raise InvalidModelError(f"{where}: {what} has a name with a control character ({name!r})")


def check_wiring(graph: onnx.GraphProto, where: str) -> None:
    """Names are text on one line (check_names); every node input is provided (by a graph input,
    an initializer or an earlier node), every tensor has one producer, and the nodes form no cycle."""
    check_names(graph, where)
    provided: dict[str, str] = {}
    for init in graph.initializer:
        if init.name in provided:
            raise InvalidModelError(f"{where}: initializer {init.name} is given twice")
        provided[init.name] = "an initializer"
    for vi in graph.input:
        provided.setdefault(vi.name, "a graph input")
    producer: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for out in node.output:
            if not out:
                continue
            if out in producer:
                first = node_label(graph.node[producer[out]], producer[out])
                raise InvalidModelError(f"{where}: tensor {out} is produced twice, by {first} and by "
                                        f"{node_label(node, index)}")
            if out in provided:
                raise InvalidModelError(f"{where}: {node_label(node, index)} writes {out}, which is already "
                                        f"{provided[out]}")
            producer[out] = index
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name and name not in provided and name not in producer:
                raise InvalidModelError(f"{where}: {node_label(node, index)} reads {name}, which no node, "
                                        f"initializer or graph input provides (a dangling input)")
    cycle = _cycle(graph, producer)
    if cycle:
        path = " -> ".join(node_label(graph.node[i], i) for i in cycle + cycle[:1])
        raise InvalidModelError(f"{where}: the nodes form a cycle: {path}")
    for index, node in enumerate(graph.node):
        for name in node.input:
            if producer.get(name, -1) > index:
                later = producer[name]
                raise InvalidModelError(f"{where}: {node_label(node, index)} reads {name} before "
                                        f"{node_label(graph.node[later], later)} produces it (ONNX nodes must "
                                        f"be in topological order)")


def _cycle(graph: onnx.GraphProto, producer: dict[str, int]) -> list[int]:
    """Indices of the nodes of one cycle in order, or [] (an iterative depth-first search)."""
    preds = [sorted({producer[i] for i in node.input if i in producer}) for node in graph.node]
    state = [0] * len(preds)  # 0 unseen, 1 on the current path, 2 done
    for start in range(len(preds)):
        if state[start]:
            continue
        path, stack = [start], [iter(preds[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):][::-1]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(preds[nxt]))
    return []


def check_shape(shape: Iterable[int], dtype_bytes: int, what: str, empty_ok: bool = False) -> None:
    """`what` (e.g. "/m.onnx: input x") has positive dimensions (or zeros, where empty_ok) and
    at most MAX_TENSOR_BYTES bytes."""
    shape = [int(d) for d in shape]
    for axis, d in enumerate(shape):
        if d < 0:
            raise InvalidModelError(f"{what} has dimension {axis} of size {d}, which is not a size")
        if d == 0 and not empty_ok:
            raise UnsupportedError(f"{what} has dimension {axis} of size 0: an empty tensor, which mcudeploy "
                                   f"does not compile")
    nbytes = math.prod(shape) * dtype_bytes
    if nbytes > MAX_TENSOR_BYTES:
        raise InvalidModelError(f"{what} has shape {tuple(shape)}, {_bytes(nbytes)}: more than the "
                                f"{_bytes(MAX_TENSOR_BYTES)} a tensor may take on any board")


def _bytes(n: int) -> str:
    return f"{n:,} bytes" if n < 1 << 40 else f"about 2^{math.log2(n):.0f} bytes"


def tensor_value(proto: onnx.TensorProto, what: str) -> np.ndarray:
    """The data of an initializer or a Constant's value, checked before it is read: element type,
    dimensions, size, external storage, and narrow integers stored widened in int32_data."""
    try:
        np_dtype = np.dtype(helper.tensor_dtype_to_np_dtype(proto.data_type))
    except (KeyError, TypeError, ValueError):
        raise InvalidModelError(f"{what} has element type {proto.data_type}, which ONNX does not define") from None
    if proto.data_type == onnx.TensorProto.STRING:
        raise UnsupportedError(f"{what} holds strings, which mcudeploy does not read")
    check_shape(proto.dims, np_dtype.itemsize, what, empty_ok=True)
    if proto.data_location == onnx.TensorProto.EXTERNAL:
        raise UnsupportedError(f"{what} keeps its data in an external file; save the model with its data "
                               f"inside (onnx.save(model, path, save_as_external_data=False))")
    bounds = _NARROW_INTS.get(proto.data_type)
    if bounds and proto.int32_data:
        wide = np.asarray(proto.int32_data, dtype=np.int64)
        bad = wide[(wide < bounds[0]) | (wide > bounds[1])]
        if bad.size:
            name = onnx.TensorProto.DataType.Name(proto.data_type).lower()
            raise InvalidModelError(f"{what} holds {int(bad[0])}, outside the range of {name} "
                                    f"({bounds[0]}..{bounds[1]})")
    try:
        return numpy_helper.to_array(proto)
    except (ValueError, TypeError, KeyError, onnx.checker.ValidationError) as exc:
        text = str(exc).strip().splitlines()
        raise InvalidModelError(f"{what} does not hold the data its shape {tuple(proto.dims)} needs "
                                f"({text[0].rstrip('.') if text else type(exc).__name__})") from None


def nonfinite(value: np.ndarray) -> Optional[str]:
    """'NaN or infinite values (3 of 64)' for a float array that holds some, else None."""
    if value.dtype.kind != "f" or value.size == 0:
        return None
    bad = int(value.size - np.count_nonzero(np.isfinite(value)))
    return f"NaN or infinite values ({bad} of {value.size})" if bad else None
