"""Element-wise arithmetic of two inputs with numpy broadcasting: Add, Sub, Mul, Div, Pow, and TFLite's
SquaredDifference, FloorDiv and FloorMod (Sum, Mean, Max and Min of any number of inputs are in
variadic.py; TFLite's MAXIMUM, MINIMUM and comparisons in compare.py).

float32 computes in float32 like onnxruntime and TFLite (FloorDiv divides in double, as TFLite does).
int8 of an ONNX model (per-tensor quantization everywhere):

- Add and Sub are one weighted sum (variadic.weighted_plan, Sum's too). Each input's scale ratio
  s_i / s_y becomes an integer m_i = round(s_i / s_y * 2^k) with one shift k for all inputs (the
  largest m_i lies in [2^29, 2^30]); then acc = sum_i (x_i - z_i) * m_i in 64 bits and y = acc / 2^k
  rounded half to even, + z_y. Sub negates m_b. The only rounding is the last one, and it is QuantizeLinear's,
  so with "round" scales (ties are common: 0.05 + 0.05 -> 0.1) the result still agrees with
  onnxruntime's float path; otherwise it is within one step.
- Mul: acc = (a - z_a) * (b - z_b), requantized by s_a * s_b / s_y like every int8 product.
- Div and Pow stay in float (Pow is float32 only: powf, as numpy's float32 power).

A TFLite model's int8 and int16 operators compute as TFLite Micro's reference kernels (bit for bit):

- ADD, SUB (int8: left shift 20, int16: 15; add_common.cc, sub_common.cc): each input less its zero
  point, shifted up, times its multiplier s_i / (2 max s); the sum times 2 max s / (2^shift s_y).
- MUL: the product of the inputs less their zero points times s_a s_b / s_y (int16: zero points 0).
- DIV (int8): the divisor's reciprocal by gemmlowp's Newton-Raphson (fixedpoint.py; a table of the 256
  divisors made at compile time), the dividend shifted up by its headroom, the output multiplier
  s_a / (s_b s_y) with the shift the three exponents leave.
- SQUARED_DIFFERENCE (int8: left shift 7, int16: 0): ADD's scaled inputs, their difference squared in
  32 bits, times (2 max s)^2 / (2^(2 shift) s_y).

Integer tensors without quantization (int8, uint8, int16, int32, int64) are plain integers:
two's complement wrap-around as in numpy, and Div truncates toward zero as in C (division
by zero gives 0 rather than a trap).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import fixedpoint, requant
from mcudeploy.ops.base import Array, Call, OnnxNode, Op, Struct, elementwise_expr, require
from mcudeploy.ops.registry import register
from mcudeploy.ops.util import broadcast_shape, same_shape_input
from mcudeploy.ops.variadic import round_half_even_shift, weighted_plan

MAX_RANK = 6
SUM_INPUTS = 8  # input slots of mcud_sum_s8 (MCUD_SUM_MAX_INPUTS), of which Add and Sub use two
PLAIN_INTS = ("int8", "uint8", "int16", "int32", "int64")


def _plain(graph: Graph, node: Node) -> bool:
    """Integer arithmetic on integers that carry no quantization."""
    names = (*node.inputs, *node.outputs)
    if graph[node.inputs[0]].dtype == "float32" or all(graph[n].quant is None for n in names):
        return graph[node.inputs[0]].dtype != "float32"
    require(all(graph[n].quant is not None for n in names),
            f"{node.op} mixes quantized and plain integer tensors")
    return False


def _per_tensor(graph: Graph, name: str, dtypes: tuple[str, ...] = ("int8",)) -> bool:
    t = graph[name]
    return t.dtype in dtypes and t.quant is not None and len(t.quant.scale) == 1


def _tflite(graph: Graph) -> bool:
    return requant.arithmetic(graph) == "tflite"


def _qparams(graph: Graph, node: Node) -> list[tuple[float, int]]:
    """(scale, zero point) of each input, then of the output."""
    return [requant.qparams(graph, n).single() for n in (*node.inputs, node.outputs[0])]


def sum_plan(graph: Graph, node: Node, signs: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(zero points, signed multipliers, shift k) of an int8 weighted sum."""
    zeros, mults, k = weighted_plan(graph, node)
    return zeros, tuple(sign * m for sign, m in zip(signs, mults)), k


