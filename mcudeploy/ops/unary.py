"""Math functions of one input: Abs, Neg, Exp, Log, Sin, Cos, Floor, Ceil, Round, Square, Rsqrt (TFLite's
ABS, NEG, EXP, LOG, SIN, COS, FLOOR, CEIL, ROUND, SQUARE, RSQRT; Sqrt is in activation.py).

float32: one math.h kernel each (mcud_<name>_f32), as TensorFlow Lite Micro computes them (ROUND rounds
half to even). Integers: the activations' lookup table; a TFLite model's int8 ABS and RSQRT tables and its
int16 ABS are TensorFlow Lite Micro's integer arithmetic (mcudeploy/ops/tflite_tables.py).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ops import tflite_tables as tfl
from mcudeploy.ops.activation import _Unary, quant_pair
from mcudeploy.ops.registry import register


def _function(name: str, function, **body) -> type:
    """Register operator ``name``: ``function`` of each element (float32 in, float32 out), mcud_<name>_f32."""
    attrs = {"name": name, "c_name": name.lower(), "fn": lambda self, node, x: function(x),
             "__module__": __name__, **body}
    return register(type(name, (_Unary,), attrs))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (x.dtype.type(1.0) / np.sqrt(x)).astype(x.dtype)


Abs = _function("Abs", np.abs, tflite_int16=True,
                piecewise=lambda self, graph, node: tfl.absolute(graph[node.inputs[0]].dtype, *quant_pair(graph, node)))
Neg = _function("Neg", np.negative)
Exp = _function("Exp", np.exp)
Log = _function("Log", np.log)
Sin = _function("Sin", np.sin)
Cos = _function("Cos", np.cos)
Floor = _function("Floor", np.floor)
Ceil = _function("Ceil", np.ceil)
Round = _function("Round", np.rint)  # half to even, as TFLite's RoundToNearest
Square = _function("Square", np.square)
Rsqrt = _function("Rsqrt", _rsqrt,
                  tflite_table=lambda self, graph, node: tfl.rsqrt_s8(*quant_pair(graph, node)))
