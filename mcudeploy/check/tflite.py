"""The verdict of ``run --check`` on a .tflite model: TFLite Micro is the reference, end to end.

PASS when (1) every output of the generated C equals TensorFlow Lite Micro's (its Python
interpreter, reference kernels, run in a child process: check/tflm.py; where it cannot run the model,
LiteRT's reference kernels: check/litert.py; where those abort too, LiteRT's default kernels; the verdict says
which and why) bit for bit, float outputs
within FLOAT_REL of their largest value, and (2) the C equals mcudeploy's numpy reference bit for
bit (float within trace.FLOAT_REL of the largest magnitude), as for ONNX models. Where (2) fails, the host build is traced
to name the first operator that differs (check/first_difference.py). An ONNX model is judged operator by
operator against onnxruntime instead (verdict.py): a .tflite model is imported with TFLite's own
arithmetic (ops/requant.py), so nothing less than bit for bit is right.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from mcudeploy.check import litert
from mcudeploy.check.tflm import run_tflm
from mcudeploy.errors import MCUDeployError
from mcudeploy.check.first_difference import Difference, against_reference, first_difference, reference_lines
from mcudeploy.ir import Graph

FLOAT_REL = 1e-5  # float outputs: from TFLite Micro's, relative to the output's largest magnitude (at least 1)
# integer outputs against LiteRT's default (optimized) kernels, the last oracle: their requantization rounds some
# sums differently from the reference kernels' (one step, e.g. on a per-channel depthwise), so within one step
DEFAULT_KERNELS_STEPS = 1


@dataclass(frozen=True)
class OutputAgreement:
    name: str
    dtype: str
    differ: int  # elements that differ from TFLite Micro's (float: by more than FLOAT_REL)
    max_diff: float  # steps (integers) or relative to the largest magnitude (float)
    count: int
    oracle: str = "TensorFlow Lite Micro"
    steps: int = 0  # integer steps tolerated (DEFAULT_KERNELS_STEPS against LiteRT's default kernels, else none)

    @property
    def ok(self) -> bool:
        return self.differ == 0 or (self.dtype != "float32" and self.max_diff <= self.steps)

    def line(self) -> str:
        if self.dtype == "float32":
            return (f"{self.name} (float32) vs {self.oracle} end to end: max difference {self.max_diff:.2g} of "
                    f"its largest value ({self.differ:,} of {self.count:,} elements beyond {FLOAT_REL:g})")
        if not self.differ:
            return f"{self.name} ({self.dtype}) vs {self.oracle} end to end: bit for bit"
        within = f" (within the {self.steps} step(s) its rounding may differ by)" if self.ok else ""
        return (f"{self.name} ({self.dtype}) vs {self.oracle} end to end: {self.differ:,} of {self.count:,} "
                f"elements differ, by up to {self.max_diff:g} step(s){within}")


@dataclass(frozen=True)
class TFLiteVerdict:
    samples: int
    outputs: tuple[OutputAgreement, ...]
    not_exact: dict  # output -> elements that differ from the numpy reference
    difference: Optional[Difference] = None
    traced: bool = False
    why_not_tflm: str = ""  # where TensorFlow Lite Micro could not run the model and LiteRT was the reference
    # (its reference kernels, or where those abort too its default ones: outputs[k].oracle names which)

    @property
    def exact(self) -> bool:
        return not any(self.not_exact.values())

    @property
    def ok(self) -> bool:
        return self.exact and all(o.ok for o in self.outputs)

    def lines(self) -> list[str]:
        oracle = self.outputs[0].oracle if self.outputs else "TensorFlow Lite Micro"
        out = [f"the reference is {oracle}: {self.why_not_tflm}"] if self.why_not_tflm else []
        out += [o.line() for o in self.outputs]
        out += reference_lines(self.not_exact, self.difference, self.traced)
        steps = self.outputs[0].steps if self.outputs else 0
        exact = f"within {steps} step(s) of" if steps else "bit for bit"
        owner = f"{oracle}'" if oracle.endswith("s") else f"{oracle}'s"
        out.append(f"{'PASS' if self.ok else 'FAIL'} on {self.samples} input(s); pass = every output of the C {exact} "
                   f"{owner} (float: within {FLOAT_REL:g} of its largest value) and bit for bit "
                   f"mcudeploy's numpy reference")
        return out


def _agreement(graph: Graph, name: str, got: np.ndarray, want: np.ndarray, oracle: str) -> OutputAgreement:
    t = graph[name]
    steps = DEFAULT_KERNELS_STEPS if oracle == litert.DEFAULT_NAME else 0
    if t.dtype == "float32":
        scale = max(1.0, float(np.max(np.abs(want), initial=0)))
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) / scale
        return OutputAgreement(name, t.dtype, int(np.count_nonzero(~(diff <= FLOAT_REL))), float(diff.max(initial=0)),
                               int(diff.size), oracle)
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    return OutputAgreement(name, t.dtype, int(np.count_nonzero(diff)), float(diff.max(initial=0)), int(diff.size),
                           oracle, steps)


def reference_outputs(model, inputs, samples) -> tuple[list, str, str]:
    """The oracle's outputs per sample, in order on one interpreter (a state, an LSTM's variable tensors, carry
    over): TensorFlow Lite Micro's; where it cannot run the model, LiteRT's reference kernels'; where those abort
    too, LiteRT's default (optimized) kernels', the last resort (TFLite's arithmetic, not always the reference
    kernels' rounding). With the oracle's name and why TensorFlow Lite Micro was not it ("" when it was)."""
    try:
        return run_tflm(model, inputs, samples), "TensorFlow Lite Micro", ""
    except MCUDeployError as exc:
        if "could not run" not in str(exc):
            raise
        why = str(exc)
    try:
        return litert.run_litert(model, inputs, samples), litert.NAME, why
    except MCUDeployError as exc:
        if "could not run" not in str(exc):
            raise
        why = f"{why}; {exc}"
    return litert.run_litert(model, inputs, samples, kernels="default"), litert.DEFAULT_NAME, why


def _unwritten_rows_cleared(graph: Graph, outputs: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
    """The oracle's outputs with the rows a fast NMS (TFLite_Detection_PostProcess, ops/detection.py) leaves unwritten
    set to zeros: TensorFlow Lite Micro writes its boxes, classes and scores up to its count only, the rest holding
    what its arena held (an earlier call's detections), where mcudeploy writes zeros, as TFLite Micro's regular NMS
    does. Only where the count is a model output too; the other outputs as they are."""
    names = list(graph.model_outputs())
    out = [list(o) for o in outputs]
    for node in graph.nodes:
        if node.op != "DetectionPostProcess" or int(node.attrs.get("regular", 0)) or node.outputs[3] not in names:
            continue
        at = names.index(node.outputs[3])
        for sample in out:
            count = int(np.asarray(sample[at]).ravel()[0])
            for name in node.outputs[:3]:
                if name in names:
                    k = names.index(name)
                    rows = np.array(sample[k], copy=True).reshape(graph[name].shape)
                    rows[:, count:] = 0
                    sample[k] = rows.reshape(np.shape(sample[k]))
    return out


def check_tflite_outputs(model, compiled, outputs: Sequence[Sequence[np.ndarray]], samples,
                         reference: Optional[Graph] = None, trace: bool = True) -> TFLiteVerdict:
    """The verdict on ``outputs`` (per sample, per output), what the C of ``compiled`` gave on ``samples``;
    ``model`` the .tflite file compiled, ``reference`` the lowered model before any split. A stateful model's
    samples are one sequence on every side (the C ran them in order from its initial state), compared step by
    step."""
    graph = reference or compiled.graph
    tflm, oracle, why_not = reference_outputs(model, graph.model_inputs(), samples)
    tflm = _unwritten_rows_cleared(graph, tflm)
    agreements = []
    for k, name in enumerate(compiled.graph.model_outputs()):
        got = np.stack([np.asarray(o[k]).reshape(graph[name].shape) for o in outputs])
        want = np.stack([np.asarray(o[k]).reshape(graph[name].shape) for o in tflm])
        agreements.append(_agreement(graph, name, got, want, oracle))
    not_exact, first_bad = against_reference(compiled, graph, samples, outputs)
    difference = (first_difference(compiled, samples[first_bad], graph, samples[:first_bad] if graph.states else ())
                  if first_bad is not None and trace else None)
    return TFLiteVerdict(len(samples), tuple(agreements), not_exact, difference, first_bad is not None and trace,
                         why_not)
