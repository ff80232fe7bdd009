"""Unary activations and functions: Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Swish,
Gelu, Erf, Sqrt, Elu (and, on the same base, the math functions of mcudeploy/ops/unary.py).

float32 runs one small math.h kernel per operator. int8 and uint8 run one shared lookup-table
kernel: the table maps each of the 256 input codes to its output code, computed here at compile
time (dequantize, the function in float64, quantize with round-half-even, zero point and
saturation), so the C kernel is exact by construction and costs one load per element.

A TFLite model's int8 table is TensorFlow Lite Micro's own integer arithmetic run on every code
(``tflite_table``, from mcudeploy/ops/tflite_tables.py) where the node is TFLite's integer kernel (attribute
``tflite_kernel``, set by the importer); a float operator of a TFLite model folded with its DEQUANTIZE and
QUANTIZE (mcudeploy/passes/qdq.py) is tabulated as TFLite dequantizes, computes in float and quantizes.
Its int16 operators (RELU, RELU6, LEAKY_RELU, ABS: ``piecewise``; LOGISTIC, TANH) run kernels of their own
that compute that arithmetic per element. An ONNX model's int16 QDQ Relu, LeakyRelu and Clip (``onnx_int16``; Clip
only where input and output are quantized alike) run the same piecewise kernel (a 65,536-entry table is no size for a
microcontroller) with one rounding (``int16_piecewise``): onnxruntime's dequantize, function, quantize but at ties,
which it rounds half to even and the kernel half away from zero. Relu or Clip folded into the node keeps it float.

numpy has no erf: Erf and Gelu's reference evaluates math.erf in float64 per element and rounds to
float32 (the C kernel's erff is within an ulp of it).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar, Optional

import numpy as np

from mcudeploy.ir import Graph, Node
from mcudeploy.ops import requant
from mcudeploy.ops import tflite_tables as tfl
from mcudeploy.ops.base import Array, Call, OnnxNode, Op, Struct, elementwise_expr, require
from mcudeploy.ops.registry import register

LUT_DTYPES = ("int8", "uint8")


def lut_table(fn, in_scale: float, in_zp: int, out_scale: float, out_zp: int, dtype: str) -> np.ndarray:
    """Output code for each input code, in the order of the codes (lowest first)."""
    lo, hi = requant.QRANGE[dtype]
    codes = np.arange(lo, hi + 1, dtype=np.int64)
    real = fn((codes - in_zp).astype(np.float64) * in_scale)
    q = np.rint(real / out_scale) + out_zp
    return np.clip(q, lo, hi).astype(np.int64)


def _single_rounding(mult: int, exp: int, side: str) -> dict:
    """A Q0.31 multiplier and its exponent with a right shift (exp < 0) folded into the multiplier, rounded."""
    if exp >= 0:
        return {}
    k = -exp
    return {f"{side}_mult": (mult + (1 << (k - 1))) >> k if mult >= 0 else -((-mult + (1 << (k - 1))) >> k),
            f"{side}_exp": 0}


def quant_pair(graph: Graph, node: Node) -> tuple[float, int, float, int]:
    """(input scale, input zero point, output scale, output zero point) of a per-tensor quantized op."""
    sx, zx = graph[node.inputs[0]].quant.single()
    sy, zy = graph[node.outputs[0]].quant.single()
    return sx, zx, sy, zy


class _Unary(Op):
    """An element-wise function of one input; subclasses give the float64 math and the C names."""

    qdq_exact = True  # folded in a TFLite model: tabulated as TFLite dequantizes, computes in float, quantizes

    c_name: ClassVar[str] = ""
    integer_ok: ClassVar[bool] = False  # defined by ONNX on plain (unquantized) integers too
    tflite_int16: ClassVar[bool] = False  # TFLite Micro runs it on int16 (``piecewise`` or its own kernel)
    onnx_int16: ClassVar[bool] = False  # its ``piecewise`` is within a step of an ONNX model's int16 QDQ chain

    def fn(self, node: Node, x: np.ndarray) -> np.ndarray:
        """The activation on real numbers (float32 in, float32 out; float64 in, float64 out)."""
        raise NotImplementedError

    def float_params(self, node: Node) -> Optional[Struct]:
        return None

    def piecewise(self, graph: Graph, node: Node) -> Optional[tfl.Piecewise]:
        """TFLite Micro's quantized arithmetic when it is piecewise linear (int8 and int16), else None."""
        return None

    def tflite_table(self, graph: Graph, node: Node) -> Optional[np.ndarray]:
        """TFLite Micro's int8 output code for each input code, lowest first; None where this operator
        has no integer kernel in TFLite Micro (its table is then TFLite's dequantize, float function and
        quantize)."""
        p = self.piecewise(graph, node)
        return None if p is None else p.apply(tfl.codes("int8"))

    def int16_piecewise(self, graph: Graph, node: Node) -> tfl.Piecewise:
        """``piecewise`` as the int16 kernel runs it: for an ONNX model with no right shift, so that it rounds
        once (TFLite rounds the high product, then again at the shift, up to 0.625 steps from the unrounded value:
        too often not onnxruntime's nearest step). The multiplier rounded to an integer puts the product off by at
        most 65535 / 2^32 < 2^-15 of a step over int16's codes, whatever the ratio."""
        p = self.piecewise(graph, node)
        if requant.arithmetic(graph) == "tflite":
            return p
        pos = _single_rounding(p.pos_mult, p.pos_exp, "pos")
        neg = _single_rounding(p.neg_mult, p.neg_exp, "neg")
        return replace(p, **pos, **neg)

    def int16_reference(self, graph: Graph, node: Node, x: np.ndarray) -> np.ndarray:
        return self.int16_piecewise(graph, node).apply(x)

    def int16_kernel(self, graph: Graph, node: Node) -> Call:
        p = self.int16_piecewise(graph, node)
        return Call("mcud_piecewise_s16", (node.inputs[0], node.outputs[0]), Struct.of(
            "mcud_piecewise_s16_params", in_zero_point=p.in_zp, out_zero_point=p.out_zp, pos_mult=p.pos_mult,
            pos_shift=31 - p.pos_exp, neg_mult=p.neg_mult, neg_shift=31 - p.neg_exp, out_min=p.lo, out_max=p.hi))

    # ---------------------------------------------------------------- declaration
    def _int16(self, graph: Graph, node: Node) -> bool:
        if not self.tflite_int16:
            return False
        if requant.arithmetic(graph) == "tflite":
            return True
        # an ONNX model: the piecewise kernel has no room for a Relu or Clip the QDQ lowering folded into the node
        return self.onnx_int16 and node.attr("clip_min") is None and node.attr("clip_max") is None

    def infer(self, graph, node):
        x = graph[node.inputs[0]]
        dtypes = ("float32",) + LUT_DTYPES + (("int16",) if self.tflite_int16 else ())  # int16: TFLite's only
        require(x.dtype in dtypes, f"{self.name} of {x.dtype} is not supported")
        return [(x.shape, x.dtype)]

    def expr(self, graph, node):
        return elementwise_expr(graph, node)

    def inplace(self, graph, node):
        return 0

    def accepts_int8(self, graph: Graph, node: Node) -> bool:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        dtypes = LUT_DTYPES + (("int16",) if self._int16(graph, node) else ())
        if x.dtype not in dtypes or y.dtype != x.dtype or x.quant is None or y.quant is None:
            return False
        return len(x.quant.scale) == 1 and len(y.quant.scale) == 1 and y.quant.scale[0] > 0

    # ---------------------------------------------------------------- int8 table
    def table(self, graph: Graph, node: Node) -> np.ndarray:
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if self.integer_ok and x.quant is None and y.quant is None and x.dtype == y.dtype:
            return lut_table(lambda v: self.fn(node, v), 1.0, 0, 1.0, 0, x.dtype)  # plain integers
        require(self.accepts_int8(graph, node), f"{self.name} of {x.dtype} needs per-tensor quantized input and "
                                                f"output of the same type")
        sx, zx, sy, zy = quant_pair(graph, node)
        if requant.arithmetic(graph) == "tflite" and x.dtype == "int8":
            if node.attr("tflite_kernel"):
                table = self.tflite_table(graph, node)
                if table is not None:
                    return table
            return tfl.dequantize_quantize_s8(self._clipped(node), sx, zx, sy, zy)
        return lut_table(self._clipped(node), sx, zx, sy, zy, x.dtype)

    def _clipped(self, node: Node):
        """The function on real numbers followed by the Relu or Clip folded into the node with its
        DequantizeLinear and QuantizeLinear (mcudeploy/passes/qdq.py: attributes clip_min, clip_max)."""
        lo, hi = node.attr("clip_min"), node.attr("clip_max")
        if lo is None and hi is None:
            return lambda v: self.fn(node, v)
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
        return lambda v: np.minimum(np.maximum(self.fn(node, v), v.dtype.type(lo)), v.dtype.type(hi))

    # ---------------------------------------------------------------- reference, kernel
    def reference(self, graph, node, inputs):
        x = inputs[0]
        if x.dtype == np.float32:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return [np.asarray(self.fn(node, x), dtype=np.float32)]
        if x.dtype == np.int16:
            require(self.accepts_int8(graph, node), f"{self.name} of int16 needs per-tensor quantized input and "
                                                    f"output of the same type")
            return [self.int16_reference(graph, node, x).astype(np.int16)]
        lo = requant.QRANGE[graph[node.inputs[0]].dtype][0]
        table = self.table(graph, node)
        return [table[x.astype(np.int64) - lo].astype(x.dtype)]

    def kernel(self, graph, node):
        views = (node.inputs[0], node.outputs[0])
        dtype = graph[node.inputs[0]].dtype
        if dtype == "float32":
            return Call(f"mcud_{self.c_name}_f32", views, self.float_params(node))
        if dtype == "int16":
            require(self.accepts_int8(graph, node), f"{self.name} of int16 needs per-tensor quantized input and "
                                                    f"output of the same type")
            return self.int16_kernel(graph, node)
        suffix = "s8" if dtype == "int8" else "u8"
        table = Array(f"{dtype}_t", tuple(int(v) for v in self.table(graph, node)))
        return Call(f"mcud_lut_{suffix}", views, Struct.of(f"mcud_lut_{suffix}_params", table=table))


