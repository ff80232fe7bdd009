"""Mutators of .tflite models: byte level (flip, overwrite with interesting integers, cut, splice the
flatbuffer) and structure aware: the fields a walk of the TFLite schema finds
(mcudeploy/frontend/tflite/verify.py's ``walk(data, record=True)``: each field's name, byte offset and
width) are corrupted in place: uoffsets pointing out of the file or into themselves or at another
table, vector lengths longer than the file, tensor shapes (0, -1, huge, products past int64), tensor
types, buffer indices, constant data shorter than its shape, operator codes and operator inputs and
outputs out of range or reading the operator's own output, subgraph indices of CALL_ONCE, WHILE and
IF (a subgraph running itself), quantization scales (NaN, Inf, 0) and zero points and their counts,
builtin options of another union type, any options field.

``mutant(seed, rng)`` turns one seed .tflite into a damaged one with a few mutations drawn from
``rng`` (a random.Random), and says which: the same rng state gives the same bytes. The walk shares
its schema with the verifier it tests: a field the schema there leaves out is reached here only by
the byte mutations.
"""
from __future__ import annotations

import math
import random
import struct
from fuzz.mutate import INTS, mutate_bytes
from mcudeploy.frontend.tflite.verify import SCALARS, Field, walk

FLOATS = (0.0, -0.0, -1.0, 1e-45, 1e-38, 3.4e38, math.inf, -math.inf, math.nan)
DIMS = (0, -1, -2, 2 ** 31 - 1, -2 ** 31, 2 ** 16, 2 ** 20, 3)
OPTION_TYPES = (0, 1, 2, 5, 9, 19, 22, 25, 45, 94, 104, 119, 124, 255)  # NONE, Conv2D, ..., CallOnce, Cumsum, ...

_FIELDS: dict[int, list[Field]] = {}  # hash of a seed's bytes -> its fields (a worker walks each seed once)


def fields_of(data: bytes) -> list[Field]:
    key = hash(data)
    if key not in _FIELDS:
        try:
            _FIELDS[key] = walk(data, record=True).fields
        except Exception:  # noqa: BLE001  (a seed that does not walk: byte mutations only)
            _FIELDS[key] = []
    return _FIELDS[key]


def _put(b: bytearray, f: Field, value) -> None:
    """Write ``value`` into field ``f`` (integers wrapped to its width, floats as float32)."""
    if f.kind == "f32":
        struct.pack_into("<f", b, f.offset, float(value))
    else:
        struct.pack_into({1: "<B", 2: "<H", 4: "<I", 8: "<Q"}[f.width], b, f.offset, int(value) % (1 << 8 * f.width))


def _get(b: bytearray, f: Field):
    return struct.unpack_from(SCALARS[f.kind], b, f.offset)[0]


def _named(fields: list[Field], name: str) -> list[Field]:
    return [f for f in fields if f.name == name]


def _groups(fields: list[Field], name: str) -> list[list[Field]]:
    """The elements of each vector ``name`` (e.g. "Tensor.shape"), vector by vector."""
    groups, current = [], None
    for f in fields:
        if f.name == f"length {name}":
            current = []
            groups.append(current)
        elif f.name == f"{name}[]" and current is not None:
            current.append(f)
        elif f.name.startswith("length "):
            current = None
    return [g for g in groups if g]


def _count(b: bytearray, fields: list[Field], name: str) -> int:
    """The length of the first vector ``name`` (e.g. "Model.buffers"): the count of what an index points into."""
    lengths = _named(fields, f"length {name}")
    return _get(b, lengths[0]) if lengths else 0


def _int(rng: random.Random, near: int = 0) -> int:
    r = rng.random()
    return rng.choice(INTS) if r < 0.6 else near + rng.choice((-1, 1, 2)) if r < 0.8 else rng.randint(-2, 40)


# ----------------------------------------------------------------------------- structure


def m_uoffset(b, fields, rng):
    """A uoffset out of the file, onto itself, or at another table of the same kind (an alias, a reordering)."""
    offsets = [f for f in fields if f.name.startswith("uoffset ")]
    if not offsets:
        return None
    f = rng.choice(offsets)
    choice = rng.randrange(4)
    if choice == 0:
        value = rng.choice((len(b), len(b) - f.offset, 2 ** 31, 2 ** 32 - 4, 0xFFFFFFFF))
    elif choice == 1:
        value = 0  # points at itself
    elif choice == 2:
        value = _get(b, f) + rng.choice((-8, -4, -1, 1, 2, 4, 8, 64))
    else:
        same = [g for g in offsets if g.name == f.name and g is not f]
        if not same:
            return None
        g = rng.choice(same)
        value = g.offset + _get(b, g) - f.offset
    _put(b, f, value)
    return f"{f.name} at {f.offset} -> {value}"


