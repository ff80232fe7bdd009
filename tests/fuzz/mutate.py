"""Mutators of ONNX models: byte level (flip, overwrite, cut, splice the serialized file) and
structure aware (protobuf fields: dims, element types, attributes, initializer data with NaN and
Inf, quantization scales and zero points, nodes dropped, duplicated, rewired or retyped, tensors
renamed, the opset).

``mutant(seed, rng)`` turns one serialized seed model into a damaged one with a few mutations drawn
from ``rng`` (a random.Random), and says which: the same rng state gives the same bytes.
"""
from __future__ import annotations

import math
import random
from typing import Callable, Optional

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, numpy_helper

INTS = (0, 1, -1, 2, 3, 4, 7, 8, 16, 127, 128, -128, 255, 256, 300, -300, 2 ** 15, 2 ** 16, 2 ** 20, 2 ** 31 - 1,
        2 ** 31, -2 ** 31, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1, -2 ** 63)
FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e-38, 1e-8, 1e8, 1e38, 3.4e38, -3.4e38, 255.0, math.inf, -math.inf,
          math.nan)
STRINGS = (b"", b"x", b"constant", b"reflect", b"edge", b"wrap", b"NOTSET", b"SAME_UPPER", b"SAME_LOWER", b"VALID",
           b"nearest", b"linear", b"cubic", b"asymmetric", b"half_pixel", b"align_corners", b"floor", b"ceil",
           b"round_prefer_floor", b"\xff\xfe")
OP_TYPES = ("Add", "AveragePool", "BatchNormalization", "Clip", "Concat", "Conv", "DequantizeLinear", "Div",
            "Flatten", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish", "Identity",
            "LeakyRelu", "MatMul", "MaxPool", "Mul", "Pad", "QuantizeLinear", "Relu", "Reshape", "Resize",
            "Sigmoid", "Slice", "Softmax", "Split", "Squeeze", "Sub", "Sum", "Tanh", "Transpose", "Unsqueeze",
            "Upsample", "Shape", "Gather", "Cast", "ConstantOfShape", "Expand", "Erf", "Loop", "Constant", "Range",
            "Tile", "ReduceMean", "Sqrt", "Exp", "Where", "NotAnOp")
NEW_ATTRIBUTES = (("axis", "int"), ("group", "int"), ("kernel_shape", "ints"), ("strides", "ints"), ("pads", "ints"),
                  ("dilations", "ints"), ("perm", "ints"), ("transA", "int"), ("transB", "int"), ("keepdims", "int"),
                  ("alpha", "float"), ("beta", "float"), ("epsilon", "float"), ("mode", "string"),
                  ("auto_pad", "string"), ("axes", "ints"), ("ceil_mode", "int"), ("count_include_pad", "int"),
                  ("allowzero", "int"), ("to", "int"), ("min", "float"), ("max", "float"), ("split", "ints"),
                  ("coordinate_transformation_mode", "string"), ("block_size", "int"), ("saturate", "int"),
                  ("storage_order", "int"), ("output_padding", "ints"), ("value", "float"))
OPSETS = (0, 1, 6, 7, 9, 10, 11, 12, 13, 14, 17, 19, 21, 22, 23, 99, 2 ** 40)


def _int(rng: random.Random) -> int:
    return rng.choice(INTS) if rng.random() < 0.7 else rng.randint(-3, 40)


def _float(rng: random.Random) -> float:
    return rng.choice(FLOATS) if rng.random() < 0.7 else rng.uniform(-10, 10)


def _tensor_names(g: onnx.GraphProto) -> list[str]:
    names = [t.name for t in g.initializer] + [v.name for v in g.input] + [o for n in g.node for o in n.output]
    return [n for n in names if n]


def _value_infos(g: onnx.GraphProto) -> list:
    return list(g.input) + list(g.output) + list(g.value_info)


# ----------------------------------------------------------------------------- tensors


