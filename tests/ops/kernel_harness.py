"""Run one kernel call on the host with every view inside a bigger, garbage-filled buffer.

Each view can sit in its parent with garbage around it, in a memory order other than row-major
(channels last, say), or with a step between neighbours along its last dimension, so a kernel
that ignores a view's strides reads garbage. An output may share an input's view (in place).
After the call every byte outside the output views must be as it was.

The call is written as a C program (buffers, views and the params struct as initialised
statics), compiled with gcc and linked against the kernel library, which is built once per
session by the host board's own cache.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Optional, Union

import numpy as np
import pytest

from mcudeploy.codegen.values import c_float, c_int, c_numbers
from mcudeploy.device.host import _kernel_objects
from mcudeploy.ir import CTYPES, DTYPES, Graph, Tensor
from mcudeploy.ops.base import Array, Call
from mcudeploy.resources import firmware_dir

CC = "gcc"
CFLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-O1")
needs_gcc = pytest.mark.skipif(shutil.which(CC) is None, reason="gcc is not installed")


@dataclass(frozen=True)
class Place:
    """Where a view sits in its parent buffer."""

    pad: int = 0  # garbage elements before and after the view along every dimension
    order: Optional[tuple[int, ...]] = None  # the dimensions in memory order, outermost first; None: row-major
    step: int = 1  # elements from one view element to the next along the last dimension


def channels_last(rank: int) -> tuple[int, ...]:
    """The memory order (N, ..., C) of an (N, C, ...) tensor."""
    return (0, *range(2, rank), 1)


@dataclass(frozen=True)
class _Buffer:
    memory: np.ndarray  # the whole buffer in memory order: garbage, and the values in the view
    axes: tuple[int, ...]  # the axes of memory in logical order
    inner: tuple[slice, ...]  # the view in logical order
    ctype: str

    def logical(self, memory: np.ndarray) -> np.ndarray:
        """The view's part of ``memory`` (this buffer, or an array of its shape), logical order."""
        return memory.transpose(self.axes)[self.inner + (...,)]  # a view, even at rank 0


def _buffer(t: Tensor, place: Place) -> _Buffer:
    rank = len(t.shape)
    order = place.order if place.order is not None else tuple(range(rank))
    steps = [1] * (rank - 1) + [place.step] if rank else []
    extents = [(n - 1) * s + 1 + 2 * place.pad for n, s in zip(t.shape, steps)]
    garbage = 1e6 if t.dtype == "float32" else 99
    memory = np.full(tuple(extents[d] for d in order), garbage, DTYPES[t.dtype])
    inner = tuple(slice(place.pad, place.pad + (n - 1) * s + 1, s) for n, s in zip(t.shape, steps))
    return _Buffer(memory, tuple(int(a) for a in np.argsort(order)), inner, CTYPES[t.dtype])


def _c_value(value, arrays: list[str]) -> str:
    """A params field as a C initialiser, as codegen writes it; an Array becomes a static array."""
    if isinstance(value, Array):
        sym = f"arr{len(arrays)}"
        rows = c_numbers(np.asarray(value.values), value.ctype)
        arrays.append(f"static const {value.ctype} {sym}[{max(len(value.values), 1)}] = {{{', '.join(rows)}}};")
        return sym
    if isinstance(value, (tuple, list)):
        return "{" + ", ".join(_c_value(v, arrays) for v in value) + "}"
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return c_int(value)
    return c_float(value)