def m_length(b, fields, rng):
    """A vector's or a string's length: longer than the file, one more or one less, zero."""
    lengths = [f for f in fields if f.name.startswith("length ")]
    if not lengths:
        return None
    f = rng.choice(lengths)
    n = _get(b, f)
    value = rng.choice((n + 1, max(n - 1, 0), 0, 2 * n, 2 ** 31 - 1, 0xFFFFFFFF, len(b), len(b) // 4))
    _put(b, f, value)
    return f"{f.name} at {f.offset}: {n} -> {value}"


def m_shape(b, fields, rng):
    """A tensor's dimension 0, -1, huge; or every dimension 2**31-1 (a product past int64)."""
    shapes = _groups(fields, "Tensor.shape")
    if not shapes:
        return None
    dims = rng.choice(shapes)
    if rng.random() < 0.25:
        for f in dims:
            _put(b, f, 2 ** 31 - 1)
        return f"every dimension of a shape at {dims[0].offset} -> 2**31-1"
    f = rng.choice(dims)
    value = rng.choice(DIMS) if rng.random() < 0.7 else _get(b, f) + rng.choice((-1, 1, 2))
    _put(b, f, value)
    return f"a dimension at {f.offset} -> {value}"


def m_tensor_type(b, fields, rng):
    types = _named(fields, "Tensor.type")
    if not types:
        return None
    f = rng.choice(types)
    value = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 127, -1))
    _put(b, f, value)
    return f"tensor type at {f.offset} -> {value}"


def m_buffer_index(b, fields, rng):
    """A tensor's buffer out of range, or another tensor's (data of another size)."""
    indices = _named(fields, "Tensor.buffer")
    if not indices:
        return None
    f = rng.choice(indices)
    count = _count(b, fields, "Model.buffers")
    value = rng.choice((count, count + 1, 0xFFFFFFFF, 2 ** 31, 0, rng.randrange(max(count, 1))))
    _put(b, f, value)
    return f"tensor buffer at {f.offset} -> {value} (of {count})"


