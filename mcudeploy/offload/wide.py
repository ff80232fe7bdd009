"""Which int8 convolutions keep a copy of their weights widened to int16 in flash.

The block kernels of the DSP path (mcud_conv_s8_fast: mcud_conv_fast_quads, _pairs, _tile) read a convolution's
weights as int16, laid out in the order the inner loop reads them, so no weight is unpacked in the loop; that copy takes
twice the int8 weights' bytes of flash beside them. A board whose flash holds it all gets it for every
convolution; else the convolutions whose weights serve the most output pixels (the most products per byte of
the copy) get it first, as long as what the model puts in flash (fit.py's constants and the copies) stays
within the board's flash less CODE_ALLOWANCE for the firmware's code. Each candidate gets the attribute
"wide": the bytes of its copy, or 0 where it runs on its int8 weights only (the same bits, more
instructions), so fit.py counts the copies from the graph alone; a board without firmware limits (the
host) keeps every copy and sets nothing. An int8 TFLite ADD or SUB has a copy of the same kind, priced the same
way: two tables of its inputs' scaled values (2 KB, mcud_add_tfl_params.ta and .tb), in place of two
requantizations per element.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.boards import Board
from mcudeploy.ir import Graph, Node
from mcudeploy.ops.binary import add_table_bytes
from mcudeploy.ops.conv import wide_weight_bytes

CODE_ALLOWANCE = 128 * 1024  # flash left for the firmware's code and statics (kernels, runtime: ~60-110 KB seen)


def constant_bytes(graph: Graph) -> int:
    """What model.c puts in flash besides the widened copies: the graph's constants and the states' initial
    values that are not one repeated byte (as fit.py counts them)."""
    weights = sum(t.nbytes for t in graph.tensors.values() if t.is_const)
    for state in graph.states:
        raw = np.ascontiguousarray(graph[state].data).view(np.uint8).ravel()
        if raw.size and not np.all(raw == raw[0]):
            weights += raw.size
    return weights


def copy_bytes(graph: Graph, node: Node) -> int:
    """The flash of a node's copy for a faster kernel: a Conv's int16 weights, an int8 TFLite ADD's or SUB's
    tables of its inputs' scaled values (ops/binary.py); 0 for a node without one."""
    return wide_weight_bytes(graph, node) or add_table_bytes(graph, node)


def fit_wide_weights(graph: Graph, board: Board) -> Graph:
    """``graph`` with "wide" on every node that can have a copy (copy_bytes): its bytes where the board's flash
    holds it too, else 0."""
    if not board.has_firmware:
        return graph
    candidates = [(n, copy_bytes(graph, n)) for n in graph.nodes]
    candidates = [(n, b) for n, b in candidates if b]
    if not candidates:
        return graph
    room = board.flash_bytes - CODE_ALLOWANCE - constant_bytes(graph)
    # most output pixels first (each weight's uses), then the smaller copy, then the name: deterministic
    ranked = sorted(candidates, key=lambda nb: (-int(np.prod(graph[nb[0].outputs[0]].shape[2:])), nb[1], nb[0].name))
    kept = {}
    for node, extra in ranked:
        kept[node.name] = extra if extra <= room else 0
        room -= kept[node.name]
    return graph.replace(nodes=tuple(n.with_(attrs={**n.attrs, "wide": kept[n.name]}) if n.name in kept else n
                                     for n in graph.nodes))


def dsp_packings(graph: Graph, board: Board) -> Graph:
    """``graph`` with "dsp" = 1 on every product and convolution where the board's core has no MVE: their constants
    are then packed for the scalar DSP kernels in ways an MVE core's kernels do not read. A product without scratch
    reads its weights paired (mcud_gemm_s8*_p: ops/gemm.py, pairs_fit; with scratch it pairs on any core, no MVE core
    giving a product scratch, Gemm.scratch_pays); a TFLite depthwise convolution's channel table holds twice its
    weights and bias where its requantization can take the doubled route (ops/conv.py, _dw_channels). The same bytes
    of flash either way."""
    if "mve" in board.features:
        return graph
    return graph.replace(nodes=tuple(n.with_(attrs={**n.attrs, "dsp": 1}) if n.op in ("Gemm", "Conv") and "dsp" not in
                                     n.attrs else n for n in graph.nodes))