def _sum_reference(graph, node, inputs, signs):
    zeros, mults, k = sum_plan(graph, node, signs)
    acc = np.zeros((), dtype=np.int64)
    for x, z, m in zip(inputs, zeros, mults):
        acc = acc + (x.astype(np.int64) - z) * m
    _, z_y = requant.qparams(graph, node.outputs[0]).single()
    q = round_half_even_shift(acc, k) + z_y
    lo, hi = requant.clip_range(node, graph[node.outputs[0]])
    shape = graph[node.outputs[0]].shape
    return [np.broadcast_to(np.clip(q, lo, hi), shape).astype(np.int8)]


def _sum_kernel(graph, node, signs):
    zeros, mults, k = sum_plan(graph, node, signs)
    pad = SUM_INPUTS - len(zeros)
    _, z_y = requant.qparams(graph, node.outputs[0]).single()
    lo, hi = requant.clip_range(node, graph[node.outputs[0]])
    views = tuple(node.inputs) + ("",) * pad + (node.outputs[0],)
    return Call("mcud_sum_s8", views, Struct.of(
        "mcud_sum_s8_params", zero=zeros + (0,) * pad, mult=mults + (0,) * pad, shift=k,
        y_zero=z_y, act_min=lo, act_max=hi))


TFL_LEFT_SHIFT = {"int8": 20, "int16": 15}  # TFLite's ADD and SUB: inputs scaled up before their multipliers
TFL_SQUARED_DIFFERENCE_SHIFT = {"int8": 7, "int16": 0}


