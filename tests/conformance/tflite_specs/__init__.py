"""What the TFLite conformance cases are made of: one ``Spec`` per operator and option set, converted by
the real TFLite converter at each type (tests/conformance/tflite_gen.py, which alone needs TensorFlow).

A spec's ``build(tf)`` returns a callable on TensorFlow tensors (a Keras layer, a lambda of tf ops, or
a ``tf.Module`` that holds its own variables); the generator calls it once eagerly (so a layer makes
its weights, from fixed seeds), traces it with the inputs' signature and converts it. The families
live one module each beside this one and list their specs in ``SPECS``.

Types (the converter's settings, ``tflite_gen.convert``):

- ``float32``: a float model;
- ``int8``: full-integer int8 (int8 inputs and outputs, per-channel weights unless the spec says);
- ``int16``: 16x8 (int16 activations, int8 weights; EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8);
- ``float16w``: a float model whose weights are stored as float16 behind DEQUANTIZE;
- ``hybrid``: float activations, int8 weights (dynamic-range quantization).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

QUANTIZED = ("int8", "int16")
TYPES = ("float32", "int8", "int16")


@dataclass(frozen=True)
class In:
    """A model input: its shape and type; float inputs are drawn uniformly from [low, high] (the
    representative data the converter calibrates on, and the conformance test's data); an integer or
    bool input (indices, a condition) is drawn from [low, high] as it is."""

    shape: tuple
    dtype: str = "float32"
    low: float = -3.0
    high: float = 3.0


@dataclass(frozen=True)
class Spec:
    """One conformance case before conversion: ``builtin`` is the operator it is about (it must be in the
    converted model, at every type kept); ``name`` says the options."""

    builtin: str
    name: str
    build: Callable
    inputs: tuple
    types: tuple = TYPES
    io: str = "quantized"  # quantized models: "quantized" inputs/outputs, or "float" (QUANTIZE/DEQUANTIZE at the edges)
    converter: dict = field(default_factory=dict)  # converter attributes to set (e.g. per-tensor weights; a
    # callable value is called with TensorFlow: lambda tf: tf.int32)
    resource_variables: bool = False  # state in tf.Variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE)
    steps: int = 1  # calls in a row on one interpreter (a stateful model's state carries over)
    static_batch: bool = False  # a batch of 1 stays 1 in the signature (else unknown, as Keras exports it)
    trackable: bool = False  # converted with the module, whose functions stay apart (Keras 2's LSTM is then fused)

    def case(self, dtype: str) -> str:
        return f"{self.builtin.lower()}-{self.name}-{dtype}"


def all_specs() -> list[Spec]:
    """Every family's specs, in module order; case names are unique."""
    specs = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        specs += importlib.import_module(f"{__name__}.{info.name}").SPECS
    names = [s.case("x") for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"conformance specs named twice: {sorted(dup)}")
    return specs