def _f(x: np.ndarray, value: float):
    """A scalar in the precision of x (float32 math stays float32, as in the C kernel)."""
    return x.dtype.type(value)


@register
class Relu(_Unary):
    name = "Relu"
    onnx_types = ("Relu",)
    integer_ok = True
    c_name = "relu"
    tflite_int16 = True
    onnx_int16 = True

    def fn(self, node, x):
        return np.maximum(x, _f(x, 0.0))

    def piecewise(self, graph, node):
        return tfl.relu(graph[node.inputs[0]].dtype, *quant_pair(graph, node))


@register
class Clip(_Unary):
    """min and max (absent: unbounded) are attributes; opset 11+ constant inputs become them."""

    name = "Clip"
    onnx_types = ("Clip",)
    integer_ok = True
    c_name = "clip"
    tflite_int16 = True
    onnx_int16 = True  # where input and output are quantized alike: TFLite's RELU6 reads no output scale

    def from_onnx(self, onnx: OnnxNode):
        attrs = {}
        if onnx.opset < 11:
            for key in ("min", "max"):
                if key in onnx.attrs:
                    attrs[key] = float(onnx.attrs[key])
            return onnx.inputs[:1], attrs
        for key, index in (("min", 1), ("max", 2)):
            if len(onnx.inputs) > index and onnx.inputs[index]:
                value = onnx.const(onnx.inputs[index])
                require(value is not None, f"Clip needs a constant {key}")
                require(np.size(value) == 1, f"Clip {key} must be a scalar")
                attrs[key] = float(np.ravel(value)[0])
        return onnx.inputs[:1], attrs

    def bounds(self, node: Node) -> tuple[float, float]:
        lo, hi = node.attr("min"), node.attr("max")
        return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))

    def fn(self, node, x):
        lo, hi = self.bounds(node)
        # ONNX (and onnxruntime) apply max then min, so min > max yields max everywhere.
        return np.minimum(np.maximum(x, _f(x, lo)), _f(x, hi))

    def accepts_int8(self, graph, node):
        x, y = graph[node.inputs[0]], graph[node.outputs[0]]
        if x.dtype == "int16" and requant.arithmetic(graph) != "tflite" and x.quant != y.quant:
            return False
        return super().accepts_int8(graph, node)

    def piecewise(self, graph, node):
        """TFLite's RELU6: the input codes clamped to the bounds' codes in the input's quantization."""
        lo, hi = self.bounds(node)
        sx, zx, _, _ = quant_pair(graph, node)
        return tfl.clamp(graph[node.inputs[0]].dtype, sx, zx, lo, hi)

    def float_params(self, node):
        lo, hi = self.bounds(node)  # an infinite bound is written as -/+FLT_MAX
        return Struct.of("mcud_act_params", alpha=lo, beta=hi)


