"""Gemm and MatMul: matrix products, float32 and int8, on one kernel per dtype.

Gemm is Y = alpha * A' B' + beta * C with A' = A or A^T, B' = B or B^T and C broadcast to
(M, N). MatMul follows numpy: leading batch dimensions broadcast, a 1-D A is a row and a
1-D B a column whose dimension is dropped from the result. The IR MatMul may carry an
optional third input, a bias along N, like Gemm's C.

The int8 form takes a per-tensor quantized A and output, constant int8 B with zero point 0
quantized per tensor or per output column, and an optional constant bias. Everything that
does not depend on A is folded into one int32 per column at compile time,

    bias_acc[n] = round(beta * real(C[n]) / (alpha * s_a * s_b[n])) - z_a * sum_k B[k, n]

(exactly C[n] for the int32 bias at scale s_a * s_b[n] that QDQ lowering produces), so the
kernel's inner loop is a plain sum of a * b, and each column is requantized with its own
multiplier alpha * s_a * s_b[n] / s_y.

A MatMul of two int8 activations (attention's Q K^T and softmax(.) V; batched, per-tensor A, B and
output, any zero points) runs mcud_matmul_s8: acc = sum_k (a - z_a)(b - z_b), exact in int32 as
sum a b - z_b sum_k a - z_a sum_k b + K z_a z_b, requantized by s_a s_b / s_y. Each batch's B is
packed into the kernel's scratch in pack_weights's order, with its column sums, so the rows run the
constant-B kernel's dual-MAC loop; without scratch (offload.fit_scratch) B is read in place, four
columns per 32-bit load where its rows hold N contiguous (a plain loop otherwise), with the same
arithmetic. A TFLite model's BATCH_MATMUL (a MatMul) runs it too, with TFLite's rounding, and so does
one whose constant B the constant-B kernel does not take (a zero point).

TFLite Micro computes the two input scales' product in double, for FULLY_CONNECTED (a Gemm) and for
BATCH_MATMUL (a MatMul) alike (tests/test_tflite_products.py finds where a float32 product would differ).

16x8 (TFLite only; zero points 0): a FULLY_CONNECTED of int16 A and constant int8 B sums in int64, or in
a wrapping int32 with an int32 bias ("accumulator" attribute, as for Conv), and a BATCH_MATMUL of two
int16 activations in int64; an int64 sum takes TFLite's 64-bit requantization (mcud_gemm_s16,
mcud_matmul_s16 in firmware/kernels/gemm16.c).
"""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Array, Axis, Call, Dim, OnnxNode, Op, Struct, TensorExpr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import broadcast_shape

MAX_RANK = 6
INT32_MAX = 2 ** 31 - 1


@dataclass(frozen=True)
class Layout:
    """The shapes of one (batched) matrix product."""

    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    trans_a: bool
    trans_b: bool
    m: int
    k: int
    n: int
    batch: tuple[int, ...]  # broadcast batch dimensions of the output
    out: tuple[int, ...]

    @property
    def a_vector(self) -> bool:
        return len(self.a_shape) == 1

    @property
    def b_vector(self) -> bool:
        return len(self.b_shape) == 1


def _bias_name(node: Node) -> str:
    return node.inputs[2] if len(node.inputs) > 2 else ""


def layout(graph: Graph, node: Node) -> Layout:
    a, b = graph[node.inputs[0]].shape, graph[node.inputs[1]].shape
    ta, tb = bool(node.attr("transA", 0)), bool(node.attr("transB", 0))
    if node.op == "Gemm":
        require(len(a) == 2 and len(b) == 2, f"Gemm needs 2-D A and B, not ranks {len(a)} and {len(b)}")
    require(len(a) >= 1 and len(b) >= 1, "MatMul of a scalar is not defined")
    require(not ((ta and len(a) < 2) or (tb and len(b) < 2)), "transA/transB need a 2-D operand")
    if len(a) == 1:
        m, ka = 1, a[0]
    else:
        m, ka = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    if len(b) == 1:
        kb, n = b[0], 1
    else:
        kb, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    require(ka == kb, f"{node.op} inner dimensions differ: A {a} and B {b}")
    batch = broadcast_shape([a[:-2], b[:-2]], node.op)
    out = batch + (() if len(a) == 1 else (m,)) + (() if len(b) == 1 else (n,))
    require(len(out) <= MAX_RANK, f"{node.op} output of rank {len(out)} exceeds {MAX_RANK}")
    return Layout(a, b, ta, tb, m, ka, n, batch, out)