def m_data_short(b, fields, rng):
    """A constant's data shorter (or longer) than its shape needs."""
    lengths = [f for f in _named(fields, "length Buffer.data") if _get(b, f) > 0]
    if not lengths:
        return None
    f = rng.choice(lengths)
    n = _get(b, f)
    value = rng.choice((n // 2, n - 1, 1, n + 4))
    _put(b, f, value)
    return f"buffer data at {f.offset}: {n} -> {value} bytes"


def m_opcode(b, fields, rng):
    codes = _named(fields, "Operator.opcode_index")
    if not codes:
        return None
    f = rng.choice(codes)
    count = _count(b, fields, "Model.operator_codes")
    value = rng.choice((count, count + 1, 0xFFFFFFFF, 2 ** 31, rng.randrange(max(count, 1))))
    _put(b, f, value)
    return f"operator code at {f.offset} -> {value} (of {count})"


def m_operator_io(b, fields, rng):
    """An operator's input or output out of range, -1, another tensor, or its own output (a cycle)."""
    ops = list(zip(_groups(fields, "Operator.inputs"), _groups(fields, "Operator.outputs")))
    if not ops:
        return None
    ins, outs = rng.choice(ops)
    count = _count(b, fields, "SubGraph.tensors")
    choice = rng.randrange(3)
    if choice == 0:
        f, value = rng.choice(ins), _get(b, rng.choice(outs))
        what = "its own output"
    else:
        f = rng.choice(ins + outs)
        value = rng.choice((-1, -2, count, count + 1, 2 ** 31 - 1, -2 ** 31, rng.randrange(max(count, 1))))
        what = str(value)
    _put(b, f, value)
    return f"{f.name} at {f.offset} -> {what}"


def m_graph_io(b, fields, rng):
    io = _named(fields, "SubGraph.inputs[]") + _named(fields, "SubGraph.outputs[]")
    if not io:
        return None
    f = rng.choice(io)
    count = _count(b, fields, "SubGraph.tensors")
    value = rng.choice((-1, count, 2 ** 31 - 1, rng.randrange(max(count, 1))))
    _put(b, f, value)
    return f"{f.name} at {f.offset} -> {value}"


def m_quantization(b, fields, rng):
    """Scales NaN, Inf, 0, negative; zero points out of range; their counts off; the quantized axis."""
    choice = rng.randrange(4)
    if choice == 0:
        pool, values = _named(fields, "QuantizationParameters.scale[]"), FLOATS
    elif choice == 1:
        pool, values = _named(fields, "QuantizationParameters.zero_point[]"), (-129, 128, 2 ** 31, -2 ** 63, 70000)
    elif choice == 2:
        pool = _named(fields, "length QuantizationParameters.scale") + \
            _named(fields, "length QuantizationParameters.zero_point")
        values = None
    else:
        pool, values = _named(fields, "QuantizationParameters.quantized_dimension"), (-1, 1, 3, 4, 7, 2 ** 31 - 1)
    if not pool:
        return None
    f = rng.choice(pool)
    if values is None:
        n = _get(b, f)
        value = rng.choice((max(n - 1, 0), n + 1, 1, 0, 2 * n))
    else:
        value = rng.choice(values)
    _put(b, f, value)
    return f"{f.name} at {f.offset} -> {value}"


def m_options(b, fields, rng):
    """Builtin options of another union type, or a field of the options set to an interesting value
    (a subgraph index of CALL_ONCE, WHILE or IF to the subgraph that runs it: recursion)."""
    calls = [f for f in fields if f.name.endswith("_subgraph_index")]
    if calls and rng.random() < 0.3:
        f = rng.choice(calls)
        value = rng.choice((0, 0, 1, -1, _count(b, fields, "Model.subgraphs")))
        _put(b, f, value)
        return f"{f.name} at {f.offset} -> {value}"
    if rng.random() < 0.4:
        types = _named(fields, "Operator.builtin_options_type")
        if not types:
            return None
        f = rng.choice(types)
        value = rng.choice(OPTION_TYPES) if rng.random() < 0.7 else rng.randrange(130)
        _put(b, f, value)
        return f"options type at {f.offset} -> {value}"
    options = [f for f in fields if "Options@" in f.name or "Options." in f.name]
    if not options:
        return None
    f = rng.choice(options)
    value = _int(rng, _get(b, f))
    _put(b, f, value)
    return f"{f.name} at {f.offset} -> {value}"


def m_scalar(b, fields, rng):
    """Any field the walk found: an interesting integer of its width."""
    scalars = [f for f in fields if f.kind != "f32"]
    if not scalars:
        return None
    f = rng.choice(scalars)
    value = _int(rng, _get(b, f))
    _put(b, f, value)
    return f"{f.name} at {f.offset} -> {value}"


STRUCTURE = ((m_uoffset, 3), (m_length, 3), (m_shape, 3), (m_tensor_type, 1), (m_buffer_index, 2),
             (m_data_short, 2), (m_opcode, 2), (m_operator_io, 3), (m_graph_io, 1), (m_quantization, 3),
             (m_options, 3), (m_scalar, 2))


def mutate_structure(b: bytearray, fields: list[Field], rng: random.Random) -> str:
    mutators, weights = zip(*STRUCTURE)
    for _ in range(20):
        what = rng.choices(mutators, weights)[0](b, fields, rng)
        if what:
            return what
    return "nothing applied"


# ----------------------------------------------------------------------------- bytes


def mutate_flatbuffer_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """fuzz.mutate's byte mutations, and two of a flatbuffer's own: an interesting 32-bit integer at an
    aligned position (an offset, a length, an index), a range copied over another (a splice)."""
    choice = rng.randrange(8)
    if choice < 6 or len(data) < 16:
        return mutate_bytes(data, rng)
    b = bytearray(data)
    if choice == 6:
        at = rng.randrange(len(b) // 4) * 4
        value = rng.choice(INTS)
        struct.pack_into("<I", b, at, value & 0xFFFFFFFF)
        return bytes(b), f"int {value} at {at}"
    size = rng.choice((4, 8, 16, 64, 256))
    src, dst = rng.randrange(len(b) - 4), rng.randrange(len(b) - 4)
    chunk = b[src:src + size]
    b[dst:dst + len(chunk)] = chunk
    return bytes(b[:len(data)]), f"{len(chunk)} bytes from {src} spliced at {dst}"


def mutant(seed: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """One damaged model from a seed .tflite: 1 to 3 structure mutations (70%), byte mutations (20%),
    or both (10%)."""
    kind = rng.random()
    done = []
    data = seed
    if kind < 0.8:
        fields = fields_of(seed)
        b = bytearray(seed)
        for _ in range(rng.choice((1, 1, 2, 3))):
            done.append(mutate_structure(b, fields, rng) if fields else "no fields")
        data = bytes(b)
    if kind >= 0.7:
        for _ in range(rng.choice((1, 1, 2))):
            data, what = mutate_flatbuffer_bytes(data, rng)
            done.append(what)
    return data, done