class _WithAlpha(_Unary):
    """An activation with one attribute, alpha (LeakyRelu, Swish), passed to its float kernel."""

    alpha_default: ClassVar[float] = 1.0

    def from_onnx(self, onnx):
        return onnx.inputs[:1], {"alpha": float(onnx.attrs.get("alpha", self.alpha_default))}

    def alpha(self, node: Node, x: np.ndarray):
        return _f(x, node.attr("alpha", self.alpha_default))

    def float_params(self, node):
        return Struct.of("mcud_act_params", alpha=float(node.attr("alpha", self.alpha_default)), beta=0.0)


@register
class LeakyRelu(_WithAlpha):
    name = "LeakyRelu"
    onnx_types = ("LeakyRelu",)
    c_name = "leaky_relu"
    alpha_default = 0.01
    tflite_int16 = True
    onnx_int16 = True

    def fn(self, node, x):
        return np.where(x >= 0, x, x * self.alpha(node, x))

    def piecewise(self, graph, node):
        return tfl.leaky_relu(graph[node.inputs[0]].dtype, *quant_pair(graph, node),
                              float(node.attr("alpha", self.alpha_default)))


@register
class Sigmoid(_Unary):
    name = "Sigmoid"
    onnx_types = ("Sigmoid",)
    c_name = "sigmoid"
    tflite_int16 = True

    def fn(self, node, x):
        one = _f(x, 1.0)
        return one / (one + np.exp(-x))

    def tflite_table(self, graph, node):
        sx, zx, _, _ = quant_pair(graph, node)
        return tfl.logistic_s8(sx, zx)

    def int16_params(self, graph, node) -> tuple[int, int]:
        return tfl.sigmoid_s16_params(quant_pair(graph, node)[0], tanh=self.name == "Tanh")

    def int16_reference(self, graph, node, x):
        return tfl.sigmoid_s16(x, *self.int16_params(graph, node))

    def int16_kernel(self, graph, node):
        mult, shift = self.int16_params(graph, node)
        return Call(f"mcud_{self.c_name}_s16_tfl", (node.inputs[0], node.outputs[0]),
                    Struct.of("mcud_sigmoid_s16_params", mult=mult, shift=shift))