def _int8_bias_shape_ok(shape: tuple[int, ...], n: int) -> bool:
    """A bias the int8 kernel folds per column: one value, or n values along the last axis."""
    size = int(np.prod(shape, dtype=np.int64))
    return size == 1 or (len(shape) >= 1 and shape[-1] == n and size == n)


@dataclass(frozen=True)
class _Requant:
    """How an int8 product's accumulators become its output: requantized by (mult, shift) (per
    column in Int8Plan, one pair in DynamicPlan), + y_zero, clipped to [lo, hi]."""

    mult: np.ndarray | int
    shift: np.ndarray | int
    y_zero: int
    lo: int
    hi: int

    def output(self, requantized: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return np.clip(requantized + self.y_zero, self.lo, self.hi).astype(np.int8).reshape(shape)


@dataclass(frozen=True)
class Int8Plan(_Requant):
    bias: np.ndarray  # int64 [N]: folded bias in accumulator units; mult and shift int32 [1 or N]


def _operands(graph: Graph, node: Node):
    """The layout of a product and its tensors A, B and Y."""
    return layout(graph, node), graph[node.inputs[0]], graph[node.inputs[1]], graph[node.outputs[0]]


def int8_plan(graph: Graph, node: Node) -> Int8Plan:
    """The compile-time integers of an int8 product; raises UnsupportedError where it cannot."""
    lay, a, b, y = _operands(graph, node)
    require(a.dtype == "int8" and b.dtype == "int8" and y.dtype == "int8",
            f"quantized {node.op} of {a.dtype} and {b.dtype} to {y.dtype} is not supported (int8, or 16x8 in a TFLite "
            f"model)")
    require(b.is_const and len(b.shape) == 2, f"int8 {node.op} needs a constant 2-D B")
    qa, qb, qy = requant.qparams(graph, a.name), requant.qparams(graph, b.name), requant.qparams(graph, y.name)
    require(len(qa.scale) == 1 and len(qy.scale) == 1, f"int8 {node.op} needs per-tensor A and output")
    require(all(z == 0 for z in qb.zero_point), f"int8 {node.op} needs symmetric B (zero point 0)")
    n_axis = 0 if lay.trans_b else 1
    if len(qb.scale) > 1:
        require(qb.axis is not None and qb.axis % 2 == n_axis and len(qb.scale) == lay.n,
                f"int8 {node.op} quantizes B per tensor or per output column only")
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    require(alpha > 0.0, f"int8 {node.op} needs alpha > 0")
    s_a, z_a = qa.single()
    s_y, z_y = qy.single()
    s_b = np.broadcast_to(qb.scale_array(), (lay.n,))
    acc_scale = alpha * s_a * s_b  # real value of one accumulator unit, per column

    w = b.data.astype(np.int64)
    if lay.trans_b:
        w = w.T
    bias = -z_a * w.sum(axis=0)
    name = _bias_name(node)
    if name:
        c = graph[name]
        require(c.is_const, f"int8 {node.op} needs a constant bias")
        require(_int8_bias_shape_ok(c.shape, lay.n), f"int8 {node.op} bias of shape {c.shape} is not per column")
        if c.dtype == "float32":
            real = beta * np.broadcast_to(c.data.reshape(-1).astype(np.float64), (lay.n,))
            bias = bias + np.rint(real / acc_scale).astype(np.int64)
        else:
            values = np.broadcast_to(c.data.reshape(-1), (lay.n,)).astype(np.int64)
            qc = requant.qparams(graph, name)
            require(c.dtype in ("int8", "int32"), f"int8 {node.op} bias of {c.dtype} is not supported")
            s_c = np.broadcast_to(qc.scale_array(), (lay.n,))
            z_c = np.broadcast_to(qc.zp_array(), (lay.n,))
            ratio = beta * s_c / acc_scale
            if np.allclose(ratio, 1.0, rtol=1e-5, atol=0) and not np.any(z_c):
                bias = bias + values  # the usual case: the bias already is in accumulator units
            else:
                with np.errstate(over="ignore", invalid="ignore"):  # a huge ratio: refused just below, not cast
                    scaled = np.rint((values - z_c) * ratio)
                require(bool(np.all(np.abs(scaled) <= INT32_MAX)),
                        f"int8 {node.op} bias does not fit 32 bits at the accumulator's scale")
                bias = bias + scaled.astype(np.int64)
    require(np.abs(bias).max(initial=0) + lay.k * 128 * 128 <= INT32_MAX,
            f"int8 {node.op} accumulator could overflow 32 bits")
    mult, shift = requant.multipliers(graph, alpha * s_a * qb.scale_array() / s_y)
    lo, hi = requant.clip_range(node, y)
    return Int8Plan(mult, shift, z_y, lo, hi, bias)


# mcud_matmul_s8's packed rows add four terms, sum a b, -z_b sum a, -z_a sum b and K z_a z_b, each
# at most K 2^14 in magnitude: every partial sum stays below K 2^16 = 2^29 for K = 2^13, well inside int32
MATMUL_MAX_K = 8192


@dataclass(frozen=True)
class DynamicPlan(_Requant):
    """The integers of a product of two int8 activations."""

    a_zero: int
    b_zero: int


def dynamic_plan(graph: Graph, node: Node) -> DynamicPlan:
    """The plan of mcud_matmul_s8; UnsupportedError where the product does not fit it."""
    lay, a, b, y = _operands(graph, node)
    require(node.op == "MatMul" and not _bias_name(node), f"int8 {node.op} of two activations takes no bias")
    require(all(t.dtype == "int8" and t.quant is not None and len(t.quant.scale) == 1 for t in (a, b, y)),
            f"int8 {node.op} of two activations needs per-tensor int8 A, B and output")
    require(lay.k <= MATMUL_MAX_K, f"int8 {node.op} of two activations with K = {lay.k} (at most {MATMUL_MAX_K})")
    s_a, z_a = a.quant.single()
    s_b, z_b = b.quant.single()
    s_y, z_y = y.quant.single()
    mult, shift = requant.multiplier(graph, s_a * s_b / s_y)
    lo, hi = requant.clip_range(node, y)
    return DynamicPlan(mult, shift, z_y, lo, hi, z_a, z_b)


def _dynamic(graph: Graph, node: Node) -> bool:
    """An int8 product whose B is computed at run time (mcud_matmul_s8), or a TFLite BATCH_MATMUL's constant B
    that the constant-B kernel does not take (the same arithmetic, B read as it is)."""
    if graph[node.inputs[0]].dtype != "int8":
        return False
    if not graph[node.inputs[1]].is_const:
        return True
    if node.op != "MatMul" or requant.arithmetic(graph) != "tflite":
        return False
    try:
        int8_plan(graph, node)
    except (UnsupportedError, ValueError):
        return True
    return False


def dynamic_scratch(lay: Layout) -> int:
    """Bytes of mcud_matmul_s8's scratch: one batch's B packed (K padded to 4), then N int32 column terms."""
    k4 = -(-lay.k // 4) * 4
    return -(-k4 * lay.n // 4) * 4 + 4 * lay.n


def pack_weights(w: np.ndarray, paired: bool = False) -> np.ndarray:
    """Constant int8 B (K, N) in the order the int8 kernel reads it (firmware/include/mcud_gemm.h):
    columns in blocks of four, each block every k-quad's 4 x 4 bytes column by column, then the
    K % 4 remaining rows' four bytes; the N % 4 last columns each as K bytes padded to a multiple
    of 4. One 32-bit load then holds four consecutive k of one column, in A's byte order.
    paired (where pairs_fit): each quad's 16 bytes are instead `_paired_quads`' words."""
    k, n = w.shape
    quads, blocks = k // 4, n // 4
    parts = []
    for j in range(blocks):
        cols = w[:, 4 * j:4 * j + 4]
        quad = cols[:4 * quads].reshape(quads, 4, 4)
        parts.append(_paired_quads(quad) if paired else quad.transpose(0, 2, 1).reshape(-1))
        parts.append(cols[4 * quads:].reshape(-1))
    k4 = -(-k // 4) * 4
    for c in range(4 * blocks, n):
        parts.append(np.concatenate([w[:, c], np.zeros(k4 - k, w.dtype)]))
    return np.concatenate(parts).astype(np.int8) if parts else np.zeros(0, np.int8)


def _paired_quads(quad: np.ndarray) -> np.ndarray:
    """A block's quads (q, k in 4, column in 4) as the paired kernel's words: per quad, for the columns (0, 1) then
    (2, 3), the k (0, 2) then (1, 3), each k one int16 h = 256 b_odd + b_even (b_even its low byte), so that SMLAD of
    the word sums 256 x the odd column's products plus the even's, and SMLAD of its SXTB16 the even's alone."""
    q = quad.astype(np.int32)
    h = 256 * q[:, :, 1::2] + q[:, :, 0::2]                          # (q, k, pair)
    words = h[:, [0, 2, 1, 3], :].reshape(-1, 2, 2, 2).transpose(0, 3, 1, 2)  # (q, pair, k parity, k half)
    return words.astype("<i2").reshape(-1).view(np.int8)


# the paired kernel recovers an odd column's sum from 256 x it in int32: |sum| < 2^23
PAIRED_SUM_LIMIT = (1 << 23) - 1


def pairs_fit(w: np.ndarray) -> bool:
    """Whether constant int8 B (K, N) takes the paired packing (the _a16p kernels): it has a block of four
    columns and a quad of k, every int16 256 b_odd + b_even fits (not b_odd -128 with b_even negative), and every odd
    column's sum against A's int8, at most 128 sum |b_odd|, fits in 24 bits."""
    k, n = w.shape
    cols = w[:4 * (k // 4), :4 * (n // 4)].astype(np.int64)
    if cols.size == 0:
        return False
    even, odd = cols[:, 0::2], cols[:, 1::2]
    return (not np.any((odd == -128) & (even < 0))
            and int(128 * np.abs(odd).sum(axis=0).max()) <= PAIRED_SUM_LIMIT)


# TFLite's 64-bit requantization takes |acc| < 2^47 (its MultiplyByQuantizedMultiplier of an int64)
ACC64_LIMIT = 1 << 47


@dataclass(frozen=True)
class Int16Plan:
    """The integers of a 16x8 product: the kernel's (mult, shift) per column or one (of an int64 sum: TFLite's
    reduced multipliers, or an ONNX model's wide ones; of a wrapping int32 sum: TFLite's), the bias (int64 [N],
    or None), whether the sum is int64 (else a wrapping int32) and the output range."""

    mult: np.ndarray
    shift: np.ndarray
    bias: np.ndarray | None
    wide: bool
    lo: int
    hi: int

    def requantize(self, acc: np.ndarray) -> np.ndarray:
        if self.wide:
            return requant.requantize_wide(acc, self.mult.astype(np.int64), self.shift.astype(np.int64))
        return requant.tflite_requantize(requant.wrap32(acc), self.mult.astype(np.int64), self.shift.astype(np.int64))


def int16_plan(graph: Graph, node: Node) -> Int16Plan:
    """A TFLite FULLY_CONNECTED of int16 A and constant int8 B, or BATCH_MATMUL of two int16 activations (zero
    points 0, per-tensor A and output); UnsupportedError where TFLite Micro's kernel would not compute it so.
    An ONNX model's (int16 QDQ) the same, summed in int64 (its bias int64) with requant.wide_multipliers."""
    lay, a, b, y = _operands(graph, node)
    tflite = requant.arithmetic(graph) == "tflite"
    require(a.dtype == "int16" and y.dtype == "int16" and b.dtype in ("int8", "int16"),
            f"{node.op} of {a.dtype} and {b.dtype} to {y.dtype} is not supported")
    qa, qb, qy = requant.qparams(graph, a.name), requant.qparams(graph, b.name), requant.qparams(graph, y.name)
    require(len(qa.scale) == 1 and len(qy.scale) == 1, f"16x8 {node.op} needs per-tensor A and output")
    require(not any(qa.zero_point + qb.zero_point + qy.zero_point), f"16x8 {node.op} needs zero points 0")
    s_a, s_y = qa.single()[0], qy.single()[0]
    name = _bias_name(node)
    if b.dtype == "int8":
        require(b.is_const and len(b.shape) == 2, f"16x8 {node.op} needs a constant 2-D B")
        if len(qb.scale) > 1:
            require(qb.axis is not None and qb.axis % 2 == (0 if lay.trans_b else 1) and len(qb.scale) == lay.n,
                    f"16x8 {node.op} quantizes B per tensor or per output column only")
        wide = not tflite or node.attr("accumulator", "int32" if name and graph[name].dtype == "int32"
                                       else "int64") == "int64"
        bias = None
        worst = np.abs(b.data.astype(np.int64)).sum(axis=1 if lay.trans_b else 0) * 32768
        if name:
            c = graph[name]
            require(c.is_const and c.dtype == ("int64" if wide else "int32") and _int8_bias_shape_ok(c.shape, lay.n),
                    f"16x8 {node.op} needs a constant bias per column of its accumulator's type")
            bias = np.broadcast_to(c.data.reshape(-1).astype(np.int64), (lay.n,)).copy()
            worst = worst + np.abs(bias)
    else:
        require(node.op == "MatMul" and not name, f"16x8 {node.op} of two activations takes no bias")
        wide, bias, worst = True, None, np.array([lay.k * 32768 * 32768])
    lo, hi = requant.clip_range(node, y)
    if not tflite:
        mult, shift = requant.wide_multipliers(s_a * qb.scale_array() / s_y, worst)
        return Int16Plan(mult, shift, bias, wide, lo, hi)
    require(not wide or bool(np.all(worst < ACC64_LIMIT)), f"16x8 {node.op} accumulator leaves TFLite's 2^47")
    mult, shift = requant.tflite_multipliers(s_a * qb.scale_array() / s_y)
    require(not wide or bool(np.all(shift >= 17)), f"16x8 {node.op} requantization multiplier is too large")
    if wide:
        mult, shift = requant.tflite_reduced(mult, shift)
    lo, hi = requant.clip_range(node, y)
    return Int16Plan(mult, shift, bias, wide, lo, hi)


class _Product(Op):
    fuses_activation = True

    def infer(self, graph, node):
        lay = layout(graph, node)
        a, b = graph[node.inputs[0]], graph[node.inputs[1]]
        name = _bias_name(node)
        if name:
            c = graph[name].shape
            require(len(c) <= 2 and not lay.b_vector,
                    f"{node.op} bias of shape {c} needs a 2-D B and rank at most 2")
            require(broadcast_shape([lay.out, c], node.op) == lay.out,
                    f"{node.op} bias of shape {c} does not broadcast to the output {lay.out}")
        if a.dtype == "float32":
            require(b.dtype == "float32" and (not name or graph[name].dtype == "float32"),
                    f"a float32 {node.op} needs float32 operands")
            return [(lay.out, "float32")]
        if a.dtype == "int16":
            require(b.dtype in ("int8", "int16"), f"{node.op} of int16 and {b.dtype} is not supported")
            require(not name or graph[name].dtype in ("int32", "int64"), f"a 16x8 {node.op} needs an integer bias")
            return [(lay.out, "int16")]
        require(a.dtype == "int8" and b.dtype == "int8", f"{node.op} of {a.dtype} and {b.dtype} is not supported")
        return [(lay.out, "int8")]

    def accepts_int8(self, graph, node) -> bool:
        if graph[node.inputs[0]].dtype == "int16":
            try:
                int16_plan(graph, node)
            except (UnsupportedError, ValueError):
                return False
            return True
        try:
            dynamic_plan(graph, node) if _dynamic(graph, node) else int8_plan(graph, node)
        except (UnsupportedError, ValueError):
            return False
        return True

    def scratch(self, graph, node):
        if not node.attr("scratch", 1) or graph[node.inputs[0]].dtype != "int8":
            return 0
        if _dynamic(graph, node):
            return dynamic_scratch(layout(graph, node))
        return _widened_bytes(layout(graph, node))

    def scratch_pays(self, graph, node, features):
        """A constant B's widened rows (mcud_gemm_s8_a16) buy nothing on an MVE core, whose VMLADAVs take A's bytes as
        they are."""
        return "mve" not in features or _dynamic(graph, node)

    def expr(self, graph, node):
        lay = layout(graph, node)
        axes = [Axis(f"d{i}", n) for i, n in enumerate(lay.out)] + [Axis("k", lay.k, "reduction")]
        nb = len(lay.batch)
        m_axis = None if lay.a_vector else f"d{nb}"
        n_axis = None if lay.b_vector else f"d{len(lay.out) - 1}"

        def batch_dims(shape):
            dims = shape[:-2]
            off = nb - len(dims)
            return tuple(Dim.broadcast() if d == 1 and lay.batch[off + i] != 1 else Dim.identity(f"d{off + i}")
                         for i, d in enumerate(dims))

        def mat(shape, row, col, trans):
            def one(axis):
                return Dim.identity(axis) if axis is not None else Dim.broadcast()
            dims = (one(row), one(col))
            return batch_dims(shape) + (dims[::-1] if trans else dims)

        a_dims = (Dim.identity("k"),) if lay.a_vector else mat(lay.a_shape, m_axis, "k", lay.trans_a)
        b_dims = (Dim.identity("k"),) if lay.b_vector else mat(lay.b_shape, "k", n_axis, lay.trans_b)
        inputs = [a_dims, b_dims]
        name = _bias_name(node)
        if len(node.inputs) > 2:
            if name:
                c = graph[name].shape
                off = len(lay.out) - len(c)
                inputs.append(tuple(Dim.broadcast() if d == 1 and lay.out[off + i] != 1 else
                                    Dim.identity(f"d{off + i}") for i, d in enumerate(c)))
            else:
                inputs.append(None)
        outputs = (tuple(Dim.identity(f"d{i}") for i in range(len(lay.out))),)
        return TensorExpr(tuple(axes), tuple(inputs), outputs)

    def macs(self, graph, node):
        lay = layout(graph, node)
        return int(np.prod(lay.batch, dtype=np.int64)) * lay.m * lay.n * lay.k

    def reference(self, graph, node, inputs):
        lay = layout(graph, node)
        a, b = inputs[0], inputs[1]
        c = inputs[2] if len(inputs) > 2 else None
        if lay.trans_a:
            a = np.swapaxes(a, -1, -2)
        if lay.trans_b:
            b = np.swapaxes(b, -1, -2)
        if a.dtype == np.float32:
            alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
            acc = alpha * np.matmul(a.astype(np.float64), b.astype(np.float64))
            if c is not None:
                acc = acc + beta * c.astype(np.float64)
            lo, hi = requant.float_clip(node)
            return [np.clip(acc.astype(np.float32), np.float32(lo), np.float32(hi)).reshape(lay.out)]
        if a.dtype == np.int16:
            plan = int16_plan(graph, node)
            acc = np.matmul(a.astype(np.int64), b.astype(np.int64))
            if plan.bias is not None:
                acc = acc + plan.bias
            return [np.clip(plan.requantize(acc), plan.lo, plan.hi).astype(np.int16).reshape(lay.out)]
        if _dynamic(graph, node):
            d = dynamic_plan(graph, node)
            acc = np.matmul(a.astype(np.int64) - d.a_zero, b.astype(np.int64) - d.b_zero)
            return [d.output(requant.requantize_as(graph, acc, d.mult, d.shift), lay.out)]
        plan = int8_plan(graph, node)
        acc = np.matmul(a.astype(np.int64), b.astype(np.int64)) + plan.bias  # bias runs along the last axis (N)
        return [plan.output(requant.requantize_as(graph, acc, plan.mult.astype(np.int64),
                                                  plan.shift.astype(np.int64)), lay.out)]

    def kernel(self, graph, node):
        lay = layout(graph, node)
        a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
        if graph[a].dtype == "float32":
            lo, hi = requant.float_clip(node)
            return Call("mcud_gemm_f32", (a, b, _bias_name(node), y), Struct.of(
                "mcud_gemm_f32_params", trans_a=int(lay.trans_a), trans_b=int(lay.trans_b),
                alpha=float(node.attr("alpha", 1.0)), beta=float(node.attr("beta", 1.0)), act_min=lo, act_max=hi))
        if graph[a].dtype == "int16":
            return _kernel_16(graph, node, lay)
        if _dynamic(graph, node):
            d = dynamic_plan(graph, node)
            scratch = self.scratch(graph, node)
            fn = "mcud_matmul_s8" if scratch else "mcud_matmul_s8_direct"
            if requant.arithmetic(graph) == "tflite":
                fn += "_tfl"
            return Call(fn, (a, b, y), Struct.of(
                "mcud_matmul_s8_params", trans_a=int(lay.trans_a), trans_b=int(lay.trans_b), a_zero=d.a_zero,
                b_zero=d.b_zero, mult=d.mult, shift=d.shift, y_zero=d.y_zero, act_min=d.lo, act_max=d.hi),
                scratch=scratch)
        plan = int8_plan(graph, node)
        w = graph[b].data
        w_kn = w.T if lay.trans_b else w
        scratch = self.scratch(graph, node)
        # paired where they fit: with scratch always (no MVE core gives a product scratch), without it where the board's
        # core has no MVE (offload.dsp_packings)
        paired = bool(scratch or node.attr("dsp", 0)) and pairs_fit(w_kn)
        packed = pack_weights(w_kn, paired)
        # B reaches the kernel packed (flash holds it once): no view of it, the kernel takes K and N
        # from A and Y.
        fn = "mcud_gemm_s8_tfl" if requant.arithmetic(graph) == "tflite" else "mcud_gemm_s8"
        rq2, off = _rq2(graph, plan, w_kn)
        return Call(fn + ("_a16" if scratch else "") + ("p" if paired and scratch else "_p" if paired else ""),
                    (a, "", y), Struct.of(
            "mcud_gemm_s8_params", trans_a=int(lay.trans_a), trans_b=int(lay.trans_b),
            channels=len(plan.mult),
            bias=Array("int32_t", tuple(int(v) for v in plan.bias)),
            mult=0 if rq2 else Array("int32_t", tuple(int(v) for v in plan.mult)),
            shift=0 if rq2 else Array("int32_t", tuple(int(v) for v in plan.shift)),
            y_zero=plan.y_zero, act_min=plan.lo, act_max=plan.hi,
            packed=Array("int8_t", tuple(int(v) for v in packed)), rq2=rq2, rq2_off=off), scratch=scratch)


def _widened_bytes(lay: Layout) -> int:
    """Bytes of mcud_gemm_s8_a16's scratch: one row of A widened, 8 bytes for every four k (none for transA, whose
    rows of A are not contiguous, or K < 4; a view of A stepped at run time leaves it unused)."""
    return 0 if lay.trans_a else 2 * (lay.k - lay.k % 4)


def _rq2(graph: Graph, plan: Int8Plan, w: np.ndarray):
    """mcud_gemm_s8_params.rq2 and rq2_off for a TFLite model's constant B (w: K x N): per column of the plan's
    multipliers (one, or N) the three values of requant.doubled_route, the sum bounded by |bias| + 128 sum |w| (A's
    int8 against the column; one multiplier for all: the largest bound), or {0, mult, shift} for a column off that
    route. (0, 0) for an ONNX model, or where more than an eighth of the columns are off the route: those keep the
    requantization of mult and shift, which tests no route per column."""
    if requant.arithmetic(graph) != "tflite":
        return 0, 0
    bound = np.abs(plan.bias) + 128 * np.abs(w).sum(axis=0)
    if len(plan.mult) == 1:
        bound = bound.max(initial=0)[None]
    out, off = [], 0
    for most, m, s in zip(bound, plan.mult, plan.shift):
        route = requant.doubled_route(int(most), int(m), int(s), plan.y_zero)
        out += [0, int(m), int(s)] if route is None else route
        off += route is None
    if 8 * off > len(plan.mult):
        return 0, 0
    return Array("int32_t", tuple(out)), int(off > 0)


def _kernel_16(graph: Graph, node: Node, lay: Layout) -> Call:
    """mcud_gemm_s16 (constant int8 B packed for dual multiply-accumulates: no view of it) or mcud_matmul_s16
    (two int16 activations)."""
    plan = int16_plan(graph, node)
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    mult, shift = plan.mult, plan.shift
    if graph[b].dtype == "int16":
        return Call("mcud_matmul_s16", (a, b, y), Struct.of(
            "mcud_matmul_s16_params", trans_a=int(lay.trans_a), trans_b=int(lay.trans_b), mult=int(mult[0]),
            shift=int(shift[0]), act_min=plan.lo, act_max=plan.hi))
    w = graph[b].data.astype(np.int64)
    w = w if lay.trans_b else w.T  # (N, K)
    kpad = -(-lay.k // 4) * 4
    packed = np.zeros((lay.n, kpad), np.int64)
    packed[:, :lay.k] = w
    packed = packed.reshape(lay.n, kpad // 4, 4)[:, :, [0, 2, 1, 3]].reshape(-1)
    return Call("mcud_gemm_s16", (a, "", y), Struct.of(
        "mcud_gemm_s16_params", trans_a=int(lay.trans_a), kpad=kpad, acc64=int(plan.wide), channels=len(mult),
        bias=0 if plan.bias is None else Array("int64_t", tuple(int(v) for v in plan.bias)),
        mult=Array("int32_t", tuple(int(v) for v in mult)), shift=Array("int32_t", tuple(int(v) for v in shift)),
        act_min=plan.lo, act_max=plan.hi, w=Array("int8_t", tuple(int(v) for v in packed))))


@register
class Gemm(_Product):
    name = "Gemm"
    onnx_types = ("Gemm",)

    def from_onnx(self, onnx: OnnxNode):
        unknown = set(onnx.attrs) - {"alpha", "beta", "transA", "transB"}
        require(not unknown, f"Gemm attribute {', '.join(sorted(unknown))} is not supported")
        attrs = {"alpha": float(onnx.attrs.get("alpha", 1.0)), "beta": float(onnx.attrs.get("beta", 1.0)),
                 "transA": int(onnx.attrs.get("transA", 0)), "transB": int(onnx.attrs.get("transB", 0))}
        inputs = tuple(onnx.inputs[:3])
        if len(inputs) > 2 and inputs[2] and attrs["beta"] == 0.0:
            inputs = inputs[:2] + ("",)  # beta = 0: C does not contribute
        return inputs, attrs


@register
class MatMul(_Product):
    name = "MatMul"
    onnx_types = ("MatMul",)

    def from_onnx(self, onnx: OnnxNode):
        return tuple(onnx.inputs[:2]), {}
