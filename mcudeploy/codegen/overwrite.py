"""Whether NAME_run() writes over an input's bytes in the arena: the plan reuses an input's bytes once
the model has read it (another buffer placed there later, an operator writing its output in place over
it, a scratch buffer), and then the caller must write the input again before the next run. The
generated header says so per input (NAME_INPUTi_OVERWRITTEN)."""
from __future__ import annotations

from mcudeploy.ir import itemsize
from mcudeploy.ops import registry


def _span(compiled, tensor: str) -> tuple[int, int]:
    """The bytes [start, end) a tensor's elements occupy in its buffer (strided: first to last element)."""
    t = compiled.graph[tensor]
    slot = compiled.lifetimes.slots.get(tensor)
    if slot is None:
        return 0, t.nbytes
    last = sum((d - 1) * abs(s) for d, s in zip(t.shape, slot.strides) if d > 0)
    return slot.offset, slot.offset + (last + 1) * itemsize(t.dtype)


def written_tensors(compiled) -> set[str]:
    """The tensors a kernel call writes (not a view's output, nor an elided node's: those write nothing)."""
    out = set()
    for node in compiled.order:
        if registry.get(node.op).view or node.name in compiled.lifetimes.elided:
            continue
        out.update(o for o in node.outputs if o)
    return out


def input_overwritten(compiled, name: str) -> bool:
    """Some byte of input ``name`` in the arena is written while NAME_run() runs."""
    lives, placement = compiled.lifetimes, compiled.placement
    buf = lives.buffer_of.get(name)
    if buf is None or buf not in placement.offsets:  # streamed, or a state's: not in the arena
        return False
    start, end = _span(compiled, name)
    base = placement.offsets[buf]
    lo, hi = base + start, base + end
    region = placement.regions.get(buf)
    for other in lives.buffers:  # the same bytes given to another buffer once the input is read
        if other.name == buf or other.name not in placement.offsets or placement.regions.get(other.name) != region:
            continue
        off = placement.offsets[other.name]
        if any(off + r_off < hi and lo < off + r_off + size for r_off, size, _, _ in other.rects() if size > 0):
            return True
    written = written_tensors(compiled)  # an operator writing into the input's own buffer (in place)
    for other in next((b.tensors for b in lives.buffers if b.name == buf), ()):
        if other != name and other in written:
            o_start, o_end = _span(compiled, other)
            if o_start < end and start < o_end:
                return True
    return False