@register
class Tanh(Sigmoid):
    """tanh; TFLite's int16 kernel takes Sigmoid's parameters and table (tanh(x) = 2 sigmoid(2x) - 1)."""

    name = "Tanh"
    onnx_types = ("Tanh",)
    c_name = "tanh"

    def fn(self, node, x):
        return np.tanh(x)

    def tflite_table(self, graph, node):
        sx, zx, _, _ = quant_pair(graph, node)
        return tfl.tanh_s8(sx, zx)

    def int16_reference(self, graph, node, x):
        return tfl.tanh_s16(x, *self.int16_params(graph, node))


@register
class HardSigmoid(_Unary):
    name = "HardSigmoid"
    onnx_types = ("HardSigmoid",)
    c_name = "hard_sigmoid"

    def from_onnx(self, onnx):
        return onnx.inputs[:1], {"alpha": float(onnx.attrs.get("alpha", 0.2)),
                                 "beta": float(onnx.attrs.get("beta", 0.5))}

    def fn(self, node, x):
        alpha, beta = _f(x, node.attr("alpha", 0.2)), _f(x, node.attr("beta", 0.5))
        return np.minimum(np.maximum(x * alpha + beta, _f(x, 0.0)), _f(x, 1.0))

    def float_params(self, node):
        return Struct.of("mcud_act_params", alpha=float(node.attr("alpha", 0.2)), beta=float(node.attr("beta", 0.5)))