def _program(call: Call, buffers: dict[str, _Buffer]) -> str:
    """main.c: the buffers and their views, the params, the call, then every buffer to stdout."""
    include = firmware_dir() / "include"
    lines = ["#include <stdio.h>"] + [f'#include "{h.name}"' for h in sorted(include.glob("mcud*.h"))]
    index = {name: i for i, name in enumerate(buffers)}
    for name, b in buffers.items():
        i, view, size = index[name], b.logical(b.memory), b.memory.itemsize
        offset = (view.ctypes.data - b.memory.ctypes.data) // size
        shape = ", ".join(map(str, view.shape)) or "0"
        strides = ", ".join(str(s // size) for s in view.strides) or "0"
        lines.append(f"static {b.ctype} buf{i}[{b.memory.size}] = {{{', '.join(c_numbers(b.memory, b.ctype))}}};")
        lines.append(f"static const mcud_view view{i} = "
                     f"{{buf{i} + {offset}, {view.ndim}, {{{shape}}}, {{{strides}}}}};")
    args = [f"&view{index[name]}" if name else "NULL" for name in call.views]
    if call.listed:  # the first views as one array of their addresses and its length
        lines.append(f"static const mcud_view *const listed[{call.listed}] = {{{', '.join(args[:call.listed])}}};")
        args = ["listed", str(call.listed)] + args[call.listed:]
    if call.params is not None:
        arrays: list[str] = []
        fields = [f".{field} = {_c_value(value, arrays)}" for field, value in call.params.fields]
        lines += arrays + [f"static const {call.params.ctype} params = {{{', '.join(fields)}}};"]
        args.append("&params")
    if call.scratch:  # working memory full of garbage, as an arena would hold
        words = (call.scratch + 3) // 4
        lines.append(f"static uint32_t scratch[{words}] = {{{', '.join(['0xa5c3e1f7u'] * words)}}};")
        args.append("(void *)scratch")
    lines += ["int main(void)", "{", f"    {call.fn}({', '.join(args)});"]
    lines += [f"    fwrite(buf{i}, sizeof(buf{i}), 1, stdout);" for i in index.values()]
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def run_kernel(tmp_path: Path, call: Call, graph: Graph, inputs: Mapping[str, np.ndarray],
               place: Optional[Mapping[str, Union[Place, int]]] = None,
               inplace: Optional[Mapping[str, str]] = None) -> list[np.ndarray]:
    """Run ``call`` once and return the contents of its output views (the views of graph outputs),
    in the order of ``call.views``.

    ``inputs`` holds the values of the other views (a constant tensor's defaults to its data);
    ``place[name]`` puts a view inside its buffer (an int is a padding); ``inplace[out] = name``
    passes input ``name``'s view as the output ``out``, so the kernel reads and writes one array.
    Fails if the kernel wrote anywhere but its output views."""
    place, inplace = dict(place or {}), dict(inplace or {})
    outputs = [inplace.get(name, name) for name in dict.fromkeys(call.views) if name in graph.outputs]
    call = replace(call, views=tuple(inplace.get(name, name) for name in call.views))
    buffers: dict[str, _Buffer] = {}
    for name in call.views:
        if not name or name in buffers:  # a view named twice is one buffer
            continue
        where = place.get(name, 0)
        b = buffers[name] = _buffer(graph[name], where if isinstance(where, Place) else Place(pad=where))
        if name not in graph.outputs:
            b.logical(b.memory)[...] = inputs[name] if name in inputs else graph[name].data

    work = Path(tempfile.mkdtemp(prefix=f"{call.fn}-", dir=tmp_path))
    (work / "main.c").write_text(_program(call, buffers))
    fw = firmware_dir()
    exe = work / "kernel"
    proc = subprocess.run([CC, *CFLAGS, "-I", str(fw / "include"), str(work / "main.c"),
                           *map(str, _kernel_objects(CC, CFLAGS, fw)), "-o", str(exe), "-lm"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    raw = subprocess.run([str(exe)], check=True, capture_output=True).stdout

    after, pos = {}, 0
    for name, b in buffers.items():
        after[name] = np.frombuffer(raw[pos:pos + b.memory.nbytes], b.memory.dtype).reshape(b.memory.shape)
        pos += b.memory.nbytes
    assert pos == len(raw), "the program wrote more than its buffers"
    for name, b in buffers.items():
        kept = np.ones(b.memory.shape, bool)
        if name in outputs:
            b.logical(kept)[...] = False
        what = "outside its output view" if name in outputs else "into its input"
        assert np.array_equal(after[name][kept], b.memory[kept]), f"the kernel wrote {what} {name}"
    return [buffers[name].logical(after[name]).copy() for name in outputs]


def run_unary_kernel(tmp_path: Path, call: Call, graph: Graph, x: np.ndarray, pad: int,
                     inplace: bool = False) -> np.ndarray:
    """An x -> y kernel with ``pad`` garbage around both views and y's buffer in reversed memory
    order (so its strides differ from x's), or with y written over x's view when ``inplace``."""
    x_name, y_name = call.views[0], call.views[-1]
    if inplace:
        return run_kernel(tmp_path, call, graph, {x_name: x}, {x_name: pad}, inplace={y_name: x_name})[0]
    reverse = tuple(reversed(range(x.ndim)))
    return run_kernel(tmp_path, call, graph, {x_name: x}, {x_name: pad, y_name: Place(pad, reverse)})[0]
