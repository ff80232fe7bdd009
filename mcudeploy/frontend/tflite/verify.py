"""The check of a .tflite flatbuffer before the importer reads it: every table, vector and string the
importer reads lies inside the file, and the values it indexes with are in range.

The ``tflite`` package's generated classes read a flatbuffer without any check: an offset pointing out
of the file is a struct.error deep in a handler, a vector length of 2**31 a numpy allocation of
gigabytes, a tensor shape whose product overflows int64 a wrong size. So the whole reachable part of
the model is walked here first, as the FlatBuffers verifier does (uoffsets, vtables, vector lengths
and strings' terminators bounded by the file), then its meaning is checked (operator code, tensor and
buffer indices in range, shapes whose bytes are bounded, constant data as long as its shape, no
operator reading its own output, each tensor made once, by an operator, not a subgraph input nor a
constant, no subgraph calling itself). A damaged file is refused in one
sentence naming it and the first thing found wrong.

``walk(data, record=True)`` also returns the position of every field it read (tests/fuzz/ corrupts
real fields with it).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Optional

MAX_TENSOR_BYTES = 1 << 31  # a tensor's bytes by its shape: more than this is no model for a microcontroller
ITEMSIZE = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 8: 8, 9: 1, 10: 8, 11: 16, 12: 8, 15: 4, 16: 2, 17: 1}

SCALARS = {"u8": "<B", "i8": "<b", "u16": "<H", "i32": "<i", "u32": "<I", "i64": "<q", "u64": "<Q", "f32": "<f"}

# The parts of TFLite's schema.fbs the importer reads: table -> field -> (field id, kind). A kind is a
# scalar ("i32"), "string", a vector of scalars ("[i32]") or of tables (["Tensor"]), a table ("Buffer"),
# "table" (one whose fields are not read: only its bounds are checked) or "options" (the union
# builtin_options, typed by the field before it).
SCHEMA = {
    "Model": {"version": (0, "u32"), "operator_codes": (1, ["OperatorCode"]), "subgraphs": (2, ["SubGraph"]),
              "description": (3, "string"), "buffers": (4, ["Buffer"])},
    "OperatorCode": {"deprecated_builtin_code": (0, "i8"), "custom_code": (1, "string"), "version": (2, "i32"),
                     "builtin_code": (3, "i32")},
    "SubGraph": {"tensors": (0, ["Tensor"]), "inputs": (1, "[i32]"), "outputs": (2, "[i32]"),
                 "operators": (3, ["Operator"]), "name": (4, "string")},
    "Tensor": {"shape": (0, "[i32]"), "type": (1, "i8"), "buffer": (2, "u32"), "name": (3, "string"),
               "quantization": (4, "QuantizationParameters"), "is_variable": (5, "u8"), "sparsity": (6, "table"),
               "shape_signature": (7, "[i32]")},
    "QuantizationParameters": {"min": (0, "[f32]"), "max": (1, "[f32]"), "scale": (2, "[f32]"),
                               "zero_point": (3, "[i64]"), "details_type": (4, "u8"), "details": (5, "table"),
                               "quantized_dimension": (6, "i32")},
    "Operator": {"opcode_index": (0, "u32"), "inputs": (1, "[i32]"), "outputs": (2, "[i32]"),
                 "builtin_options_type": (3, "u8"), "builtin_options": (4, "options"), "custom_options": (5, "[u8]"),
                 "custom_options_format": (6, "i8"), "mutating_variable_inputs": (7, "[u8]"),
                 "intermediates": (8, "[i32]")},
    "Buffer": {"data": (0, "[u8]"), "offset": (1, "u64"), "size": (2, "u64")},
    # builtin options with strings or subgraph indices (the others' scalars are read in place: bounds only)
    "VarHandleOptions": {"container": (0, "string"), "shared_name": (1, "string")},
    "CallOnceOptions": {"init_subgraph_index": (0, "i32")},
    "WhileOptions": {"cond_subgraph_index": (0, "i32"), "body_subgraph_index": (1, "i32")},
    "IfOptions": {"then_subgraph_index": (0, "i32"), "else_subgraph_index": (1, "i32")},
}
CALLS = {"CallOnceOptions": ("init_subgraph_index",), "WhileOptions": ("cond_subgraph_index", "body_subgraph_index"),
         "IfOptions": ("then_subgraph_index", "else_subgraph_index")}


class Damaged(Exception):
    """What is wrong with the flatbuffer itself, as the end of a sentence ("subgraph 0, tensor 3, shape
    points past the end of the file")."""


class Invalid(Damaged):
    """A flatbuffer read whole whose values make no model ("operator 2 reads its own output, tensor 5")."""


@dataclass
class Field:
    """One field read: where it is (byte offset, width), what it is ("Tensor.shape[]", "uoffset
    Tensor.quantization", "length Tensor.shape") and the scalar kind of its bytes ("i32", "u32")."""
    name: str
    offset: int
    width: int
    kind: str


@dataclass
class Walk:
    data: bytes
    record: bool = False
    fields: list[Field] = field(default_factory=list)
    seen: set = field(default_factory=set)
    options_type: int = 0

    def _get(self, kind: str, pos: int, where: str):
        size = struct.calcsize(SCALARS[kind])
        if pos < 0 or pos + size > len(self.data):
            raise Damaged(f"{where} lies outside the file")
        return struct.unpack_from(SCALARS[kind], self.data, pos)[0]

    def _note(self, name: str, pos: int, kind: str) -> None:
        if self.record:
            self.fields.append(Field(name, pos, struct.calcsize(SCALARS[kind]), kind))

    def _follow(self, pos: int, where: str, name: str) -> int:
        """The position a uoffset at ``pos`` points to, inside the file."""
        self._note(f"uoffset {name}", pos, "u32")
        target = pos + self._get("u32", pos, where)
        if target + 4 > len(self.data):
            raise Damaged(f"{where} points past the end of the file")
        return target

    def _vector(self, pos: int, width: int, where: str, name: str) -> int:
        self._note(f"length {name}", pos, "u32")
        n = self._get("u32", pos, where)
        if pos + 4 + n * width > len(self.data):
            raise Damaged(f"{where} holds {n:,} elements, more than the file's {len(self.data):,} bytes can")
        return n

    def table(self, pos: int, kind: str, where: str) -> None:
        if (pos, kind) in self.seen:
            return
        self.seen.add((pos, kind))
        vtable = pos - self._get("i32", pos, where)
        if vtable < 0 or vtable + 4 > len(self.data):
            raise Damaged(f"{where} has its field table outside the file")
        vsize, tsize = self._get("u16", vtable, where), self._get("u16", vtable + 2, where)
        if vsize < 4 or vsize % 2 or vtable + vsize > len(self.data) or tsize < 4 or pos + tsize > len(self.data):
            raise Damaged(f"{where} has a damaged field table, of {vsize} bytes for a table of {tsize}")
        offsets = [self._get("u16", vtable + 4 + 2 * k, where) for k in range((vsize - 4) // 2)]
        if any(o and (o < 4 or o + 1 > tsize) for o in offsets):
            raise Damaged(f"{where} has a field outside its table")
        fields = SCHEMA.get(kind, {})
        if not fields:  # fields not read one by one: each lies inside the table (widths guessed from the gaps)
            present = sorted(o for o in offsets if o)
            for a, b in zip(present, present[1:] + [tsize]):
                width = max((w for w in (1, 2, 4) if w <= b - a), default=1)
                self._note(f"{kind}@{a}", pos + a, {1: "u8", 2: "u16", 4: "i32"}[width])
            return
        for name, (slot, ftype) in fields.items():
            o = offsets[slot] if slot < len(offsets) else 0
            if not o:
                continue
            at, label = pos + o, f"{kind}.{name}"
            here = f"{where}, {name}" if where != "the model" else f"the model's {name}"
            singular = name[:-1] if name.endswith("s") else name
            inside = f"{where}, " if where != "the model" else ""
            if isinstance(ftype, str) and ftype in SCALARS:
                if o + struct.calcsize(SCALARS[ftype]) > tsize:
                    raise Damaged(f"{here} lies outside its table")
                self._note(label, at, ftype)
                if name == "builtin_options_type":
                    self.options_type = self._get("u8", at, here)
                continue
            if o + 4 > tsize:
                raise Damaged(f"{here} lies outside its table")
            target = self._follow(at, here, label)
            if isinstance(ftype, list):
                n = self._vector(target, 4, here, label)
                for k in range(n):
                    element = f"{inside}{singular} {k}"
                    self.table(self._follow(target + 4 + 4 * k, element, label), ftype[0], element)
            elif ftype == "string":
                n = self._vector(target, 1, here, label)
                if target + 4 + n >= len(self.data) or self.data[target + 4 + n] != 0:
                    raise Damaged(f"{here} is a string without its terminating zero")
            elif ftype.startswith("["):
                elem = ftype[1:-1]
                width = struct.calcsize(SCALARS[elem])
                n = self._vector(target, width, here, label)
                if self.record and elem != "u8":
                    for k in range(n):
                        self._note(f"{label}[]", target + 4 + k * width, elem)
            elif ftype == "options":
                self.table(target, options_name(self.options_type), here)
            else:
                self.table(target, ftype, here)


def options_name(code: int) -> str:
    try:
        from tflite.BuiltinOptions import BuiltinOptions
    except ImportError:
        return "table"
    names = {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_")}
    return names.get(code, "table")


def walk(data: bytes, record: bool = False) -> Walk:
    """Every table, vector and string of the model that the importer reads, bounded by the file;
    raises Damaged at the first one that is not."""
    w = Walk(bytes(data), record)
    if len(data) < 8:
        raise Damaged("it is shorter than a flatbuffer's header")
    w.table(w._follow(0, "the root table", "root"), "Model", "the model")
    return w


def check(data: bytes) -> None:
    """The walk, then the meaning: raises Damaged (the flatbuffer) or Invalid (its values) with what is wrong."""
    walk(data)
    import tflite

    model = tflite.Model.GetRootAsModel(data, 0)
    codes, buffers, subgraphs = model.OperatorCodesLength(), model.BuffersLength(), model.SubgraphsLength()
    if subgraphs < 1:
        raise Invalid("it has no subgraph")
    calls: dict[int, list[int]] = {}
    if buffers and _holds_data(model, None, buffers, 0):
        raise Invalid("buffer 0, which the tensors without data name, holds data (TFLite keeps it empty)")
    for s in range(subgraphs):
        g = model.Subgraphs(s)
        where = f"subgraph {s}" if subgraphs > 1 else ""
        n = g.TensorsLength()
        for t_index in range(n):
            t = g.Tensors(t_index)
            what = _tensor(where, t_index, t)
            if t.Buffer() >= buffers and not model.BuffersIsNone():
                raise Invalid(f"{what} names buffer {t.Buffer()}, past the file's {buffers}")
            shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
            if any(d < -1 for d in shape):
                raise Invalid(f"{what} has shape {tuple(shape)}, with a negative dimension")
            size = ITEMSIZE.get(t.Type(), 1) * math.prod(d for d in shape if d > 0)
            if size > MAX_TENSOR_BYTES:
                raise Invalid(f"{what} has shape {tuple(shape)}, more than {MAX_TENSOR_BYTES:,} bytes")
            _data(model, data, t, what, shape, buffers)
            q = t.Quantization()
            if q is not None and q.ZeroPointLength() not in (0, 1, q.ScaleLength()):
                raise Invalid(f"{what} has {q.ScaleLength()} quantization scales and {q.ZeroPointLength()} zero "
                              f"points")
        for name, indices in (("input", g.InputsAsNumpy() if g.InputsLength() else ()),
                              ("output", g.OutputsAsNumpy() if g.OutputsLength() else ())):
            for i in indices:
                if not 0 <= int(i) < n:
                    raise Invalid(f"{_at(where)}{name} {int(i)} is no tensor of the {n} the subgraph has")
        made = {int(i): -1 for i in (g.InputsAsNumpy() if g.InputsLength() else ())}  # tensor -> its maker
        for k in range(g.OperatorsLength()):
            op = g.Operators(k)
            what = f"{_at(where)}operator {k}"
            if op.OpcodeIndex() >= codes:
                raise Invalid(f"{what} has operator code {op.OpcodeIndex()}, past the file's {codes}")
            ins = [int(x) for x in op.InputsAsNumpy()] if op.InputsLength() else []
            outs = [int(x) for x in op.OutputsAsNumpy()] if op.OutputsLength() else []
            for name, indices in (("input", ins), ("output", outs), ("intermediate",
                                  [int(x) for x in op.IntermediatesAsNumpy()] if op.IntermediatesLength() else [])):
                for i in indices:
                    if not -1 <= i < n:
                        raise Invalid(f"{what} has {name} {i}, which is no tensor of the {n} the subgraph has")
            own = sorted(set(ins) & set(outs) - {-1})
            if own:
                raise Invalid(f"{what} reads its own output, tensor {own[0]}")
            for i in outs:
                if i >= 0 and i in made:
                    raise Invalid(f"{what} makes tensor {i}, which " + (f"operator {made[i]} makes too" if made[i] >= 0
                                                                         else "is an input of the subgraph"))
                made[i] = k
                if i >= 0 and _holds_data(model, g.Tensors(i), buffers):
                    raise Invalid(f"{what} makes tensor {i}, which holds constant data in the file")
            kind = options_name(op.BuiltinOptionsType())
            if kind in CALLS and op.BuiltinOptions() is not None:
                opts = getattr(tflite, kind)()
                opts.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
                for attr in CALLS[kind]:
                    index = int(getattr(opts, "".join(p.title() for p in attr.split("_")))())
                    if not 0 <= index < subgraphs:
                        raise Invalid(f"{what} runs subgraph {index}, past the file's {subgraphs}")
                    calls.setdefault(s, []).append(index)
    _no_recursion(calls)


def _data(model, data: bytes, t, what: str, shape: list[int], buffers: int) -> None:
    """A constant's bytes lie in the file and are as many as its shape needs (where its type's size is known)."""
    if not buffers or t.Buffer() == 0:
        return
    buf = model.Buffers(t.Buffer())
    if buf is None:
        return
    if buf.Offset() > 1:
        if buf.Offset() + buf.Size() > len(data):
            raise Invalid(f"{what} has data at bytes {buf.Offset():,} to {buf.Offset() + buf.Size():,}, past the "
                          f"end of the file ({len(data):,} bytes)")
        held = buf.Size()
    else:
        held = buf.DataLength()
    if held and t.Type() in ITEMSIZE and -1 not in shape and not t.IsVariable():
        need = ITEMSIZE[t.Type()] * math.prod(shape)
        if held != need:
            raise Invalid(f"{what} holds {held:,} bytes of data where its shape {tuple(shape)} needs {need:,}")


def _holds_data(model, t, buffers: int, index: Optional[int] = None) -> bool:
    """Tensor t's buffer (or buffer ``index``) holds data, as the importer reads it (an offset past 1, or bytes)."""
    index = t.Buffer() if index is None else index
    if not buffers or (index == 0 and t is not None):
        return False
    buf = model.Buffers(index)
    return buf is not None and (buf.Offset() > 1 or buf.DataLength() > 0)


def _no_recursion(calls: dict[int, list[int]]) -> None:
    """No subgraph runs itself, directly or through others (a depth-first search with an explicit stack)."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in calls:
        if state.get(start):
            continue
        path, stack = [start], [iter(calls.get(start, ()))]
        state[start] = 1
        while stack:
            callee = next(stack[-1], None)
            if callee is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(callee) == 1:
                chain = " -> ".join(map(str, path[path.index(callee):] + [callee]))
                raise Invalid(f"subgraph {callee} runs itself, through subgraphs {chain}")
            elif not state.get(callee):
                state[callee] = 1
                path.append(callee)
                stack.append(iter(calls.get(callee, ())))


def _at(where: str) -> str:
    return f"{where}, " if where else ""


def _tensor(where: str, index: int, t) -> str:
    try:
        raw = t.Name()
    except Exception:  # noqa: BLE001  (walked: cannot fail; a name is only a help)
        raw = None
    name = "".join(c if c.isprintable() else "_" for c in raw.decode("utf-8", errors="replace"))[:60] if raw else ""
    return f"{_at(where)}tensor {index}" + (f" ({name})" if name else "")
