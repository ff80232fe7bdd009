"""End-to-end figures of ``run --check``, shown next to the verdict but not part of it: how far the
outputs are from onnxruntime (quantization steps, top-1 agreement, signal-to-noise ratio) and,
with ``--float-model``, from the float model the int8 one was quantized from.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np
import onnx

from mcudeploy.check.onnxrt import model_proto, run_onnxruntime
from mcudeploy.analysis.io import quantization
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph


@dataclass(frozen=True)
class OutputFigures:
    name: str
    dtype: str
    unit: str  # "steps" (quantized outputs, and float outputs of a DequantizeLinear) or "abs"
    max_diff: float  # from onnxruntime
    top1: Optional[float]  # agreement of the arg max with onnxruntime's (classifier outputs)
    snr_db: float  # vs onnxruntime, on real values
    float_snr_db: Optional[float] = None  # vs the float model
    float_top1: Optional[float] = None

    def line(self) -> str:
        top1 = f", top-1 {self.top1:.1%}" if self.top1 is not None else ""
        unit = "step" if self.unit == "steps" and self.max_diff == 1 else self.unit
        text = (f"{self.name} ({self.dtype}) vs onnxruntime end to end: max {self.max_diff:g} {unit}{top1}, "
                f"SNR {_db(self.snr_db)}")
        if self.float_snr_db is not None:
            top1 = f", top-1 {self.float_top1:.1%}" if self.float_top1 is not None else ""
            text += f"; vs the float model: SNR {_db(self.float_snr_db)}{top1}"
        return text


def _db(value: float) -> str:
    return "exact" if value == math.inf else "-" if math.isnan(value) else f"{value:.1f} dB"


def output_step(graph: Graph, name: str) -> Optional[float]:
    """The quantization step of an output: its own scale if it is quantized, the scale of the
    DequantizeLinear that produces it (a quantized model with float outputs), else None."""
    t = graph[name]
    if t.dtype != "float32":
        return t.quant.single()[0] if t.quant is not None and len(t.quant.scale) == 1 else 1.0
    producer = graph.producer(name)
    if producer is not None and producer.op == "DequantizeLinear" and len(producer.attr("scale")) == 1:
        return float(producer.attr("scale")[0])
    return None


def real(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """The real numbers a tensor's values stand for (dequantized when the tensor is quantized)."""
    t, q = graph[name], quantization(graph, name)
    values = np.asarray(values, dtype=np.float64)
    if t.dtype == "float32" or q is None:
        return values
    shape = [1] * len(t.shape)
    if q.per_channel:
        shape[q.axis] = -1
    return (values - q.zp_array().reshape(shape)) * q.scale_array().reshape(shape)


def snr_db(signal: np.ndarray, got: np.ndarray) -> float:
    """10 log10(sum signal^2 / sum (got - signal)^2): inf when equal, nan when the signal is all zero."""
    noise = float(np.sum((got - signal) ** 2))
    power = float(np.sum(signal ** 2))
    if noise == 0:
        return math.inf
    return 10 * math.log10(power / noise) if power > 0 else math.nan


def is_classifier(shape: tuple[int, ...]) -> bool:
    """One score per class: at most one dimension larger than 1."""
    return sum(d > 1 for d in shape) == 1


def _top1(a: np.ndarray, b: np.ndarray) -> float:
    n = len(a)
    return float(np.mean(np.argmax(a.reshape(n, -1), -1) == np.argmax(b.reshape(n, -1), -1)))