def _mutate_tensor_dims(t: TensorProto, rng: random.Random) -> str:
    dims = list(t.dims)
    choice = rng.randrange(4)
    if choice == 0 and dims:
        i = rng.randrange(len(dims))
        dims[i] = _int(rng)
    elif choice == 1 and dims:
        dims.pop(rng.randrange(len(dims)))
    elif choice == 2:
        dims.insert(rng.randrange(len(dims) + 1), rng.choice((1, 2, 0, 2 ** 31)))
    else:
        rng.shuffle(dims)
    del t.dims[:]
    t.dims.extend(dims)
    return f"dims of {t.name} -> {dims}"


def _mutate_tensor_data(t: TensorProto, rng: random.Random) -> Optional[str]:
    """Set a few elements to interesting values (NaN and Inf for floats, out-of-range integers
    stored widened in int32_data for narrow types)."""
    try:
        value = numpy_helper.to_array(t).copy()
    except Exception:  # noqa: BLE001  (an already damaged tensor)
        return None
    if value.size == 0 or value.size > 10 ** 7:
        return None
    flat = value.reshape(-1)
    picks = [rng.randrange(flat.size) for _ in range(rng.choice((1, 1, 2, 5)))]
    if value.dtype.kind == "f":
        for i in picks:
            flat[i] = _float(rng)
        new = numpy_helper.from_array(value, t.name)
    elif value.dtype.kind in "iub" and t.data_type in (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16,
                                                       TensorProto.UINT16, TensorProto.BOOL) and rng.random() < 0.5:
        wide = flat.astype(np.int64)
        for i in picks:
            wide[i] = rng.choice((300, -300, 128, -129, 256, 65536, -1, 2 ** 31 - 1))
        new = TensorProto(name=t.name, data_type=t.data_type, dims=t.dims, int32_data=[int(v) for v in wide])
    elif value.dtype.kind in "iub":
        info = np.iinfo(value.dtype) if value.dtype.kind != "b" else None
        for i in picks:
            v = _int(rng)
            flat[i] = v if info is None or info.min <= v <= info.max else info.max
        new = numpy_helper.from_array(value, t.name)
    else:
        return None
    t.CopyFrom(new)
    return f"data of {t.name} at {picks}"


def _initializer(g: onnx.GraphProto, rng: random.Random) -> Optional[TensorProto]:
    return rng.choice(g.initializer) if len(g.initializer) else None


def m_initializer_dims(model, rng):
    t = _initializer(model.graph, rng)
    return _mutate_tensor_dims(t, rng) if t is not None else None


def m_initializer_dtype(model, rng):
    t = _initializer(model.graph, rng)
    if t is None:
        return None
    t.data_type = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16, 17, 21, 99))
    return f"data_type of {t.name} -> {t.data_type}"


def m_initializer_data(model, rng):
    t = _initializer(model.graph, rng)
    return _mutate_tensor_data(t, rng) if t is not None else None


