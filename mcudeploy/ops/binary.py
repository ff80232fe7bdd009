"""Element-wise arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Pow (Sum, Mean, Max and Min of
any number of inputs are in variadic.py).

float32 computes in float32 like onnxruntime. int8 (per-tensor quantization everywhere):

- Add and Sub are one weighted sum (variadic.weighted_plan, Sum's too). Each input's scale ratio
  s_i / s_y becomes an integer m_i = round(s_i / s_y * 2^k) with one shift k for all inputs (the
  largest m_i lies in [2^29, 2^30]); then acc = sum_i (x_i - z_i) * m_i in 64 bits and y = acc / 2^k
  rounded half to even, + z_y. Sub negates m_b. The only rounding is the last one, and it is QuantizeLinear's,
  so with "round" scales (ties are common: 0.05 + 0.05 -> 0.1) the result still agrees with
  onnxruntime's float path; otherwise it is within one step.
- Mul: acc = (a - z_a) * (b - z_b), requantized by s_a * s_b / s_y like every int8 product.
- Div and Pow stay in float (Pow is float32 only: powf, as numpy's float32 power).

Integer tensors without quantization (int8, uint8, int16, int32, int64) are plain integers:
two's complement wrap-around as in numpy, and Div truncates toward zero as in C (division
by zero gives 0 rather than a trap).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops.base import Call, OnnxNode, Op, Struct, elementwise_expr, require
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


def _per_tensor_int8(graph: Graph, name: str) -> bool:
    t = graph[name]
    return t.dtype == "int8" and t.quant is not None and len(t.quant.scale) == 1


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


TFL_LEFT_SHIFT = 20  # TFLite's int8 ADD/SUB: inputs scaled up by 2^20 before their multipliers


def tfl_sum_plan(graph: Graph, node: Node) -> dict:
    """TFLite's int8 ADD/SUB (CalculateOpDataAdd): each input times s_i / (2 max s) at 2^20, the sum
    times 2 max s / (2^20 s_y); every multiplier as TFLite quantizes it."""
    (s_a, z_a), (s_b, z_b) = (requant.qparams(graph, n).single() for n in node.inputs)
    s_y, z_y = requant.qparams(graph, node.outputs[0]).single()
    twice = 2 * max(s_a, s_b)
    a_mult, a_shift = requant.tflite_multiplier(s_a / twice)
    b_mult, b_shift = requant.tflite_multiplier(s_b / twice)
    y_mult, y_shift = requant.tflite_multiplier(twice / ((1 << TFL_LEFT_SHIFT) * s_y))
    lo, hi = requant.clip_range(node, graph[node.outputs[0]])
    require(min(a_shift, b_shift, y_shift) >= 31, f"int8 {node.op} has a scale ratio TFLite cannot take")
    return dict(a_zero=z_a, b_zero=z_b, a_mult=a_mult, a_shift=a_shift, b_mult=b_mult, b_shift=b_shift,
                y_mult=y_mult, y_shift=y_shift, y_zero=z_y, act_min=lo, act_max=hi)


def _tfl_sum_reference(graph, node, inputs, sign: int):
    p = tfl_sum_plan(graph, node)
    a = requant.tflite_requantize((inputs[0].astype(np.int64) - p["a_zero"]) << TFL_LEFT_SHIFT, p["a_mult"],
                                  p["a_shift"])
    b = requant.tflite_requantize((inputs[1].astype(np.int64) - p["b_zero"]) << TFL_LEFT_SHIFT, p["b_mult"],
                                  p["b_shift"])
    q = requant.tflite_requantize(requant.wrap32(a + sign * b), p["y_mult"], p["y_shift"]) + p["y_zero"]
    y = np.clip(q, p["act_min"], p["act_max"]).astype(np.int8)
    return [np.broadcast_to(y, graph[node.outputs[0]].shape).copy()]


def _tfl_sum_kernel(graph, node, sign: int):
    p = tfl_sum_plan(graph, node)
    return Call("mcud_add_s8_tfl", tuple(node.inputs) + (node.outputs[0],),
                Struct.of("mcud_add_s8_tfl_params", **p, sign=sign))


class _Elementwise(Op):
    fuses_activation = True
    float_fn = ""  # C kernel of the float form
    int_dtypes = PLAIN_INTS

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
        require(dtypes <= {"float32", *self.int_dtypes}, f"{node.op} of {', '.join(sorted(dtypes))} is not supported")
        shape = broadcast_shape([graph[i].shape for i in node.inputs], node.op)
        require(len(shape) <= MAX_RANK, f"{node.op} output of rank {len(shape)} exceeds {MAX_RANK}")
        return [(shape, dtypes.pop())]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return same_shape_input(graph, node)

    def accepts_int8(self, graph, node) -> bool:
        if not all(_per_tensor_int8(graph, n) for n in (*node.inputs, *node.outputs)):
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
            lo, hi = requant.float_clip(node)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                y = self.compute([x.astype(np.float32) for x in inputs])
            y = np.clip(y.astype(np.float32), np.float32(lo), np.float32(hi))
            return [np.broadcast_to(y, shape).copy()]
        if _plain(graph, node):
            require(node.attr("clip_min") is None and node.attr("clip_max") is None,
                    f"integer {node.op} with a fused activation is not supported")
            with np.errstate(over="ignore"):
                y = self.compute_int(inputs).astype(inputs[0].dtype)
            return [np.broadcast_to(y, shape).copy()]
        return self.int8_reference(graph, node, inputs)

    def kernel(self, graph, node):
        views = tuple(node.inputs) + (node.outputs[0],)
        if graph[node.inputs[0]].dtype == "float32":
            lo, hi = requant.float_clip(node)
            return Call(self.float_fn, views, Struct.of("mcud_binary_f32_params", act_min=lo, act_max=hi))
        if _plain(graph, node):
            return Call(f"{self.float_fn[:-4]}_{graph[node.inputs[0]].dtype}", views)
        return self.int8_kernel(graph, node)

    def compute_int(self, xs: list[np.ndarray]) -> np.ndarray:
        return self.compute(xs)

    # int8
    def int8_reference(self, graph, node, inputs):
        raise UnsupportedError(f"int8 {node.op} is not supported")

    def int8_kernel(self, graph, node):
        raise UnsupportedError(f"int8 {node.op} is not supported")


@register
class Add(_Elementwise):
    name = "Add"
    onnx_types = ("Add",)
    float_fn = "mcud_add_f32"

    def compute(self, xs):
        return xs[0] + xs[1]

    def int8_reference(self, graph, node, inputs):
        if requant.arithmetic(graph) == "tflite":
            return _tfl_sum_reference(graph, node, inputs, 1)
        return _sum_reference(graph, node, inputs, (1, 1))

    def int8_kernel(self, graph, node):
        if requant.arithmetic(graph) == "tflite":
            return _tfl_sum_kernel(graph, node, 1)
        return _sum_kernel(graph, node, (1, 1))


@register
class Sub(_Elementwise):
    name = "Sub"
    onnx_types = ("Sub",)
    float_fn = "mcud_sub_f32"

    def compute(self, xs):
        return xs[0] - xs[1]

    def int8_reference(self, graph, node, inputs):
        if requant.arithmetic(graph) == "tflite":
            return _tfl_sum_reference(graph, node, inputs, -1)
        return _sum_reference(graph, node, inputs, (1, -1))

    def int8_kernel(self, graph, node):
        if requant.arithmetic(graph) == "tflite":
            return _tfl_sum_kernel(graph, node, -1)
        return _sum_kernel(graph, node, (1, -1))


@register
class Mul(_Elementwise):
    name = "Mul"
    onnx_types = ("Mul",)
    float_fn = "mcud_mul_f32"

    def compute(self, xs):
        return xs[0] * xs[1]

    def _plan(self, graph, node):
        s_a, z_a = requant.qparams(graph, node.inputs[0]).single()
        s_b, z_b = requant.qparams(graph, node.inputs[1]).single()
        s_y, z_y = requant.qparams(graph, node.outputs[0]).single()
        mult, shift = requant.multiplier(graph, s_a * s_b / s_y)
        lo, hi = requant.clip_range(node, graph[node.outputs[0]])
        return dict(a_zero=z_a, b_zero=z_b, mult=mult, shift=shift, y_zero=z_y, act_min=lo, act_max=hi)

    def int8_reference(self, graph, node, inputs):
        p = self._plan(graph, node)
        acc = (inputs[0].astype(np.int64) - p["a_zero"]) * (inputs[1].astype(np.int64) - p["b_zero"])
        q = requant.requantize_as(graph, acc, p["mult"], p["shift"]) + p["y_zero"]
        y = np.clip(q, p["act_min"], p["act_max"]).astype(np.int8)
        return [np.broadcast_to(y, graph[node.outputs[0]].shape).copy()]

    def int8_kernel(self, graph, node):
        fn = "mcud_mul_s8_tfl" if requant.arithmetic(graph) == "tflite" else "mcud_mul_s8"
        return Call(fn, tuple(node.inputs) + (node.outputs[0],),
                    Struct.of("mcud_mul_s8_params", **self._plan(graph, node)))


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
        return False


@register
class Pow(_Elementwise):
    name = "Pow"
    onnx_types = ("Pow",)
    float_fn = "mcud_pow_f32"
    int_dtypes = ()

    def compute(self, xs):
        return np.power(xs[0], xs[1])

    def accepts_int8(self, graph, node) -> bool:
        return False