def _smaller_than_one(node: Node, real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplierSmallerThanOneExp, which refuses a multiplier of 1 or more."""
    mult, shift = requant.tflite_multiplier(real)
    require(shift >= 31, f"quantized {node.op} has a scale ratio TFLite cannot take")
    return mult, shift


def tfl_sum_plan(graph: Graph, node: Node, sign: int = 1) -> dict:
    """TFLite's int8 or int16 ADD (sign 1) or SUB (sign -1): each input times s_i / (2 max s) after the
    left shift, the sum times 2 max s / (2^left_shift s_y); every multiplier as TFLite quantizes it, from
    ratios in double. (sub_common.cc of the TFLite Micro source at hand divides in float32, but the
    interpreter mcudeploy is checked against agrees with double on every pair of codes, and float32 does
    not: tests/test_tflite_elementwise.py.)"""
    (s_a, z_a), (s_b, z_b), (s_y, z_y) = _qparams(graph, node)
    dtype = graph[node.outputs[0]].dtype
    shift = TFL_LEFT_SHIFT[dtype]
    if dtype == "int16":
        require(z_a == z_b == z_y == 0, f"int16 {node.op} needs zero points 0 (symmetric quantization)")
    twice = 2 * max(s_a, s_b)
    ratios = (s_a / twice, s_b / twice, twice / ((1 << shift) * s_y))
    (a_mult, a_shift), (b_mult, b_shift), (y_mult, y_shift) = (_smaller_than_one(node, r) for r in ratios)
    lo, hi = requant.clip_range(node, graph[node.outputs[0]])
    return dict(a_zero=z_a, a_mult=a_mult, a_shift=a_shift, b_zero=z_b, b_mult=b_mult, b_shift=b_shift,
                y_zero=z_y, y_mult=y_mult, y_shift=y_shift, act_min=lo, act_max=hi, sign=sign, left_shift=shift)


def _tfl_scaled(x: np.ndarray, p: dict, which: str) -> np.ndarray:
    """An input's scaled value in ADD, SUB and SQUARED_DIFFERENCE: (x - z) << left_shift times its multiplier."""
    up = (x.astype(np.int64) - p[f"{which}_zero"]) << p["left_shift"]
    return requant.tflite_requantize(up, p[f"{which}_mult"], p[f"{which}_shift"])


def _quantized_out(graph: Graph, node: Node, q: np.ndarray, p: dict) -> list[np.ndarray]:
    y = np.clip(q + p["y_zero"], p["act_min"], p["act_max"]).astype(graph[node.outputs[0]].dtype)
    return [np.broadcast_to(y, graph[node.outputs[0]].shape).copy()]


def _tfl_sum_reference(graph, node, inputs, sign: int):
    p = tfl_sum_plan(graph, node, sign)
    total = requant.wrap32(_tfl_scaled(inputs[0], p, "a") + sign * _tfl_scaled(inputs[1], p, "b"))
    return _quantized_out(graph, node, requant.tflite_requantize(total, p["y_mult"], p["y_shift"]), p)


ADD_TABLE_BYTES = 2 * 256 * 4  # mcud_add_tfl_params.ta and .tb: an int32 per code of each input


def add_table_bytes(graph: Graph, node: Node) -> int:
    """The flash of an int8 TFLite ADD's or SUB's tables (mcud_add_tfl_params.ta, .tb); 0 for any other node."""
    if node.op not in ("Add", "Sub") or not _tflite(graph) or graph[node.outputs[0]].dtype != "int8":
        return 0
    if graph[node.inputs[0]].dtype != "int8" or _plain(graph, node):
        return 0
    return ADD_TABLE_BYTES


def _tfl_sum_tables(p: dict, sign: int) -> dict:
    """mcud_add_tfl_params.ta and .tb: each input's scaled value for the codes -128..127, b's times the sign
    (wrapped to int32 as the kernel's sum is), so that the kernel's sum is one addition of two table entries."""
    codes = np.arange(-128, 128, dtype=np.int64)
    ta = requant.wrap32(_tfl_scaled(codes, p, "a"))
    tb = requant.wrap32(sign * _tfl_scaled(codes, p, "b"))
    return {"ta": Array("int32_t", tuple(int(v) for v in ta)), "tb": Array("int32_t", tuple(int(v) for v in tb))}


def _tfl_sum_kernel(graph, node, sign: int):
    fn = "mcud_add_s16_tfl" if graph[node.outputs[0]].dtype == "int16" else "mcud_add_s8_tfl"
    p = tfl_sum_plan(graph, node, sign)
    # offload/wide.py's "wide": 0 where the board's flash cannot hold the tables (no attribute: no limits)
    tables = _tfl_sum_tables(p, sign) if add_table_bytes(graph, node) and node.attr("wide", 1) else {}
    return Call(fn, tuple(node.inputs) + (node.outputs[0],), Struct.of("mcud_add_tfl_params", **p, **tables))


class _Elementwise(Op):
    fuses_activation = True
    activation = True  # the float kernel clamps to a fused activation's range (TFLite's own operators: no)
    float_fn = ""  # C kernel of the float form
    int_dtypes = PLAIN_INTS
    tflite_int16 = False  # a TFLite model's int16 form exists

    def from_onnx(self, onnx: OnnxNode):
        require(not onnx.attrs, f"{onnx.op_type} attribute {', '.join(sorted(onnx.attrs))} is not supported")
        require(all(onnx.inputs), f"{onnx.op_type} with an empty input name is not supported")
        return tuple(onnx.inputs), {}

    def check_arity(self, node: Node) -> None:
        require(len(node.inputs) == 2, f"{node.op} takes 2 inputs")

    def infer(self, graph, node):
        self.check_arity(node)
        dtypes = {graph[i].dtype for i in node.inputs}
        require(len(dtypes) == 1, f"{node.op} of mixed {', '.join(sorted(dtypes))} is not supported")
        dtype = dtypes.pop()
        quantized = all(graph[n].quant is not None for n in node.inputs) and dtype in ("int8", "int16")
        require(dtype == "float32" or dtype in self.int_dtypes or quantized, f"{node.op} of {dtype} is not supported")
        shape = broadcast_shape([graph[i].shape for i in node.inputs], node.op)
        require(len(shape) <= MAX_RANK, f"{node.op} output of rank {len(shape)} exceeds {MAX_RANK}")
        return [(shape, dtype)]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def quantized_dtypes(self, graph: Graph) -> tuple[str, ...]:
        return ("int8", "int16") if self.tflite_int16 and _tflite(graph) else ("int8",)

    def accepts_int8(self, graph, node) -> bool:
        names = (*node.inputs, *node.outputs)
        if all(graph[n].quant is None for n in names):  # plain integers
            return graph[node.inputs[0]].dtype in self.int_dtypes
        dtypes = self.quantized_dtypes(graph)
        if not all(_per_tensor(graph, n, dtypes) for n in names) or len({graph[n].dtype for n in names}) != 1:
            return False
        try:
            self.int8_kernel(graph, node)
        except (UnsupportedError, ValueError):
            return False
        return True

    # float
    def compute(self, xs: list[np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def reference(self, graph, node, inputs):
        shape = graph[node.outputs[0]].shape
        if inputs[0].dtype == np.float32:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                y = self.compute([x.astype(np.float32) for x in inputs]).astype(np.float32)
            if self.activation:
                lo, hi = requant.float_clip(node)
                y = np.clip(y, np.float32(lo), np.float32(hi))
            return [np.broadcast_to(y, shape).copy()]
        if _plain(graph, node):
            self.check_plain(node)
            with np.errstate(over="ignore"):
                y = self.compute_int(inputs).astype(inputs[0].dtype)
            return [np.broadcast_to(y, shape).copy()]
        return self.int8_reference(graph, node, inputs)

    def kernel(self, graph, node):
        views = tuple(node.inputs) + (node.outputs[0],)
        if graph[node.inputs[0]].dtype == "float32":
            if not self.activation:
                return Call(self.float_fn, views)
            lo, hi = requant.float_clip(node)
            return Call(self.float_fn, views, Struct.of("mcud_binary_f32_params", act_min=lo, act_max=hi))
        if _plain(graph, node):
            self.check_plain(node)
            return Call(f"{self.float_fn[:-4]}_{graph[node.inputs[0]].dtype}", views)
        return self.int8_kernel(graph, node)

    def check_plain(self, node: Node) -> None:
        require(node.attr("clip_min") is None and node.attr("clip_max") is None,
                f"integer {node.op} with a fused activation is not supported")

    def compute_int(self, xs: list[np.ndarray]) -> np.ndarray:
        return self.compute(xs)

    # int8 (and a TFLite model's int16)
    def int8_reference(self, graph, node, inputs):
        raise UnsupportedError(f"{graph[node.inputs[0]].dtype} {node.op} is not supported")

    def int8_kernel(self, graph, node):
        raise UnsupportedError(f"{graph[node.inputs[0]].dtype} {node.op} is not supported")


@register
class Add(_Elementwise):
    name = "Add"
    onnx_types = ("Add",)
    float_fn = "mcud_add_f32"
    tflite_int16 = True

    def compute(self, xs):
        return xs[0] + xs[1]

    def int8_reference(self, graph, node, inputs):
        if _tflite(graph):
            return _tfl_sum_reference(graph, node, inputs, 1)
        return _sum_reference(graph, node, inputs, (1, 1))

    def int8_kernel(self, graph, node):
        if _tflite(graph):
            return _tfl_sum_kernel(graph, node, 1)
        return _sum_kernel(graph, node, (1, 1))


@register
class Sub(_Elementwise):
    name = "Sub"
    onnx_types = ("Sub",)
    float_fn = "mcud_sub_f32"
    tflite_int16 = True

    def compute(self, xs):
        return xs[0] - xs[1]

    def int8_reference(self, graph, node, inputs):
        if _tflite(graph):
            return _tfl_sum_reference(graph, node, inputs, -1)
        return _sum_reference(graph, node, inputs, (1, -1))

    def int8_kernel(self, graph, node):
        if _tflite(graph):
            return _tfl_sum_kernel(graph, node, -1)
        return _sum_kernel(graph, node, (1, -1))


@register
class Mul(_Elementwise):
    name = "Mul"
    onnx_types = ("Mul",)
    float_fn = "mcud_mul_f32"
    tflite_int16 = True

    def compute(self, xs):
        return xs[0] * xs[1]

    def _plan(self, graph, node):
        (s_a, z_a), (s_b, z_b), (s_y, z_y) = _qparams(graph, node)
        if graph[node.outputs[0]].dtype == "int16":
            require(z_a == z_b == z_y == 0, "int16 Mul needs zero points 0 (symmetric quantization)")
        mult, shift = requant.multiplier(graph, s_a * s_b / s_y)
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return dict(a_zero=z_a, b_zero=z_b, mult=mult, shift=shift, y_zero=z_y, act_min=lo, act_max=hi)

    def int8_reference(self, graph, node, inputs):
        p = self._plan(graph, node)
        acc = (inputs[0].astype(np.int64) - p["a_zero"]) * (inputs[1].astype(np.int64) - p["b_zero"])
        return _quantized_out(graph, node, requant.requantize_as(graph, acc, p["mult"], p["shift"]), p)

    def int8_kernel(self, graph, node):
        if graph[node.outputs[0]].dtype == "int16":
            fn = "mcud_mul_s16_tfl"
        else:
            fn = "mcud_mul_s8_tfl" if _tflite(graph) else "mcud_mul_s8"
        return Call(fn, tuple(node.inputs) + (node.outputs[0],),
                    Struct.of("mcud_mul_s8_params", **self._plan(graph, node)))


DIV_CODES = 256  # |divisor - zero point| of int8 codes: 0 .. 255


def tfl_div_plan(graph: Graph, node: Node) -> dict:
    """TFLite's int8 DIV (div.cc): the multiplier of s_a / (s_b s_y), computed in float32 as TFLite does,
    as TFLite's (mult, exponent), and gemmlowp's reciprocal of every divisor."""
    (s_a, z_a), (s_b, z_b), (s_y, z_y) = _qparams(graph, node)
    f32 = np.float32
    mult, shift = requant.tflite_multiplier(float(f32(s_a) / (f32(s_b) * f32(s_y))))
    exponent = 31 - shift
    # the right shift exponent + recip_shift - headroom stays >= 0 (headroom >= 23 for 9-bit dividends,
    # recip_shift >= -1): a left shift there is what TFLite's RoundingDivideByPOT cannot do
    require(exponent <= 22, "int8 Div with a scale ratio s_a / (s_b s_y) of 2^22 or more is not supported")
    recip, _ = fixedpoint.reciprocal(np.arange(DIV_CODES))
    lo, hi = requant.clip_range(node, graph[node.outputs[0]])
    return dict(a_zero=z_a, b_zero=z_b, y_zero=z_y, mult=mult, exponent=exponent, act_min=lo, act_max=hi,
                recip=tuple(int(r) for r in recip))


@register
class Div(_Elementwise):
    name = "Div"
    onnx_types = ("Div",)
    float_fn = "mcud_div_f32"

    def compute(self, xs):
        return xs[0] / xs[1]

    def compute_int(self, xs):
        a, b = np.broadcast_arrays(xs[0].astype(np.int64), xs[1].astype(np.int64))
        safe = np.where(b == 0, 1, b)
        q = np.abs(a) // np.abs(safe) * np.sign(a) * np.sign(safe)  # truncation toward zero
        return np.where(b == 0, 0, q)

    def accepts_int8(self, graph, node) -> bool:
        if not _tflite(graph) and any(graph[n].quant is not None for n in (*node.inputs, *node.outputs)):
            return False  # an ONNX model's int8 Div stays in float
        return super().accepts_int8(graph, node)

    def int8_reference(self, graph, node, inputs):
        require(_tflite(graph), "int8 Div is not supported")
        p = tfl_div_plan(graph, node)
        x = inputs[0].astype(np.int64) - p["a_zero"]
        d = inputs[1].astype(np.int64) - p["b_zero"]
        x, d = np.where(d < 0, -x, x), np.abs(d)
        recip, recip_shift = fixedpoint.reciprocal(d)
        headroom = fixedpoint.clrsb32(x)
        q = requant.srdhm(requant.wrap32(x << headroom), recip)
        y = fixedpoint.rdbpot_x86(requant.srdhm(q, p["mult"]), headroom + recip_shift - p["exponent"])
        return _quantized_out(graph, node, y, p)

    def int8_kernel(self, graph, node):
        require(_tflite(graph), "int8 Div is not supported")
        p = tfl_div_plan(graph, node)
        return Call("mcud_div_s8_tfl", tuple(node.inputs) + (node.outputs[0],),
                    Struct.of("mcud_div_s8_tfl_params", **{**p, "recip": Array("int32_t", p["recip"])}))


@register
class Pow(_Elementwise):
    name = "Pow"
    onnx_types = ("Pow",)
    float_fn = "mcud_pow_f32"
    int_dtypes = ()

    def compute(self, xs):
        return np.power(xs[0], xs[1])

    def quantized_dtypes(self, graph: Graph) -> tuple[str, ...]:
        return ()

    def accepts_int8(self, graph, node) -> bool:
        return False


def tfl_squared_difference_plan(graph: Graph, node: Node) -> dict:
    """TFLite's int8 or int16 SQUARED_DIFFERENCE (squared_difference.cc): ADD's input multipliers, and
    (2 max s)^2 / (2^(2 shift) s_y) for the square."""
    (s_a, z_a), (s_b, z_b), (s_y, z_y) = _qparams(graph, node)
    dtype = graph[node.outputs[0]].dtype
    shift = TFL_SQUARED_DIFFERENCE_SHIFT[dtype]
    if dtype == "int16":
        require(z_a == z_b == z_y == 0, "int16 SquaredDifference needs zero points 0 (symmetric quantization)")
    twice = 2 * max(s_a, s_b)
    (a_mult, a_shift), (b_mult, b_shift) = (_smaller_than_one(node, s / twice) for s in (s_a, s_b))
    y_mult, y_shift = requant.tflite_multiplier(twice * twice / float(np.float32(1 << 2 * shift) * np.float32(s_y)))
    lo, hi = requant.QRANGE[dtype]
    return dict(a_zero=z_a, a_mult=a_mult, a_shift=a_shift, b_zero=z_b, b_mult=b_mult, b_shift=b_shift,
                y_zero=z_y, y_mult=y_mult, y_shift=y_shift, act_min=lo, act_max=hi, sign=-1, left_shift=shift)


@register
class SquaredDifference(_Elementwise):
    """TFLite's SQUARED_DIFFERENCE: (a - b)^2."""

    name = "SquaredDifference"
    fuses_activation = False
    activation = False
    float_fn = "mcud_squared_difference_f32"
    int_dtypes = ("int32",)
    tflite_int16 = True

    def compute(self, xs):
        d = xs[0] - xs[1]
        return d * d

    def compute_int(self, xs):
        d = requant.wrap32(xs[0].astype(np.int64) - xs[1].astype(np.int64))
        return requant.wrap32(d * d)

    def int8_reference(self, graph, node, inputs):
        p = tfl_squared_difference_plan(graph, node)
        d = requant.wrap32(_tfl_scaled(inputs[0], p, "a") - _tfl_scaled(inputs[1], p, "b"))
        return _quantized_out(graph, node, requant.tflite_requantize(requant.wrap32(d * d), p["y_mult"], p["y_shift"]), p)

    def int8_kernel(self, graph, node):
        fn = f"mcud_squared_difference_{'s16' if graph[node.outputs[0]].dtype == 'int16' else 's8'}_tfl"
        return Call(fn, tuple(node.inputs) + (node.outputs[0],),
                    Struct.of("mcud_add_tfl_params", **tfl_squared_difference_plan(graph, node)))


@register
class FloorDiv(_Elementwise):
    """TFLite's FLOOR_DIV of floats: floor(a / b), the quotient in double."""

    name = "FloorDiv"
    fuses_activation = False
    activation = False
    float_fn = "mcud_floor_div_f32"
    int_dtypes = ()

    def compute(self, xs):
        return np.floor(xs[0].astype(np.float64) / xs[1].astype(np.float64))

    def quantized_dtypes(self, graph: Graph) -> tuple[str, ...]:
        return ()

    def accepts_int8(self, graph, node) -> bool:
        return False


@register
class FloorMod(_Elementwise):
    """TFLite's FLOOR_MOD of floats: fmod(a, b), plus b where the remainder's sign is not b's."""

    name = "FloorMod"
    fuses_activation = False
    activation = False
    float_fn = "mcud_floor_mod_f32"
    int_dtypes = ()

    def compute(self, xs):
        a, b = xs
        r = np.fmod(a, b)
        return np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)

    def quantized_dtypes(self, graph: Graph) -> tuple[str, ...]:
        return ()

    def accepts_int8(self, graph, node) -> bool:
        return False