def m_quant_params(model, rng):
    """A scale of 0, below 0, NaN, Inf or tiny; a zero point out of range; a per-channel vector of
    the wrong length; or the zero point's element type changed."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    params = [(n, i) for n in g.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")
              for i in (1, 2) if len(n.input) > i and n.input[i] in inits]
    if not params:
        return None
    node, index = rng.choice(params)
    t = inits[node.input[index]]
    try:
        value = numpy_helper.to_array(t).copy()
    except Exception:  # noqa: BLE001
        return None
    choice = rng.randrange(3)
    if choice == 0 and value.size:  # a bad value
        flat = value.reshape(-1)
        i = rng.randrange(flat.size)
        if index == 1:
            flat[i] = rng.choice((0.0, -0.05, math.nan, math.inf, 1e-45, 1e30))
            t.CopyFrom(numpy_helper.from_array(value, t.name))
        else:
            wide = flat.astype(np.int64)
            wide[i] = rng.choice((300, -300, 128, -129, 256, -1))
            t.CopyFrom(TensorProto(name=t.name, data_type=t.data_type, dims=t.dims, int32_data=[int(v) for v in wide]))
    elif choice == 1:  # another length
        n = rng.choice((0, 1, 2, 3, max(value.size - 1, 0), value.size + 1))
        t.CopyFrom(numpy_helper.from_array(np.resize(value.reshape(-1), n).astype(value.dtype), t.name))
    else:
        t.data_type = rng.choice((TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.FLOAT,
                                  TensorProto.INT16, TensorProto.INT64))
    return f"{'scale' if index == 1 else 'zero point'} {t.name} of {node.name} ({choice})"


# ----------------------------------------------------------------------------- shapes of values


def m_value_dims(model, rng):
    infos = [v for v in _value_infos(model.graph) if v.type.HasField("tensor_type")]
    if not infos:
        return None
    v = rng.choice(infos)
    shape = v.type.tensor_type.shape
    choice = rng.randrange(5)
    if choice == 0 and len(shape.dim):
        d = rng.choice(shape.dim)
        d.dim_value = _int(rng)
    elif choice == 1 and len(shape.dim):
        del shape.dim[rng.randrange(len(shape.dim))]
    elif choice == 2:
        shape.dim.add().dim_value = rng.choice((1, 2, 3))
    elif choice == 3 and len(shape.dim):
        rng.choice(shape.dim).dim_param = rng.choice(("N", "batch", ""))
    else:
        v.type.tensor_type.elem_type = rng.choice((0, 1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 99))
    return f"shape/type of {v.name} ({choice})"


# ----------------------------------------------------------------------------- attributes


def _set_attribute(a: AttributeProto, kind: str, rng: random.Random) -> None:
    a.ClearField("i"), a.ClearField("f"), a.ClearField("s"), a.ClearField("ints"), a.ClearField("floats")
    if kind == "int":
        a.type, a.i = AttributeProto.INT, _int(rng)
    elif kind == "float":
        a.type, a.f = AttributeProto.FLOAT, _float(rng)
    elif kind == "string":
        a.type, a.s = AttributeProto.STRING, rng.choice(STRINGS)
    elif kind == "ints":
        a.type = AttributeProto.INTS
        count = rng.choice((0, 1, 2, 4, 8))
        a.ints.extend(_int(rng) if rng.random() < 0.3 else rng.randint(0, 3) for _ in range(count))
    else:
        a.type = AttributeProto.FLOATS
        a.floats.extend(_float(rng) for _ in range(rng.choice((0, 1, 2, 4))))


def m_attribute(model, rng):
    nodes = [n for n in model.graph.node if len(n.attribute)]
    if not nodes:
        return None
    node = rng.choice(nodes)
    a = rng.choice(node.attribute)
    choice = rng.randrange(6)
    if choice == 0:
        node.attribute.remove(a)
        return f"attribute {a.name} of {node.name} removed"
    if a.type == AttributeProto.INT and choice < 4:
        a.i = _int(rng)
    elif a.type == AttributeProto.FLOAT and choice < 4:
        a.f = _float(rng)
    elif a.type == AttributeProto.STRING and choice < 4:
        a.s = rng.choice(STRINGS)
    elif a.type == AttributeProto.INTS and choice < 4 and len(a.ints):
        if rng.random() < 0.5:
            a.ints[rng.randrange(len(a.ints))] = _int(rng)
        elif rng.random() < 0.5:
            del a.ints[rng.randrange(len(a.ints))]
        else:
            a.ints.append(rng.randint(-1, 4))
    elif a.type == AttributeProto.FLOATS and choice < 4 and len(a.floats):
        a.floats[rng.randrange(len(a.floats))] = _float(rng)
    elif a.type == AttributeProto.TENSOR and choice < 4:
        (_mutate_tensor_data if rng.random() < 0.6 else _mutate_tensor_dims)(a.t, rng)
    else:
        _set_attribute(a, rng.choice(("int", "float", "string", "ints", "floats")), rng)
    return f"attribute {a.name} of {node.name}"


def m_new_attribute(model, rng):
    if not len(model.graph.node):
        return None
    node = rng.choice(model.graph.node)
    name, kind = rng.choice(NEW_ATTRIBUTES)
    existing = [a for a in node.attribute if a.name == name]
    a = existing[0] if existing else node.attribute.add()
    a.name = name
    _set_attribute(a, kind, rng)
    return f"attribute {name} set on {node.name}"


# ----------------------------------------------------------------------------- wiring


def _set_nodes(g: onnx.GraphProto, nodes: list) -> None:
    del g.node[:]
    g.node.extend(nodes)


def m_drop_node(model, rng):
    nodes = list(model.graph.node)
    if not nodes:
        return None
    gone = nodes.pop(rng.randrange(len(nodes)))
    _set_nodes(model.graph, nodes)
    return f"node {gone.name} dropped"


def m_duplicate_node(model, rng):
    nodes = list(model.graph.node)
    if not nodes:
        return None
    i = rng.randrange(len(nodes))
    copy = onnx.NodeProto()
    copy.CopyFrom(nodes[i])
    if rng.random() < 0.5:  # its own outputs, read by nobody
        copy.name += "_dup"
        copy.output[:] = [o + "_dup" if o else o for o in copy.output]
    nodes.insert(rng.randrange(len(nodes) + 1), copy)
    _set_nodes(model.graph, nodes)
    return f"node {copy.name} duplicated"


def m_rewire(model, rng):
    nodes = [n for n in model.graph.node if len(n.input)]
    if not nodes:
        return None
    node = rng.choice(nodes)
    i = rng.randrange(len(node.input))
    names = _tensor_names(model.graph)
    node.input[i] = rng.choice(names + ["", "ghost"]) if names else "ghost"
    return f"input {i} of {node.name} -> {node.input[i]}"


def m_move_node(model, rng):
    nodes = list(model.graph.node)
    if len(nodes) < 2:
        return None
    node = nodes.pop(rng.randrange(len(nodes)))
    nodes.insert(rng.randrange(len(nodes) + 1), node)
    _set_nodes(model.graph, nodes)
    return f"node {node.name} moved"


def m_op_type(model, rng):
    if not len(model.graph.node):
        return None
    node = rng.choice(model.graph.node)
    node.op_type = rng.choice(OP_TYPES)
    if rng.random() < 0.1:
        node.domain = rng.choice(("com.microsoft", "ai.onnx.ml", "x"))
    return f"{node.name} -> {node.op_type}"


def m_input_count(model, rng):
    if not len(model.graph.node):
        return None
    node = rng.choice(model.graph.node)
    if len(node.input) and rng.random() < 0.5:
        del node.input[rng.randrange(len(node.input))]
        return f"an input of {node.name} removed"
    names = _tensor_names(model.graph)
    node.input.append(rng.choice(names + [""]) if names else "")
    return f"an input added to {node.name}"


def m_output_count(model, rng):
    if not len(model.graph.node):
        return None
    node = rng.choice(model.graph.node)
    if len(node.output) and rng.random() < 0.5:
        del node.output[rng.randrange(len(node.output))]
        return f"an output of {node.name} removed"
    node.output.append(rng.choice(("extra", "", *node.output)))
    return f"an output added to {node.name}"


def m_rename(model, rng):
    """Rename a tensor everywhere, or at one place only (which leaves a dangling input)."""
    g = model.graph
    names = _tensor_names(g)
    if not names:
        return None
    old = rng.choice(names)
    new = rng.choice((old + "_r", "", "x", names[0]))
    everywhere = rng.random() < 0.5
    places = [(n.input, i) for n in g.node for i, v in enumerate(n.input) if v == old]
    places += [(n.output, i) for n in g.node for i, v in enumerate(n.output) if v == old]
    for holder in list(g.initializer) + _value_infos(g):
        if holder.name == old:
            places.append((holder, None))
    if not places:
        return None
    for holder, i in (places if everywhere else [rng.choice(places)]):
        if i is None:
            holder.name = new
        else:
            holder[i] = new
    return f"{old} renamed to {new!r} {'everywhere' if everywhere else 'once'}"


def m_graph_io(model, rng):
    g = model.graph
    choice = rng.randrange(4)
    if choice == 0 and len(g.output):
        del g.output[rng.randrange(len(g.output))]
    elif choice == 1 and _tensor_names(g):
        out = g.output.add()
        out.CopyFrom(g.output[0] if len(g.output) > 1 else onnx.helper.make_tensor_value_info("z", 1, None))
        out.name = rng.choice(_tensor_names(g))
    elif choice == 2 and len(g.input):
        del g.input[rng.randrange(len(g.input))]
    elif len(g.input):
        g.input.add().CopyFrom(rng.choice(g.input))
    else:
        return None
    return f"graph inputs/outputs ({choice})"


def m_opset(model, rng):
    if not len(model.opset_import):
        return None
    o = rng.choice(model.opset_import)
    o.version = rng.choice(OPSETS)
    if rng.random() < 0.1:
        model.ir_version = rng.choice((0, 1, 3, 7, 10, 99))
    return f"opset -> {o.version}"


STRUCTURE: tuple[tuple[Callable, float], ...] = (
    (m_initializer_data, 4), (m_initializer_dims, 2), (m_initializer_dtype, 1), (m_quant_params, 3),
    (m_value_dims, 3), (m_attribute, 4), (m_new_attribute, 2), (m_drop_node, 1), (m_duplicate_node, 1),
    (m_rewire, 2), (m_move_node, 1), (m_op_type, 1), (m_input_count, 1), (m_output_count, 0.5), (m_rename, 1),
    (m_graph_io, 0.5), (m_opset, 0.5),
)


# ----------------------------------------------------------------------------- bytes


def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    b = bytearray(data)
    if not b:
        return bytes([rng.randrange(256)]), "one byte"
    choice = rng.randrange(6)
    if choice == 0:
        for _ in range(rng.choice((1, 1, 2, 4, 8))):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        what = "bits flipped"
    elif choice == 1:
        for _ in range(rng.choice((1, 2, 4))):
            b[rng.randrange(len(b))] = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x01))
        what = "bytes overwritten"
    elif choice == 2:
        b = b[:rng.randrange(len(b))]
        what = "truncated"
    elif choice == 3:
        start = rng.randrange(len(b))
        del b[start:start + rng.choice((1, 2, 8, 64, 1024))]
        what = "a range deleted"
    elif choice == 4:
        start, size = rng.randrange(len(b)), rng.choice((1, 4, 16, 256))
        b[start:start] = b[start:start + size]
        what = "a range duplicated"
    else:
        at = rng.randrange(len(b) + 1)
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 8))))
        what = "random bytes inserted"
    return bytes(b), what


def mutate_model(model: onnx.ModelProto, rng: random.Random) -> str:
    mutators, weights = zip(*STRUCTURE)
    for _ in range(20):
        what = rng.choices(mutators, weights)[0](model, rng)
        if what:
            return what
    return "nothing applied"


def mutant(seed: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """One damaged model from a serialized seed: 1 to 3 structure mutations (70%), byte mutations
    (20%), or both (10%)."""
    kind = rng.random()
    done = []
    data = seed
    if kind < 0.8:
        model = onnx.ModelProto()
        model.ParseFromString(seed)
        for _ in range(rng.choice((1, 1, 2, 3))):
            done.append(mutate_model(model, rng))
        data = model.SerializeToString()
    if kind >= 0.7:
        for _ in range(rng.choice((1, 1, 2))):
            data, what = mutate_bytes(data, rng)
            done.append(what)
    return data, done