def end_to_end(graph: Graph, outputs: Sequence[Sequence[np.ndarray]], ort_outputs: Sequence[Sequence[np.ndarray]],
               float_outputs: Optional[Sequence[Sequence[np.ndarray]]] = None) -> list[OutputFigures]:
    """Per output of ``graph``, the figures of ``outputs`` (per sample, per output) against onnxruntime's
    and, given, the float model's."""
    figures = []
    for k, name in enumerate(graph.outputs):
        t = graph[name]
        got = np.stack([np.asarray(o[k]).reshape(t.shape) for o in outputs]).astype(np.float64)
        ort = np.stack([np.asarray(o[k]).reshape(t.shape) for o in ort_outputs]).astype(np.float64)
        step = output_step(graph, name)
        diff = np.abs(got - ort) / (step if t.dtype == "float32" and step is not None else 1.0)
        if t.dtype == "float32" and step is not None:
            diff = np.round(diff, 3)  # float noise in the scale product
        got_real, ort_real = real(graph, name, got), real(graph, name, ort)
        classifier = is_classifier(t.shape)
        fig = dict(name=name, dtype=t.dtype, unit="steps" if step is not None else "abs",
                   max_diff=float(diff.max(initial=0)), top1=_top1(got, ort) if classifier else None,
                   snr_db=snr_db(ort_real, got_real))
        if float_outputs is not None:
            ref = np.stack([np.asarray(o[k]).reshape(t.shape) for o in float_outputs]).astype(np.float64)
            fig.update(float_snr_db=snr_db(ref, got_real), float_top1=_top1(got, ref) if classifier else None)
        figures.append(OutputFigures(**fig))
    return figures


@dataclass(frozen=True)
class FloatModel:
    """A float ONNX model checked against the deployed model's inputs and outputs (``float_model``)."""

    path: str
    model: onnx.ModelProto
    inputs: tuple[str, ...]  # its input names, in the order of the deployed model's inputs
    outputs: tuple[str, ...]

    def run(self, graph: Graph, samples) -> list[list[np.ndarray]]:
        """Its outputs on ``samples`` (the deployed model's inputs, dequantized where they are integers)."""
        feeds = [{mine: real(graph, name, s[name]).astype(np.float32) for mine, name in zip(self.inputs, graph.inputs)}
                 for s in samples]
        results = run_onnxruntime(self.model, feeds)
        for mine, name, got in zip(self.outputs, graph.outputs, results[0] if results else ()):
            if np.asarray(got).size != graph[name].size:
                raise MCUDeployError(f"--float-model {self.path}: output {mine} has shape {np.shape(got)}; the model's "
                                     f"output {name} is {graph[name].shape}")
        return results


def float_model(path: Union[str, os.PathLike], graph: Graph) -> FloatModel:
    """``path`` loaded and matched with ``graph`` (the deployed model) by position: as many inputs and
    outputs, float32 inputs of the same shapes; MCUDeployError (one sentence) where it does not match."""
    try:
        model = model_proto(path)
    except MCUDeployError as exc:
        raise MCUDeployError(f"--float-model: {exc}") from None
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != len(graph.inputs) or len(model.graph.output) != len(graph.outputs):
        raise MCUDeployError(f"--float-model {path} has {len(inputs)} input(s) and {len(model.graph.output)} "
                             f"output(s); the model has {len(graph.inputs)} and {len(graph.outputs)}")
    pairs = [(vi, name, "input") for vi, name in zip(inputs, graph.inputs)]
    pairs += [(vi, name, "output") for vi, name in zip(model.graph.output, graph.outputs)]
    for vi, name, kind in pairs:
        tt = vi.type.tensor_type
        if kind == "input" and tt.elem_type != onnx.TensorProto.FLOAT:
            raise MCUDeployError(f"--float-model {path}: input {vi.name} is not float32")
        if not tt.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        shape = graph[name].shape
        if len(dims) != len(shape) or any(d not in (None, 0, n) for d, n in zip(dims, shape)):
            shown = "x".join(str(d) if d else "?" for d in dims)
            raise MCUDeployError(f"--float-model {path}: {kind} {vi.name} has shape {shown}; the model's {kind} "
                                 f"{name} is {'x'.join(map(str, shape))}")
    return FloatModel(os.fspath(path), model, tuple(i.name for i in inputs), tuple(o.name for o in model.graph.output))
