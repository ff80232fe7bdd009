"""``run --check``: the deployed model against onnxruntime and against mcudeploy's numpy reference.

Limits (issue 2): int8 outputs at most 2 quantization steps from onnxruntime at any element,
top-1 agreement at least 99%; float outputs within 1e-4 absolute. The C output must also
equal the numpy reference bit for bit on integer outputs (float: within the same 1e-4).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import numpy as np
import onnx

from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import DTYPES, Graph
from mcudeploy.reference import run_reference

INT8_STEPS = 2
FLOAT_ABS = 1e-4
REF_FLOAT_ABS = FLOAT_ABS  # float kernels sum in another order than numpy
TOP1 = 0.99


def random_inputs(graph: Graph, count: int = 20, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        sample = {}
        for name in graph.inputs:
            t = graph[name]
            if t.dtype in ("int8", "uint8", "int16", "int32"):
                info = np.iinfo(DTYPES[t.dtype])
                lo, hi = max(int(info.min), -128), min(int(info.max), 127)
                sample[name] = rng.integers(lo, hi + 1, size=t.shape).astype(DTYPES[t.dtype])
            else:
                sample[name] = rng.standard_normal(t.shape).astype(DTYPES[t.dtype])
        samples.append(sample)
    return samples


def load_input(path: Union[str, os.PathLike], graph: Graph) -> list[dict[str, np.ndarray]]:
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise MCUDeployError(f"{path} is not a .npy or .npz file ({exc})") from None
    if isinstance(data, np.lib.npyio.NpzFile):
        missing = [n for n in graph.inputs if n not in data.files]
        if missing:
            raise MCUDeployError(f"{path} has no array named {missing[0]} (the model's inputs: "
                                 f"{', '.join(graph.inputs)})")
        sample = {n: data[n] for n in graph.inputs}
    else:
        if len(graph.inputs) != 1:
            raise MCUDeployError(f"{path} holds one array but the model has {len(graph.inputs)} inputs; use .npz")
        sample = {graph.inputs[0]: data}
    for name, x in sample.items():
        t = graph[name]
        if tuple(x.shape) != t.shape:
            raise MCUDeployError(f"{path}: input {name} has shape {tuple(x.shape)}; the model expects {t.shape}")
        sample[name] = x.astype(DTYPES[t.dtype])
    return [sample]


def run_onnxruntime(model: Union[str, os.PathLike, onnx.ModelProto], samples, input_shapes=None):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    payload = model.SerializeToString() if isinstance(model, onnx.ModelProto) else os.fspath(model)
    session = ort.InferenceSession(payload, so, providers=["CPUExecutionProvider"])
    return [session.run(None, dict(s)) for s in samples]


@dataclass
class OutputReport:
    name: str
    dtype: str
    unit: str  # "steps" (quantized outputs, and float outputs of a DequantizeLinear) or "abs"
    max_diff_ort: float
    max_diff_ref: float
    mismatched_elements: int
    top1: Optional[float] = None


@dataclass
class CheckReport:
    samples: int
    outputs: list[OutputReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        for o in self.outputs:
            steps = o.unit == "steps"
            if o.max_diff_ort > (INT8_STEPS if steps else FLOAT_ABS):
                return False
            if o.max_diff_ref > (0 if steps else REF_FLOAT_ABS):
                return False
            if o.top1 is not None and o.top1 < TOP1:
                return False
        return True

    def lines(self) -> list[str]:
        out = []
        for o in self.outputs:
            unit = o.unit
            top1 = f", top-1 agreement {o.top1 * 100:.1f}%" if o.top1 is not None else ""
            out.append(f"{o.name} ({o.dtype}): max difference vs onnxruntime {o.max_diff_ort:g} {unit}{top1}; "
                       f"vs numpy reference {o.max_diff_ref:g} {unit}")
        out.append(f"{'PASS' if self.ok else 'FAIL'} on {self.samples} input(s) "
                   f"(limits: int8 {INT8_STEPS} steps, float {FLOAT_ABS:g}, top-1 {TOP1 * 100:.0f}%, "
                   f"reference bit-exact)")
        return out


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


def _classifier(shape: tuple[int, ...]) -> bool:
    """One score per class: at most one dimension larger than 1."""
    return sum(d > 1 for d in shape) == 1


def compare(graph: Graph, device_outputs: Sequence[Sequence[np.ndarray]], ort_outputs, samples,
            reference: Optional[Graph] = None) -> CheckReport:
    """``reference``: the graph whose numpy reference the outputs must equal (default ``graph``); a
    split plan is compared with the unsplit model's, so the check does not lean on the split rewrite."""
    ref_outputs = [run_reference(reference or graph, s) for s in samples]
    report = CheckReport(len(samples))
    for k, name in enumerate(graph.outputs):
        t = graph[name]
        dev = np.stack([np.asarray(d[k]) for d in device_outputs]).astype(np.float64)
        ort = np.stack([np.asarray(o[k]).reshape(t.shape) for o in ort_outputs]).astype(np.float64)
        ref = np.stack([r[k] for r in ref_outputs]).astype(np.float64)
        step = output_step(graph, name)
        if t.dtype != "float32":  # integer outputs: the difference is already in steps
            diff_ort, diff_ref, quantized = np.abs(dev - ort), np.abs(dev - ref), True
        elif step is not None:  # float outputs of a DequantizeLinear: count steps of its scale
            diff_ort, diff_ref, quantized = np.abs(dev - ort) / step, np.abs(dev - ref) / step, True
        else:
            diff_ort, diff_ref, quantized = np.abs(dev - ort), np.abs(dev - ref), False
        if quantized and t.dtype == "float32":
            diff_ort, diff_ref = np.round(diff_ort, 3), np.round(diff_ref, 3)  # float noise in the scale product
        limit = INT8_STEPS if quantized else FLOAT_ABS
        top1 = None
        if _classifier(t.shape):
            top1 = float(np.mean(np.argmax(dev.reshape(len(samples), -1), -1)
                                 == np.argmax(ort.reshape(len(samples), -1), -1)))
        report.outputs.append(OutputReport(name, t.dtype, "steps" if quantized else "abs", float(diff_ort.max(initial=0)),
                                           float(diff_ref.max(initial=0)), int((diff_ort > limit).sum()), top1))
    return report