@register
class HardSwish(_Unary):
    """x * HardSigmoid(x) with alpha = 1/6, beta = 0.5 (opset 14)."""

    name = "HardSwish"
    onnx_types = ("HardSwish",)
    c_name = "hard_swish"

    def fn(self, node, x):
        gate = np.minimum(np.maximum(x * _f(x, 1.0 / 6.0) + _f(x, 0.5), _f(x, 0.0)), _f(x, 1.0))
        return x * gate

    def tflite_table(self, graph, node):
        return tfl.hard_swish_s8(*quant_pair(graph, node))


@register
class Elu(_Unary):
    """x above zero, exp(x) - 1 below (alpha 1: TFLite's ELU; mcud_elu_f32 takes expm1f)."""

    name = "Elu"
    c_name = "elu"

    def fn(self, node, x):
        return np.where(x < 0, np.expm1(x), x).astype(x.dtype)

    def tflite_table(self, graph, node):
        return tfl.float_lut_s8(tfl.elu_f32, *quant_pair(graph, node))


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x: np.ndarray) -> np.ndarray:
    return _erf64(x.astype(np.float64)).astype(x.dtype)


def _sqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


def _codes_non_negative(self, graph: Graph, node: Node) -> bool:
    """int8 only where every input code is real >= 0 (a table holds no NaN); otherwise the op stays in float."""
    if not _Unary.accepts_int8(self, graph, node):
        return False
    x = graph[node.inputs[0]]
    s, z = x.quant.single()
    return (requant.QRANGE[x.dtype][0] - z) * s >= 0


def _function(name: str, function, **overrides) -> type:
    """Declare the ONNX operator `name`: `function` of each element (the reference and the int8 table),
    mcud_<name>_f32 in C."""
    body = {"name": name, "onnx_types": (name,), "c_name": name.lower(),
            "fn": lambda self, node, x: function(x), **overrides}
    return register(type(name, (_Unary,), body))


Erf = _function("Erf", _erf)
Sqrt = _function("Sqrt", _sqrt, accepts_int8=_codes_non_negative)


@register
class Gelu(_Unary):
    """x * Phi(x) (opset 20): approximate "none" with erf, "tanh" with tanh(sqrt(2/pi) (x + 0.044715 x^3));
    mcudeploy/passes/transformer.py also recognises torch's decomposed erf form."""

    name = "Gelu"
    onnx_types = ("Gelu",)
    c_name = "gelu"

    def from_onnx(self, onnx):
        approximate = str(onnx.attrs.get("approximate", "none"))
        require(approximate in ("none", "tanh"), f"Gelu approximate={approximate!r} is not supported "
                                                 f"(none or tanh)")
        return onnx.inputs[:1], {"approximate": approximate}

    def fn(self, node, x):
        v = x.astype(np.float64)
        if node.attr("approximate", "none") == "tanh":
            inner = math.sqrt(2.0 / math.pi) * (v + 0.044715 * v * v * v)
            return (0.5 * v * (1.0 + np.tanh(inner))).astype(x.dtype)
        return (0.5 * v * (1.0 + _erf64(v / math.sqrt(2.0)))).astype(x.dtype)

    def kernel(self, graph, node):
        call = super().kernel(graph, node)
        if node.attr("approximate", "none") == "tanh" and call.fn == "mcud_gelu_f32":
            return Call("mcud_gelu_tanh_f32", call.views, call.params)
        return call


@register
class Swish(_WithAlpha):
    """x * Sigmoid(alpha * x) (opset 24); SiLU is alpha = 1. Exports write SiLU as Mul(x, Sigmoid(x)),
    which passes/activation.py fuses into one Swish: float in one pass, int8 in one table whose codes
    are the two operators' (``table``: Sigmoid's table, then Mul's integer arithmetic, so exact)."""

    name = "Swish"
    onnx_types = ("Swish",)
    c_name = "swish"

    def fn(self, node, x):
        one = _f(x, 1.0)
        return x * (one / (one + np.exp(-(x * self.alpha(node, x)))))

    def table(self, graph, node):
        fused = node.attr("table")
        return super().table(graph, node) if fused is None else np.asarray(fused, dtype=np.int64)
