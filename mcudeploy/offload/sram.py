"""Which constants of a latency plan are copied to SRAM at start-up (mcudeploy/objective).

A kernel reads its weights from flash, where every read the flash accelerator's data cache misses waits the board's
flash wait states (an STM32L4 at 120 MHz: five cycles a miss, its cache 256 bytes), and the tiles of
offload/tiles.py only pay where a pair of channels' weights fits that cache. The latency objective asks for the
fastest plan that fits; where the first region has room beside the arena, the constants the kernels read go there:
model.c puts them in a ``.data`` section (MCUD_IN_RAM, firmware/include/mcud.h), which the start-up code copies from
flash like every initialised static, so they cost the same flash and that many bytes of SRAM. The same values in
the same order: the same bits.

Which ones: a node's constants are the constant tensors its kernel is passed and the arrays of its parameter struct,
less those its kernel does not read on the board's core (Op.unread_constants: a Conv of the block kernels reads its
int16 copy, not its int8 weights). Nodes go by the multiply-accumulates each of their bytes serves, most first (then
the fewer bytes, then the name: deterministic), each whole or not at all, until the room runs out; a tensor two nodes
read counts once. Each node moved gets the attribute "sram": the bytes it added (plan.json's "sram" of its step), which
mcudeploy/fit.py counts in the first region.
"""
from __future__ import annotations

from typing import Iterable

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import registry
from mcudeploy.ops.base import Array, Call, Struct

# the first region's bytes left for the firmware's own statics (runtime, UART, the measurer's tables: fit.py cannot
# count them), so that constants filling the room do not push the firmware over the region
STATICS_ALLOWANCE = 16 * 1024
CTYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "float": 4,
               "int64_t": 8, "uint64_t": 8, "double": 8}


def _arrays(struct: Struct) -> Iterable[tuple[str, Array]]:
    for name, value in struct.fields:
        if isinstance(value, Array):
            yield name, value


def node_constants(graph: Graph, node: Node, call: Call, features: frozenset) -> dict[str, int]:
    """The constants ``node``'s kernel reads on a core with ``features``, by key ("tensor:<name>" for a constant
    tensor it is passed, "field:<node>:<field>" for an array of its parameter struct), in bytes."""
    unread = registry.get(node.op).unread_constants(graph, node, call, features)
    found = {f"tensor:{t}": graph[t].nbytes for t in call.views
             if t and graph.is_const(t) and t not in unread}
    if call.params is not None:
        found.update({f"field:{node.name}:{name}": len(a.values) * CTYPE_BYTES[a.ctype]
                      for name, a in _arrays(call.params) if name not in unread})
    return found


def constants_to_sram(graph: Graph, order, features: frozenset, room: int) -> tuple[Graph, int, bool]:
    """``graph`` with "sram" on the nodes whose constants go to SRAM within ``room`` bytes (the module's rule), the
    bytes they take, and whether every node's went."""
    candidates = []
    for node in order:
        op = registry.get(node.op)
        if op.view:
            continue
        found = node_constants(graph, node, op.kernel(graph, node), features)
        if found:
            macs = int(op.macs(graph, node))
            candidates.append((-macs / sum(found.values()), sum(found.values()), node.name, found))
    taken, moved, used, every = set(), {}, 0, True
    for _, _, name, found in sorted(candidates):
        extra = sum(n for key, n in found.items() if key not in taken)
        if extra and used + extra <= room:
            taken.update(found)
            moved[name] = extra
            used += extra
        elif extra:
            every = False
    if not moved:
        return graph, 0, every
    return graph.replace(nodes=tuple(n.with_(attrs={**n.attrs, "sram": moved[n.name]}) if n.name in moved else n
                                     for n in graph.nodes)), used, every


def sram_keys(graph: Graph, node: Node, call: Call, features: frozenset) -> frozenset:
    """The keys (node_constants) of a node model.c puts in SRAM: every one where the plan gave it "sram", else none."""
    if not node.attr("sram", 0):
        return frozenset()
    return frozenset(node_constants(graph, node, call, features))
